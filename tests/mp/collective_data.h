// SPDX-License-Identifier: Apache-2.0
// Test data for the collective suites: 16-bit float helpers, a deterministic generator and the
// exact reference reduction. Used by collective_checks.h and by single-process API tests.
//
// Data is chosen so that every result is exact in every type whatever the reduction order:
// integer-valued, small enough that sums stay below the type's exact range (|sum| <= 248 for
// fp16/bf16), products of at most six factors of 2, avg over floats summing to a multiple of n.
// Unsigned types use full-range random bits for sum/prod: wrap-around is exact modular math.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "loom.h"
#include "tests/support/multiprocess.h"

namespace loom::test {

// ---- 16-bit floats: only what the test needs, written here so the test trusts no library code.
struct Half {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};

inline double halfToDoubleSlow(uint16_t h) {
  const int sign = (h >> 15) ? -1 : 1;
  const int exponent = (h >> 10) & 0x1f;
  const int mantissa = h & 0x3ff;
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);  // zero or subnormal
  if (exponent == 31) return mantissa ? NAN : sign * INFINITY;
  return sign * std::ldexp(1024 + mantissa, exponent - 25);
}
// Table lookup: the reference converts millions of values per case.
inline double halfToDouble(uint16_t h) {
  static const std::vector<double> table = [] {
    std::vector<double> t(65536);
    for (uint32_t i = 0; i < t.size(); ++i) t[i] = halfToDoubleSlow(uint16_t(i));
    return t;
  }();
  return table[h];
}
inline double bfloat16ToDouble(uint16_t b) {
  const uint32_t bits = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
// Exact conversions only (the reference never rounds): throws on a value that is not exact.
inline uint16_t doubleToHalfExact(double v) {
  const uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  if (v == 0) return sign;
  int e = 0;
  const double m = std::frexp(std::fabs(v), &e);  // |v| = m * 2^e, m in [0.5, 1)
  const int biased = e - 1 + 15;
  const double frac = (m * 2 - 1) * 1024;
  if (biased < 1 || biased > 30 || frac != std::floor(frac)) {
    requireFailed("exact fp16", "value " + std::to_string(v) + " is not exact in fp16", __FILE__,
                  __LINE__);
  }
  return uint16_t(sign | (biased << 10) | uint16_t(frac));
}
inline uint16_t doubleToBfloat16Exact(double v) {
  const float f = float(v);
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  if (double(f) != v || (bits & 0xffff) != 0) {
    requireFailed("exact bf16", "value " + std::to_string(v) + " is not exact in bf16", __FILE__,
                  __LINE__);
  }
  return uint16_t(bits >> 16);
}

template <class T>
constexpr bool kIsHalfLike = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;
template <class T>
constexpr bool kIsFloat = std::is_floating_point_v<T> || kIsHalfLike<T>;
template <class T>
constexpr bool kIsSigned = kIsFloat<T> || std::is_signed_v<T>;
// The type the reference computes in: exact for every value the generator produces.
template <class T>
using Wide =
    std::conditional_t<kIsFloat<T>, double, std::conditional_t<kIsSigned<T>, int64_t, uint64_t>>;

template <class T>
Wide<T> toWide(T v) {
  if constexpr (std::is_same_v<T, Half>)
    return halfToDouble(v.bits);
  else if constexpr (std::is_same_v<T, BFloat16>)
    return bfloat16ToDouble(v.bits);
  else
    return static_cast<Wide<T>>(v);
}
template <class T>
T fromWide(Wide<T> w) {
  if constexpr (std::is_same_v<T, Half>)
    return Half{doubleToHalfExact(w)};
  else if constexpr (std::is_same_v<T, BFloat16>)
    return BFloat16{doubleToBfloat16Exact(w)};
  else if constexpr (std::is_floating_point_v<T>) {
    LOOM_REQUIRE(double(T(w)) == w, "reference value not exact in the type");
    return T(w);
  } else {
    return static_cast<T>(w);  // modular for integers (C++20)
  }
}

inline const char* typeName(loomDataType_t t) {
  static const char* const names[] = {"int8",   "uint8",   "int32",   "uint32",  "int64",
                                      "uint64", "float16", "float32", "float64", "bfloat16"};
  return t >= 0 && t < 10 ? names[t] : "?";
}
inline const char* opName(loomRedOp_t op) {
  static const char* const names[] = {"sum", "prod", "max", "min", "avg"};
  return op >= 0 && op < 5 ? names[op] : "?";
}
inline const std::vector<loomDataType_t>& allTypes() {
  static const std::vector<loomDataType_t> types = {
      loomInt8,   loomUint8,   loomInt32,   loomUint32,  loomInt64,
      loomUint64, loomFloat16, loomFloat32, loomFloat64, loomBfloat16};
  return types;
}
inline const std::vector<loomRedOp_t>& allOps() {
  static const std::vector<loomRedOp_t> ops = {loomSum, loomProd, loomMax, loomMin, loomAvg};
  return ops;
}

// ---- Deterministic generator ----------------------------------------------------------------
inline uint64_t mix64(uint64_t x) {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
// One splitmix64 step per element: the generator runs for every element of every rank.
inline uint64_t elementHash(uint64_t seed, int rank, size_t index) {
  return mix64(seed + uint64_t(rank + 1) * 0xd6e8feb86659fd93ull +
               uint64_t(index) * 0x9e3779b97f4a7c15ull);
}

// Which value distribution a case needs (see the file comment).
enum class Distribution { Sum, Prod, Bits, AvgInt, AvgFloat };

inline Distribution distributionFor(loomRedOp_t op, bool isFloat) {
  switch (op) {
    case loomSum:
      return Distribution::Sum;
    case loomProd:
      return Distribution::Prod;
    case loomAvg:
      return isFloat ? Distribution::AvgFloat : Distribution::AvgInt;
    default:
      return Distribution::Bits;  // max/min: any value, compared exactly
  }
}

// Largest magnitude a single value may have so that sums over <= 8 ranks stay exact.
template <class T>
int64_t sumRange() {
  if constexpr (kIsHalfLike<T>)
    return 31;  // 8 * 31 = 248 <= 256
  else if constexpr (std::is_same_v<T, float>)
    return int64_t(1) << 20;
  else if constexpr (std::is_same_v<T, double>)
    return int64_t(1) << 49;
  else if constexpr (sizeof(T) == 1)
    return 15;  // int8 / uint8 sums stay below 128
  else
    return int64_t(1) << (sizeof(T) * 8 - 5);
}

template <class T>
int64_t avgFloatRange() {
  return kIsHalfLike<T> ? 4 : (std::is_same_v<T, float> ? (1 << 18) : (int64_t(1) << 46));
}
// The exact average of element `index` (Distribution::AvgFloat builds the data around it).
template <class T>
int64_t avgFloatTarget(uint64_t seed, size_t index) {
  const int64_t r = avgFloatRange<T>();
  return int64_t(elementHash(seed, -1, index) % uint64_t(2 * r + 1)) - r;
}

template <class T>
T randomBits(uint64_t h) {
  if constexpr (kIsFloat<T>) {
    // Any finite non-zero value: max/min must pick it bit for bit. (+0/-0 are excluded
    // because max(+0, -0) legitimately depends on the order.)
    for (;; h = mix64(h)) {
      T v;
      std::memcpy(&v, &h, sizeof v);
      const double d = toWide(v);
      if (std::isfinite(d) && d != 0) return v;
    }
  } else {
    return static_cast<T>(h);
  }
}

template <class T>
T generate(Distribution dist, uint64_t seed, int rank, int nranks, size_t index) {
  const uint64_t h = elementHash(seed, rank, index);
  const int64_t range = sumRange<T>();
  auto symmetric = [&](int64_t r) { return int64_t(h % uint64_t(2 * r + 1)) - r; };
  switch (dist) {
    case Distribution::Sum:
      if constexpr (!kIsSigned<T>) return static_cast<T>(h);  // wraps: exact modular math
      return fromWide<T>(Wide<T>(symmetric(range)));
    case Distribution::Prod: {
      if constexpr (!kIsSigned<T>) return static_cast<T>(h);
      // {0, +-1, +-2}, at most six factors of 2 (ranks < 6): |product| <= 64 in every type.
      int64_t v = (rank < 6 && (h & 3) == 0) ? 2 : 1;
      if (((h >> 2) & 63) == 0) v = 0;
      if ((h >> 8) & 1) v = -v;
      return fromWide<T>(Wide<T>(v));
    }
    case Distribution::Bits:
      return randomBits<T>(h);
    case Distribution::AvgInt:
      if constexpr (!kIsSigned<T>) return static_cast<T>(h % uint64_t(2 * range + 1));
      return fromWide<T>(Wide<T>(symmetric(range)));
    case Distribution::AvgFloat: {
      // Ranks 0..n-2 draw small values; the last rank completes the sum to n * target so that
      // sum / n is an exact integer. Subset sums stay below 22 * r, exact in every float type.
      if (rank < nranks - 1) return fromWide<T>(Wide<T>(symmetric(avgFloatRange<T>())));
      int64_t others = 0;
      for (int q = 0; q < nranks - 1; ++q) {
        others += int64_t(toWide(generate<T>(dist, seed, q, nranks, index)));
      }
      return fromWide<T>(Wide<T>(avgFloatTarget<T>(seed, index) * nranks - others));
    }
  }
  return T{};
}

// The exact reduction of element `index` over all ranks, as the library must compute it.
template <class T>
T reduceReference(loomRedOp_t op, uint64_t seed, int nranks, size_t index) {
  const Distribution dist = distributionFor(op, kIsFloat<T>);
  // Same value as summing the generated inputs and dividing by n (exact by construction), but
  // O(1) instead of O(n^2) per element.
  if (dist == Distribution::AvgFloat && index >= 64) {
    return fromWide<T>(Wide<T>(avgFloatTarget<T>(seed, index)));
  }
  T best = generate<T>(dist, seed, 0, nranks, index);
  Wide<T> acc = toWide(best);
  for (int r = 1; r < nranks; ++r) {
    const T v = generate<T>(dist, seed, r, nranks, index);
    const Wide<T> w = toWide(v);
    if constexpr (kIsFloat<T>) {
      if (op == loomSum || op == loomAvg) acc += w;
      if (op == loomProd) acc *= w;
    } else {  // unsigned arithmetic: modular, never undefined
      if (op == loomSum || op == loomAvg) acc = Wide<T>(uint64_t(acc) + uint64_t(w));
      if (op == loomProd) acc = Wide<T>(uint64_t(acc) * uint64_t(w));
    }
    if ((op == loomMax && w > toWide(best)) || (op == loomMin && w < toWide(best))) best = v;
  }
  if (op == loomMax || op == loomMin) return best;  // bit-exact input value
  if (op == loomAvg) acc = acc / Wide<T>(nranks);   // ints: C division, truncates toward 0
  if (dist == Distribution::AvgFloat) {  // the generator's promise, checked on a few elements
    LOOM_REQUIRE(acc == Wide<T>(avgFloatTarget<T>(seed, index)), "test generator bug (avg)");
  }
  return fromWide<T>(acc);
}

}  // namespace loom::test
