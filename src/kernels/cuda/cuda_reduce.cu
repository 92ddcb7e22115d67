// SPDX-License-Identifier: Apache-2.0
// CUDA reduction kernels: one grid-stride kernel template instantiated per (datatype, op) with
// the shared functors of reduce_ops.h, so the GPU computes exactly what the host kernels do.
#include "kernels/cuda/cuda_reduce.h"

#include <cstdint>
#include <string>

#include "base/error.h"
#include "kernels/reduce_ops.h"

namespace loom::kernels {
namespace {

constexpr unsigned kThreadsPerBlock = 256;
// Beyond this the kernels loop (grid-stride): 4096 blocks of 256 threads already fill every SM
// of an A100/H100/H200 many times over, and fewer, longer-lived threads amortize the index math.
constexpr size_t kMaxBlocks = 4096;
constexpr size_t kPackBytes = 16;

// 16 bytes of elements: one 128-bit load or store per operand, the widest a thread can issue.
template <typename T>
struct alignas(kPackBytes) Pack {
  static constexpr size_t kCount = kPackBytes / sizeof(T);
  T values[kCount];
};

// dst may alias a or b exactly: every element (or pack) is read and then written by the same
// thread, so the pointers are deliberately not __restrict__.
template <typename T, typename Op>
__global__ void reduceKernel(T* dst, const T* a, const T* b, size_t count, bool packed) {
  const Op op;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t thread = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  size_t packedCount = 0;
  if (packed) {
    const size_t packs = count / Pack<T>::kCount;
    auto* dstPacks = reinterpret_cast<Pack<T>*>(dst);
    const auto* aPacks = reinterpret_cast<const Pack<T>*>(a);
    const auto* bPacks = reinterpret_cast<const Pack<T>*>(b);
    for (size_t p = thread; p < packs; p += stride) {
      const Pack<T> lhs = aPacks[p];
      const Pack<T> rhs = bPacks[p];
      Pack<T> result;
#pragma unroll
      for (size_t k = 0; k < Pack<T>::kCount; ++k)
        result.values[k] = op(lhs.values[k], rhs.values[k]);
      dstPacks[p] = result;
    }
    packedCount = packs * Pack<T>::kCount;
  }
  for (size_t i = packedCount + thread; i < count; i += stride) dst[i] = op(a[i], b[i]);
}

template <typename T>
__global__ void divideKernel(T* dst, const T* src, size_t count, int divisor) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    dst[i] = divideBy(src[i], divisor);
  }
}

unsigned blocksFor(size_t threadsWanted) {
  const size_t blocks = (threadsWanted + kThreadsPerBlock - 1) / kThreadsPerBlock;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > kMaxBlocks ? kMaxBlocks : blocks));
}

void checkLaunch(const char* what) {
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    throw Error(loomUnhandledCudaError,
                std::string(what) + ": kernel launch failed: " + cudaGetErrorString(err));
  }
}

bool aligned(const void* pointer) { return reinterpret_cast<uintptr_t>(pointer) % kPackBytes == 0; }

template <typename T, typename Op>
void launchReduce(void* dst, const void* a, const void* b, size_t count, cudaStream_t stream) {
  // Packs need all three pointers 16-byte aligned; otherwise every element goes alone.
  const bool packed = aligned(dst) && aligned(a) && aligned(b);
  const size_t threadsWanted = packed ? count / Pack<T>::kCount + count % Pack<T>::kCount : count;
  reduceKernel<T, Op><<<blocksFor(threadsWanted), kThreadsPerBlock, 0, stream>>>(
      static_cast<T*>(dst), static_cast<const T*>(a), static_cast<const T*>(b), count, packed);
  checkLaunch("cudaReduce");
}

}  // namespace

void cudaReduce(loomDataType_t type, loomRedOp_t op, void* dst, const void* a, const void* b,
                size_t count, cudaStream_t stream) {
  bool opKnown = false;
  const bool typeKnown = visitDataType(type, [&](auto typeTag) {
    using T = decltype(typeTag);
    opKnown = visitReduceOp<T>(op, [&](auto opTag) {
      if (count > 0) launchReduce<T, decltype(opTag)>(dst, a, b, count, stream);
    });
  });
  if (!typeKnown || !opKnown) {
    throwArgument("cudaReduce: unsupported datatype " + std::to_string(static_cast<int>(type)) +
                  " or op " + std::to_string(static_cast<int>(op)));
  }
}

void cudaDivide(loomDataType_t type, void* dst, const void* src, size_t count, int divisor,
                cudaStream_t stream) {
  if (divisor < 1)
    throwArgument("cudaDivide: divisor must be >= 1, got " + std::to_string(divisor));
  const bool typeKnown = visitDataType(type, [&](auto typeTag) {
    using T = decltype(typeTag);
    if (count == 0) return;
    divideKernel<T><<<blocksFor(count), kThreadsPerBlock, 0, stream>>>(
        static_cast<T*>(dst), static_cast<const T*>(src), count, divisor);
    checkLaunch("cudaDivide");
  });
  if (!typeKnown) {
    throwArgument("cudaDivide: unsupported datatype " + std::to_string(static_cast<int>(type)));
  }
}

}  // namespace loom::kernels
