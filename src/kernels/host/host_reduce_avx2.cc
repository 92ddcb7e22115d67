// SPDX-License-Identifier: Apache-2.0
// The AVX2 variant of the host kernels. The shared loops (host_kernel_table.h) are inlined into
// functions that carry target("avx2,f16c"), so they vectorize with 256-bit registers while the
// rest of the library stays baseline x86-64; host_reduce.cc only calls them when the CPU has
// AVX2 and F16C.
#if defined(__x86_64__)

#include <immintrin.h>

#include "kernels/host/host_kernel_table.h"

#define LOOM_TARGET_AVX2 __attribute__((target("avx2,f16c")))

namespace loom::kernels {
namespace {

// vcvtph2ps is exact and quiets signaling NaNs, like Float16::toFloat. vcvtps2ph with the
// immediate round-to-nearest-even mode ignores MXCSR and rounds like Float16::fromFloat,
// subnormal results and overflow to infinity included (test_half_float checks it against
// the hardware).
struct Float16Codec {
  static constexpr size_t kBlock = 8;

  LOOM_TARGET_AVX2 static void widen(const Float16* src, float* out) {
    _mm256_storeu_ps(out, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src))));
  }
  LOOM_TARGET_AVX2 static void narrow(const float* in, Float16* dst) {
    const __m128i halves =
        _mm256_cvtps_ph(_mm256_loadu_ps(in), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), halves);
  }
};

// bfloat16 widens by placing each value in the top half of a 32-bit lane: interleaving with
// zeros does that, but visits elements in an in-lane order (0-3, 8-11 | 4-7, 12-15) that
// packus_epi32 in narrow() exactly undoes. Lane order is irrelevant to an elementwise op.
struct Bfloat16Codec {
  static constexpr size_t kBlock = 16;

  LOOM_TARGET_AVX2 static void widen(const Bfloat16* src, float* out) {
    const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src));
    const __m256i zero = _mm256_setzero_si256();
    _mm256_storeu_ps(out, _mm256_castsi256_ps(_mm256_unpacklo_epi16(zero, raw)));
    _mm256_storeu_ps(out + 8, _mm256_castsi256_ps(_mm256_unpackhi_epi16(zero, raw)));
  }
  LOOM_TARGET_AVX2 static void narrow(const float* in, Bfloat16* dst) {
    const __m256i packed =
        _mm256_packus_epi32(round(_mm256_loadu_ps(in)), round(_mm256_loadu_ps(in + 8)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), packed);
  }

  // Bfloat16::fromFloat on 8 lanes, the result in the low 16 bits of each 32-bit lane.
  LOOM_TARGET_AVX2 static __m256i round(__m256 values) {
    const __m256i bits = _mm256_castps_si256(values);
    const __m256i top = _mm256_srli_epi32(bits, 16);
    const __m256i lowestKept = _mm256_and_si256(top, _mm256_set1_epi32(1));
    const __m256i biased = _mm256_add_epi32(bits, _mm256_set1_epi32(0x7fff));
    const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(biased, lowestKept), 16);
    const __m256i quietNan = _mm256_or_si256(top, _mm256_set1_epi32(0x0040));
    const __m256i isNan = _mm256_castps_si256(_mm256_cmp_ps(values, values, _CMP_UNORD_Q));
    return _mm256_blendv_epi8(rounded, quietNan, isNan);
  }
};

struct Avx2Codecs {
  static constexpr size_t kAlignment = 32;
  template <typename T>
  using For = std::conditional_t<std::is_same_v<T, Float16>, Float16Codec, Bfloat16Codec>;
};

struct Avx2Kernels {
  template <typename T, typename Op>
  LOOM_TARGET_AVX2 LOOM_FLATTEN static void reduce(void* dst, const void* a, const void* b,
                                                   size_t count) {
    reduceKernelBody<Avx2Codecs, T, Op>(dst, a, b, count);
  }

  template <typename T>
  LOOM_TARGET_AVX2 LOOM_FLATTEN static void divide(void* dst, const void* src, size_t count,
                                                   int divisor) {
    divideKernelBody<Avx2Codecs, T>(dst, src, count, divisor);
  }
};

}  // namespace

const KernelTable& avx2KernelTable() {
  static const KernelTable table = makeKernelTable<Avx2Kernels>();
  return table;
}

}  // namespace loom::kernels

#endif  // __x86_64__
