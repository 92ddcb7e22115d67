// SPDX-License-Identifier: Apache-2.0
// The AVX-512 variant of the host kernels: like host_reduce_avx2.cc with 512-bit registers.
// BW is needed for the 8- and 16-bit integer lanes (int8/uint8, bfloat16 bit manipulation), VL
// and DQ let the compiler mix in other forms; host_reduce.cc checks all of them at run time.
#if defined(__x86_64__)

// GCC 12's AVX-512 intrinsics pass _mm512_undefined_*() as the pass-through operand, which its
// own -Wmaybe-uninitialized then flags once inlined (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include "kernels/host/host_kernel_table.h"

#define LOOM_TARGET_AVX512                                   \
  __attribute__((                                            \
      target("avx512f,avx512bw,avx512vl,avx512dq,avx2,f16c," \
             "prefer-vector-width=512")))

namespace loom::kernels {
namespace {

// The F16C conversions of host_reduce_avx2.cc on 16 lanes.
struct Float16Codec {
  static constexpr size_t kBlock = 16;

  LOOM_TARGET_AVX512 static void widen(const Float16* src, float* out) {
    const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src));
    _mm512_storeu_ps(out, _mm512_cvtph_ps(raw));
  }
  LOOM_TARGET_AVX512 static void narrow(const float* in, Float16* dst) {
    const __m256i halves =
        _mm512_cvtps_ph(_mm512_loadu_ps(in), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), halves);
  }
};

// As in host_reduce_avx2.cc: interleaving with zeros widens (in-lane order), packus_epi32
// restores the order, and round() is Bfloat16::fromFloat on 16 lanes.
struct Bfloat16Codec {
  static constexpr size_t kBlock = 32;

  LOOM_TARGET_AVX512 static void widen(const Bfloat16* src, float* out) {
    const __m512i raw = _mm512_loadu_si512(src);
    const __m512i zero = _mm512_setzero_si512();
    _mm512_storeu_ps(out, _mm512_castsi512_ps(_mm512_unpacklo_epi16(zero, raw)));
    _mm512_storeu_ps(out + 16, _mm512_castsi512_ps(_mm512_unpackhi_epi16(zero, raw)));
  }
  LOOM_TARGET_AVX512 static void narrow(const float* in, Bfloat16* dst) {
    const __m512i packed =
        _mm512_packus_epi32(round(_mm512_loadu_ps(in)), round(_mm512_loadu_ps(in + 16)));
    _mm512_storeu_si512(dst, packed);
  }

  LOOM_TARGET_AVX512 static __m512i round(__m512 values) {
    const __m512i bits = _mm512_castps_si512(values);
    const __m512i top = _mm512_srli_epi32(bits, 16);
    const __m512i lowestKept = _mm512_and_si512(top, _mm512_set1_epi32(1));
    const __m512i biased = _mm512_add_epi32(bits, _mm512_set1_epi32(0x7fff));
    const __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(biased, lowestKept), 16);
    const __m512i quietNan = _mm512_or_si512(top, _mm512_set1_epi32(0x0040));
    const __mmask16 isNan = _mm512_cmp_ps_mask(values, values, _CMP_UNORD_Q);
    return _mm512_mask_blend_epi32(isNan, rounded, quietNan);
  }
};

struct Avx512Codecs {
  static constexpr size_t kAlignment = 64;
  template <typename T>
  using For = std::conditional_t<std::is_same_v<T, Float16>, Float16Codec, Bfloat16Codec>;
};

struct Avx512Kernels {
  template <typename T, typename Op>
  LOOM_TARGET_AVX512 LOOM_FLATTEN static void reduce(void* dst, const void* a, const void* b,
                                                     size_t count) {
    reduceKernelBody<Avx512Codecs, T, Op>(dst, a, b, count);
  }

  template <typename T>
  LOOM_TARGET_AVX512 LOOM_FLATTEN static void divide(void* dst, const void* src, size_t count,
                                                     int divisor) {
    divideKernelBody<Avx512Codecs, T>(dst, src, count, divisor);
  }
};

}  // namespace

const KernelTable& avx512KernelTable() {
  static const KernelTable table = makeKernelTable<Avx512Kernels>();
  return table;
}

}  // namespace loom::kernels

#endif  // __x86_64__
