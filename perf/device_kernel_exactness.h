// SPDX-License-Identifier: Apache-2.0
// Every device kernel (base/device_runtime.h: reduce for every op, average, finishAverage,
// premultiply with a host and a device scalar) for every datatype against the host kernels
// (kernels/host/host_reduce.h, canonical_reduce.h, premultiply.h), bit for bit: odd sizes,
// aligned (packed) and unaligned pointers, the destination aliasing an input, and guard elements
// after the range that must stay untouched. A plain program's part (device_kernel_bandwidth), not
// a GoogleTest, so it runs on a GPU machine without GoogleTest.
#pragma once

#include <cstdio>

#include "base/device_runtime.h"

namespace loom::perf {

struct ExactnessSummary {
  int cases = 0;
  int failures = 0;
  long nanPayloads = 0;  // elements where both sides are NaN with different bits (allowed: see .cc)
};

// Runs every case on `stream`, printing a Markdown table (one row per datatype) and the first
// mismatches to `out`. `quick` leaves out the 1 Mi-element sizes (the emulated GPU is slow).
ExactnessSummary checkDeviceKernels(DeviceRuntime& runtime, DeviceStream stream, bool quick,
                                    std::FILE* out);

}  // namespace loom::perf
