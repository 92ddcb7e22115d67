// SPDX-License-Identifier: Apache-2.0
// What every layer needs to know of a datatype or reduction op without knowing how it is
// reduced: its size and its name. The kernels (kernels/host/host_reduce.h) say which types
// they reduce and how.
#pragma once

#include <cstddef>

#include "loom.h"

namespace loom {

// Bytes per element; 0 for a value that is not a loomDataType_t. Inline: every call asks it
// several times on its way.
inline size_t typeSize(loomDataType_t type) {
  switch (type) {
    case loomInt8:
    case loomUint8:
    case loomFloat8e4m3:
    case loomFloat8e5m2:
      return 1;
    case loomFloat16:
    case loomBfloat16:
      return 2;
    case loomInt32:
    case loomUint32:
    case loomFloat32:
      return 4;
    case loomInt64:
    case loomUint64:
    case loomFloat64:
      return 8;
    default:
      return 0;
  }
}
// "float32", "bfloat16", ...; "unknown" for a value that is not a loomDataType_t.
const char* typeName(loomDataType_t type);
// "sum", "avg", ...; "unknown" for a value that is not a loomRedOp_t.
const char* opName(loomRedOp_t op);

}  // namespace loom
