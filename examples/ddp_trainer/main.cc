// SPDX-License-Identifier: Apache-2.0
// ddp_trainer: data-parallel training of a multi-layer perceptron on the 8x8 handwritten
// digits, over Loom's C API — DDP with bucketed all-reduce overlapping backward, gradient
// accumulation, bf16 gradients on the wire, ZeRO-style sharding and checkpoints.
//
//   loomrun -n 4 build/examples/ddp_trainer/ddp_trainer [--strategy zero] [--precision bf16] ...
//
// Started without a launcher it trains on one rank. See README.md in this folder.
#include <loom.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <stdexcept>

#include "digits_data.h"
#include "loom_check.h"
#include "options.h"
#include "trainer.h"

namespace {

bool underLauncher() {
  for (const char* name : {"LOOM_RANK", "RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  return false;
}

void writeJson(const std::string& path, const ddp::Options& options, const ddp::Summary& summary, int ranks) {
  std::ofstream out(path);
  if (!out) throw std::runtime_error("cannot write " + path);
  char line[512];
  auto put = [&](const char* format, auto... values) {
    std::snprintf(line, sizeof line, format, values...);
    out << line;
  };
  put("{\n  \"ranks\": %d,\n  \"strategy\": \"%s\",\n  \"precision\": \"%s\",\n  \"optimizer\": \"%s\",\n", ranks,
      ddp::name(options.strategy), ddp::name(options.precision), ddp::name(options.optimizer));
  put("  \"overlap\": %s,\n  \"global_batch\": %d,\n  \"accum\": %d,\n  \"bucket_mb\": %g,\n  \"buckets\": %zu,\n",
      options.overlap ? "true" : "false", options.globalBatch, options.accumulation, options.bucketMb, summary.buckets);
  put("  \"parameters\": %zu,\n  \"steps\": %ld,\n  \"resumed_from\": %ld,\n  \"identical_checks\": %ld,\n",
      summary.parameters, summary.steps, summary.resumedFrom, summary.identicalChecks);
  put("  \"final_loss\": %.17g,\n  \"test_loss\": %.17g,\n  \"test_accuracy\": %.17g,\n", summary.finalLoss,
      summary.testLoss, summary.testAccuracy);
  put("  \"samples_per_second\": %.6g,\n  \"comm_wait_share\": %.6g,\n  \"train_seconds\": %.6g,\n",
      summary.samplesPerSecond, summary.commWaitShare, summary.trainSeconds);
  put("  \"optimizer_state_bytes_per_rank\": %zu,\n  \"wire_bytes_per_step\": %zu,\n  \"epochs\": [",
      summary.optimizerStateBytes, summary.wireBytesPerStep);
  for (size_t i = 0; i < summary.epochs.size(); ++i) {
    const ddp::EpochReport& e = summary.epochs[i];
    put("%s\n    {\"epoch\": %d, \"steps\": %d, \"train_loss\": %.17g, \"test_accuracy\": %.17g, "
        "\"samples_per_second\": %.6g, \"comm_wait_share\": %.6g}",
        i ? "," : "", e.epoch, e.steps, e.trainLoss, e.testAccuracy, e.samplesPerSecond, e.commWaitShare);
  }
  out << "\n  ]\n}\n";
  if (!out) throw std::runtime_error("writing " + path + " failed");
}

}  // namespace

int main(int argc, char** argv) {
  ddp::Options options;
  ddp::DigitsSplit data;
  try {
    options = ddp::parseOptions(argc, argv);
    // Before joining the job: a missing data set fails every rank alike, none waits on another.
    data = ddp::loadDigits(options.dataPath, options.seed);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "ddp_trainer: %s\n", error.what());
    return 2;
  }
  loomComm_t comm = nullptr;
  int rank = 0, ranks = 1;
  try {
    if (underLauncher()) ddp::check(loomCommInitFromEnv(&comm), "loomCommInitFromEnv");
    else ddp::check(loomCommInitAll(&comm, 1, nullptr), "loomCommInitAll (no launcher: one rank)");
    ddp::check(loomCommUserRank(comm, &rank), "loomCommUserRank", comm);
    ddp::check(loomCommCount(comm, &ranks), "loomCommCount", comm);
    if (rank == 0) {
      std::printf("ddp_trainer: %d rank%s, %s, %s, %s, global batch %d (%d per rank x %d micro-batches), data %s "
                  "(%d train, %d test)\n",
                  ranks, ranks == 1 ? "" : "s", ddp::name(options.strategy), ddp::name(options.precision),
                  ddp::name(options.optimizer), options.globalBatch, options.globalBatch / ranks / options.accumulation,
                  options.accumulation, data.path.c_str(), data.train.size(), data.test.size());
    }
    const ddp::Summary summary = ddp::train(comm, options, data, true);
    if (rank == 0) {
      std::printf("summary: %zu parameters in %zu buckets, %ld steps: final loss %.6f, test accuracy %.2f%%, "
                  "%.0f samples/s, communication wait %.1f%% of step time (overlap %s), %.1f s\n",
                  summary.parameters, summary.buckets, summary.steps, summary.finalLoss, 100 * summary.testAccuracy,
                  summary.samplesPerSecond, 100 * summary.commWaitShare, options.overlap ? "on" : "off",
                  summary.trainSeconds);
      if (!options.jsonPath.empty()) writeJson(options.jsonPath, options, summary, ranks);
    }
    ddp::check(loomCommDestroy(comm), "loomCommDestroy", comm);
    return 0;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "ddp_trainer rank %d: %s\n", rank, error.what());
    // The others learn of it from Loom (this rank's transport closes) rather than hanging.
    if (comm != nullptr) loomCommAbort(comm);
    return 1;
  }
}
