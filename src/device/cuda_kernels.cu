// SPDX-License-Identifier: Apache-2.0
// The CUDA kernels: one extern "C" __global__ wrapper per (kind, datatype, op) around the
// bodies of kernels/device_kernels.h, which the emulated GPU runs too. Compiled by nvcc into a
// fatbin only (no host code; src/device/meson.build), which libloom embeds and loads with
// cuModuleLoadData at first use, so the library links no CUDA library. extern "C" keeps the
// names unmangled: the runtime looks them up as text (cuda_kernel_names.h).
//
// Built with --fmad=false and without fast-math: a fused multiply-add rounds once where the
// host rounds twice (averageBody's local * scale + incoming * scale), and the results must be
// the host kernels' bits.
#include <cstddef>
#include <cstdint>

#include "device/cuda_kernel_names.h"
#include "kernels/device_kernels.h"

namespace {

using loom::kernels::device::KernelArgs;
using loom::kernels::device::kThreadsPerBlock;

// The grid as device_kernels.h's bodies see it: a thread index and a thread count, in size_t
// so that the grid-stride loops never overflow on large buffers.
__device__ inline size_t threadIndex() { return size_t{blockIdx.x} * blockDim.x + threadIdx.x; }
__device__ inline size_t threadCount() { return size_t{gridDim.x} * blockDim.x; }

}  // namespace

// __launch_bounds__: every launch uses kThreadsPerBlock threads (launchShape), so ptxas may
// budget registers for exactly that many.
#define LOOM_CUDA_KERNEL(name, body)                                                     \
  extern "C" __global__ void __launch_bounds__(kThreadsPerBlock) name(KernelArgs args) { \
    body(threadIndex(), threadCount(), args);                                            \
  }

#define LOOM_CUDA_REDUCE_KERNEL(typeName, T, loomOp, opName, Op) \
  LOOM_CUDA_KERNEL(loom_reduce_##typeName##_##opName,            \
                   (loom::kernels::device::reduceBody<T, loom::kernels::Op<T>>))

#define LOOM_CUDA_TYPE_KERNELS(loomType, typeName, T)                                           \
  LOOM_CUDA_KERNEL_OPS(LOOM_CUDA_REDUCE_KERNEL, typeName, T)                                    \
  LOOM_CUDA_KERNEL(loom_average_##typeName, loom::kernels::device::averageBody<T>)              \
  LOOM_CUDA_KERNEL(loom_finish_average_##typeName, loom::kernels::device::finishAverageBody<T>) \
  LOOM_CUDA_KERNEL(loom_premultiply_##typeName, loom::kernels::device::premultiplyBody<T>)

LOOM_CUDA_KERNEL_TYPES(LOOM_CUDA_TYPE_KERNELS)
