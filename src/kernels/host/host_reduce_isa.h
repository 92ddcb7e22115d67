// SPDX-License-Identifier: Apache-2.0
// The instruction-set variants of the host reduction kernels. reduce()/divide() in
// host_reduce.h use the best one this CPU supports (chosen once); this header lets tests and
// benchmarks run a specific variant and compare it with the others.
#pragma once

#include <cstddef>

#include "loom.h"

namespace loom::kernels {

enum class HostIsa {
  Generic,  // baseline x86-64 (SSE2) or any other architecture: portable C++, autovectorized
  Avx2,     // AVX2 + F16C
  Avx512,   // AVX-512 F/BW/VL (+ AVX2, F16C)
};

const char* hostIsaName(HostIsa isa);
// Compiled in and supported by this CPU (and OS).
bool hostIsaAvailable(HostIsa isa);
// The variant reduce()/divide() use: the widest available, unless the environment variable
// LOOM_HOST_ISA (generic, avx2, avx512) names another available one. Chosen once per process.
HostIsa bestHostIsa();

// reduce()/divide() with a given variant; throws loomInvalidArgument if it is not available
// or the type/op is not supported.
void reduceWithIsa(HostIsa isa, loomDataType_t type, loomRedOp_t op, void* dst, const void* a,
                   const void* b, size_t count);
void divideWithIsa(HostIsa isa, loomDataType_t type, void* dst, const void* src, size_t count,
                   int divisor);

}  // namespace loom::kernels
