// SPDX-License-Identifier: Apache-2.0
#include "trainer.h"

#include <chrono>
#include <cstdio>
#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <tuple>

#include "checkpoint.h"
#include "gradient_sync.h"
#include "loom_check.h"
#include "mlp.h"
#include "optimizer_shard.h"
#include "random.h"

namespace ddp {
namespace {

constexpr uint64_t kEpochOrderPurpose = 3;
constexpr int kEvalChunk = 128;

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// Sums a few doubles over ranks (metrics; float64 so the order of addition hardly matters).
void sumOverRanks(std::vector<double>& values, loomComm_t comm) {
  check(loomAllReduce(values.data(), values.data(), values.size(), loomFloat64, loomSum, comm, nullptr),
        "loomAllReduce (metrics)", comm);
}

uint64_t fingerprint(const float* data, size_t count) {  // FNV-1a over the bytes
  uint64_t hash = 0xcbf29ce484222325ULL;
  const auto* bytes = reinterpret_cast<const unsigned char*>(data);
  for (size_t i = 0; i < count * sizeof(float); ++i) hash = (hash ^ bytes[i]) * 0x100000001b3ULL;
  return hash;
}

class RankTrainer {
 public:
  RankTrainer(loomComm_t comm, const Options& options, const DigitsSplit& data)
      : comm_(comm), options_(options), data_(data) {
    check(loomCommUserRank(comm, &rank_), "loomCommUserRank", comm);
    check(loomCommCount(comm, &ranks_), "loomCommCount", comm);
    validate();
    widths_ = {Dataset::kFeatures};
    widths_.insert(widths_.end(), options.hidden.begin(), options.hidden.end());
    widths_.push_back(Dataset::kClasses);
    layout_ = std::make_unique<ParameterLayout>(Mlp::layerSizes(widths_),
                                                static_cast<size_t>(options.bucketMb * (1 << 20)), ranks_);
    model_ = std::make_unique<Mlp>(widths_, *layout_);
    sync_ = std::make_unique<GradientSync>(comm, rank_, ranks_, *layout_, options);
    const bool zero = options.strategy == Strategy::kZero;
    shard_ = std::make_unique<OptimizerShard>(
        options, zero ? layout_->shardRanges(rank_) : std::vector<ParameterLayout::Range>{ParameterLayout::Range{0, layout_->total()}});
    params_.assign(layout_->total(), 0.0f);
    grads_.assign(layout_->total(), 0.0f);
    microBatch_ = options.globalBatch / (ranks_ * options.accumulation);
    batchX_.assign(static_cast<size_t>(microBatch_) * Dataset::kFeatures, 0.0f);
    batchLabels_.assign(microBatch_, 0);
    stepsPerEpoch_ = data.train.size() / options.globalBatch;
  }

  Summary run(bool verbose) {
    Summary summary;
    summary.resumedFrom = initializeWeights();
    const long total = options_.steps > 0 ? options_.steps : static_cast<long>(Options::kDefaultEpochs) * stepsPerEpoch_;
    EpochTally tally;
    const double start = now();
    for (long step = summary.resumedFrom; step < total; ++step) {
      trainStep(step, tally);
      if (options_.checkIdentical) {
        checkIdentical(step);
        ++summary.identicalChecks;
      }
      const bool epochEnd = (step + 1) % stepsPerEpoch_ == 0;
      if (epochEnd || step + 1 == total) {
        summary.epochs.push_back(closeEpoch(static_cast<int>(step / stepsPerEpoch_) + 1, tally));
        if (verbose && rank_ == 0) print(summary.epochs.back(), epochEnd);
        tally = EpochTally{};
      }
    }
    summary.trainSeconds = now() - start;
    summary.steps = total;
    if (!options_.savePath.empty()) saveAll(total);
    finish(summary);
    return summary;
  }

 private:
  struct EpochTally {
    double lossSum = 0, correct = 0, samples = 0, stepSeconds = 0, waitSeconds = 0, lastStepLoss = 0;
    int steps = 0;
  };

  void validate() const {
    const int split = ranks_ * options_.accumulation;
    if (options_.globalBatch % split != 0) {
      throw std::invalid_argument("--batch " + std::to_string(options_.globalBatch) + " must divide evenly into " +
                                  std::to_string(ranks_) + " ranks x " + std::to_string(options_.accumulation) +
                                  " micro-batches (--accum)");
    }
    if (options_.globalBatch > data_.train.size()) {
      throw std::invalid_argument("--batch is larger than the training set (" + std::to_string(data_.train.size()) + ")");
    }
  }

  // Same weights on every rank: rank 0's initialisation (or checkpoint) is broadcast, as DDP
  // does at construction. Returns the step to start from.
  long initializeWeights() {
    long step = 0;
    if (!options_.resumePath.empty()) {
      CheckpointContext context{options_, widths_, *layout_, rank_, ranks_};
      step = loadCheckpoint(context, options_.resumePath, *shard_);
      shard_->storeParams(params_.data());
      if (options_.strategy == Strategy::kZero) sync_->gatherParams(params_.data());
    } else {
      model_->initialize(params_.data(), options_.seed);
      check(loomBroadcast(params_.data(), params_.data(), params_.size(), loomFloat32, 0, comm_, nullptr),
            "loomBroadcast (initial weights)", comm_);
      shard_->loadMaster(params_.data());
      shard_->storeParams(params_.data());  // bf16: compute with the rounded weights from the start
    }
    sync_->takeWaitSeconds();
    return step;
  }

  // The global batch of a step is the same whatever the rank count: a slice of the epoch's
  // seeded permutation. Rank r takes its contiguous part, cut into micro-batches.
  const std::vector<int>& epochOrder(long epoch) {
    if (orderEpoch_ != epoch) {
      order_.resize(data_.train.size());
      for (int i = 0; i < data_.train.size(); ++i) order_[i] = i;
      Random(deriveSeed(options_.seed, kEpochOrderPurpose, static_cast<uint64_t>(epoch))).shuffle(order_);
      orderEpoch_ = epoch;
    }
    return order_;
  }

  void trainStep(long step, EpochTally& tally) {
    const double start = now();
    const std::vector<int>& order = epochOrder(step / stepsPerEpoch_);
    const long first = (step % stepsPerEpoch_) * options_.globalBatch + static_cast<long>(rank_) * microBatch_ * options_.accumulation;
    std::memset(grads_.data(), 0, grads_.size() * sizeof(float));
    const float lossScale = 1.0f / static_cast<float>(options_.globalBatch);
    double stepLoss = 0;
    for (int micro = 0; micro < options_.accumulation; ++micro) {
      for (int b = 0; b < microBatch_; ++b) {
        const int sample = order[first + static_cast<long>(micro) * microBatch_ + b];
        std::memcpy(batchX_.data() + static_cast<size_t>(b) * Dataset::kFeatures, data_.train.row(sample),
                    Dataset::kFeatures * sizeof(float));
        batchLabels_[b] = data_.train.labels[sample];
      }
      const Mlp::Result result = model_->forward(params_.data(), batchX_.data(), batchLabels_.data(), microBatch_);
      stepLoss += result.lossSum;
      tally.correct += result.correct;
      // Only the last micro-batch communicates (gradients accumulate locally before it), and
      // with overlap its buckets leave as soon as backward has produced them.
      const bool communicate = micro + 1 == options_.accumulation && options_.overlap;
      model_->backward(params_.data(), lossScale, grads_.data(), [&](int layer) {
        if (communicate) sync_->layerDone(layer, grads_.data());
      });
    }
    sync_->finishBackward(grads_.data());
    shard_->step(grads_.data());
    shard_->storeParams(params_.data());
    if (options_.strategy == Strategy::kZero) sync_->gatherParams(params_.data());
    tally.lossSum += stepLoss;
    tally.lastStepLoss = stepLoss;
    tally.samples += options_.globalBatch;
    tally.steps += 1;
    tally.waitSeconds += sync_->takeWaitSeconds();
    tally.stepSeconds += now() - start;
  }

  void checkIdentical(long step) {
    // Every rank's fingerprint of its weights, gathered: they must all be equal.
    std::vector<uint64_t> all(ranks_);
    const uint64_t mine = fingerprint(params_.data(), params_.size());
    check(loomAllGather(&mine, all.data(), 1, loomUint64, comm_, nullptr), "loomAllGather (weight fingerprint)", comm_);
    for (int r = 1; r < ranks_; ++r) {
      if (all[r] != all[0]) {
        throw std::runtime_error("after step " + std::to_string(step + 1) + " rank " + std::to_string(r) +
                                 "'s weights differ from rank 0's");
      }
    }
  }

  // Test-set loss and accuracy; each rank evaluates a contiguous part of the test set.
  std::pair<double, double> evaluate() {
    const int count = data_.test.size();
    const int from = static_cast<int>(static_cast<long>(count) * rank_ / ranks_);
    const int to = static_cast<int>(static_cast<long>(count) * (rank_ + 1) / ranks_);
    std::vector<double> totals = {0, 0};
    for (int at = from; at < to; at += kEvalChunk) {
      const int rows = std::min(kEvalChunk, to - at);
      const Mlp::Result result = model_->forward(params_.data(), data_.test.row(at), &data_.test.labels[at], rows);
      totals[0] += result.lossSum;
      totals[1] += result.correct;
    }
    sumOverRanks(totals, comm_);
    return {totals[0] / count, totals[1] / count};
  }

  EpochReport closeEpoch(int epoch, const EpochTally& tally) {
    // Sums over ranks: losses, correct answers, wait shares; the slowest rank's step time.
    std::vector<double> sums = {tally.lossSum, tally.correct, tally.waitSeconds / tally.stepSeconds, tally.lastStepLoss};
    sumOverRanks(sums, comm_);
    double stepSeconds = tally.stepSeconds;
    check(loomAllReduce(&stepSeconds, &stepSeconds, 1, loomFloat64, loomMax, comm_, nullptr),
          "loomAllReduce (epoch time)", comm_);
    EpochReport report;
    report.epoch = epoch;
    report.steps = tally.steps;
    report.trainLoss = sums[0] / tally.samples;
    report.trainAccuracy = sums[1] / tally.samples;
    report.commWaitShare = sums[2] / ranks_;
    report.samplesPerSecond = tally.samples / stepSeconds;
    lastStepLoss_ = sums[3] / options_.globalBatch;
    std::tie(report.testLoss, report.testAccuracy) = evaluate();
    return report;
  }

  void print(const EpochReport& report, bool complete) const {
    std::printf("epoch %3d%s  steps %4d  train loss %.4f  acc %5.1f%%  test loss %.4f  acc %5.1f%%  "
                "%8.0f samples/s  comm wait %4.1f%%\n",
                report.epoch, complete ? " " : "*", report.steps, report.trainLoss, 100 * report.trainAccuracy,
                report.testLoss, 100 * report.testAccuracy, report.samplesPerSecond, 100 * report.commWaitShare);
    std::fflush(stdout);
  }

  void saveAll(long step) {
    CheckpointContext context{options_, widths_, *layout_, rank_, ranks_};
    saveCheckpoint(context, options_.savePath, step, *shard_);
    // Nobody leaves before every file is in place (rank 0's, or every shard).
    std::vector<double> done = {1};
    sumOverRanks(done, comm_);
  }

  void finish(Summary& summary) {
    summary.parameters = layout_->parameterCount();
    summary.buckets = layout_->buckets().size();
    summary.optimizerStateBytes = shard_->stateBytes();
    summary.wireBytesPerStep = sync_->wireBytesPerStep();
    summary.finalLoss = lastStepLoss_;
    if (summary.epochs.empty()) {  // resumed at the end: nothing trained, still evaluate
      std::tie(summary.testLoss, summary.testAccuracy) = evaluate();
      return;
    }
    const EpochReport& last = summary.epochs.back();
    summary.testLoss = last.testLoss;
    summary.testAccuracy = last.testAccuracy;
    double samples = 0, seconds = 0, wait = 0;
    for (const EpochReport& report : summary.epochs) {
      samples += report.steps * static_cast<double>(options_.globalBatch);
      seconds += report.steps * static_cast<double>(options_.globalBatch) / report.samplesPerSecond;
      wait += report.commWaitShare * report.steps;
    }
    summary.samplesPerSecond = samples / seconds;
    summary.commWaitShare = wait / static_cast<double>(summary.steps - summary.resumedFrom);
  }

  loomComm_t comm_;
  const Options& options_;
  const DigitsSplit& data_;
  int rank_ = 0, ranks_ = 1;
  std::vector<int> widths_;
  std::unique_ptr<ParameterLayout> layout_;
  std::unique_ptr<Mlp> model_;
  std::unique_ptr<GradientSync> sync_;
  std::unique_ptr<OptimizerShard> shard_;
  std::vector<float> params_, grads_, batchX_;
  std::vector<int> batchLabels_, order_;
  long orderEpoch_ = -1;
  int microBatch_ = 0, stepsPerEpoch_ = 1;
  double lastStepLoss_ = 0;
};

}  // namespace

Summary train(loomComm_t comm, const Options& options, const DigitsSplit& data, bool verbose) {
  return RankTrainer(comm, options, data).run(verbose);
}

}  // namespace ddp
