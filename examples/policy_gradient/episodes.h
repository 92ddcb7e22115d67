// SPDX-License-Identifier: Apache-2.0
// Playing CartPole episodes with a policy, and recording what REINFORCE needs from them.
#pragma once

#include <cstdint>
#include <vector>

#include "cartpole.h"
#include "policy_network.h"
#include "random.h"

namespace policy_gradient {

// The experience of one rank in one update: every step's observation and action, the
// discounted return that followed it, and each episode's (undiscounted) return.
struct Rollouts {
  std::vector<CartPole::Observation> observations;
  std::vector<uint8_t> actions;
  std::vector<float> returnsToGo;
  std::vector<double> episodeReturns;

  void clear();
  size_t steps() const { return actions.size(); }
};

enum class ActionChoice {
  kSample,  // draw from the policy's probabilities: training explores
  kGreedy,  // take the most probable action: evaluation of what was learned
};

// Plays one episode from a fresh start drawn from `random`; with `record`, appends it there
// (returns discounted by gamma). Returns the episode's return (its number of steps).
double playEpisode(const PolicyNetwork& policy, PolicyNetwork::Workspace& workspace, Random& random,
                   ActionChoice choice, double gamma, Rollouts* record);

}  // namespace policy_gradient
