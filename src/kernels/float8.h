// SPDX-License-Identifier: Apache-2.0
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
// Integer bit manipulation, and for subnormal results an exact float scaling whose sum with 2^23
// the float unit rounds to nearest even (the default rounding mode, as every float operation of
// a reduction assumes); the same code on host and GPU (LOOM_HOST_DEVICE), so identical bits.
// Written without branches so the kernels' loops vectorize. Checked against CUDA's own host
// conversion (cuda_fp8.h) for every finite float: identical (tests/unit/test_float8_cuda.cc).
#pragma once

#include <cstdint>

#include "kernels/half_float.h"

namespace loom::kernels {

namespace detail {

// cond ? a : b as bit operations. Plain selects let the compiler move a float operation that
// only one side needs into a branch, and then (-ftrapping-math) it will not vectorize the loop:
// this way both sides are always computed and only integers are combined.
LOOM_HOST_DEVICE inline uint32_t select(bool cond, uint32_t a, uint32_t b) {
  return b ^ ((a ^ b) & (0u - static_cast<uint32_t>(cond)));
}

// The magnitude code (exponent and mantissa, no sign) of a format with kMantissa mantissa bits,
// exponent bias kBias and largest finite code kMaxFinite, for a float magnitude `magnitude`
// (float bits without the sign; finite or infinite, not NaN): rounded to nearest even, clamped
// to kMaxFinite (infinity too). Both cases are computed and one is selected, without branches,
// so that the kernels' element loops vectorize (host_kernel_table.h).
template <uint32_t kBias, uint32_t kMantissa, uint32_t kMaxFinite>
LOOM_HOST_DEVICE inline uint32_t roundToFloat8(uint32_t magnitude) {
  constexpr uint32_t kDropped = 23 - kMantissa;         // float mantissa bits rounded away
  constexpr uint32_t kMinNormal = (128 - kBias) << 23;  // 2^(1 - bias)
  // Normal result: rebias the exponent (127 -> kBias) and round the dropped bits; a carry out
  // of the mantissa bumps the exponent, as it should. Infinity and huge values land far above
  // kMaxFinite (no 32-bit overflow: magnitude <= 0x7f800000). Below kMinNormal the
  // subtraction wraps; that value is not selected.
  const uint32_t rebiased = magnitude - ((127 - kBias) << 23);
  uint32_t normal =
      (rebiased + ((1u << (kDropped - 1)) - 1) + ((rebiased >> kDropped) & 1u)) >> kDropped;
  normal = select(normal < kMaxFinite, normal, kMaxFinite);
  // Subnormal result: the value in units of the smallest subnormal 2^(1 - bias - mantissa)
  // (an exact scaling by a power of two), rounded to an integer by float addition itself:
  // adding 2^23 leaves no fraction bits, and it rounds to nearest even. The integer is then
  // the low bits of the sum; 1 << kMantissa, the smallest normal, comes out correctly encoded.
  // (A fused multiply-add gives the same: the product is exact.)
  constexpr float kUnitsPerValue = static_cast<float>(1u << (kBias + kMantissa - 1));
  const float units = bitsToFloat(magnitude) * kUnitsPerValue + 8388608.0f;
  const uint32_t subnormal = floatToBits(units) - 0x4b000000u;
  return select(magnitude >= kMinNormal, normal, subnormal);
}

}  // namespace detail

// The tests check every pattern, and every pair of patterns through each op and instruction-set
// variant (the vectorized and the scalar code).
struct Float8e4m3 {
  uint8_t bits;

  LOOM_HOST_DEVICE static Float8e4m3 fromBits(uint8_t raw) { return Float8e4m3{raw}; }
  LOOM_HOST_DEVICE static Float8e4m3 fromFloat(float value) {
    const uint32_t x = floatToBits(value);
    const uint32_t magnitude = x & 0x7fffffffu;
    const uint32_t rounded = detail::roundToFloat8<7, 3, 0x7e>(magnitude);
    const uint32_t code =
        detail::select(magnitude > 0x7f800000u, 0x7fu, rounded);  // NaN: the one NaN
    return fromBits(static_cast<uint8_t>(((x >> 24) & 0x80u) | code));
  }
  LOOM_HOST_DEVICE float toFloat() const {
    const uint32_t sign = uint32_t{bits & 0x80u} << 24;
    const uint32_t magnitude = bits & 0x7fu;
    // Normal: exponent + (127 - 7), mantissa to the top of float's. Zero or subnormal
    // (exponent 0): mantissa * 2^-9, exact. NaN: a quiet one.
    const uint32_t normal = (magnitude << 20) + (120u << 23);
    const uint32_t subnormal =
        floatToBits(static_cast<float>(static_cast<int32_t>(magnitude)) * 0.001953125f);
    uint32_t result = detail::select(magnitude < 0x08u, subnormal, normal);
    result = detail::select(magnitude == 0x7fu, 0x7ff00000u, result);
    return bitsToFloat(sign | result);
  }
};

struct Float8e5m2 {
  uint8_t bits;

  LOOM_HOST_DEVICE static Float8e5m2 fromBits(uint8_t raw) { return Float8e5m2{raw}; }
  LOOM_HOST_DEVICE static Float8e5m2 fromFloat(float value) {
    const uint32_t x = floatToBits(value);
    const uint32_t magnitude = x & 0x7fffffffu;
    // NaN: the top two payload bits, the quiet one set if both were zero (never infinity).
    const uint32_t payload = (magnitude >> 21) & 0x03u;
    const uint32_t nan = 0x7cu | payload | (static_cast<uint32_t>(payload == 0) << 1);
    uint32_t code = detail::roundToFloat8<15, 2, 0x7b>(magnitude);
    code =
        detail::select(magnitude == 0x7f800000u, 0x7cu, code);  // infinity is no overflow: it stays
    code = detail::select(magnitude > 0x7f800000u, nan, code);
    return fromBits(static_cast<uint8_t>(((x >> 24) & 0x80u) | code));
  }
  LOOM_HOST_DEVICE float toFloat() const {
    const uint32_t sign = uint32_t{bits & 0x80u} << 24;
    const uint32_t magnitude = bits & 0x7fu;
    // Normal: exponent + (127 - 15). Zero or subnormal: mantissa * 2^-16, exact. Exponent all
    // ones: infinity or NaN, payload kept as it is (nothing quieted).
    const uint32_t normal = (magnitude << 21) + (112u << 23);
    const uint32_t subnormal =
        floatToBits(static_cast<float>(static_cast<int32_t>(magnitude)) * 1.52587890625e-5f);
    uint32_t result = detail::select(magnitude < 0x04u, subnormal, normal);
    result = detail::select(magnitude >= 0x7cu, 0x7f800000u | ((magnitude & 0x03u) << 21), result);
    return bitsToFloat(sign | result);
  }
};

static_assert(sizeof(Float8e4m3) == 1 && sizeof(Float8e5m2) == 1, "8-bit storage types");

}  // namespace loom::kernels
