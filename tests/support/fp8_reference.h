// SPDX-License-Identifier: Apache-2.0
// fp8 for the tests, written from the format definitions (OCP 8-bit floating point) without
// the library's code, so the tests trust nothing of what they check:
//   e4m3: bias 7, 3 mantissa bits, no infinity, S.1111.111 is NaN, largest finite 448;
//   e5m2: bias 15, 2 mantissa bits, IEEE-like (infinity S.11111.00, NaN S.11111.xx).
// decode() gives every pattern's value as a double; exactBits() the pattern of a value that
// must be exact (a test bug otherwise); nearestBits() the rounding Loom documents: to nearest,
// ties to the even pattern, and a finite value beyond the largest finite value gives the largest
// finite value (CUDA's __NV_SATFINITE); infinity stays infinity in e5m2 and saturates in e4m3;
// NaN gives the sign-kept quiet NaN.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "loom.h"

namespace loom::test::fp8 {

struct Format {
  int exponentBits, mantissaBits, bias;
  uint8_t maxFinite;  // the largest finite magnitude's pattern
  bool infinities;
};

inline Format formatOf(loomDataType_t type) {
  if (type == loomFloat8e4m3) return Format{4, 3, 7, 0x7e, false};
  if (type == loomFloat8e5m2) return Format{5, 2, 15, 0x7b, true};
  throw std::logic_error("not an fp8 type");
}

inline bool isNan(loomDataType_t type, uint8_t bits) {
  const uint8_t magnitude = bits & 0x7f;
  return type == loomFloat8e4m3 ? magnitude == 0x7f : magnitude > 0x7c;
}

inline double decode(loomDataType_t type, uint8_t bits) {
  const Format f = formatOf(type);
  const double sign = (bits & 0x80) ? -1.0 : 1.0;
  const int exponent = (bits & 0x7f) >> f.mantissaBits;
  const int mantissa = bits & ((1 << f.mantissaBits) - 1);
  if (isNan(type, bits)) return std::nan("");
  if (f.infinities && exponent == (1 << f.exponentBits) - 1) return sign * HUGE_VAL;
  if (exponent == 0) return sign * std::ldexp(mantissa, 1 - f.bias - f.mantissaBits);
  return sign * std::ldexp((1 << f.mantissaBits) + mantissa, exponent - f.bias - f.mantissaBits);
}

inline double maxFinite(loomDataType_t type) { return decode(type, formatOf(type).maxFinite); }

// The values of the patterns 0 .. maxFinite (non-negative, finite, increasing), computed once.
inline const std::vector<double>& magnitudes(loomDataType_t type) {
  static const std::array<std::vector<double>, 2> tables = [] {
    std::vector<double> e4m3, e5m2;
    for (int bits = 0; bits <= 0x7e; ++bits)
      e4m3.push_back(decode(loomFloat8e4m3, static_cast<uint8_t>(bits)));
    for (int bits = 0; bits <= 0x7b; ++bits)
      e5m2.push_back(decode(loomFloat8e5m2, static_cast<uint8_t>(bits)));
    return std::array<std::vector<double>, 2>{e4m3, e5m2};
  }();
  return tables[type == loomFloat8e4m3 ? 0 : 1];
}

// The pattern of `value`, which must be exactly representable (else the test is wrong).
inline uint8_t exactBits(loomDataType_t type, double value) {
  const uint8_t sign = std::signbit(value) ? 0x80 : 0x00;
  if (std::isinf(value) && formatOf(type).infinities) return static_cast<uint8_t>(sign | 0x7c);
  const std::vector<double>& table = magnitudes(type);
  const auto found = std::lower_bound(table.begin(), table.end(), std::fabs(value));
  if (found == table.end() || *found != std::fabs(value)) {
    throw std::logic_error("test bug: " + std::to_string(value) + " is not exact in fp8 type " +
                           std::to_string(type));
  }
  return static_cast<uint8_t>(sign | (found - table.begin()));
}

// Round `value` to fp8 by searching the patterns, as Loom documents the conversion.
inline uint8_t nearestBits(loomDataType_t type, double value) {
  const uint8_t sign = std::signbit(value) ? 0x80 : 0x00;
  if (std::isnan(value)) return static_cast<uint8_t>(sign | (type == loomFloat8e4m3 ? 0x7f : 0x7e));
  if (std::isinf(value) && formatOf(type).infinities) return static_cast<uint8_t>(sign | 0x7c);
  const std::vector<double>& table = magnitudes(type);
  const double magnitude = std::fabs(value);
  if (magnitude >= table.back())
    return static_cast<uint8_t>(sign | (table.size() - 1));  // saturates
  // The patterns just below and above (magnitude < the largest, so `above` exists).
  const size_t above =
      static_cast<size_t>(std::upper_bound(table.begin(), table.end(), magnitude) - table.begin());
  const size_t below = above - 1;
  const double low = magnitude - table[below], high = table[above] - magnitude;
  const size_t chosen = low < high || (low == high && below % 2 == 0) ? below : above;
  return static_cast<uint8_t>(sign | chosen);
}

}  // namespace loom::test::fp8
