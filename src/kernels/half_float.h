// SPDX-License-Identifier: Apache-2.0
// 16-bit floating point storage types: Float16 (IEEE 754 binary16) and Bfloat16 (the top half
// of a binary32). They only store; arithmetic happens in float32 (see reduce_ops.h), so each
// conversion here is the single rounding step of an operation.
//
// float -> 16 bit rounds to nearest, ties to even, with gradual underflow (subnormal results),
// overflow to infinity, and NaN kept NaN and made quiet (payload truncated, quiet bit set).
// Float16 -> float is exact; a signaling NaN comes out quiet, as the x86 F16C instruction
// vcvtph2ps does, so the scalar and vector host paths agree bit for bit.
// Bfloat16 -> float is the exact 16-bit shift (a signaling NaN stays signaling until the next
// float operation or conversion back quiets it).
//
// The same code runs on the host and in CUDA kernels (pure integer bit manipulation), so host
// and device give identical bits.
#pragma once

#include <cstdint>
#include <cstring>

// Functions marked LOOM_HOST_DEVICE compile for the host and, under nvcc, for the GPU too.
#ifndef LOOM_HOST_DEVICE
#if defined(__CUDACC__)
#define LOOM_HOST_DEVICE __host__ __device__
#else
#define LOOM_HOST_DEVICE
#endif
#endif

namespace loom::kernels {

LOOM_HOST_DEVICE inline uint32_t floatToBits(float value) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(value);
#else
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
#endif
}

LOOM_HOST_DEVICE inline float bitsToFloat(uint32_t bits) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
#endif
}

// IEEE 754 binary16: 1 sign bit, 5 exponent bits (bias 15), 10 mantissa bits.
struct Float16 {
  uint16_t bits;

  LOOM_HOST_DEVICE static Float16 fromBits(uint16_t raw) { return Float16{raw}; }
  LOOM_HOST_DEVICE static Float16 fromFloat(float value);
  LOOM_HOST_DEVICE float toFloat() const;
};

// bfloat16: 1 sign bit, 8 exponent bits (bias 127), 7 mantissa bits.
struct Bfloat16 {
  uint16_t bits;

  LOOM_HOST_DEVICE static Bfloat16 fromBits(uint16_t raw) { return Bfloat16{raw}; }
  LOOM_HOST_DEVICE static Bfloat16 fromFloat(float value);
  LOOM_HOST_DEVICE float toFloat() const { return bitsToFloat(uint32_t{bits} << 16); }
};

static_assert(sizeof(Float16) == 2 && sizeof(Bfloat16) == 2, "16-bit storage types");

LOOM_HOST_DEVICE inline Float16 Float16::fromFloat(float value) {
  const uint32_t x = floatToBits(value);
  const auto sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t magnitude = x & 0x7fffffffu;

  if (magnitude > 0x7f800000u) {  // NaN: keep the top payload bits, force the quiet bit
    return fromBits(static_cast<uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x03ffu)));
  }
  // 65520 is halfway between the largest half (65504, odd mantissa) and 2^16: ties to even
  // round up, so it and everything above (infinity included) become infinity.
  if (magnitude >= 0x477ff000u) return fromBits(static_cast<uint16_t>(sign | 0x7c00u));

  if (magnitude >= 0x38800000u) {  // >= 2^-14: a normal half
    // Rebias the exponent (127 -> 15), then round away the 13 extra mantissa bits. A carry out
    // of the mantissa correctly bumps the exponent.
    const uint32_t rebiased = magnitude - 0x38000000u;
    const uint32_t rounded = (rebiased + 0x0fffu + ((rebiased >> 13) & 1u)) >> 13;
    return fromBits(static_cast<uint16_t>(sign | rounded));
  }
  // At most 2^-25 (halfway between 0 and the smallest subnormal 2^-24): ties to even give 0.
  if (magnitude <= 0x33000000u) return fromBits(sign);

  // Subnormal result in units of 2^-24: value = significand * 2^(exponent - 150), so shift the
  // 24-bit significand right by 126 - exponent (14..24) and round the bits shifted out.
  const uint32_t exponent = magnitude >> 23;
  const uint32_t significand = (magnitude & 0x007fffffu) | 0x00800000u;
  const uint32_t shift = 126u - exponent;
  uint32_t result = significand >> shift;
  const uint32_t remainder = significand & ((1u << shift) - 1u);
  const uint32_t halfway = 1u << (shift - 1u);
  if (remainder > halfway || (remainder == halfway && (result & 1u))) ++result;
  return fromBits(static_cast<uint16_t>(sign | result));  // result 0x400 is the smallest normal
}

LOOM_HOST_DEVICE inline float Float16::toFloat() const {
  const uint32_t sign = uint32_t{bits & 0x8000u} << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  const uint32_t mantissa = bits & 0x03ffu;

  if (exponent == 0x1fu) {  // infinity, or NaN made quiet
    const uint32_t quiet = mantissa != 0 ? 0x00400000u : 0u;
    return bitsToFloat(sign | 0x7f800000u | quiet | (mantissa << 13));
  }
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24, exact in float (a normal float for mantissa != 0).
    const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
    return bitsToFloat(sign | floatToBits(magnitude));
  }
  return bitsToFloat(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

LOOM_HOST_DEVICE inline Bfloat16 Bfloat16::fromFloat(float value) {
  const uint32_t x = floatToBits(value);
  if ((x & 0x7fffffffu) > 0x7f800000u) {  // NaN: truncate the payload, force the quiet bit
    return fromBits(static_cast<uint16_t>((x >> 16) | 0x0040u));
  }
  // Round to nearest even on the 16 discarded bits; a carry may run into the exponent, which is
  // right (up to infinity for values past the largest bfloat16).
  return fromBits(static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16));
}

}  // namespace loom::kernels
