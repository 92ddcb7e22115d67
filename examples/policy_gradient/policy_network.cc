// SPDX-License-Identifier: Apache-2.0
#include "policy_network.h"

#include <algorithm>
#include <cmath>

namespace policy_gradient {
namespace {

// output = biases + input * weights. The loops run over outputs innermost, with weights stored
// row-major by input, so each is an axpy the compiler vectorises without reordering any sum.
void denseForward(const PolicyNetwork::Layer& layer, const float* parameters, const float* input,
                  float* output) {
  const float* weights = parameters + layer.weights;
  std::copy_n(parameters + layer.biases, layer.outputs, output);
  for (int i = 0; i < layer.inputs; ++i) {
    const float x = input[i];
    const float* row = weights + static_cast<size_t>(i) * layer.outputs;
    for (int j = 0; j < layer.outputs; ++j) output[j] += x * row[j];
  }
}

// Given d(loss)/d(output) of a layer, adds the weight and bias gradients, and, when
// inputGradient is not null, writes d(loss)/d(input).
void denseBackward(const PolicyNetwork::Layer& layer, const float* parameters, const float* input,
                   const float* outputGradient, float* gradient, float* inputGradient) {
  const float* weights = parameters + layer.weights;
  float* weightGradient = gradient + layer.weights;
  float* biasGradient = gradient + layer.biases;
  for (int j = 0; j < layer.outputs; ++j) biasGradient[j] += outputGradient[j];
  for (int i = 0; i < layer.inputs; ++i) {
    const float x = input[i];
    float* gradientRow = weightGradient + static_cast<size_t>(i) * layer.outputs;
    for (int j = 0; j < layer.outputs; ++j) gradientRow[j] += x * outputGradient[j];
  }
  if (inputGradient == nullptr) return;
  // A dot product per input. Kept apart from the loop above, which is then free of a running
  // sum and vectorises; eight partial sums let this one vectorise too, in a fixed order.
  constexpr int kLanes = 8;
  for (int i = 0; i < layer.inputs; ++i) {
    const float* row = weights + static_cast<size_t>(i) * layer.outputs;
    float partial[kLanes] = {};
    int j = 0;
    for (; j + kLanes <= layer.outputs; j += kLanes) {
      for (int k = 0; k < kLanes; ++k) partial[k] += row[j + k] * outputGradient[j + k];
    }
    float sum = 0;
    for (; j < layer.outputs; ++j) sum += row[j] * outputGradient[j];
    for (float p : partial) sum += p;
    inputGradient[i] = sum;
  }
}

void tanhInPlace(std::vector<float>& values) {
  for (float& v : values) v = std::tanh(v);
}

// d/dz tanh(z) = 1 - tanh(z)^2, applied to a gradient that arrived at the tanh's output.
void throughTanh(const std::vector<float>& activations, std::vector<float>& gradient) {
  for (size_t i = 0; i < gradient.size(); ++i) gradient[i] *= 1 - activations[i] * activations[i];
}

}  // namespace

PolicyNetwork::PolicyNetwork(int hiddenWidth) : hiddenWidth_(hiddenWidth) {
  const int shapes[3][2] = {
      {kInputs, hiddenWidth}, {hiddenWidth, hiddenWidth}, {hiddenWidth, kActions}};
  size_t offset = 0;
  for (int l = 0; l < 3; ++l) {
    Layer& layer = layers_[l];
    layer.inputs = shapes[l][0];
    layer.outputs = shapes[l][1];
    layer.weights = offset;
    offset += static_cast<size_t>(layer.inputs) * layer.outputs;
    layer.biases = offset;
    offset += layer.outputs;
  }
  parameters_.assign(offset, 0.0f);
}

void PolicyNetwork::initialize(Random& random) {
  std::fill(parameters_.begin(), parameters_.end(), 0.0f);
  for (int l = 0; l < 3; ++l) {
    const Layer& layer = layers_[l];
    const double limit = std::sqrt(6.0 / (layer.inputs + layer.outputs)) * (l == 2 ? 0.01 : 1.0);
    const size_t count = static_cast<size_t>(layer.inputs) * layer.outputs;
    for (size_t k = 0; k < count; ++k) {
      parameters_[layer.weights + k] = static_cast<float>(random.uniform(-limit, limit));
    }
  }
}

PolicyNetwork::Workspace PolicyNetwork::makeWorkspace() const {
  Workspace workspace;
  workspace.hidden1.resize(hiddenWidth_);
  workspace.hidden2.resize(hiddenWidth_);
  workspace.output.resize(kActions);
  workspace.gradient1.resize(hiddenWidth_);
  workspace.gradient2.resize(hiddenWidth_);
  return workspace;
}

void PolicyNetwork::forward(const CartPole::Observation& observation, Workspace& workspace) const {
  const float* p = parameters_.data();
  denseForward(layers_[0], p, observation.data(), workspace.hidden1.data());
  tanhInPlace(workspace.hidden1);
  denseForward(layers_[1], p, workspace.hidden1.data(), workspace.hidden2.data());
  tanhInPlace(workspace.hidden2);
  denseForward(layers_[2], p, workspace.hidden2.data(), workspace.output.data());

  // Softmax, shifted by the largest logit so exp never overflows.
  const float largest = *std::max_element(workspace.output.begin(), workspace.output.end());
  float total = 0;
  for (int a = 0; a < kActions; ++a) {
    workspace.probabilities[a] = std::exp(workspace.output[a] - largest);
    total += workspace.probabilities[a];
  }
  for (float& probability : workspace.probabilities) probability /= total;
}

void PolicyNetwork::addLogProbabilityGradient(const CartPole::Observation& observation, int action,
                                              float weight, Workspace& workspace,
                                              std::span<float> gradient) const {
  const float* p = parameters_.data();
  // d(-log softmax(z)[action]) / dz = probabilities - onehot(action); reuse the output
  // buffer for it, the logits are no longer needed.
  std::vector<float>& outputGradient = workspace.output;
  for (int a = 0; a < kActions; ++a) {
    outputGradient[a] = weight * (workspace.probabilities[a] - (a == action ? 1.0f : 0.0f));
  }
  denseBackward(layers_[2], p, workspace.hidden2.data(), outputGradient.data(), gradient.data(),
                workspace.gradient2.data());
  throughTanh(workspace.hidden2, workspace.gradient2);
  denseBackward(layers_[1], p, workspace.hidden1.data(), workspace.gradient2.data(),
                gradient.data(), workspace.gradient1.data());
  throughTanh(workspace.hidden1, workspace.gradient1);
  denseBackward(layers_[0], p, observation.data(), workspace.gradient1.data(), gradient.data(),
                nullptr);
}

}  // namespace policy_gradient
