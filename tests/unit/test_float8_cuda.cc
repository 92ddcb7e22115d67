// SPDX-License-Identifier: Apache-2.0
// Loom's fp8 conversions against CUDA's own (cuda_fp8.h, the host implementation of the
// __nv_fp8_e4m3 / __nv_fp8_e5m2 conversions NCCL's fp8 kernels use, with __NV_SATFINITE): the
// same bits for every finite float sampled (a stride through all 2^32 patterns, and every float
// within a few ulps of each fp8 value and of each midpoint between two). The documented
// differences: an e5m2 infinity stays infinite in Loom (CUDA's satfinite gives 57344), and
// which NaN pattern a NaN becomes (both keep it a NaN). And NCCL's fp8 arithmetic (sum and
// product in half precision, then the saturating conversion) gives Loom's bits (float32, then
// the conversion) for every pair of finite values. Built only where the CUDA headers are; the
// whole 2^32 conversion sweep (about 30 s) agrees too.
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/float8.h"

namespace loom::kernels {
namespace {

uint8_t loomBits(int format, float value) {
  return format == 0 ? Float8e4m3::fromFloat(value).bits : Float8e5m2::fromFloat(value).bits;
}
uint8_t cudaBits(int format, float value) {
  return __nv_cvt_float_to_fp8(value, __NV_SATFINITE, format == 0 ? __NV_E4M3 : __NV_E5M2);
}

void expectSame(int format, uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  if (std::isnan(value) || std::isinf(value)) return;
  ASSERT_EQ(loomBits(format, value), cudaBits(format, value))
      << (format == 0 ? "e4m3 " : "e5m2 ") << value << " (0x" << std::hex << bits << ")";
}

TEST(Float8AgainstCuda, FiniteFloatsConvertToTheSameBits) {
  for (int format : {0, 1}) {
    for (uint64_t bits = 0; bits <= 0xffffffffull; bits += 251)
      expectSame(format, static_cast<uint32_t>(bits));
    // Around every fp8 value and every midpoint (where rounding decides), both signs.
    for (int code = 0; code < 128; ++code) {
      const float low = format == 0 ? Float8e4m3::fromBits(static_cast<uint8_t>(code)).toFloat()
                                    : Float8e5m2::fromBits(static_cast<uint8_t>(code)).toFloat();
      const float high = format == 0
                             ? Float8e4m3::fromBits(static_cast<uint8_t>(code + 1)).toFloat()
                             : Float8e5m2::fromBits(static_cast<uint8_t>(code + 1)).toFloat();
      for (float center : {low, std::isfinite(high) ? (low + high) / 2 : low * 1.0625f}) {
        uint32_t bits;
        std::memcpy(&bits, &center, sizeof bits);
        for (uint32_t delta = 0; delta < 8; ++delta) {
          for (uint32_t sign : {0u, 0x80000000u}) {
            expectSame(format, (bits + delta) | sign);
            expectSame(format, (bits - delta) | sign);
          }
        }
      }
    }
  }
}

TEST(Float8AgainstCuda, EveryPatternDecodesToCudasValue) {
  for (int format : {0, 1}) {
    for (int code = 0; code < 256; ++code) {
      const __half_raw half =
          __nv_cvt_fp8_to_halfraw(static_cast<uint8_t>(code), format == 0 ? __NV_E4M3 : __NV_E5M2);
      const float cuda = __half2float(__half(half));
      const float mine = format == 0 ? Float8e4m3::fromBits(static_cast<uint8_t>(code)).toFloat()
                                     : Float8e5m2::fromBits(static_cast<uint8_t>(code)).toFloat();
      EXPECT_TRUE(mine == cuda || (std::isnan(mine) && std::isnan(cuda)))
          << format << " 0x" << std::hex << code;
    }
  }
}

// What NCCL computes for one sum or product of two fp8 values on sm_80+ (__hadd / __hmul: the
// exact result rounded to half, then __nv_fp8_*'s satfinite conversion) against Loom's float32
// operator, over every pair of finite patterns.
TEST(Float8AgainstCuda, HalfPrecisionSumsAndProductsGiveLoomsBits) {
  for (int format : {0, 1}) {
    for (int a = 0; a < 256; ++a) {
      for (int b = 0; b < 256; ++b) {
        const auto x = static_cast<uint8_t>(a), y = static_cast<uint8_t>(b);
        const float fa =
            format == 0 ? Float8e4m3::fromBits(x).toFloat() : Float8e5m2::fromBits(x).toFloat();
        const float fb =
            format == 0 ? Float8e4m3::fromBits(y).toFloat() : Float8e5m2::fromBits(y).toFloat();
        if (!std::isfinite(fa) || !std::isfinite(fb)) continue;
        for (const float exact : {fa + fb, fa * fb}) {
          const __half_raw half(__float2half_rn(exact));
          const uint8_t nccl =
              __nv_cvt_halfraw_to_fp8(half, __NV_SATFINITE, format == 0 ? __NV_E4M3 : __NV_E5M2);
          ASSERT_EQ(loomBits(format, exact), nccl)
              << format << ": 0x" << std::hex << a << ", 0x" << b;
        }
      }
    }
  }
}

}  // namespace
}  // namespace loom::kernels
