// SPDX-License-Identifier: Apache-2.0
// The STREAM triad, a[i] = b[i] + s * c[i], compiled for each instruction-set variant of the
// host kernels: the bandwidth one core sustains with two read streams and one write stream,
// the same traffic as reduce(dst, a, b). Comparing a kernel with the triad of its own ISA, and
// with the best triad, separates "memory-bound" from "slower than it should be".
#pragma once

#include <cstddef>

#include "kernels/host/host_reduce_isa.h"

namespace loom::micro {

// Throws loomInvalidArgument when the variant is not available on this CPU.
void triad(kernels::HostIsa isa, float* a, const float* b, const float* c, float scale,
           size_t count);

}  // namespace loom::micro
