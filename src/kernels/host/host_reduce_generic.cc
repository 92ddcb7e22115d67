// SPDX-License-Identifier: Apache-2.0
// The portable variant of the host kernels: plain C++ loops, vectorized by the compiler for the
// baseline ISA (SSE2 on x86-64). Used on CPUs without AVX2 and on other architectures. The
// 16-bit float types go through the scalar conversions of half_float.h (slow, but exact).
#include "kernels/host/host_kernel_table.h"

namespace loom::kernels {
namespace {

struct GenericCodecs {
  static constexpr size_t kAlignment = 16;
  template <typename T>
  using For = void;
};

struct GenericKernels {
  template <typename T, typename Op>
  static void reduce(void* dst, const void* a, const void* b, size_t count) {
    reduceKernelBody<GenericCodecs, T, Op>(dst, a, b, count);
  }

  template <typename T>
  static void divide(void* dst, const void* src, size_t count, int divisor) {
    divideKernelBody<GenericCodecs, T>(dst, src, count, divisor);
  }
};

}  // namespace

const KernelTable& genericKernelTable() {
  static const KernelTable table = makeKernelTable<GenericKernels>();
  return table;
}

}  // namespace loom::kernels
