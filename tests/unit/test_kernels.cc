// SPDX-License-Identifier: Apache-2.0
// Host reduction kernels: every datatype x op x instruction-set variant against an
// independently written scalar reference, on odd sizes, aliased and unaligned buffers; the
// NaN/infinity rule of max/min; integer wrap-around; avg's final division.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "base/error.h"
#include "kernels/half_float.h"
#include "kernels/host/host_reduce.h"
#include "kernels/host/host_reduce_isa.h"
#include "tests/support/host_isas.h"

namespace loom::kernels {
namespace {

template <typename T>
constexpr bool kIsHalf = std::is_same_v<T, Float16> || std::is_same_v<T, Bfloat16>;

template <typename T>
constexpr loomDataType_t dataTypeOf() {
  if constexpr (std::is_same_v<T, int8_t>) return loomInt8;
  if constexpr (std::is_same_v<T, uint8_t>) return loomUint8;
  if constexpr (std::is_same_v<T, int32_t>) return loomInt32;
  if constexpr (std::is_same_v<T, uint32_t>) return loomUint32;
  if constexpr (std::is_same_v<T, int64_t>) return loomInt64;
  if constexpr (std::is_same_v<T, uint64_t>) return loomUint64;
  if constexpr (std::is_same_v<T, Float16>) return loomFloat16;
  if constexpr (std::is_same_v<T, float>) return loomFloat32;
  if constexpr (std::is_same_v<T, double>) return loomFloat64;
  if constexpr (std::is_same_v<T, Bfloat16>) return loomBfloat16;
}

template <typename T>
uint64_t bitsOf(T value) {
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof value);
  return bits;
}

template <typename T>
bool isNanValue(T value) {
  if constexpr (kIsHalf<T>) {
    return std::isnan(value.toFloat());
  } else if constexpr (std::is_floating_point_v<T>) {
    return std::isnan(value);
  } else {
    return false;
  }
}

// The reference semantics, written without reduce_ops.h: integers wrap (64-bit unsigned
// arithmetic truncated to T); max/min propagate NaN and order -0 below +0; 16-bit floats
// compute in float32 and round once.
template <typename T>
T reference(loomRedOp_t op, T a, T b) {
  if constexpr (kIsHalf<T>) {
    return T::fromFloat(reference<float>(op, a.toFloat(), b.toFloat()));
  } else if constexpr (std::is_integral_v<T>) {
    const auto wideA = static_cast<uint64_t>(a), wideB = static_cast<uint64_t>(b);
    switch (op) {
      case loomSum:
      case loomAvg:
        return static_cast<T>(wideA + wideB);
      case loomProd:
        return static_cast<T>(wideA * wideB);
      case loomMax:
        return a > b ? a : b;
      default:
        return a < b ? a : b;
    }
  } else {
    switch (op) {
      case loomSum:
      case loomAvg:
        return a + b;
      case loomProd:
        return a * b;
      default:
        if (std::isnan(a)) return a;  // NaN propagates (IEEE 754-2019 maximum/minimum)
        if (std::isnan(b)) return b;
        if (a == b) {  // -0 < +0
          const bool aFirst = op == loomMax ? !std::signbit(a) : std::signbit(a);
          return aFirst ? a : b;
        }
        if (op == loomMax) return a > b ? a : b;
        return a < b ? a : b;
    }
  }
}

template <typename T>
T referenceDivide(T value, int divisor) {
  if constexpr (kIsHalf<T>) {
    return T::fromFloat(value.toFloat() / static_cast<float>(divisor));
  } else if constexpr (std::is_integral_v<T>) {
    // Truncation toward zero spelled out: divide the magnitude, restore the sign.
    const bool negative = value < 0;
    const uint64_t magnitude =
        negative ? 0 - static_cast<uint64_t>(value) : static_cast<uint64_t>(value);
    const uint64_t quotient = magnitude / static_cast<uint64_t>(divisor);
    return static_cast<T>(negative ? 0 - quotient : quotient);
  } else {
    return value / static_cast<T>(divisor);
  }
}

template <typename T>
T randomValue(std::mt19937_64& rng) {
  const uint64_t bits = rng();
  if constexpr (std::is_integral_v<T>) {
    // Mostly full-range values (wrap-around), some small ones (equal pairs, zeros, -1).
    if (rng() % 4 == 0) return static_cast<T>(static_cast<int>(bits % 7) - 3);
    return static_cast<T>(bits);
  } else {
    const int kind = static_cast<int>(rng() % 10);
    const double uniform = std::uniform_real_distribution<double>(-100.0, 100.0)(rng);
    const double specials[] = {0.0,   -0.0,  HUGE_VAL, -HUGE_VAL, std::nan(""),
                               1e-40, -3e-8, 70000.0,  1.0};
    double value = uniform;
    if (kind == 7) value = specials[rng() % std::size(specials)];
    if (kind == 8) value = std::round(uniform / 10);  // small integers: many equal pairs
    if constexpr (kIsHalf<T>) {
      if (kind == 9) return T::fromBits(static_cast<uint16_t>(bits));  // any pattern, NaNs too
      return T::fromFloat(static_cast<float>(value));
    } else {
      if (kind == 9) {
        T raw;
        std::memcpy(&raw, &bits, sizeof raw);
        return raw;
      }
      return static_cast<T>(value);
    }
  }
}

template <typename T>
std::string describe(T value) {
  if constexpr (kIsHalf<T>)
    return std::to_string(value.toFloat()) + " bits " + std::to_string(value.bits);
  else
    return std::to_string(value) + " bits " + std::to_string(bitsOf(value));
}

// Exact match; for sum/prod two NaNs also match (which NaN payload wins is unspecified).
template <typename T>
bool sameResult(loomRedOp_t op, T got, T want) {
  (void)op;  // which NaN payload survives is not specified for any op (reduce_ops.h)
  if (bitsOf(got) == bitsOf(want)) return true;
  return isNanValue(got) && isNanValue(want);
}

enum class Layout { Separate, DstIsA, DstIsB };
const char* layoutName(Layout layout) {
  return layout == Layout::Separate ? "separate" : layout == Layout::DstIsA ? "dst==a" : "dst==b";
}

// Runs one reduction on random data and compares every element (and the untouched guard
// element after the range) with the reference.
template <typename T>
void checkReduce(HostIsa isa, loomRedOp_t op, size_t count, Layout layout, size_t offset,
                 std::mt19937_64& rng) {
  SCOPED_TRACE(std::string(hostIsaName(isa)) + " " + opName(op) + " count " +
               std::to_string(count) + " " + layoutName(layout) + " offset " +
               std::to_string(offset));
  // Offsets shift the start off the allocator's 16-byte alignment by whole elements.
  std::vector<T> storageA(count + 4), storageB(count + 4), storageDst(count + 4);
  T* a = storageA.data() + offset;
  T* b = storageB.data() + offset;
  for (size_t i = 0; i < count + 4 - offset; ++i) {
    a[i] = randomValue<T>(rng);
    b[i] = randomValue<T>(rng);
  }
  std::vector<T> expected(count);
  for (size_t i = 0; i < count; ++i) expected[i] = reference(op, a[i], b[i]);
  const std::vector<T> originalA(storageA), originalB(storageB);

  T* dst = layout == Layout::DstIsA ? a : layout == Layout::DstIsB ? b : storageDst.data() + offset;
  const T guard = dst[count];
  reduceWithIsa(isa, dataTypeOf<T>(), op, dst, a, b, count);

  for (size_t i = 0; i < count; ++i) {
    if (!sameResult(op, dst[i], expected[i])) {
      ADD_FAILURE() << "element " << i << ": " << describe(originalA[i + offset]) << " op "
                    << describe(originalB[i + offset]) << " gave " << describe(dst[i])
                    << ", expected " << describe(expected[i]);
      return;
    }
  }
  EXPECT_EQ(bitsOf(dst[count]), bitsOf(guard)) << "wrote past the end";
  const size_t bytes = storageA.size() * sizeof(T);
  if (layout != Layout::DstIsA) {
    EXPECT_EQ(0, std::memcmp(storageA.data(), originalA.data(), bytes)) << "a was modified";
  }
  if (layout != Layout::DstIsB) {
    EXPECT_EQ(0, std::memcmp(storageB.data(), originalB.data(), bytes)) << "b was modified";
  }
}

template <typename T>
class HostReduceTest : public ::testing::Test {};
using AllTypes = ::testing::Types<int8_t, uint8_t, int32_t, uint32_t, int64_t, uint64_t, Float16,
                                  float, double, Bfloat16>;
TYPED_TEST_SUITE(HostReduceTest, AllTypes);

constexpr size_t kSizes[] = {0, 1, 7, 33, 1000, 4099};
constexpr loomRedOp_t kOps[] = {loomSum, loomProd, loomMax, loomMin, loomAvg};

TYPED_TEST(HostReduceTest, MatchesReferenceForEveryOpSizeLayoutAndIsa) {
  std::mt19937_64 rng(1234 + dataTypeOf<TypeParam>());
  for (HostIsa isa : test::availableHostIsas()) {
    for (loomRedOp_t op : kOps) {
      for (size_t count : kSizes) {
        for (Layout layout : {Layout::Separate, Layout::DstIsA, Layout::DstIsB}) {
          for (size_t offset : {0, 1, 3}) {
            checkReduce<TypeParam>(isa, op, count, layout, offset, rng);
          }
        }
      }
    }
  }
}

// The dispatching entry points agree with the variants.
TYPED_TEST(HostReduceTest, DefaultEntryPointsUseAnAvailableVariant) {
  EXPECT_TRUE(hostIsaAvailable(bestHostIsa()));
  std::mt19937_64 rng(99);
  std::vector<TypeParam> a(1001), b(1001), dst(1001);
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = randomValue<TypeParam>(rng);
    b[i] = randomValue<TypeParam>(rng);
  }
  reduce(dataTypeOf<TypeParam>(), loomMax, dst.data(), a.data(), b.data(), dst.size());
  for (size_t i = 0; i < dst.size(); ++i) {
    ASSERT_EQ(bitsOf(dst[i]), bitsOf(reference(loomMax, a[i], b[i]))) << i;
  }
  reduce(dataTypeOf<TypeParam>(), loomSum, nullptr, nullptr, nullptr, 0);  // no-op
}

TYPED_TEST(HostReduceTest, DivideMatchesReference) {
  using T = TypeParam;
  std::mt19937_64 rng(77);
  for (HostIsa isa : test::availableHostIsas()) {
    for (int divisor : {1, 2, 3, 7, 8, 1000}) {
      for (size_t count : kSizes) {
        for (bool inPlace : {false, true}) {
          SCOPED_TRACE(std::string(hostIsaName(isa)) + " divisor " + std::to_string(divisor) +
                       " count " + std::to_string(count) + (inPlace ? " in place" : ""));
          std::vector<T> src(count + 1), out(count + 1);
          for (T& value : src) value = randomValue<T>(rng);
          T* from = src.data() + 1;  // unaligned
          std::vector<T> expected(count);
          for (size_t i = 0; i < count; ++i) expected[i] = referenceDivide(from[i], divisor);
          T* to = inPlace ? from : out.data() + 1;
          divideWithIsa(isa, dataTypeOf<T>(), to, from, count, divisor);
          for (size_t i = 0; i < count; ++i) {
            ASSERT_TRUE(bitsOf(to[i]) == bitsOf(expected[i]) ||
                        (isNanValue(to[i]) && isNanValue(expected[i])))
                << i << ": got " << describe(to[i]) << " expected " << describe(expected[i]);
          }
        }
      }
    }
  }
}

// Runs op on `a` and `b` repeated over 37 elements (vector body and scalar tail) with every
// variant and expects exactly `want`'s bits everywhere.
template <typename T>
void expectEverywhere(loomRedOp_t op, T a, T b, T want) {
  constexpr size_t kCount = 37;
  for (HostIsa isa : test::availableHostIsas()) {
    std::vector<T> lhs(kCount, a), rhs(kCount, b), out(kCount);
    reduceWithIsa(isa, dataTypeOf<T>(), op, out.data(), lhs.data(), rhs.data(), kCount);
    for (size_t i = 0; i < kCount; ++i) {
      if (isNanValue(want) && isNanValue(out[i])) continue;  // any NaN payload
      ASSERT_EQ(bitsOf(out[i]), bitsOf(want))
          << hostIsaName(isa) << " " << opName(op) << "(" << describe(a) << ", " << describe(b)
          << ") element " << i << " gave " << describe(out[i]);
    }
  }
}

TEST(HostReduce, IntegersWrapAround) {
  expectEverywhere<int8_t>(loomSum, 127, 1, -128);
  expectEverywhere<int8_t>(loomProd, -128, -1, -128);
  expectEverywhere<int8_t>(loomProd, 16, 16, 0);
  expectEverywhere<uint8_t>(loomSum, 255, 1, 0);
  expectEverywhere<uint8_t>(loomProd, 255, 255, 1);
  expectEverywhere<int32_t>(loomSum, INT32_MAX, 1, INT32_MIN);
  expectEverywhere<int32_t>(loomProd, INT32_MIN, -1, INT32_MIN);
  expectEverywhere<uint32_t>(loomSum, UINT32_MAX, 2, 1);
  expectEverywhere<int64_t>(loomSum, INT64_MIN, -1, INT64_MAX);
  expectEverywhere<int64_t>(loomProd, INT64_MAX, 2, -2);
  expectEverywhere<uint64_t>(loomProd, UINT64_MAX, UINT64_MAX, 1);
  expectEverywhere<int32_t>(loomMax, -5, -7, -5);
  expectEverywhere<uint64_t>(loomMin, UINT64_MAX, 3, 3);
}

// Symbolic operands for the max/min rule, made concrete for each floating type.
enum class Sym { One, Two, PosInf, NegInf, PosZero, NegZero, NanA, NanB };

template <typename T>
T make(Sym sym) {
  // Quiet NaNs with distinct signs and payloads, so the test sees which operand came back.
  if constexpr (std::is_same_v<T, Float16>) {
    if (sym == Sym::NanA) return T::fromBits(0x7e01);
    if (sym == Sym::NanB) return T::fromBits(0xfe02);
  } else if constexpr (std::is_same_v<T, Bfloat16>) {
    if (sym == Sym::NanA) return T::fromBits(0x7fc1);
    if (sym == Sym::NanB) return T::fromBits(0xffc2);
  } else {
    using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
    const Bits quiet = Bits{1} << (std::numeric_limits<T>::digits - 2);
    const Bits exponent = static_cast<Bits>(bitsOf(std::numeric_limits<T>::infinity()));
    const Bits sign = Bits{1} << (sizeof(T) * 8 - 1);
    Bits bits = 0;
    if (sym == Sym::NanA) bits = exponent | quiet | 1;
    if (sym == Sym::NanB) bits = sign | exponent | quiet | 2;
    if (bits != 0) {
      T value;
      std::memcpy(&value, &bits, sizeof value);
      return value;
    }
  }
  const float values[] = {1.0f, 2.0f, HUGE_VALF, -HUGE_VALF, 0.0f, -0.0f};
  const float value = values[static_cast<int>(sym)];
  if constexpr (kIsHalf<T>)
    return T::fromFloat(value);
  else
    return static_cast<T>(value);
}

template <typename T>
class MaxMinRuleTest : public ::testing::Test {};
using FloatTypes = ::testing::Types<float, double, Float16, Bfloat16>;
TYPED_TEST_SUITE(MaxMinRuleTest, FloatTypes);

TYPED_TEST(MaxMinRuleTest, NanPropagatesAndMinusZeroIsBelowPlusZero) {
  struct Case {
    loomRedOp_t op;
    Sym a, b, want;
  };
  using S = Sym;
  const Case cases[] = {
      {loomMax, S::One, S::Two, S::Two},
      {loomMax, S::Two, S::One, S::Two},
      {loomMax, S::NanA, S::One, S::NanA},
      {loomMax, S::One, S::NanA, S::NanA},
      {loomMax, S::NanA, S::NegInf, S::NanA},
      {loomMax, S::NegInf, S::NanB, S::NanB},
      {loomMax, S::NanA, S::NanB, S::NanA},
      {loomMax, S::PosInf, S::Two, S::PosInf},
      {loomMax, S::NegInf, S::Two, S::Two},
      {loomMax, S::PosZero, S::NegZero, S::PosZero},
      {loomMax, S::NegZero, S::PosZero, S::PosZero},
      {loomMax, S::NegZero, S::NegZero, S::NegZero},
      {loomMin, S::One, S::Two, S::One},
      {loomMin, S::Two, S::One, S::One},
      {loomMin, S::NanA, S::One, S::NanA},
      {loomMin, S::One, S::NanA, S::NanA},
      {loomMin, S::NanB, S::PosInf, S::NanB},
      {loomMin, S::PosInf, S::NanA, S::NanA},
      {loomMin, S::NanA, S::NanB, S::NanA},
      {loomMin, S::NegInf, S::Two, S::NegInf},
      {loomMin, S::PosZero, S::NegZero, S::NegZero},
      {loomMin, S::NegZero, S::PosZero, S::NegZero},
      {loomMin, S::PosZero, S::PosZero, S::PosZero},
  };
  for (const Case& c : cases) {
    expectEverywhere<TypeParam>(c.op, make<TypeParam>(c.a), make<TypeParam>(c.b),
                                make<TypeParam>(c.want));
  }
  // Infinities add and multiply naturally.
  expectEverywhere<TypeParam>(loomSum, make<TypeParam>(S::PosInf), make<TypeParam>(S::Two),
                              make<TypeParam>(S::PosInf));
  expectEverywhere<TypeParam>(loomProd, make<TypeParam>(S::NegInf), make<TypeParam>(S::Two),
                              make<TypeParam>(S::NegInf));
}

// Every 16-bit pattern through each variant's conversion path (F16C, or vectorized integer
// code for bfloat16) against the scalar reference.
template <typename T>
void checkAllPatterns() {
  std::vector<T> a(65536), b(65536), out(65536);
  for (uint32_t i = 0; i < 65536; ++i) a[i] = T::fromBits(static_cast<uint16_t>(i));
  std::vector<uint32_t> order(65536);
  std::iota(order.begin(), order.end(), 0u);
  std::shuffle(order.begin(), order.end(), std::mt19937_64(5));
  for (uint32_t i = 0; i < 65536; ++i) b[i] = T::fromBits(static_cast<uint16_t>(order[i]));
  for (HostIsa isa : test::availableHostIsas()) {
    for (loomRedOp_t op : {loomSum, loomProd, loomMax, loomMin}) {
      reduceWithIsa(isa, dataTypeOf<T>(), op, out.data(), a.data(), b.data(), out.size());
      for (uint32_t i = 0; i < 65536; ++i) {
        ASSERT_TRUE(sameResult(op, out[i], reference(op, a[i], b[i])))
            << hostIsaName(isa) << " " << opName(op) << " " << describe(a[i]) << ", "
            << describe(b[i]) << " gave " << describe(out[i]);
      }
    }
  }
}

TEST(HostReduce, Float16EveryPatternEveryVariant) { checkAllPatterns<Float16>(); }
TEST(HostReduce, Bfloat16EveryPatternEveryVariant) { checkAllPatterns<Bfloat16>(); }

TEST(HostReduce, DivideTruncatesIntegersTowardZero) {
  const int8_t small[] = {-7, 7, -1, 1, -128, 127};
  const int8_t smallHalved[] = {-3, 3, 0, 0, -64, 63};
  const int64_t big[] = {INT64_MIN, INT64_MAX, -5, 5};
  const int64_t bigThirds[] = {INT64_MIN / 3, INT64_MAX / 3, -1, 1};
  for (HostIsa isa : test::availableHostIsas()) {
    int8_t out8[6];
    divideWithIsa(isa, loomInt8, out8, small, 6, 2);
    EXPECT_EQ(0, std::memcmp(out8, smallHalved, sizeof out8)) << hostIsaName(isa);
    int64_t out64[4];
    divideWithIsa(isa, loomInt64, out64, big, 4, 3);
    EXPECT_EQ(0, std::memcmp(out64, bigThirds, sizeof out64)) << hostIsaName(isa);
    const uint64_t top = UINT64_MAX;
    uint64_t outTop = 0;
    divideWithIsa(isa, loomUint64, &outTop, &top, 1, 2);
    EXPECT_EQ(outTop, UINT64_MAX / 2);
  }
  const Float16 three = Float16::fromFloat(3.0f);
  Float16 third{};
  divide(loomFloat16, &third, &three, 1, 9);
  EXPECT_EQ(third.bits, Float16::fromFloat(1.0f / 3.0f).bits);  // float32 quotient, rounded
}

TEST(HostReduce, RejectsUnsupportedArguments) {
  float x = 1.0f;
  auto expectInvalid = [](auto&& call) {
    try {
      call();
      ADD_FAILURE() << "no exception";
    } catch (const Error& error) {
      EXPECT_EQ(error.code(), loomInvalidArgument) << error.what();
    }
  };
  expectInvalid([&] { reduce(loomFloat32, loomNumOps, &x, &x, &x, 1); });
  expectInvalid([&] { reduce(static_cast<loomDataType_t>(-1), loomSum, &x, &x, &x, 1); });
  expectInvalid([&] { divide(loomFloat32, &x, &x, 1, 0); });
  expectInvalid([&] { divide(loomNumTypes, &x, &x, 1, 2); });
  EXPECT_EQ(x, 1.0f);
}

TEST(HostReduce, TypeMetadata) {
  const size_t sizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  for (int t = 0; t < loomNumTypes; ++t) {
    const auto type = static_cast<loomDataType_t>(t);
    EXPECT_EQ(typeSize(type), sizes[t]) << t;
    EXPECT_TRUE(typeSupported(type)) << t;  // fp8 too (test_float8.cc)
    EXPECT_STRNE(typeName(type), "unknown") << t;
  }
  EXPECT_EQ(typeSize(loomNumTypes), 0u);
  EXPECT_FALSE(typeSupported(loomNumTypes));
  EXPECT_STREQ(typeName(loomBfloat16), "bfloat16");
  EXPECT_STREQ(typeName(loomNumTypes), "unknown");
  EXPECT_STREQ(opName(loomAvg), "avg");
  EXPECT_STREQ(opName(loomNumOps), "unknown");
  EXPECT_STREQ(hostIsaName(HostIsa::Avx2), "avx2");
}

}  // namespace
}  // namespace loom::kernels
