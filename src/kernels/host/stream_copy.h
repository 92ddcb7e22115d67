// SPDX-License-Identifier: Apache-2.0
// Copies that bypass the cache on the destination side (non-temporal stores). A normal store
// to a line that is not cached first reads it from memory (read-for-ownership); for outputs
// far larger than the cache that read is pure waste, a third more memory traffic for a copy.
// Used for large collective outputs only: a small output is better left in cache for its
// reader.
#pragma once

#include <cstddef>

namespace loom::kernels {

// dst[0, bytes) = src[0, bytes); the ranges must not overlap. Ends with a store fence, so a
// flag published (release) after it is ordered after the data.
void streamCopy(void* dst, const void* src, size_t bytes);

}  // namespace loom::kernels
