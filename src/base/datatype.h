// What every layer needs to know of a datatype or reduction op without knowing how it is
// reduced: its size and its name. The kernels (kernels/host/host_reduce.h) say which types
// they reduce and how.
#pragma once

#include <cstddef>

#include "loom.h"

namespace loom {

// Bytes per element; 0 for a value that is not a loomDataType_t.
size_t typeSize(loomDataType_t type);
// "float32", "bfloat16", ...; "unknown" for a value that is not a loomDataType_t.
const char* typeName(loomDataType_t type);
// "sum", "avg", ...; "unknown" for a value that is not a loomRedOp_t.
const char* opName(loomRedOp_t op);

}  // namespace loom
