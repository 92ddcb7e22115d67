// SPDX-License-Identifier: Apache-2.0
// bfloat16 as the trainer's wire format: the top 16 bits of an IEEE float32, rounded to
// nearest even. Gradients travel as bf16 (half the bytes); master weights stay float32.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace ddp {

inline uint16_t toBf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);  // quiet NaN
  bits += 0x7fffu + ((bits >> 16) & 1u);  // round to nearest, ties to even
  return static_cast<uint16_t>(bits >> 16);
}

inline float fromBf16(uint16_t value) {
  const uint32_t bits = static_cast<uint32_t>(value) << 16;
  float result;
  std::memcpy(&result, &bits, sizeof result);
  return result;
}

inline void toBf16(const float* in, uint16_t* out, size_t count) {
  for (size_t i = 0; i < count; ++i) out[i] = toBf16(in[i]);
}

inline void fromBf16(const uint16_t* in, float* out, size_t count) {
  for (size_t i = 0; i < count; ++i) out[i] = fromBf16(in[i]);
}

// The float nearest to value that bf16 can represent (the weights bf16 compute sees).
inline float roundToBf16(float value) { return fromBf16(toBf16(value)); }

}  // namespace ddp
