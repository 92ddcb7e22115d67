// SPDX-License-Identifier: Apache-2.0
#include "base/datatype.h"

namespace loom {

const char* typeName(loomDataType_t type) {
  switch (type) {
    case loomInt8:
      return "int8";
    case loomUint8:
      return "uint8";
    case loomInt32:
      return "int32";
    case loomUint32:
      return "uint32";
    case loomInt64:
      return "int64";
    case loomUint64:
      return "uint64";
    case loomFloat16:
      return "float16";
    case loomFloat32:
      return "float32";
    case loomFloat64:
      return "float64";
    case loomBfloat16:
      return "bfloat16";
    case loomFloat8e4m3:
      return "float8e4m3";
    case loomFloat8e5m2:
      return "float8e5m2";
    default:
      return "unknown";
  }
}

const char* opName(loomRedOp_t op) {
  switch (op) {
    case loomSum:
      return "sum";
    case loomProd:
      return "prod";
    case loomMax:
      return "max";
    case loomMin:
      return "min";
    case loomAvg:
      return "avg";
    default:
      return "unknown";
  }
}

}  // namespace loom
