// SPDX-License-Identifier: Apache-2.0
// CUDA reduction kernels: the GPU counterpart of host_reduce.h, built from the same operator
// definitions (reduce_ops.h), so GPU and host results are identical bit for bit (NaN payloads
// of sum/prod aside). Lives in the static library loom_cuda_kernels, which libloom does not
// link: only CUDA-aware code (tests, future device transports) uses it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "loom.h"

namespace loom::kernels {

// Enqueues dst[i] = a[i] op b[i] for i < count on stream; pointers are device memory. dst may
// alias a or b exactly. avg reduces like sum (cudaDivide is its final step). Throws
// loom::Error: loomInvalidArgument for an unsupported type/op, loomUnhandledCudaError if the
// launch fails. Nothing is launched for count == 0.
void cudaReduce(loomDataType_t type, loomRedOp_t op, void* dst, const void* a, const void* b,
                size_t count, cudaStream_t stream);

// Enqueues dst[i] = src[i] / divisor (divisor >= 1; integers truncate toward zero).
void cudaDivide(loomDataType_t type, void* dst, const void* src, size_t count, int divisor,
                cudaStream_t stream);

}  // namespace loom::kernels
