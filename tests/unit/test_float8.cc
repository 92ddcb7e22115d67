// SPDX-License-Identifier: Apache-2.0
// fp8 (kernels/float8.h): every pattern of both formats decoded and round-tripped exactly,
// float -> fp8 rounding to nearest even (ties, subnormals, the smallest normal) against a
// search over the patterns, the documented saturation (CUDA's __NV_SATFINITE: a finite value
// beyond the largest finite value gives the largest finite value; e5m2 keeps infinity) and NaN;
// then the
// host kernels on fp8: every pair of patterns through every op and instruction-set variant,
// avg's division, the canonical kernel's single rounding and canonical NaN.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/float8.h"
#include "kernels/host/canonical_reduce.h"
#include "kernels/host/host_reduce.h"
#include "kernels/host/host_reduce_isa.h"
#include "tests/support/host_isas.h"
#include "tests/support/fp8_reference.h"

namespace loom::kernels {
namespace {

namespace ref = test::fp8;

constexpr loomDataType_t kTypes[] = {loomFloat8e4m3, loomFloat8e5m2};

float toFloat(loomDataType_t type, uint8_t bits) {
  return type == loomFloat8e4m3 ? Float8e4m3::fromBits(bits).toFloat()
                                : Float8e5m2::fromBits(bits).toFloat();
}
uint8_t fromFloat(loomDataType_t type, float value) {
  return type == loomFloat8e4m3 ? Float8e4m3::fromFloat(value).bits
                                : Float8e5m2::fromFloat(value).bits;
}
uint32_t floatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}
float floatOfBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

TEST(Float8, EveryPatternDecodesExactlyAndRoundTrips) {
  for (loomDataType_t type : kTypes) {
    for (int bits = 0; bits < 256; ++bits) {
      const auto pattern = static_cast<uint8_t>(bits);
      const float value = toFloat(type, pattern);
      const double want = ref::decode(type, pattern);
      if (ref::isNan(type, pattern)) {
        EXPECT_TRUE(std::isnan(value)) << type << " " << bits;
        EXPECT_EQ(std::signbit(value), (bits & 0x80) != 0) << type << " " << bits;
      } else {
        EXPECT_EQ(static_cast<double>(value), want) << type << " " << bits;
        EXPECT_EQ(std::signbit(value), (bits & 0x80) != 0) << type << " " << bits;  // -0 too
      }
      // Every pattern, NaNs included (their payload too), comes back unchanged.
      EXPECT_EQ(fromFloat(type, value), pattern) << type << " " << bits;
    }
  }
  EXPECT_EQ(toFloat(loomFloat8e4m3, 0x7e), 448.0f);
  EXPECT_EQ(toFloat(loomFloat8e4m3, 0x01), 0x1p-9f);
  EXPECT_EQ(toFloat(loomFloat8e5m2, 0x7b), 57344.0f);
  EXPECT_EQ(toFloat(loomFloat8e5m2, 0x7c), HUGE_VALF);
  EXPECT_EQ(toFloat(loomFloat8e5m2, 0xfc), -HUGE_VALF);
  EXPECT_EQ(toFloat(loomFloat8e5m2, 0x01), 0x1p-16f);
}

TEST(Float8, RoundsToNearestEvenOnKnownCases) {
  struct Case {
    loomDataType_t type;
    float input;
    uint8_t expected;
  };
  const Case cases[] = {
      // e4m3: 1 = 0x38, ulp 1/8 at [1, 2).
      {loomFloat8e4m3, 1.0625f, 0x38},     // tie between 1 (even) and 1.125: down
      {loomFloat8e4m3, 1.1875f, 0x3a},     // tie between 1.125 (odd) and 1.25: up
      {loomFloat8e4m3, 1.0625001f, 0x39},  // just above the tie: up
      {loomFloat8e4m3, -1.0625f, 0xb8},
      {loomFloat8e4m3, 0x1p-10f, 0x00},  // half the smallest subnormal: ties to zero
      {loomFloat8e4m3, -0x1p-10f, 0x80},
      {loomFloat8e4m3, 0x1.000002p-10f, 0x01},  // just above: the smallest subnormal
      {loomFloat8e4m3, 0x3p-10f, 0x02},         // tie between 1 and 2 units of 2^-9: even
      {loomFloat8e4m3, 0x7.8p-9f, 0x08},  // tie between 7 * 2^-9 and 2^-6: the smallest normal
      {loomFloat8e4m3, 0x1p-6f, 0x08},
      {loomFloat8e4m3, 400.0f, 0x7c},  // tie between 384 (even) and 416: down
      {loomFloat8e4m3, 432.0f, 0x7e},  // tie between 416 (odd) and 448: up
      {loomFloat8e4m3, 0x1p-30f, 0x00},
      // e5m2: 1 = 0x3c, ulp 1/4 at [1, 2).
      {loomFloat8e5m2, 1.125f, 0x3c},    // tie: down to even
      {loomFloat8e5m2, 1.375f, 0x3e},    // tie between 1.25 (odd) and 1.5: up
      {loomFloat8e5m2, 0x1p-17f, 0x00},  // half the smallest subnormal 2^-16
      {loomFloat8e5m2, 0x3p-17f, 0x02},
      {loomFloat8e5m2, 0x7p-17f, 0x04},  // tie between 3 * 2^-16 and 2^-14: the smallest normal
      {loomFloat8e5m2, 45056.0f, 0x7a},  // tie between 40960 (odd) and 49152: up
      {loomFloat8e5m2, 53248.0f, 0x7a},  // tie between 49152 (even) and 57344: down
  };
  for (const Case& c : cases) {
    EXPECT_EQ(fromFloat(c.type, c.input), c.expected) << c.type << " " << c.input;
    EXPECT_EQ(fromFloat(c.type, c.input), ref::nearestBits(c.type, c.input))
        << "reference disagrees: " << c.input;
  }
}

TEST(Float8, SaturatesBeyondTheLargestFiniteValue) {
  // e4m3: 464 is the tie above 448, which is even: it stays 448; above it NVIDIA's satfinite
  // conversion clamps (instead of the NaN pattern).
  for (float value : {448.0f, 449.0f, 464.0f, 464.00003f, 480.0f, 1e6f, 3e38f, HUGE_VALF}) {
    EXPECT_EQ(fromFloat(loomFloat8e4m3, value), 0x7e) << value;
    EXPECT_EQ(fromFloat(loomFloat8e4m3, -value), 0xfe) << value;
  }
  // e5m2: 61440 is the tie above 57344, which is odd: round to nearest even would give
  // infinity; satfinite clamps it to 57344. Infinity itself is no overflow and stays.
  for (float value : {57344.0f, 61439.996f, 61440.0f, 65536.0f, 1e9f, 3e38f}) {
    EXPECT_EQ(fromFloat(loomFloat8e5m2, value), 0x7b) << value;
    EXPECT_EQ(fromFloat(loomFloat8e5m2, -value), 0xfb) << value;
  }
  EXPECT_EQ(fromFloat(loomFloat8e5m2, HUGE_VALF), 0x7c);
  EXPECT_EQ(fromFloat(loomFloat8e5m2, -HUGE_VALF), 0xfc);
}

TEST(Float8, NanStaysNanWithItsSign) {
  const float quiet = std::nanf(""), negative = -std::nanf("");
  EXPECT_EQ(fromFloat(loomFloat8e4m3, quiet), 0x7f);
  EXPECT_EQ(fromFloat(loomFloat8e4m3, negative), 0xff);
  EXPECT_EQ(fromFloat(loomFloat8e5m2, quiet), 0x7e);
  EXPECT_EQ(fromFloat(loomFloat8e5m2, negative), 0xfe);
  // A NaN whose payload lies below e5m2's two bits keeps being a NaN (quiet), not infinity.
  EXPECT_EQ(fromFloat(loomFloat8e5m2, floatOfBits(0x7f800001u)), 0x7e);
  EXPECT_EQ(fromFloat(loomFloat8e5m2, floatOfBits(0xffa00000u)), 0xfd);  // top payload bits kept
}

// Random floats across and beyond both formats' ranges (log-uniform magnitudes, random low
// bits, so ties and near-ties turn up), against the pattern search.
TEST(Float8, RoundingMatchesNearestValueSearch) {
  std::mt19937_64 rng(8);
  for (loomDataType_t type : kTypes) {
    for (int i = 0; i < 200000; ++i) {
      const uint64_t r = rng();
      const int exponent = static_cast<int>(r % 48) - 30;  // 2^-30 .. 2^17
      uint32_t mantissa = static_cast<uint32_t>(r >> 8) & 0x7fffffu;
      if ((r >> 40) % 4 == 0) mantissa &= 0x7f0000u;  // few bits: exact values and ties
      const float value = floatOfBits(((static_cast<uint32_t>(exponent + 127)) << 23) | mantissa |
                                      (((r >> 50) & 1) ? 0x80000000u : 0u));
      ASSERT_EQ(fromFloat(type, value), ref::nearestBits(type, value))
          << type << " " << value << " (0x" << std::hex << floatBits(value) << ")";
    }
  }
}

// The exact result of one op on two decoded values (exact in double), rounded by the search.
uint8_t referenceOp(loomDataType_t type, loomRedOp_t op, uint8_t a, uint8_t b) {
  const double x = ref::decode(type, a), y = ref::decode(type, b);
  double result;
  switch (op) {
    case loomSum:
      result = x + y;
      break;
    case loomProd:
      result = x * y;
      break;
    default:  // IEEE 754-2019 maximum/minimum: NaN propagates, -0 < +0
      if (std::isnan(x) || std::isnan(y)) {
        result = std::nan("");
      } else if (x == y) {
        result = (op == loomMax) == std::signbit(x) ? y : x;
      } else {
        result = (op == loomMax) == (x > y) ? x : y;
      }
  }
  return ref::nearestBits(type, result);
}

// All 65536 (a, b) pairs, each op, each variant, out of place and in place.
TEST(Float8Kernels, EveryPairEveryOpEveryVariant) {
  std::vector<uint8_t> a(65536), b(65536), out(65536);
  for (uint32_t i = 0; i < 65536; ++i) {
    a[i] = static_cast<uint8_t>(i);
    b[i] = static_cast<uint8_t>(i >> 8);
  }
  for (loomDataType_t type : kTypes) {
    for (loomRedOp_t op : {loomSum, loomProd, loomMax, loomMin, loomAvg}) {
      std::vector<uint8_t> want(65536);
      for (uint32_t i = 0; i < 65536; ++i)
        want[i] = referenceOp(type, op == loomAvg ? loomSum : op, a[i], b[i]);
      for (HostIsa isa : test::availableHostIsas()) {
        for (bool inPlace : {false, true}) {
          std::vector<uint8_t> lhs = a;
          uint8_t* dst = inPlace ? lhs.data() : out.data();
          reduceWithIsa(isa, type, op, dst, lhs.data(), b.data(), 65536);
          for (uint32_t i = 0; i < 65536; ++i) {
            const bool nan = ref::isNan(type, want[i]);
            ASSERT_TRUE(nan ? ref::isNan(type, dst[i]) : dst[i] == want[i])
                << hostIsaName(isa) << " type " << type << " " << opName(op) << "(0x" << std::hex
                << int(a[i]) << ", 0x" << int(b[i]) << ") gave 0x" << int(dst[i]) << ", expected 0x"
                << int(want[i]);
          }
        }
      }
    }
  }
}

TEST(Float8Kernels, DivideRoundsTheFloat32QuotientOnce) {
  for (loomDataType_t type : kTypes) {
    std::vector<uint8_t> src(256), out(256);
    for (int i = 0; i < 256; ++i) src[i] = static_cast<uint8_t>(i);
    for (int divisor : {1, 3, 8}) {
      for (HostIsa isa : test::availableHostIsas()) {
        divideWithIsa(isa, type, out.data(), src.data(), 256, divisor);
        for (int i = 0; i < 256; ++i) {
          const uint8_t want = ref::nearestBits(type, ref::decode(type, src[i]) / divisor);
          ASSERT_TRUE(ref::isNan(type, want) ? ref::isNan(type, out[i]) : out[i] == want)
              << hostIsaName(isa) << " type " << type << " 0x" << std::hex << i << " / " << divisor;
        }
      }
    }
  }
}

// The canonical kernel (direct engine, deterministic mode) accumulates in float32 and rounds
// once: 448 + 448 - 448 is 448 in e4m3, where rounding after each rank saturates 896 to 448
// and ends at 0. Its NaN is the positive quiet one.
TEST(Float8Kernels, CanonicalKernelRoundsOnceAndCanonicalisesNan) {
  for (loomDataType_t type : kTypes) {
    const double top = ref::maxFinite(type);
    const uint8_t plus = ref::exactBits(type, top), minus = ref::exactBits(type, -top);
    const uint8_t inputs[3][2] = {
        {plus, ref::exactBits(type, 1.0)},
        {plus, static_cast<uint8_t>(type == loomFloat8e4m3 ? 0xff : 0xfd)},
        {minus, ref::exactBits(type, 2.0)}};
    const void* sources[3] = {inputs[0], inputs[1], inputs[2]};
    uint8_t out[2];
    reduceRanks(type, loomSum, out, sources, 3, 2);
    EXPECT_EQ(out[0], plus) << type;
    EXPECT_EQ(out[1], type == loomFloat8e4m3 ? 0x7f : 0x7e) << type;  // canonical NaN
    uint8_t pairwise[2];
    reduce(type, loomSum, pairwise, inputs[0], inputs[1], 2);
    reduce(type, loomSum, pairwise, pairwise, inputs[2], 2);
    EXPECT_EQ(pairwise[0], 0x00) << type << ": pairwise saturates 2 * max, then subtracts max";
    EXPECT_TRUE(isNarrowFloat(type));
  }
  EXPECT_FALSE(isNarrowFloat(loomFloat32));
  EXPECT_FALSE(isNarrowFloat(loomInt8));
}

}  // namespace
}  // namespace loom::kernels
