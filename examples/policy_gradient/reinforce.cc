// SPDX-License-Identifier: Apache-2.0
#include "reinforce.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>

namespace policy_gradient {
namespace {

// Layout of the statistics buffer: three sums, then one slot per episode of the global batch.
constexpr size_t kReturnSum = 0;
constexpr size_t kReturnSquareSum = 1;
constexpr size_t kStepCount = 2;
constexpr size_t kFirstEpisode = 3;

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

Reinforce::Reinforce(PolicyNetwork& policy, Communicator& communicator, int episodesPerUpdate,
                     double learningRate)
    : policy_(policy),
      communicator_(communicator),
      episodesPerUpdate_(episodesPerUpdate),
      adam_(policy.parameterCount(), learningRate),
      workspace_(policy.makeWorkspace()),
      gradient_(policy.parameterCount()),
      statistics_(kFirstEpisode + episodesPerUpdate) {}

std::vector<double> Reinforce::update(const Rollouts& rollouts) {
  const size_t localEpisodes = static_cast<size_t>(episodesPerUpdate_ / communicator_.size());
  if (rollouts.episodeReturns.size() != localEpisodes) {
    throw std::logic_error("Reinforce::update: wrong number of episodes for this rank");
  }

  // 1. Return statistics and episode returns, in float64. An all-reduce leaves the same bits on
  //    every rank, so every rank normalises with the same mean and deviation, and sees the same
  //    returns (each rank fills its own slots; the others add zeros).
  std::fill(statistics_.begin(), statistics_.end(), 0.0);
  for (float g : rollouts.returnsToGo) {
    statistics_[kReturnSum] += g;
    statistics_[kReturnSquareSum] += static_cast<double>(g) * g;
  }
  statistics_[kStepCount] = static_cast<double>(rollouts.steps());
  std::copy(rollouts.episodeReturns.begin(), rollouts.episodeReturns.end(),
            statistics_.begin() + kFirstEpisode + communicator_.rank() * localEpisodes);
  Clock::time_point start = Clock::now();
  communicator_.allReduce(statistics_.data(), statistics_.size(), loomSum);
  allReduceSeconds_ += secondsSince(start);

  const double steps = statistics_[kStepCount];
  const double mean = statistics_[kReturnSum] / steps;
  const double variance = std::max(0.0, statistics_[kReturnSquareSum] / steps - mean * mean);
  // The epsilon keeps a batch whose returns are all equal from dividing by zero.
  const double scale = 1 / (std::sqrt(variance) + 1e-8);
  lastGlobalSteps_ = steps;

  // 2. The gradient of -(1/steps) * sum_t advantage_t * log pi(a_t | s_t) over the global batch:
  //    this rank's share, summed with the others', then divided.
  std::fill(gradient_.begin(), gradient_.end(), 0.0f);
  for (size_t t = 0; t < rollouts.steps(); ++t) {
    const float advantage = static_cast<float>((rollouts.returnsToGo[t] - mean) * scale);
    policy_.forward(rollouts.observations[t], workspace_);
    policy_.addLogProbabilityGradient(rollouts.observations[t], rollouts.actions[t], advantage,
                                      workspace_, gradient_);
  }
  start = Clock::now();
  communicator_.allReduce(gradient_.data(), gradient_.size(), loomSum);
  allReduceSeconds_ += secondsSince(start);
  const float perStep = static_cast<float>(1 / steps);
  for (float& g : gradient_) g *= perStep;

  adam_.step(policy_.parameters(), gradient_);
  return {statistics_.begin() + kFirstEpisode, statistics_.end()};
}

}  // namespace policy_gradient
