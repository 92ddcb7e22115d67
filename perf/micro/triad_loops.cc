// SPDX-License-Identifier: Apache-2.0
#include "triad_loops.h"

#include <string>

#include "base/error.h"

namespace loom::micro {
namespace {

// Inlined into each variant below so the loop is vectorized for that variant's target.
inline __attribute__((always_inline)) void triadLoop(float* __restrict a, const float* __restrict b,
                                                     const float* __restrict c, float scale,
                                                     size_t count) {
  for (size_t i = 0; i < count; ++i) a[i] = b[i] + scale * c[i];
}

// noinline: each variant is a real call, like a kernel call, and cannot be hoisted out of the
// benchmark loop.
__attribute__((noinline)) void triadGeneric(float* a, const float* b, const float* c, float scale,
                                            size_t count) {
  triadLoop(a, b, c, scale, count);
}

#if defined(__x86_64__)
// The same target attributes as host_reduce_avx2.cc and host_reduce_avx512.cc.
__attribute__((noinline, target("avx2,f16c"))) void triadAvx2(float* a, const float* b,
                                                              const float* c, float scale,
                                                              size_t count) {
  triadLoop(a, b, c, scale, count);
}

__attribute__((noinline, target("avx512f,avx512bw,avx512vl,avx512dq,avx2,f16c,"
                                "prefer-vector-width=512"))) void
triadAvx512(float* a, const float* b, const float* c, float scale, size_t count) {
  triadLoop(a, b, c, scale, count);
}
#endif

}  // namespace

void triad(kernels::HostIsa isa, float* a, const float* b, const float* c, float scale,
           size_t count) {
  if (!kernels::hostIsaAvailable(isa)) {
    throwArgument(std::string("triad: ") + kernels::hostIsaName(isa) + " is not available here");
  }
  switch (isa) {
#if defined(__x86_64__)
    case kernels::HostIsa::Avx512:
      return triadAvx512(a, b, c, scale, count);
    case kernels::HostIsa::Avx2:
      return triadAvx2(a, b, c, scale, count);
#endif
    default:
      return triadGeneric(a, b, c, scale, count);
  }
}

}  // namespace loom::micro
