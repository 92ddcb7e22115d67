// SPDX-License-Identifier: Apache-2.0
#include "kernels/host/canonical_reduce.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#include "base/error.h"
#include "kernels/host/host_reduce.h"
#include "kernels/reduce_ops.h"

namespace loom::kernels {
namespace {

// The accumulator type of T and the conversions to and from it.
template <typename T>
using WideOf = std::conditional_t<kIsNarrowFloat<T>, float, T>;

template <typename T>
inline WideOf<T> widen(T value) {
  if constexpr (kIsNarrowFloat<T>) {
    return value.toFloat();
  } else {
    return value;
  }
}

// The one rounding; a NaN becomes the canonical quiet NaN.
template <typename T>
inline T narrow(WideOf<T> value) {
  if constexpr (std::is_floating_point_v<WideOf<T>>) {
    if (value != value) value = std::numeric_limits<WideOf<T>>::quiet_NaN();
  }
  if constexpr (kIsNarrowFloat<T>) {
    return T::fromFloat(value);
  } else {
    return value;
  }
}

template <typename T>
constexpr bool kFloatAverage = std::is_floating_point_v<WideOf<T>>;

// Tiles keep the accumulators in L1 while every rank's slice streams through once.
constexpr size_t kTile = 512;

template <typename T, typename WideOp>
void reduceRanksTyped(T* dst, const T* const* sources, int nranks, size_t count, bool average) {
  using A = WideOf<T>;
  const WideOp op;
  A scale = A(1);
  if constexpr (kFloatAverage<T>) {
    if (average) scale = averageScale<A>(nranks);
  }
  A acc[kTile];
  for (size_t base = 0; base < count; base += kTile) {
    const size_t m = std::min(kTile, count - base);
    const T* first = sources[0] + base;
    for (size_t i = 0; i < m; ++i) acc[i] = widen(first[i]);
    if constexpr (kFloatAverage<T>) {
      if (average) {
        for (size_t i = 0; i < m; ++i) acc[i] *= scale;
      }
    }
    for (int rank = 1; rank < nranks; ++rank) {
      const T* source = sources[rank] + base;
      if (kFloatAverage<T> && average) {
        for (size_t i = 0; i < m; ++i) acc[i] = op(acc[i], widen(source[i]) * scale);
      } else {
        for (size_t i = 0; i < m; ++i) acc[i] = op(acc[i], widen(source[i]));
      }
    }
    T* out = dst + base;
    if (average) {
      if constexpr (kFloatAverage<T>) {
        const A divisor = averageDivisor<A>(nranks);
        for (size_t i = 0; i < m; ++i) out[i] = narrow<T>(acc[i] / divisor);
      } else {
        for (size_t i = 0; i < m; ++i) out[i] = divideBy(acc[i], nranks);
      }
    } else {
      for (size_t i = 0; i < m; ++i) out[i] = narrow<T>(acc[i]);
    }
  }
}

template <typename T>
void reduceAverageTyped(T* dst, const T* local, const T* incoming, size_t count, int nranks, bool incomingRaw) {
  using A = WideOf<T>;
  const A scale = averageScale<A>(nranks);
  const A incomingScale = incomingRaw ? scale : A(1);
  for (size_t i = 0; i < count; ++i) {
    dst[i] = narrow<T>(widen(local[i]) * scale + widen(incoming[i]) * incomingScale);
  }
}

template <typename T>
void finishAverageTyped(T* dst, size_t count, int nranks) {
  using A = WideOf<T>;
  const A divisor = averageDivisor<A>(nranks);
  for (size_t i = 0; i < count; ++i) dst[i] = narrow<T>(widen(dst[i]) / divisor);
}

[[noreturn]] void unsupported(const char* what, loomDataType_t type, loomRedOp_t op) {
  throwArgument(std::string(what) + ": unsupported datatype " + typeName(type) + " (" +
                std::to_string(static_cast<int>(type)) + ") or op " + opName(op) + " (" +
                std::to_string(static_cast<int>(op)) + ")");
}

}  // namespace

bool isNarrowFloat(loomDataType_t type) {
  bool narrow = false;
  visitDataType(type, [&](auto typeTag) { narrow = kIsNarrowFloat<decltype(typeTag)>; });
  return narrow;
}

void reduceRanks(loomDataType_t type, loomRedOp_t op, void* dst, const void* const* sources, int nranks,
                 size_t count) {
  if (nranks < 1) throwArgument("reduceRanks: no ranks");
  bool known = false;
  visitDataType(type, [&](auto typeTag) {
    using T = decltype(typeTag);
    using A = WideOf<T>;
    known = visitReduceOp<A>(op, [&](auto opTag) {
      known = true;
      if (count == 0) return;
      reduceRanksTyped<T, decltype(opTag)>(static_cast<T*>(dst), reinterpret_cast<const T* const*>(sources),
                                           nranks, count, op == loomAvg);
    });
  });
  if (!known) unsupported("reduceRanks", type, op);
}

void reduceAverage(loomDataType_t type, void* dst, const void* local, const void* incoming, size_t count,
                   int nranks, bool incomingRaw) {
  const bool known = visitDataType(type, [&](auto typeTag) {
    using T = decltype(typeTag);
    if constexpr (kFloatAverage<T>) {
      reduceAverageTyped<T>(static_cast<T*>(dst), static_cast<const T*>(local), static_cast<const T*>(incoming),
                            count, nranks, incomingRaw);
    } else {
      reduce(type, loomSum, dst, local, incoming, count);
    }
  });
  if (!known) unsupported("reduceAverage", type, loomAvg);
}

void finishAverage(loomDataType_t type, void* dst, size_t count, int nranks) {
  const bool known = visitDataType(type, [&](auto typeTag) {
    using T = decltype(typeTag);
    if constexpr (kFloatAverage<T>) {
      finishAverageTyped<T>(static_cast<T*>(dst), count, nranks);
    } else {
      divide(type, dst, dst, count, nranks);
    }
  });
  if (!known) unsupported("finishAverage", type, loomAvg);
}

}  // namespace loom::kernels
