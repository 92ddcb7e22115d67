// SPDX-License-Identifier: Apache-2.0
// Adam (Kingma and Ba 2015): per-parameter step sizes from running averages of the gradient and
// of its square, with bias correction for the first steps. Every rank applies it to the same
// all-reduced gradient, in the same order of operations, so parameters stay bitwise identical
// without ever being sent.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace policy_gradient {

class Adam {
 public:
  Adam(size_t parameterCount, double learningRate, double beta1 = 0.9, double beta2 = 0.999,
       double epsilon = 1e-8);

  // parameters -= step computed from gradient (the gradient of the loss to minimise).
  void step(std::span<float> parameters, std::span<const float> gradient);

 private:
  double learningRate_, beta1_, beta2_, epsilon_;
  long steps_ = 0;
  std::vector<float> firstMoment_, secondMoment_;
};

}  // namespace policy_gradient
