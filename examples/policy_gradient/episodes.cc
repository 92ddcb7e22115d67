// SPDX-License-Identifier: Apache-2.0
#include "episodes.h"

#include <algorithm>

namespace policy_gradient {
namespace {

int chooseAction(const PolicyNetwork::Probabilities& probabilities, Random& random,
                 ActionChoice choice) {
  if (choice == ActionChoice::kGreedy) {
    return static_cast<int>(std::max_element(probabilities.begin(), probabilities.end()) -
                            probabilities.begin());
  }
  // Inverse CDF on one uniform draw, so each step consumes exactly one number from the stream.
  const double u = random.uniform();
  double cumulative = 0;
  for (int a = 0; a + 1 < PolicyNetwork::kActions; ++a) {
    cumulative += probabilities[a];
    if (u < cumulative) return a;
  }
  return PolicyNetwork::kActions - 1;
}

}  // namespace

void Rollouts::clear() {
  observations.clear();
  actions.clear();
  returnsToGo.clear();
  episodeReturns.clear();
}

double playEpisode(const PolicyNetwork& policy, PolicyNetwork::Workspace& workspace, Random& random,
                   ActionChoice choice, double gamma, Rollouts* record) {
  CartPole cartPole;
  CartPole::Observation observation = cartPole.reset(random);
  const size_t first = record != nullptr ? record->steps() : 0;
  double episodeReturn = 0;
  for (bool done = false; !done;) {
    policy.forward(observation, workspace);
    const int action = chooseAction(workspace.probabilities, random, choice);
    const CartPole::Step step = cartPole.step(action);
    if (record != nullptr) {
      record->observations.push_back(observation);
      record->actions.push_back(static_cast<uint8_t>(action));
      record->returnsToGo.push_back(step.reward);  // made discounted returns below
    }
    episodeReturn += step.reward;
    observation = step.observation;
    done = step.done;
  }
  if (record != nullptr) {
    // G_t = r_t + gamma * G_{t+1}, from the last step back. An episode cut at the step cap is
    // treated as ended, as REINFORCE on CartPole-v0 usually does.
    double following = 0;
    for (size_t t = record->steps(); t-- > first;) {
      following = record->returnsToGo[t] + gamma * following;
      record->returnsToGo[t] = static_cast<float>(following);
    }
    record->episodeReturns.push_back(episodeReturn);
  }
  return episodeReturn;
}

}  // namespace policy_gradient
