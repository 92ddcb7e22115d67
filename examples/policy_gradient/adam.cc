// SPDX-License-Identifier: Apache-2.0
#include "adam.h"

#include <cmath>

namespace policy_gradient {

Adam::Adam(size_t parameterCount, double learningRate, double beta1, double beta2, double epsilon)
    : learningRate_(learningRate),
      beta1_(beta1),
      beta2_(beta2),
      epsilon_(epsilon),
      firstMoment_(parameterCount, 0.0f),
      secondMoment_(parameterCount, 0.0f) {}

void Adam::step(std::span<float> parameters, std::span<const float> gradient) {
  ++steps_;
  // Bias correction folded into the step size, as in the paper's section 2.
  const double correction1 = 1 - std::pow(beta1_, static_cast<double>(steps_));
  const double correction2 = 1 - std::pow(beta2_, static_cast<double>(steps_));
  const float stepSize = static_cast<float>(learningRate_ * std::sqrt(correction2) / correction1);
  const float epsilon = static_cast<float>(epsilon_ * std::sqrt(correction2));
  const float beta1 = static_cast<float>(beta1_), beta2 = static_cast<float>(beta2_);
  for (size_t i = 0; i < parameters.size(); ++i) {
    const float g = gradient[i];
    firstMoment_[i] = beta1 * firstMoment_[i] + (1 - beta1) * g;
    secondMoment_[i] = beta2 * secondMoment_[i] + (1 - beta2) * g * g;
    parameters[i] -= stepSize * firstMoment_[i] / (std::sqrt(secondMoment_[i]) + epsilon);
  }
}

}  // namespace policy_gradient
