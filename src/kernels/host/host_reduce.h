// SPDX-License-Identifier: Apache-2.0
// Host reduction kernels: every datatype x op, vectorized, sharing the op definitions in
// reduce_ops.h with the CUDA kernels (fp8: the element loop itself vectorizes, float8.h).
#pragma once

#include <cstddef>

#include "base/datatype.h"
#include "loom.h"

namespace loom::kernels {

// True for the types the host kernels reduce (every loomDataType_t). Sizes and names are in
// base/datatype.h.
bool typeSupported(loomDataType_t type);

// dst[i] = a[i] op b[i] for i < count. dst may alias a or b (exactly, not partially).
// loomAvg reduces like loomSum; the division happens once at the end (divide()).
// float16/bfloat16/fp8 compute in float32 and round to nearest even (fp8 saturating, float8.h).
void reduce(loomDataType_t type, loomRedOp_t op, void* dst, const void* a, const void* b,
            size_t count);

// dst[i] = src[i] / divisor: avg's final step. Integers truncate toward zero (as NCCL).
void divide(loomDataType_t type, void* dst, const void* src, size_t count, int divisor);

}  // namespace loom::kernels
