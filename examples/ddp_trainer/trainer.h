// SPDX-License-Identifier: Apache-2.0
// The training loop of one rank: data sharding, micro-batches, backward with bucketed
// gradient reduction, the optimizer step, evaluation and the per-epoch report.
#pragma once

#include <loom.h>

#include <string>
#include <vector>

#include "digits_data.h"
#include "options.h"

namespace ddp {

struct EpochReport {
  int epoch = 0, steps = 0;
  double trainLoss = 0, trainAccuracy = 0, testLoss = 0, testAccuracy = 0;
  double samplesPerSecond = 0, commWaitShare = 0;  // wait share: mean over ranks
};

struct Summary {
  std::vector<EpochReport> epochs;
  double finalLoss = 0;  // mean training loss of the global batch of the last step
  double testAccuracy = 0, testLoss = 0;
  double samplesPerSecond = 0, commWaitShare = 0, trainSeconds = 0;
  long steps = 0, resumedFrom = 0, identicalChecks = 0;
  size_t parameters = 0, buckets = 0, optimizerStateBytes = 0, wireBytesPerStep = 0;
};

// Trains on comm (every rank calls it with the same options) and returns the summary; rank 0
// prints a line per epoch when verbose. Throws std::runtime_error on any failure.
Summary train(loomComm_t comm, const Options& options, const DigitsSplit& data, bool verbose);

}  // namespace ddp
