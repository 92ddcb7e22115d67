// SPDX-License-Identifier: Apache-2.0
// The reduction operators, written once for the host kernels (host_reduce_*.cc) and the CUDA
// kernels (device/cuda_kernels.cu, through device_kernels.h), so both produce the same bits.
//
// Semantics, per value type T:
// - Integers: sum and prod wrap modulo 2^bits (computed in the unsigned type: no signed
//   overflow UB); max/min compare as T.
// - float/double: IEEE arithmetic in T.
// - Float16/Bfloat16 and the fp8 types (kIsNarrowFloat): convert both operands to float32, apply
//   the float32 operator, round the result once to nearest even (half_float.h, float8.h; fp8
//   saturates at its largest finite value, as CUDA's conversions that NCCL uses do).
// - max/min of floats follow IEEE 754-2019 maximum/minimum: a NaN operand makes the result
//   NaN (NaN propagates, as through sum and prod, whichever rank holds it), and -0 < +0, so
//   max(+0, -0) = +0 and min(+0, -0) = -0 in either order. Otherwise the result is one
//   operand's bits. Infinities order naturally. The host vector kernels apply these same
//   functors lane by lane (host_kernel_table.h), so no path has its own copy of the rule; the
//   unit tests check every path against an independently written reference.
// - Sum/prod of NaNs yield NaN; which payload is not specified (x86 and GPUs differ).
// - avg: integers reduce with Sum, then divideBy() once at the end, truncating toward zero
//   (as NCCL). Floats scale every input by 2^-k, where 2^k >= 2n (exact), sum, and divide by
//   n * 2^-k at the end (averageDivisor): the same bits as sum-then-divide in the normal
//   range, but the sum cannot overflow when the mean is representable (canonical_reduce.h).
//
// LOOM_HOST_DEVICE (from half_float.h) marks what nvcc also compiles for the GPU.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/float8.h"
#include "kernels/half_float.h"
#include "loom.h"

namespace loom::kernels {

// The 16-bit floats, which the host kernels also convert with vector instructions.
template <typename T>
inline constexpr bool kIsHalfType = std::is_same_v<T, Float16> || std::is_same_v<T, Bfloat16>;
template <typename T>
inline constexpr bool kIsFloat8 = std::is_same_v<T, Float8e4m3> || std::is_same_v<T, Float8e5m2>;
// Stored in 16 or 8 bits, computed in float32: every operation rounds once, when it stores.
template <typename T>
inline constexpr bool kIsNarrowFloat = kIsHalfType<T> || kIsFloat8<T>;

namespace detail {
// Wrapping integer arithmetic: at least unsigned int, so that narrow types do not promote to
// (signed) int, where 16-bit products could overflow.
template <typename T>
using WrapType = decltype(std::make_unsigned_t<T>{} + 0u);

template <typename T>
LOOM_HOST_DEVICE inline bool isNan(T value) {
  if constexpr (std::is_floating_point_v<T>) {
    return value != value;
  } else {
    (void)value;
    return false;
  }
}
}  // namespace detail

template <typename T>
struct Sum {
  // The same operator on another value type (the float32 op a 16-bit op computes with).
  template <typename U>
  using Rebind = Sum<U>;

  LOOM_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (kIsNarrowFloat<T>) {
      return T::fromFloat(a.toFloat() + b.toFloat());
    } else if constexpr (std::is_integral_v<T>) {
      using W = detail::WrapType<T>;
      return static_cast<T>(static_cast<W>(a) + static_cast<W>(b));
    } else {
      return a + b;
    }
  }
};

template <typename T>
struct Prod {
  template <typename U>
  using Rebind = Prod<U>;

  LOOM_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (kIsNarrowFloat<T>) {
      return T::fromFloat(a.toFloat() * b.toFloat());
    } else if constexpr (std::is_integral_v<T>) {
      using W = detail::WrapType<T>;
      return static_cast<T>(static_cast<W>(a) * static_cast<W>(b));
    } else {
      return a * b;
    }
  }
};

namespace detail {
// IEEE 754-2019 maximum (isMax) or minimum of two floats: NaN propagates (a + b is NaN and
// keeps a NaN operand's payload), -0 < +0. Written as selects so the vector kernels stay
// branch-free.
template <typename T>
LOOM_HOST_DEVICE inline T extremum(T a, T b, bool isMax) {
  const T larger = a > b ? a : b, smaller = a < b ? a : b;
  // Equal operands: the same value, or +0 and -0. a + b of two zeros is +0 unless both are
  // -0, which is max's rule; -((-a) + (-b)) is -0 unless both are +0, min's rule.
  const T zeros = isMax ? a + b : -((-a) + (-b));
  const T equal = a == T(0) ? zeros : a;
  const T ordered = a == b ? equal : (isMax ? larger : smaller);
  return (isNan(a) || isNan(b)) ? a + b : ordered;
}
}  // namespace detail

template <typename T>
struct Max {
  template <typename U>
  using Rebind = Max<U>;

  LOOM_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (kIsNarrowFloat<T>) {
      return T::fromFloat(Max<float>()(a.toFloat(), b.toFloat()));
    } else if constexpr (std::is_floating_point_v<T>) {
      return detail::extremum(a, b, true);  // the rule at the top of this file
    } else {
      return a > b ? a : b;
    }
  }
};

template <typename T>
struct Min {
  template <typename U>
  using Rebind = Min<U>;

  LOOM_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (kIsNarrowFloat<T>) {
      return T::fromFloat(Min<float>()(a.toFloat(), b.toFloat()));
    } else if constexpr (std::is_floating_point_v<T>) {
      return detail::extremum(a, b, false);
    } else {
      return a < b ? a : b;
    }
  }
};

// avg's final step: value / divisor, divisor >= 1.
template <typename T>
LOOM_HOST_DEVICE inline T divideBy(T value, int divisor) {
  if constexpr (kIsNarrowFloat<T>) {
    return T::fromFloat(value.toFloat() / static_cast<float>(divisor));
  } else if constexpr (std::is_integral_v<T>) {
    // C++ division truncates toward zero and cannot overflow for divisor >= 1; the quotient
    // always fits back into T. Narrow types divide in 32 bits (cheaper than 64).
    using Wide32 = std::conditional_t<std::is_signed_v<T>, int32_t, uint32_t>;
    using Wide64 = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
    using Wide = std::conditional_t<(sizeof(T) <= 4), Wide32, Wide64>;
    return static_cast<T>(static_cast<Wide>(value) / static_cast<Wide>(divisor));
  } else {
    return value / static_cast<T>(divisor);
  }
}

// Floating-point avg (see the top of this file): inputs are scaled by averageScale(n) =
// 2^-k with 2^k >= 2n, the scaled values summed, and the sum divided by averageDivisor(n) =
// n * 2^-k. Both are powers of two times small integers: exact in every float type. The true
// scaled sum is at most half the largest finite value, so rounding cannot carry it to
// infinity either.
LOOM_HOST_DEVICE inline int averageShift(int nranks) {
  int shift = 1;
  while ((1 << shift) < 2 * nranks) ++shift;
  return shift;
}
template <typename A>
LOOM_HOST_DEVICE inline A averageScale(int nranks) {
  return A(1) / static_cast<A>(1 << averageShift(nranks));
}
template <typename A>
LOOM_HOST_DEVICE inline A averageDivisor(int nranks) {
  return static_cast<A>(nranks) / static_cast<A>(1 << averageShift(nranks));
}

// Calls fn(T{}) with the C++ value type of a datatype; returns false for values that are not
// a datatype.
template <typename Fn>
inline bool visitDataType(loomDataType_t type, Fn&& fn) {
  switch (type) {
    case loomInt8:
      fn(int8_t{});
      return true;
    case loomUint8:
      fn(uint8_t{});
      return true;
    case loomInt32:
      fn(int32_t{});
      return true;
    case loomUint32:
      fn(uint32_t{});
      return true;
    case loomInt64:
      fn(int64_t{});
      return true;
    case loomUint64:
      fn(uint64_t{});
      return true;
    case loomFloat16:
      fn(Float16{});
      return true;
    case loomFloat32:
      fn(float{});
      return true;
    case loomFloat64:
      fn(double{});
      return true;
    case loomBfloat16:
      fn(Bfloat16{});
      return true;
    case loomFloat8e4m3:
      fn(Float8e4m3{});
      return true;
    case loomFloat8e5m2:
      fn(Float8e5m2{});
      return true;
    default:
      return false;
  }
}

// Calls fn(Op<T>{}) for a reduction operator (avg reduces as Sum); false for unknown ops.
template <typename T, typename Fn>
inline bool visitReduceOp(loomRedOp_t op, Fn&& fn) {
  switch (op) {
    case loomSum:
    case loomAvg:
      fn(Sum<T>{});
      return true;
    case loomProd:
      fn(Prod<T>{});
      return true;
    case loomMax:
      fn(Max<T>{});
      return true;
    case loomMin:
      fn(Min<T>{});
      return true;
    default:
      return false;
  }
}

}  // namespace loom::kernels
