// SPDX-License-Identifier: Apache-2.0
#include "perf/perf_data.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <stdexcept>
#include <type_traits>

#include "kernels/half_float.h"

namespace loom::perf {
namespace {

using kernels::Bfloat16;
using kernels::Float16;

struct TypeInfo {
  loomDataType_t type;
  const char* name;
  size_t size;
  uint64_t exactLimit;  // every integer in [0, exactLimit] is representable exactly
};

constexpr TypeInfo kTypes[] = {
    {loomInt8, "int8", 1, 127},        {loomUint8, "uint8", 1, 255},
    {loomInt32, "int32", 4, 65536},    {loomUint32, "uint32", 4, 65536},
    {loomInt64, "int64", 8, 65536},    {loomUint64, "uint64", 8, 65536},
    {loomFloat16, "half", 2, 2048},    {loomFloat32, "float", 4, 65536},
    {loomFloat64, "double", 8, 65536}, {loomBfloat16, "bfloat16", 2, 256},
};

constexpr loomRedOp_t kOps[] = {loomSum, loomProd, loomMax, loomMin, loomAvg};
constexpr const char* kOpNames[] = {"sum", "prod", "max", "min", "avg"};

const TypeInfo& infoOf(loomDataType_t type) {
  for (const TypeInfo& info : kTypes) {
    if (info.type == type) return info;
  }
  throw std::invalid_argument("perf: unsupported datatype");
}

// Calls fn(T{}) with the storage type of `type`.
template <typename Fn>
void withStorage(loomDataType_t type, Fn&& fn) {
  switch (type) {
    case loomInt8:
      return fn(int8_t{});
    case loomUint8:
      return fn(uint8_t{});
    case loomInt32:
      return fn(int32_t{});
    case loomUint32:
      return fn(uint32_t{});
    case loomInt64:
      return fn(int64_t{});
    case loomUint64:
      return fn(uint64_t{});
    case loomFloat16:
      return fn(Float16{});
    case loomFloat32:
      return fn(float{});
    case loomFloat64:
      return fn(double{});
    case loomBfloat16:
      return fn(Bfloat16{});
    default:
      throw std::invalid_argument("perf: unsupported datatype");
  }
}

// Values are small non-negative integers, so every conversion below is exact.
template <typename T>
T fromDouble(double value) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, Bfloat16>) {
    return T::fromFloat(static_cast<float>(value));
  } else {
    return static_cast<T>(value);
  }
}

// Exact for every value of T below 2^53; larger integers cannot equal a (small) expected value
// after conversion either, so comparing as double is an exact comparison here.
template <typename T>
double toDouble(T value) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, Bfloat16>) {
    return value.toFloat();
  } else {
    return static_cast<double>(value);
  }
}

uint64_t floorPowerOfTwo(uint64_t x) {
  uint64_t p = 1;
  while (p * 2 <= x) p *= 2;
  return p;
}

template <typename T>
T loadAt(const void* buffer, size_t i) {
  T value;
  std::memcpy(&value, static_cast<const char*>(buffer) + i * sizeof(T), sizeof(T));
  return value;
}

}  // namespace

size_t typeSize(loomDataType_t type) { return infoOf(type).size; }
const char* typeName(loomDataType_t type) { return infoOf(type).name; }

const char* opName(loomRedOp_t op) {
  for (size_t i = 0; i < std::size(kOps); ++i) {
    if (kOps[i] == op) return kOpNames[i];
  }
  return "none";
}

bool parseTypeList(const std::string& text, std::vector<loomDataType_t>* types) {
  if (text == "all") {
    types->clear();
    for (const TypeInfo& info : kTypes) types->push_back(info.type);
    return true;
  }
  // nccl-tests' aliases too: the C names of the enum.
  static const std::pair<const char*, loomDataType_t> kAliases[] = {
      {"char", loomInt8},       {"int", loomInt32},       {"float16", loomFloat16},
      {"float32", loomFloat32}, {"float64", loomFloat64}, {"bf16", loomBfloat16}};
  for (const TypeInfo& info : kTypes) {
    if (text == info.name) return *types = {info.type}, true;
  }
  for (const auto& [alias, type] : kAliases) {
    if (text == alias) return *types = {type}, true;
  }
  return false;
}

bool parseOpList(const std::string& text, std::vector<loomRedOp_t>* ops) {
  if (text == "all") {
    ops->assign(std::begin(kOps), std::end(kOps));
    return true;
  }
  for (size_t i = 0; i < std::size(kOps); ++i) {
    if (text == kOpNames[i]) return *ops = {kOps[i]}, true;
  }
  return false;
}

Pattern::Pattern(loomDataType_t type, loomRedOp_t op, int nranks)
    : type_(type), op_(op), nranks_(std::max(nranks, 1)) {
  const uint64_t limit = infoOf(type).exactLimit;
  modulus_ = floorPowerOfTwo(std::max<uint64_t>(1, limit / (uint64_t(nranks_) + 1)));
  // At most ceil(n / P) <= 6 ranks hold a 2 at any index.
  twoPeriod_ = std::max<uint64_t>(2, (uint64_t(nranks_) + 5) / 6);
}

double Pattern::value(int rank, size_t g) const {
  if (skewRank0_ && rank == 0) {
    Pattern plain = *this;
    plain.skewRank0_ = false;
    return plain.value(rank, g) + 1.0;
  }
  const uint64_t r = static_cast<uint64_t>(rank);
  switch (op_) {
    case loomProd:
      return (g + r) % twoPeriod_ == 0 ? 2.0 : 1.0;
    case loomAvg: {
      const uint64_t a = (7 * uint64_t(g) + 1) % modulus_;
      const uint64_t b = (uint64_t(g) + r / 2) % (a + 1);
      if (rank == nranks_ - 1 && nranks_ % 2 == 1) return double(a);
      return rank % 2 == 0 ? double(a + b) : double(a - b);
    }
    default:
      return double((7 * uint64_t(g) + 1 + 3 * r) % modulus_);
  }
}

double Pattern::reduced(size_t g) const {
  double result = value(0, g);
  for (int r = 1; r < nranks_; ++r) {
    const double v = value(r, g);
    switch (op_) {
      case loomProd:
        result *= v;
        break;
      case loomMax:
        result = std::max(result, v);
        break;
      case loomMin:
        result = std::min(result, v);
        break;
      default:
        result += v;
        break;  // sum, and avg's sum
    }
  }
  // The sum is n * a by construction: the division is exact in every type.
  return op_ == loomAvg ? result / nranks_ : result;
}

void fillInput(void* buffer, size_t count, const Pattern& pattern, int rank, size_t firstGlobal) {
  withStorage(pattern.type(), [&](auto tag) {
    using T = decltype(tag);
    T* out = static_cast<T*>(buffer);
    for (size_t i = 0; i < count; ++i) out[i] = fromDouble<T>(pattern.value(rank, firstGlobal + i));
  });
}

size_t countWrongCopied(const void* buffer, size_t count, const Pattern& pattern, int sourceRank,
                        size_t firstGlobal) {
  size_t wrong = 0;
  withStorage(pattern.type(), [&](auto tag) {
    using T = decltype(tag);
    for (size_t i = 0; i < count; ++i) {
      const double expected = pattern.value(sourceRank, firstGlobal + i);
      if (!(toDouble(loadAt<T>(buffer, i)) == expected)) ++wrong;
    }
  });
  return wrong;
}

size_t countWrongReduced(const void* buffer, size_t count, const Pattern& pattern,
                         size_t firstGlobal) {
  size_t wrong = 0;
  withStorage(pattern.type(), [&](auto tag) {
    using T = decltype(tag);
    for (size_t i = 0; i < count; ++i) {
      if (!(toDouble(loadAt<T>(buffer, i)) == pattern.reduced(firstGlobal + i))) ++wrong;
    }
  });
  return wrong;
}

void divideInPlace(void* buffer, size_t count, loomDataType_t type, int divisor) {
  withStorage(type, [&](auto tag) {
    using T = decltype(tag);
    T* values = static_cast<T*>(buffer);
    if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, Bfloat16>) {
      for (size_t i = 0; i < count; ++i) {
        values[i] = T::fromFloat(values[i].toFloat() / static_cast<float>(divisor));
      }
    } else {
      // The usual promotions divide int8/uint8 in int, so divisor is never narrowed.
      for (size_t i = 0; i < count; ++i) values[i] = static_cast<T>(values[i] / divisor);
    }
  });
}

void poison(void* buffer, size_t bytes) { std::memset(buffer, 0xff, bytes); }

}  // namespace loom::perf
