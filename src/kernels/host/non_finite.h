// SPDX-License-Identifier: Apache-2.0
// Finding NaN and infinity in a buffer of any floating-point datatype, for LOOM_CHECK=2.
// Works on the bit patterns, so it is exact for the 16- and 8-bit formats too.
#pragma once

#include <cstddef>

#include "loom.h"

namespace loom::kernels {

// True for the datatypes that can hold NaN or infinity.
bool hasNonFinite(loomDataType_t type);
// Index of the first NaN or infinity among `count` elements, or `count` when there is none
// (always `count` for integer types).
size_t findNonFinite(loomDataType_t type, const void* data, size_t count);

}  // namespace loom::kernels
