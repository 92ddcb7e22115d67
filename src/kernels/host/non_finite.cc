// SPDX-License-Identifier: Apache-2.0
#include "kernels/host/non_finite.h"

#include <cstdint>
#include <cstring>

namespace loom::kernels {
namespace {

// Exponent all ones: infinity or NaN in IEEE-style formats.
template <typename Bits>
size_t findExponentAllOnes(const void* data, size_t count, Bits exponentMask) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < count; ++i) {
    Bits bits;
    std::memcpy(&bits, bytes + i * sizeof(Bits), sizeof(Bits));
    if ((bits & exponentMask) == exponentMask) return i;
  }
  return count;
}

}  // namespace

bool hasNonFinite(loomDataType_t type) {
  switch (type) {
    case loomFloat16:
    case loomFloat32:
    case loomFloat64:
    case loomBfloat16:
    case loomFloat8e4m3:
    case loomFloat8e5m2:
      return true;
    default:
      return false;
  }
}

size_t findNonFinite(loomDataType_t type, const void* data, size_t count) {
  switch (type) {
    case loomFloat16:
      return findExponentAllOnes<uint16_t>(data, count, 0x7c00);
    case loomBfloat16:
      return findExponentAllOnes<uint16_t>(data, count, 0x7f80);
    case loomFloat32:
      return findExponentAllOnes<uint32_t>(data, count, 0x7f800000u);
    case loomFloat64:
      return findExponentAllOnes<uint64_t>(data, count, 0x7ff0000000000000ull);
    case loomFloat8e5m2:
      return findExponentAllOnes<uint8_t>(data, count, 0x7c);
    case loomFloat8e4m3: {
      // E4M3 (OCP "fn" variant) has no infinity; only S.1111.111 is NaN.
      const auto* bytes = static_cast<const uint8_t*>(data);
      for (size_t i = 0; i < count; ++i) {
        if ((bytes[i] & 0x7f) == 0x7f) return i;
      }
      return count;
    }
    default:
      return count;
  }
}

}  // namespace loom::kernels
