// SPDX-License-Identifier: Apache-2.0
// The names of the CUDA kernels, for both sides of the fatbin: cuda_kernels.cu defines one
// extern "C" __global__ function per name, and the runtime (cuda_kernel_module.cc) looks each up
// by the same name with cuModuleGetFunction. Both expand the same lists, so a kernel can neither
// be missing nor misspelt on one side only.
//
//   loom_reduce_<type>_<op>       kernels/device_kernels.h's reduceBody (avg reduces as sum)
//   loom_average_<type>           averageBody
//   loom_finish_average_<type>    finishAverageBody
//   loom_premultiply_<type>       premultiplyBody
#pragma once

// X(datatype enumerator, short name, C++ value type). The value types are only named where the
// list is expanded under nvcc; host code passes an X that ignores them.
#define LOOM_CUDA_KERNEL_TYPES(X)                        \
  X(loomInt8, i8, int8_t)                                \
  X(loomUint8, u8, uint8_t)                              \
  X(loomInt32, i32, int32_t)                             \
  X(loomUint32, u32, uint32_t)                           \
  X(loomInt64, i64, int64_t)                             \
  X(loomUint64, u64, uint64_t)                           \
  X(loomFloat16, f16, ::loom::kernels::Float16)          \
  X(loomFloat32, f32, float)                             \
  X(loomFloat64, f64, double)                            \
  X(loomBfloat16, bf16, ::loom::kernels::Bfloat16)       \
  X(loomFloat8e4m3, f8e4m3, ::loom::kernels::Float8e4m3) \
  X(loomFloat8e5m2, f8e5m2, ::loom::kernels::Float8e5m2)

// X(..., reduction enumerator, short name, operator template of kernels/reduce_ops.h): the
// operators with a reduce kernel of their own. loomAvg has none: it reduces with sum's.
// The leading arguments are passed through, so a type list can expand it once per type.
#define LOOM_CUDA_KERNEL_OPS(X, ...)   \
  X(__VA_ARGS__, loomSum, sum, Sum)    \
  X(__VA_ARGS__, loomProd, prod, Prod) \
  X(__VA_ARGS__, loomMax, max, Max)    \
  X(__VA_ARGS__, loomMin, min, Min)
