// SPDX-License-Identifier: Apache-2.0
// The device reduction kernels, written once. Each body is a function of (thread index,
// thread count) that a CUDA __global__ wrapper calls with blockIdx * blockDim + threadIdx and
// gridDim * blockDim (device/cuda_kernels.cu), and that the emulated GPU calls for every
// thread of the same grid in a shuffled order (device/emulated_kernels.cc). So the GPU and the
// emulator run the same grid-stride loops, the same 16-byte packs and the same tails.
//
// Semantics are the host kernels' (kernels/host/host_reduce.h, canonical_reduce.h), through the
// same operators (reduce_ops.h): nvcc compiles with --fmad=false and without fast-math, so
// results are bitwise those of the host (NaN payloads of sum and prod aside, reduce_ops.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/reduce_ops.h"

namespace loom::kernels::device {

constexpr unsigned kThreadsPerBlock = 256;
// Beyond this the kernels loop (grid-stride): 4096 blocks of 256 threads fill every SM of an
// A100/H100/H200 many times over, and fewer, longer-lived threads amortize the index math.
constexpr unsigned kMaxBlocks = 4096;
constexpr size_t kPackBytes = 16;

// 16 bytes of elements: one 128-bit load or store per operand, the widest a thread can issue.
template <typename T>
struct alignas(kPackBytes) Pack {
  static constexpr size_t kCount = kPackBytes / sizeof(T);
  T values[kCount];
};

enum class KernelKind : uint8_t { Reduce, Average, FinishAverage, Premultiply };

// Every kernel's arguments, by value (a CUDA kernel parameter; the emulator's translated copy).
struct KernelArgs {
  void* dst = nullptr;
  const void* a = nullptr;  // reduce: a; average: local; finishAverage: dst; premultiply: src
  const void* b = nullptr;  // reduce: b; average: incoming; premultiply: a device scalar or null
  uint64_t scalarBits = 0;   // premultiply with b null: the scalar's bytes (little-endian)
  size_t count = 0;
  int nranks = 1;            // average, finishAverage
  bool incomingRaw = false;  // average
  bool packed = false;       // every pointer the body reads or writes is 16-byte aligned
};

struct LaunchShape {
  unsigned blocks = 1;
  unsigned threadsPerBlock = kThreadsPerBlock;
  size_t threads() const { return size_t{blocks} * threadsPerBlock; }
};

inline bool packAligned(const void* pointer) {
  return reinterpret_cast<uintptr_t>(pointer) % kPackBytes == 0;
}

// The grid of a launch over `count` elements of `elementBytes`: one thread per pack (plus the
// tail's elements) when packed, one per element otherwise, at most kMaxBlocks blocks.
inline LaunchShape launchShape(size_t count, size_t elementBytes, bool packed) {
  const size_t perPack = kPackBytes / elementBytes;
  const size_t wanted = packed ? count / perPack + count % perPack : count;
  size_t blocks = (wanted + kThreadsPerBlock - 1) / kThreadsPerBlock;
  if (blocks < 1) blocks = 1;
  if (blocks > kMaxBlocks) blocks = kMaxBlocks;
  return LaunchShape{static_cast<unsigned>(blocks), kThreadsPerBlock};
}

namespace detail {

// out[i] = fn(x[i], y[i]) over packs, then the tail one element at a time. out may alias x or
// y exactly: every element (or pack) is read and then written by the same thread, so the
// pointers are deliberately not __restrict__.
template <typename T, typename Fn>
LOOM_HOST_DEVICE inline void elementwise(size_t thread, size_t threads, T* out, const T* x, const T* y,
                                         size_t count, bool packed, const Fn& fn) {
  size_t packedCount = 0;
  if (packed) {
    const size_t packs = count / Pack<T>::kCount;
    auto* outPacks = reinterpret_cast<Pack<T>*>(out);
    const auto* xPacks = reinterpret_cast<const Pack<T>*>(x);
    const auto* yPacks = reinterpret_cast<const Pack<T>*>(y);
    for (size_t p = thread; p < packs; p += threads) {
      const Pack<T> lhs = xPacks[p];
      const Pack<T> rhs = yPacks[p];
      Pack<T> result;
#if defined(__CUDACC__)
#pragma unroll
#endif
      for (size_t k = 0; k < Pack<T>::kCount; ++k) result.values[k] = fn(lhs.values[k], rhs.values[k]);
      outPacks[p] = result;
    }
    packedCount = packs * Pack<T>::kCount;
  }
  for (size_t i = packedCount + thread; i < count; i += threads) out[i] = fn(x[i], y[i]);
}

// The accumulator of a narrow float is float32; of everything else, the type itself.
template <typename T>
using WideOf = std::conditional_t<kIsNarrowFloat<T>, float, T>;
template <typename T>
constexpr bool kFloatAverage = std::is_floating_point_v<WideOf<T>>;

template <typename T>
LOOM_HOST_DEVICE inline WideOf<T> widen(T value) {
  if constexpr (kIsNarrowFloat<T>) {
    return value.toFloat();
  } else {
    return value;
  }
}

// The one rounding of canonical_reduce.cc: a NaN becomes the canonical quiet NaN.
template <typename T>
LOOM_HOST_DEVICE inline T narrow(WideOf<T> value) {
  using A = WideOf<T>;
  if constexpr (std::is_same_v<A, float>) {
    if (value != value) value = bitsToFloat(0x7fc00000u);
  } else if constexpr (std::is_same_v<A, double>) {
    if (value != value) {
      const uint64_t bits = 0x7ff8000000000000ull;
      static_assert(sizeof(bits) == sizeof(double));
      __builtin_memcpy(&value, &bits, sizeof(value));
    }
  }
  if constexpr (kIsNarrowFloat<T>) {
    return T::fromFloat(value);
  } else {
    return value;
  }
}

template <typename T>
struct ScaledSum {  // avg's step for floats: local * scale + incoming * incomingScale
  WideOf<T> scale, incomingScale;
  LOOM_HOST_DEVICE T operator()(T local, T incoming) const {
    return narrow<T>(widen(local) * scale + widen(incoming) * incomingScale);
  }
};

template <typename T>
struct FinishFloatAverage {
  WideOf<T> divisor;
  LOOM_HOST_DEVICE T operator()(T value, T) const { return narrow<T>(widen(value) / divisor); }
};

template <typename T>
struct DivideInteger {
  int divisor;
  LOOM_HOST_DEVICE T operator()(T value, T) const { return divideBy(value, divisor); }
};

template <typename T>
struct MultiplyBy {
  T scalar;
  LOOM_HOST_DEVICE T operator()(T value, T) const { return Prod<T>()(value, scalar); }
};

}  // namespace detail

// dst[i] = a[i] op b[i] (avg reduces with Sum: Op is Sum<T>).
template <typename T, typename Op>
LOOM_HOST_DEVICE inline void reduceBody(size_t thread, size_t threads, const KernelArgs& args) {
  detail::elementwise(thread, threads, static_cast<T*>(args.dst), static_cast<const T*>(args.a),
                      static_cast<const T*>(args.b), args.count, args.packed, Op());
}

// canonical_reduce.h's reduceAverage.
template <typename T>
LOOM_HOST_DEVICE inline void averageBody(size_t thread, size_t threads, const KernelArgs& args) {
  auto* dst = static_cast<T*>(args.dst);
  const auto* local = static_cast<const T*>(args.a);
  const auto* incoming = static_cast<const T*>(args.b);
  if constexpr (detail::kFloatAverage<T>) {
    using A = detail::WideOf<T>;
    const A scale = averageScale<A>(args.nranks);
    const detail::ScaledSum<T> step{scale, args.incomingRaw ? scale : A(1)};
    detail::elementwise(thread, threads, dst, local, incoming, args.count, args.packed, step);
  } else {
    detail::elementwise(thread, threads, dst, local, incoming, args.count, args.packed, Sum<T>());
  }
}

// canonical_reduce.h's finishAverage, in place on args.dst.
template <typename T>
LOOM_HOST_DEVICE inline void finishAverageBody(size_t thread, size_t threads, const KernelArgs& args) {
  auto* dst = static_cast<T*>(args.dst);
  if constexpr (detail::kFloatAverage<T>) {
    const detail::FinishFloatAverage<T> finish{averageDivisor<detail::WideOf<T>>(args.nranks)};
    detail::elementwise(thread, threads, dst, dst, dst, args.count, args.packed, finish);
  } else {
    detail::elementwise(thread, threads, dst, dst, dst, args.count, args.packed,
                        detail::DivideInteger<T>{args.nranks});
  }
}

// kernels/host/premultiply.h: dst[i] = scalar * src[i], the scalar read from device memory at
// args.b when the thread starts, or taken from args.scalarBits.
template <typename T>
LOOM_HOST_DEVICE inline void premultiplyBody(size_t thread, size_t threads, const KernelArgs& args) {
  const auto* src = static_cast<const T*>(args.a);
  T scalar;
  if (args.b != nullptr) {
    scalar = *static_cast<const T*>(args.b);
  } else {
    static_assert(sizeof(T) <= sizeof(args.scalarBits));
    __builtin_memcpy(&scalar, &args.scalarBits, sizeof(T));
  }
  const detail::MultiplyBy<T> multiply{scalar};
  detail::elementwise(thread, threads, static_cast<T*>(args.dst), src, src, args.count, args.packed, multiply);
}

// Calls fn(body) with the body of (kind, type, op) as a function pointer
// void(size_t thread, size_t threads, const KernelArgs&); false for an unknown type or op.
// The emulator dispatches with it; the CUDA side instantiates the same table per kernel.
using KernelBody = void (*)(size_t, size_t, const KernelArgs&);
inline bool findKernelBody(KernelKind kind, loomDataType_t type, loomRedOp_t op, KernelBody* body) {
  bool found = false;
  visitDataType(type, [&](auto typeTag) {
    using T = decltype(typeTag);
    switch (kind) {
      case KernelKind::Reduce:
        found = visitReduceOp<T>(op, [&](auto opTag) { *body = &reduceBody<T, decltype(opTag)>; });
        break;
      case KernelKind::Average:
        *body = &averageBody<T>;
        found = true;
        break;
      case KernelKind::FinishAverage:
        *body = &finishAverageBody<T>;
        found = true;
        break;
      case KernelKind::Premultiply:
        *body = &premultiplyBody<T>;
        found = true;
        break;
    }
  });
  return found;
}

}  // namespace loom::kernels::device
