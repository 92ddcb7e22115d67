// SPDX-License-Identifier: Apache-2.0
// Float16/Bfloat16 conversions: exhaustive over all 16-bit patterns, and float -> 16 bit
// rounding checked against an independent nearest-value search (and, where the CPU has F16C,
// against the hardware converter).
#include "kernels/half_float.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace loom::kernels {
namespace {

bool isNan16(uint16_t bits, int exponentBits) {
  const int mantissaBits = 15 - exponentBits;
  const uint16_t exponentMask = static_cast<uint16_t>(((1u << exponentBits) - 1) << mantissaBits);
  return (bits & exponentMask) == exponentMask && (bits & ((1u << mantissaBits) - 1)) != 0;
}
bool isHalfNan(uint16_t bits) { return isNan16(bits, 5); }
bool isBfloatNan(uint16_t bits) { return isNan16(bits, 8); }
bool isHalfQuietNan(uint16_t bits) { return isHalfNan(bits) && (bits & 0x0200u); }
bool isBfloatQuietNan(uint16_t bits) { return isBfloatNan(bits) && (bits & 0x0040u); }
bool isFloatQuietNan(float value) {
  return std::isnan(value) && (floatToBits(value) & 0x00400000u);
}

// The value of a binary16 pattern, decoded by arithmetic (independent of the bit tricks).
double halfValue(uint16_t bits) {
  const double sign = (bits & 0x8000u) ? -1.0 : 1.0;
  const int exponent = (bits >> 10) & 0x1f;
  const int mantissa = bits & 0x3ff;
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  if (exponent == 31) return mantissa ? std::nan("") : sign * HUGE_VAL;
  return sign * std::ldexp(1024 + mantissa, exponent - 25);
}

// Independent round-to-nearest-even: binary search the ordered positive finite patterns
// (0 .. maxFinite), treating the pattern after the largest finite value as the next power of
// two (which is where IEEE overflow rounding puts infinity).
uint16_t nearestPattern(float value, uint16_t maxFinite, uint16_t infinity, uint16_t signBit,
                        double (*decode)(uint16_t), double overflowValue) {
  const uint16_t sign = std::signbit(value) ? signBit : 0;
  const double magnitude = std::fabs(static_cast<double>(value));
  if (std::isinf(value)) return sign | infinity;
  uint32_t lo = 0, hi = maxFinite;  // largest pattern with decode <= magnitude
  while (lo < hi) {
    const uint32_t mid = (lo + hi + 1) / 2;
    if (decode(static_cast<uint16_t>(mid)) <= magnitude) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  const double below = decode(static_cast<uint16_t>(lo));
  const double above = lo == maxFinite ? overflowValue : decode(static_cast<uint16_t>(lo + 1));
  const double downDistance = magnitude - below, upDistance = above - magnitude;
  uint32_t result = lo;
  if (upDistance < downDistance || (upDistance == downDistance && (lo & 1u))) result = lo + 1;
  if (result > maxFinite) return sign | infinity;
  return static_cast<uint16_t>(sign | result);
}

uint16_t referenceHalf(float value) {
  return nearestPattern(value, 0x7bff, 0x7c00, 0x8000, halfValue, 65536.0);
}

double bfloatValue(uint16_t bits) { return bitsToFloat(uint32_t{bits} << 16); }
uint16_t referenceBfloat(float value) {
  return nearestPattern(value, 0x7f7f, 0x7f80, 0x8000, bfloatValue, std::ldexp(1.0, 128));
}

// Floats to test rounding on: a strided sweep of all patterns, plus every midpoint between
// adjacent 16-bit values (exact in float) and its two float neighbours, both signs.
std::vector<float> roundingInputs(uint16_t maxFinite, double (*decode)(uint16_t),
                                  double overflowValue) {
  std::vector<float> inputs;
  for (uint64_t bits = 0; bits <= 0xffffffffu; bits += 4093) {
    inputs.push_back(bitsToFloat(static_cast<uint32_t>(bits)));
  }
  for (uint32_t p = 0; p <= maxFinite; ++p) {
    const double next = p == maxFinite ? overflowValue : decode(static_cast<uint16_t>(p + 1));
    const auto midpoint = static_cast<float>((decode(static_cast<uint16_t>(p)) + next) / 2);
    for (float v :
         {midpoint, std::nextafter(midpoint, 0.0f), std::nextafter(midpoint, HUGE_VALF)}) {
      inputs.push_back(v);
      inputs.push_back(-v);
    }
  }
  const float specials[] = {0.0f,
                            -0.0f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::max(),
                            std::numeric_limits<float>::min(),
                            std::numeric_limits<float>::denorm_min()};
  inputs.insert(inputs.end(), std::begin(specials), std::end(specials));
  return inputs;
}

TEST(Float16, DecodesEveryPatternExactly) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const auto half = Float16::fromBits(static_cast<uint16_t>(bits));
    const float value = half.toFloat();
    if (isHalfNan(half.bits)) {
      ASSERT_TRUE(isFloatQuietNan(value)) << std::hex << bits;
      EXPECT_EQ(std::signbit(value), (bits & 0x8000u) != 0);
    } else {
      ASSERT_EQ(static_cast<double>(value), halfValue(half.bits)) << std::hex << bits;
      ASSERT_EQ(std::signbit(value), (bits & 0x8000u) != 0) << std::hex << bits;
    }
  }
}

TEST(Float16, RoundTripsEveryPattern) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const auto half = Float16::fromBits(static_cast<uint16_t>(bits));
    const uint16_t back = Float16::fromFloat(half.toFloat()).bits;
    if (isHalfNan(half.bits)) {
      // NaN stays NaN: same sign and payload, with the quiet bit set.
      ASSERT_EQ(back, bits | 0x0200u) << std::hex << bits;
      ASSERT_TRUE(isHalfQuietNan(back));
    } else {
      ASSERT_EQ(back, bits) << std::hex << bits;
    }
  }
}

TEST(Float16, RoundsToNearestEvenOnKnownCases) {
  struct Case {
    float input;
    uint16_t expected;
  };
  const float tiny = std::ldexp(1.0f, -24);  // smallest subnormal half
  const Case cases[] = {
      {1.0f, 0x3c00},
      {-2.0f, 0xc000},
      {0.0f, 0x0000},
      {-0.0f, 0x8000},
      {1.0f + std::ldexp(1.0f, -11), 0x3c00},                          // tie, 1.0 is even
      {1.0f + 3 * std::ldexp(1.0f, -11), 0x3c02},                      // tie, rounds up to even
      {1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20), 0x3c01},  // just above the tie
      {65504.0f, 0x7bff},                                              // largest finite
      {65519.996f, 0x7bff},  // just below the overflow midpoint
      {65520.0f, 0x7c00},    // midpoint, ties to even -> infinity
      {-1e10f, 0xfc00},
      {std::numeric_limits<float>::infinity(), 0x7c00},
      {std::ldexp(1.0f, -14), 0x0400},             // smallest normal
      {std::ldexp(1.0f, -14) - tiny / 2, 0x0400},  // tie between 0x3ff and 0x400 -> even
      {tiny, 0x0001},
      {tiny / 2, 0x0000},  // tie between 0 and tiny -> 0
      {std::nextafter(tiny / 2, 1.0f), 0x0001},
      {tiny * 1.5f, 0x0002},    // tie, 1 is odd -> 2
      {tiny * 2.5f, 0x0002},    // tie, 2 is even
      {-tiny * 0.25f, 0x8000},  // underflow keeps the sign
      {std::numeric_limits<float>::denorm_min(), 0x0000},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(Float16::fromFloat(c.input).bits, c.expected) << c.input;
  }
}

TEST(Float16, NanStaysQuietNan) {
  EXPECT_EQ(Float16::fromFloat(bitsToFloat(0x7f800001u)).bits, 0x7e00);  // signaling -> quiet
  EXPECT_EQ(Float16::fromFloat(bitsToFloat(0xffc00000u)).bits, 0xfe00);
  EXPECT_EQ(Float16::fromFloat(bitsToFloat(0x7fffe000u)).bits, 0x7fff);  // payload kept
  EXPECT_TRUE(isFloatQuietNan(Float16::fromBits(0x7c01).toFloat()));
}

TEST(Float16, RoundingMatchesNearestValueSearch) {
  for (float input : roundingInputs(0x7bff, halfValue, 65536.0)) {
    const uint16_t got = Float16::fromFloat(input).bits;
    if (std::isnan(input)) {
      ASSERT_TRUE(isHalfQuietNan(got)) << std::hex << floatToBits(input);
    } else {
      ASSERT_EQ(got, referenceHalf(input)) << std::hex << floatToBits(input);
    }
  }
}

#if defined(__x86_64__)
__attribute__((target("f16c"))) uint16_t hardwareHalf(float value) {
  return static_cast<uint16_t>(_cvtss_sh(value, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
__attribute__((target("f16c"))) float hardwareHalfToFloat(uint16_t bits) { return _cvtsh_ss(bits); }

// The host AVX2/AVX-512 kernels convert with F16C: it must agree bit for bit, NaNs included.
TEST(Float16, MatchesF16cHardware) {
  if (!__builtin_cpu_supports("f16c")) GTEST_SKIP() << "no F16C";
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const float hw = hardwareHalfToFloat(static_cast<uint16_t>(bits));
    ASSERT_EQ(floatToBits(Float16::fromBits(static_cast<uint16_t>(bits)).toFloat()),
              floatToBits(hw))
        << std::hex << bits;
  }
  for (uint64_t bits = 0; bits <= 0xffffffffu; bits += 251) {
    const float value = bitsToFloat(static_cast<uint32_t>(bits));
    ASSERT_EQ(Float16::fromFloat(value).bits, hardwareHalf(value)) << std::hex << bits;
  }
  for (float input : roundingInputs(0x7bff, halfValue, 65536.0)) {
    ASSERT_EQ(Float16::fromFloat(input).bits, hardwareHalf(input))
        << std::hex << floatToBits(input);
  }
}
#endif

TEST(Bfloat16, DecodesAndRoundTripsEveryPattern) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const auto value = Bfloat16::fromBits(static_cast<uint16_t>(bits));
    ASSERT_EQ(floatToBits(value.toFloat()), bits << 16);  // exact widening
    const uint16_t back = Bfloat16::fromFloat(value.toFloat()).bits;
    if (isBfloatNan(value.bits)) {
      ASSERT_EQ(back, bits | 0x0040u) << std::hex << bits;
      ASSERT_TRUE(isBfloatQuietNan(back));
    } else {
      ASSERT_EQ(back, bits) << std::hex << bits;
    }
  }
}

TEST(Bfloat16, RoundsToNearestEvenOnKnownCases) {
  struct Case {
    uint32_t input;  // float bits
    uint16_t expected;
  };
  const Case cases[] = {
      {0x3f800000, 0x3f80},  // 1.0
      {0x3f808000, 0x3f80},  // tie, 1.0 is even
      {0x3f818000, 0x3f82},  // tie, rounds up to even
      {0x3f808001, 0x3f81},  // just above the tie
      {0x7f7fffff, 0x7f80},  // FLT_MAX -> infinity
      {0x7f7f7fff, 0x7f7f},  // just below the overflow midpoint
      {0x7f7f8000, 0x7f80},  // overflow midpoint, ties to even -> infinity
      {0xff800000, 0xff80},  // -infinity
      {0x80000000, 0x8000},  // -0
      {0x00000001, 0x0000},  // smallest float subnormal
      {0x00008000, 0x0000},  // tie between 0 and the smallest bfloat16 subnormal
      {0x00018000, 0x0002},  // tie, 1 is odd
      {0x007fffff, 0x0080},  // largest subnormal rounds up to the smallest normal
      {0x7f800001, 0x7fc0},  // signaling NaN -> quiet
      {0xffc12345, 0xffc1},  // NaN payload truncated
  };
  for (const Case& c : cases) {
    EXPECT_EQ(Bfloat16::fromFloat(bitsToFloat(c.input)).bits, c.expected) << std::hex << c.input;
  }
}

TEST(Bfloat16, RoundingMatchesNearestValueSearch) {
  for (float input : roundingInputs(0x7f7f, bfloatValue, std::ldexp(1.0, 128))) {
    const uint16_t got = Bfloat16::fromFloat(input).bits;
    if (std::isnan(input)) {
      ASSERT_TRUE(isBfloatQuietNan(got)) << std::hex << floatToBits(input);
    } else {
      ASSERT_EQ(got, referenceBfloat(input)) << std::hex << floatToBits(input);
    }
  }
}

}  // namespace
}  // namespace loom::kernels
