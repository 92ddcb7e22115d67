// Host reduction kernels: every datatype x op, vectorized, sharing the op definitions in
// reduce_ops.h with the CUDA kernels.
#pragma once

#include <cstddef>

#include "loom.h"

namespace loom::kernels {

// Bytes per element; 0 for an unknown type.
size_t typeSize(loomDataType_t type);
// True for the types collectives accept (all but fp8 in this release).
bool typeSupported(loomDataType_t type);
const char* typeName(loomDataType_t type);
const char* opName(loomRedOp_t op);

// dst[i] = a[i] op b[i] for i < count. dst may alias a or b (exactly, not partially).
// loomAvg reduces like loomSum; the division happens once at the end (divide()).
// float16/bfloat16 compute in float32 and round to nearest even.
void reduce(loomDataType_t type, loomRedOp_t op, void* dst, const void* a, const void* b,
            size_t count);

// dst[i] = src[i] / divisor: avg's final step. Integers truncate toward zero (as NCCL).
void divide(loomDataType_t type, void* dst, const void* src, size_t count, int divisor);

}  // namespace loom::kernels
