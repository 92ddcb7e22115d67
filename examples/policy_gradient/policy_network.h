// SPDX-License-Identifier: Apache-2.0
// The policy: a small multilayer perceptron mapping a CartPole observation to action
// probabilities, observation -> tanh(hidden) -> tanh(hidden) -> softmax(actions), with its
// forward and backward passes written out by hand.
//
// All parameters live in one flat float vector, and gradients use the same layout, so the
// gradient of a whole update is one buffer: one loomAllReduce per update, and one Adam step.
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <vector>

#include "cartpole.h"
#include "random.h"

namespace policy_gradient {

class PolicyNetwork {
 public:
  static constexpr int kInputs = CartPole::kObservationSize;
  static constexpr int kActions = CartPole::kActionCount;
  using Probabilities = std::array<float, kActions>;

  // Where one fully connected layer's weights (inputs x outputs, row-major by input) and
  // biases sit in the flat parameter vector.
  struct Layer {
    int inputs;
    int outputs;
    size_t weights;
    size_t biases;
  };

  // The activations of one forward pass, kept for the backward pass, and the backward pass's
  // scratch; reused from step to step so the inner loop never allocates.
  struct Workspace {
    std::vector<float> hidden1, hidden2, output;
    std::vector<float> gradient1, gradient2;
    Probabilities probabilities;
  };

  explicit PolicyNetwork(int hiddenWidth);

  int hiddenWidth() const { return hiddenWidth_; }
  size_t parameterCount() const { return parameters_.size(); }
  std::span<float> parameters() { return parameters_; }
  std::span<const float> parameters() const { return parameters_; }

  // Glorot-uniform weights for the tanh layers and zero biases; the output layer starts 100x
  // smaller so the first policy is close to uniform and every action gets explored.
  void initialize(Random& random);

  Workspace makeWorkspace() const;

  // Action probabilities for one observation (in workspace.probabilities).
  void forward(const CartPole::Observation& observation, Workspace& workspace) const;

  // Adds weight * d(-log pi(action | observation)) / d(parameters) to gradient, using the
  // activations that forward(observation, workspace) has just left in workspace.
  void addLogProbabilityGradient(const CartPole::Observation& observation, int action, float weight,
                                 Workspace& workspace, std::span<float> gradient) const;

 private:
  int hiddenWidth_;
  Layer layers_[3];
  std::vector<float> parameters_;
};

}  // namespace policy_gradient
