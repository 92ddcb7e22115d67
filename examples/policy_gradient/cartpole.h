// SPDX-License-Identifier: Apache-2.0
// CartPole: the classic cart-and-pole balancing task (Barto, Sutton and Anderson 1983) with the
// constants and update rule of OpenAI Gym's CartPole-v0, written out here so the sample needs
// nothing but Loom. A pole is hinged on a cart moving on a track; each step the agent pushes
// the cart left or right with a fixed force and earns 1 while the pole stays up. The episode
// ends when the pole leans past 12 degrees, the cart leaves the track (|x| > 2.4), or after
// 200 steps; "solved" means an average return of at least 195 over 100 episodes.
#pragma once

#include <array>

#include "random.h"

namespace policy_gradient {

class CartPole {
 public:
  static constexpr int kObservationSize = 4;  // x, x velocity, theta, theta velocity
  static constexpr int kActionCount = 2;      // 0 pushes left, 1 pushes right
  static constexpr int kMaxSteps = 200;       // the v0 episode cap: returns are at most 200
  static constexpr double kSolvedReturn = 195;

  using Observation = std::array<float, kObservationSize>;

  struct Step {
    Observation observation;
    float reward;
    bool done;  // the pole fell, the cart left the track, or the step cap was reached
  };

  // Starts an episode: every state variable uniform in [-0.05, 0.05].
  Observation reset(Random& random);
  Step step(int action);

 private:
  Observation observe() const;

  double x_ = 0, xVelocity_ = 0, theta_ = 0, thetaVelocity_ = 0;
  int steps_ = 0;
};

}  // namespace policy_gradient
