// SPDX-License-Identifier: Apache-2.0
// The reductions that see every rank's input at once, and the averaging steps of the ring.
//
// reduceRanks: each element is reduced over sources[0..n-1] in that (canonical rank) order
// in a wide accumulator (float32 for the 16- and 8-bit floats and float32, float64 for float64,
// the type itself for integers) and rounded once. avg: integers sum then divide (truncating);
// floats use the scaled sum of reduce_ops.h, so a representable mean never overflows. A NaN
// result is the type's canonical quiet NaN (positive, payload 0), so the bits do not depend
// on which operand carried a payload nor on how the compiler ordered commutative operands.
// The direct engine uses it for its one-shot calls, and deterministic mode (every path) for
// all calls: the result is then the same bits for any message size, position or algorithm.
//
// reduceAverage / finishAverage: avg on a ring or chain, where partial sums travel in the
// datatype and every hop rounds. Each rank's own input (and an incoming raw input, the first
// hop of a chunk) is scaled by averageScale(n) when it enters the sum; the owner divides by
// averageDivisor(n) at the end. Integers: a plain sum, then the truncating division.
#pragma once

#include <cstddef>

#include "loom.h"

namespace loom::kernels {

// float16, bfloat16 and the fp8 types: stored narrow and accumulated in float32 here, so
// reduceRanks rounds their result once where pairwise reduction would round at every rank.
bool isNarrowFloat(loomDataType_t type);

void reduceRanks(loomDataType_t type, loomRedOp_t op, void* dst, const void* const* sources, int nranks,
                 size_t count);

// dst = local * scale + (incomingRaw ? incoming * scale : incoming), rounded once.
void reduceAverage(loomDataType_t type, void* dst, const void* local, const void* incoming, size_t count,
                   int nranks, bool incomingRaw);

// dst = dst / averageDivisor(n) (floats), dst / n (integers).
void finishAverage(loomDataType_t type, void* dst, size_t count, int nranks);

}  // namespace loom::kernels
