// The reduction operators, written once for the host kernels (host_reduce_*.cc) and the CUDA
// kernels (cuda_reduce.cu), so both produce the same bits.
//
// Semantics, per value type T:
// - Integers: sum and prod wrap modulo 2^bits (computed in the unsigned type: no signed
//   overflow UB); max/min compare as T.
// - float/double: IEEE arithmetic in T.
// - Float16/Bfloat16: convert both operands to float32, apply the float32 operator, round the
//   result once to nearest even (half_float.h).
// - max/min and NaN: max(a, b) = (a > b || b is NaN) ? a : b, and min likewise with <. So a NaN
//   operand loses to a number (as CUDA fmaxf and IEEE 754-2019 maximumNumber do), two NaNs give
//   the first, and equal operands (+0 and -0 included) give the second. The result is always
//   one operand's bits (for 16-bit types: after the float32 round trip, which quiets NaNs).
//   Infinities order naturally. The host vector kernels apply these same functors lane by lane
//   (host_kernel_table.h), so no path has its own copy of the rule; the unit tests check every
//   path against an independently written reference.
// - Sum/prod of NaNs yield NaN; which payload is not specified (x86 and GPUs differ).
// - avg: reduces with Sum, then divideBy() once at the end. Integers truncate toward zero (as
//   NCCL); floats divide in their own precision, 16-bit types in float32 then round.
//
// LOOM_HOST_DEVICE (from half_float.h) marks what nvcc also compiles for the GPU.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/half_float.h"
#include "loom.h"

namespace loom::kernels {

template <typename T>
inline constexpr bool kIsHalfType = std::is_same_v<T, Float16> || std::is_same_v<T, Bfloat16>;

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
    if constexpr (kIsHalfType<T>) {
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
    if constexpr (kIsHalfType<T>) {
      return T::fromFloat(a.toFloat() * b.toFloat());
    } else if constexpr (std::is_integral_v<T>) {
      using W = detail::WrapType<T>;
      return static_cast<T>(static_cast<W>(a) * static_cast<W>(b));
    } else {
      return a * b;
    }
  }
};

template <typename T>
struct Max {
  template <typename U>
  using Rebind = Max<U>;

  LOOM_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (kIsHalfType<T>) {
      return T::fromFloat(Max<float>()(a.toFloat(), b.toFloat()));
    } else {
      return (a > b || detail::isNan(b)) ? a : b;  // the rule at the top of this file
    }
  }
};

template <typename T>
struct Min {
  template <typename U>
  using Rebind = Min<U>;

  LOOM_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (kIsHalfType<T>) {
      return T::fromFloat(Min<float>()(a.toFloat(), b.toFloat()));
    } else {
      return (a < b || detail::isNan(b)) ? a : b;
    }
  }
};

// avg's final step: value / divisor, divisor >= 1.
template <typename T>
LOOM_HOST_DEVICE inline T divideBy(T value, int divisor) {
  if constexpr (kIsHalfType<T>) {
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

// Calls fn(T{}) with the C++ value type of a datatype; returns false for the types the
// kernels do not handle (fp8, unknown values).
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
