// 8-bit floating point storage types (OCP 8-bit floating point, as nccl.h's ncclFloat8e4m3 and
// ncclFloat8e5m2 and CUDA's __nv_fp8_e4m3 / __nv_fp8_e5m2):
//   Float8e4m3: 1 sign, 4 exponent bits (bias 7), 3 mantissa bits. No infinities; S.1111.111
//               is NaN, so the largest finite value is 448 (S.1111.110). Subnormals down to 2^-9.
//   Float8e5m2: 1 sign, 5 exponent bits (bias 15), 2 mantissa bits: IEEE-like (the top byte of
//               a binary16), with infinities and NaNs. Largest finite 57344, subnormals to 2^-16.
// Like the 16-bit types (half_float.h) they only store; arithmetic happens in float32
// (reduce_ops.h), and fromFloat() is an operation's single rounding.
//
// float -> fp8 rounds to nearest, ties to even, with gradual underflow, and *saturates*: a finite
// value beyond the largest finite one becomes +-448 / +-57344. That is what CUDA's __nv_fp8_*
// constructors do (__NV_SATFINITE, the cvt.rn.satfinite instruction), and so what NCCL's fp8
// reductions give, since they convert their results that way. Rounding is decided as if the
// exponent had no upper bound, then clamped: 464 (the tie above 448) rounds to 448 anyway, and
// 61440 (the tie above 57344, odd) rounds up and is clamped to 57344.
// Infinity is not an overflow: e5m2 keeps it (so an infinite input stays infinite through a
// reduction, as in the other float types; CUDA's satfinite conversion would give 57344), and
// e4m3, which has none, takes its largest finite value, as satfinite does. Finite fp8 inputs
// never produce an infinity in float32 (448 * 448 and 57344 * 57344 are far below its range).
// A NaN stays a NaN with its sign: e4m3 has one (S.1111.111); e5m2 keeps the top two payload
// bits, with the quiet bit set if both were zero (so it cannot turn into an infinity).
// fp8 -> float is exact for all 256 patterns, NaN payloads included (nothing is quieted), so
// every pattern round-trips through float unchanged.
//
// Pure integer bit manipulation, LOOM_HOST_DEVICE: host and CUDA kernels give identical bits.
#pragma once

#include <cstdint>

#include "kernels/half_float.h"

namespace loom::kernels {

namespace detail {

// The magnitude code (exponent and mantissa, no sign) of a format with kMantissa mantissa bits
// and exponent bias kBias for a float magnitude `magnitude` (float bits without the sign; finite
// or infinite, not NaN), rounded to nearest even and clamped to kMaxFinite (infinity too).
template <uint32_t kBias, uint32_t kMantissa, uint32_t kMaxFinite>
LOOM_HOST_DEVICE inline uint8_t roundToFloat8(uint32_t magnitude) {
  constexpr uint32_t kDropped = 23 - kMantissa;         // float mantissa bits rounded away
  constexpr uint32_t kMinNormal = (128 - kBias) << 23;  // 2^(1 - bias)
  constexpr uint32_t kHalfMinSubnormal = (127 - kBias - kMantissa) << 23;  // 2^(-bias-mantissa)
  if (magnitude >= kMinNormal) {
    // Rebias the exponent (127 -> kBias) and round the dropped bits; a carry out of the
    // mantissa bumps the exponent, as it should. Infinity and huge values land far above
    // kMaxFinite (no 32-bit overflow: magnitude <= 0x7f800000) and are clamped.
    const uint32_t rebiased = magnitude - ((127 - kBias) << 23);
    const uint32_t rounded =
        (rebiased + ((1u << (kDropped - 1)) - 1) + ((rebiased >> kDropped) & 1u)) >> kDropped;
    return static_cast<uint8_t>(rounded > kMaxFinite ? kMaxFinite : rounded);
  }
  // At most half the smallest subnormal: ties to even give zero.
  if (magnitude <= kHalfMinSubnormal) return 0;
  // Subnormal result in units of the smallest subnormal 2^(1 - bias - mantissa): the value is
  // significand * 2^(exponent - 150), so shift the 24-bit significand right by
  // (151 - bias - mantissa) - exponent and round the bits shifted out. A result of
  // 1 << kMantissa is the smallest normal, correctly encoded.
  const uint32_t exponent = magnitude >> 23;
  const uint32_t significand = (magnitude & 0x007fffffu) | 0x00800000u;
  const uint32_t shift = (151 - kBias - kMantissa) - exponent;
  uint32_t result = significand >> shift;
  const uint32_t remainder = significand & ((1u << shift) - 1u);
  const uint32_t halfway = 1u << (shift - 1u);
  if (remainder > halfway || (remainder == halfway && (result & 1u))) ++result;
  return static_cast<uint8_t>(result);
}

}  // namespace detail

struct Float8e4m3 {
  uint8_t bits;

  LOOM_HOST_DEVICE static Float8e4m3 fromBits(uint8_t raw) { return Float8e4m3{raw}; }
  LOOM_HOST_DEVICE static Float8e4m3 fromFloat(float value) {
    const uint32_t x = floatToBits(value);
    const auto sign = static_cast<uint8_t>((x >> 24) & 0x80u);
    const uint32_t magnitude = x & 0x7fffffffu;
    if (magnitude > 0x7f800000u) return fromBits(static_cast<uint8_t>(sign | 0x7fu));  // the NaN
    return fromBits(static_cast<uint8_t>(sign | detail::roundToFloat8<7, 3, 0x7e>(magnitude)));
  }
  LOOM_HOST_DEVICE float toFloat() const {
    const uint32_t sign = uint32_t{bits & 0x80u} << 24;
    const uint32_t exponent = (bits >> 3) & 0x0fu;
    const uint32_t mantissa = bits & 0x07u;
    if ((bits & 0x7fu) == 0x7fu) return bitsToFloat(sign | 0x7ff00000u);  // NaN (quiet)
    if (exponent == 0) {
      // Zero or subnormal: mantissa * 2^-9, exact (a normal float for mantissa != 0).
      return bitsToFloat(sign | floatToBits(static_cast<float>(mantissa) * 0.001953125f));
    }
    return bitsToFloat(sign | ((exponent + 120u) << 23) | (mantissa << 20));
  }
};

struct Float8e5m2 {
  uint8_t bits;

  LOOM_HOST_DEVICE static Float8e5m2 fromBits(uint8_t raw) { return Float8e5m2{raw}; }
  LOOM_HOST_DEVICE static Float8e5m2 fromFloat(float value) {
    const uint32_t x = floatToBits(value);
    const auto sign = static_cast<uint8_t>((x >> 24) & 0x80u);
    const uint32_t magnitude = x & 0x7fffffffu;
    if (magnitude > 0x7f800000u) {  // NaN: the top two payload bits, never an empty payload
      uint32_t payload = (magnitude >> 21) & 0x03u;
      if (payload == 0) payload = 0x02u;
      return fromBits(static_cast<uint8_t>(sign | 0x7cu | payload));
    }
    if (magnitude == 0x7f800000u) return fromBits(static_cast<uint8_t>(sign | 0x7cu));  // infinity
    return fromBits(static_cast<uint8_t>(sign | detail::roundToFloat8<15, 2, 0x7b>(magnitude)));
  }
  LOOM_HOST_DEVICE float toFloat() const {
    const uint32_t sign = uint32_t{bits & 0x80u} << 24;
    const uint32_t exponent = (bits >> 2) & 0x1fu;
    const uint32_t mantissa = bits & 0x03u;
    if (exponent == 0x1fu) return bitsToFloat(sign | 0x7f800000u | (mantissa << 21));  // inf, NaN
    if (exponent == 0) {
      // Zero or subnormal: mantissa * 2^-16, exact.
      return bitsToFloat(sign | floatToBits(static_cast<float>(mantissa) * 1.52587890625e-5f));
    }
    return bitsToFloat(sign | ((exponent + 112u) << 23) | (mantissa << 21));
  }
};

static_assert(sizeof(Float8e4m3) == 1 && sizeof(Float8e5m2) == 1, "8-bit storage types");

}  // namespace loom::kernels
