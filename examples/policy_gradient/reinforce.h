// SPDX-License-Identifier: Apache-2.0
// REINFORCE (Williams 1992) across ranks. Each update every rank brings its own episodes; the
// ranks then agree, through two all-reduces, on
//   1. the statistics of the discounted returns of the whole global batch (sum, sum of squares,
//      count), so each step's return is normalised to the same mean 0 and variance 1 on every
//      rank, together with every episode's return (one slot per global episode);
//   2. the policy gradient, summed over all ranks' steps in one flat float32 buffer, then
//      divided by the global step count;
// and each takes the same Adam step, so the parameters stay bitwise identical.
#pragma once

#include <vector>

#include "adam.h"
#include "communicator.h"
#include "episodes.h"
#include "policy_network.h"

namespace policy_gradient {

class Reinforce {
 public:
  // episodesPerUpdate is global; each rank brings episodesPerUpdate / ranks of them.
  Reinforce(PolicyNetwork& policy, Communicator& communicator, int episodesPerUpdate,
            double learningRate);

  // One update from this rank's rollouts (which must hold its share of episodes). Returns the
  // returns of all the update's episodes, ordered by rank, the same on every rank.
  std::vector<double> update(const Rollouts& rollouts);

  // The global step count of the last update.
  double lastGlobalSteps() const { return lastGlobalSteps_; }
  // Seconds this rank has spent in the update's all-reduces, waiting for slower ranks included.
  double allReduceSeconds() const { return allReduceSeconds_; }

 private:
  PolicyNetwork& policy_;
  Communicator& communicator_;
  int episodesPerUpdate_;
  Adam adam_;
  PolicyNetwork::Workspace workspace_;
  std::vector<float> gradient_;
  std::vector<double> statistics_;
  double lastGlobalSteps_ = 0;
  double allReduceSeconds_ = 0;
};

}  // namespace policy_gradient
