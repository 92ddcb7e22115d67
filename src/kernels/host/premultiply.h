// SPDX-License-Identifier: Apache-2.0
// PreMulSum's local step (loomRedOpCreatePreMulSum): each rank multiplies its own input by its
// own scalar before the sum, as nccl.h defines the operator ("pre-multiplies input values by a
// given scalar locally before reducing them with peer values via summation"). The product is
// the datatype's Prod (reduce_ops.h): integers wrap, float32/float64 round in their precision,
// float16/bfloat16/fp8 compute in float32 and round once (fp8 saturating) - the rounding NCCL's
// preOp applies too. The sum that follows is a plain loomSum on whatever path the call takes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "loom.h"

namespace loom::kernels {

// dst[i] = scalar * src[i] for i < count; the scalar's bytes are the first typeSize(type) bytes
// of `scalarBits` (algorithms/call_spec.h, PreMulSum). dst may alias src exactly.
void premultiply(loomDataType_t type, void* dst, const void* src, size_t count,
                 uint64_t scalarBits);

}  // namespace loom::kernels
