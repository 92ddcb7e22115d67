// SPDX-License-Identifier: Apache-2.0
// kernel_bench's closing table: the float32/float16/bfloat16 sums as a share of the triad, per
// memory level, from the paired cases (kernel and triad timed in alternation), and the verdict
// on the targets of issue 3 at DRAM size: float32 sum >= 90% of one core's triad bandwidth,
// float16/bfloat16 sum >= 70%.
#pragma once

#include <cstdio>

#include "kernel_cases.h"
#include "recording_reporter.h"

namespace loom::micro {

void printBandwidthSummary(const RecordingReporter& results, const KernelSelection& selection,
                           FILE* out);

}  // namespace loom::micro
