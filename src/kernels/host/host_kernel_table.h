// SPDX-License-Identifier: Apache-2.0
// Internal to the host kernels: the function table each instruction-set variant fills, and the
// element loops they all share. Each variant (host_reduce_generic.cc, host_reduce_avx2.cc,
// host_reduce_avx512.cc) instantiates these loops inside functions compiled for its ISA.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/reduce_ops.h"
#include "loom.h"

// Forces the shared loops into the calling variant's function, so they are vectorized for
// that function's target ISA. (A call to a separate inline copy would run code compiled for
// the baseline ISA; only inlining carries the caller's target attribute over.)
#define LOOM_ALWAYS_INLINE inline __attribute__((always_inline))
// On each variant's kernel functions: inlines everything they call, including the variant's
// target-specific codec functions called from the shared (target-neutral) block loops below.
// Those cannot be always_inline: GCC would first try to inline them into the target-neutral
// template on its own and reject the ISA mismatch.
#define LOOM_FLATTEN __attribute__((flatten))

namespace loom::kernels {

using ReduceFn = void (*)(void* dst, const void* a, const void* b, size_t count);
using DivideFn = void (*)(void* dst, const void* src, size_t count, int divisor);

struct KernelTable {
  ReduceFn reduce[loomNumTypes][loomNumOps] = {};  // null: unsupported; avg holds sum's kernel
  DivideFn divide[loomNumTypes] = {};
};

const KernelTable& genericKernelTable();
#if defined(__x86_64__)
const KernelTable& avx2KernelTable();
const KernelTable& avx512KernelTable();
#endif

// dst[i] = op(a[i], b[i]). No __restrict: dst may alias a or b exactly. GCC still vectorizes
// that case, because its runtime overlap check accepts a dependence distance of zero (it only
// falls back to the scalar loop for partial overlap).
template <typename T, typename Op>
LOOM_ALWAYS_INLINE void reduceElements(T* dst, const T* a, const T* b, size_t count) {
  const Op op;
  for (size_t i = 0; i < count; ++i) dst[i] = op(a[i], b[i]);
}

template <typename T>
LOOM_ALWAYS_INLINE void divideElements(T* dst, const T* src, size_t count, int divisor) {
  for (size_t i = 0; i < count; ++i) dst[i] = divideBy(src[i], divisor);
}

// A variant's vector conversions for the 16-bit float types. Codecs::For<T> is a codec type
// with kBlock (values per step), widen(const T*, float*) and narrow(const float*, T*) that
// round exactly like T::fromFloat; or void where the variant has none (scalar code only).
//
// The 16-bit kernels widen a block of each operand into float arrays, apply the *scalar*
// float32 operator lane by lane, and narrow the result. Once inlined into the variant's
// function, the compiler turns the lane loop into vector instructions and keeps the arrays in
// registers, so the operator semantics stay defined once (reduce_ops.h). Returns the number of
// elements done (whole blocks); the caller finishes the rest with the scalar loop.
template <typename Codec, typename FloatOp, typename T>
LOOM_ALWAYS_INLINE size_t reduceBlocks(T* dst, const T* a, const T* b, size_t count) {
  constexpr size_t kBlock = Codec::kBlock;
  const FloatOp op;
  size_t i = 0;
  for (; i + kBlock <= count; i += kBlock) {
    alignas(64) float lhs[kBlock], rhs[kBlock], result[kBlock];
    Codec::widen(a + i, lhs);
    Codec::widen(b + i, rhs);  // both loads happen before the store: dst may alias a or b
    for (size_t k = 0; k < kBlock; ++k) result[k] = op(lhs[k], rhs[k]);
    Codec::narrow(result, dst + i);
  }
  return i;
}

template <typename Codec, typename T>
LOOM_ALWAYS_INLINE size_t divideBlocks(T* dst, const T* src, size_t count, int divisor) {
  constexpr size_t kBlock = Codec::kBlock;
  const auto floatDivisor = static_cast<float>(divisor);  // as divideBy() does
  size_t i = 0;
  for (; i + kBlock <= count; i += kBlock) {
    alignas(64) float values[kBlock];
    Codec::widen(src + i, values);
    for (size_t k = 0; k < kBlock; ++k) values[k] /= floatDivisor;
    Codec::narrow(values, dst + i);
  }
  return i;
}

// How many leading elements to do one at a time so that dst reaches a multiple of kAlignment
// bytes (the vector width). Then the vector stores never split cache lines, and neither do the
// loads when a and b share dst's offset (the usual case). Splits cost AVX-512 a third of its
// memory bandwidth on unaligned buffers.
template <size_t kAlignment, typename T>
LOOM_ALWAYS_INLINE size_t elementsBeforeAlignment(const T* dst, size_t count) {
  const auto address = reinterpret_cast<uintptr_t>(dst);
  if (address % sizeof(T) != 0) return 0;  // cannot reach alignment in whole elements
  const size_t head = (kAlignment - address % kAlignment) % kAlignment / sizeof(T);
  return head < count ? head : count;
}

// The body of every variant's reduce kernel; the variant wraps it in a function carrying its
// target attribute. Codecs::kAlignment is the variant's vector width in bytes.
template <typename Codecs, typename T, typename Op>
LOOM_ALWAYS_INLINE void reduceKernelBody(void* dstBytes, const void* aBytes, const void* bBytes,
                                         size_t count) {
  auto* dst = static_cast<T*>(dstBytes);
  const auto* a = static_cast<const T*>(aBytes);
  const auto* b = static_cast<const T*>(bBytes);
  size_t done = elementsBeforeAlignment<Codecs::kAlignment>(dst, count);
  reduceElements<T, Op>(dst, a, b, done);
  if constexpr (kIsHalfType<T>) {
    using Codec = typename Codecs::template For<T>;
    if constexpr (!std::is_void_v<Codec>) {
      done += reduceBlocks<Codec, typename Op::template Rebind<float>>(dst + done, a + done,
                                                                       b + done, count - done);
    }
  }
  reduceElements<T, Op>(dst + done, a + done, b + done, count - done);
}

template <typename Codecs, typename T>
LOOM_ALWAYS_INLINE void divideKernelBody(void* dstBytes, const void* srcBytes, size_t count,
                                         int divisor) {
  auto* dst = static_cast<T*>(dstBytes);
  const auto* src = static_cast<const T*>(srcBytes);
  size_t done = 0;
  if constexpr (kIsHalfType<T>) {
    using Codec = typename Codecs::template For<T>;
    if constexpr (!std::is_void_v<Codec>) done = divideBlocks<Codec>(dst, src, count, divisor);
  }
  divideElements<T>(dst + done, src + done, count - done, divisor);
}

// Kernels provides `template <T, Op> static void reduce(void*, const void*, const void*,
// size_t)` and `template <T> static void divide(void*, const void*, size_t, int)`.
template <typename Kernels>
KernelTable makeKernelTable() {
  KernelTable table;
  for (int type = 0; type < loomNumTypes; ++type) {
    visitDataType(static_cast<loomDataType_t>(type), [&](auto typeTag) {
      using T = decltype(typeTag);
      table.divide[type] = &Kernels::template divide<T>;
      for (int op = 0; op < loomNumOps; ++op) {
        visitReduceOp<T>(static_cast<loomRedOp_t>(op), [&](auto opTag) {
          table.reduce[type][op] = &Kernels::template reduce<T, decltype(opTag)>;
        });
      }
    });
  }
  return table;
}

}  // namespace loom::kernels
