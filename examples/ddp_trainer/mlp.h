// SPDX-License-Identifier: Apache-2.0
// A multi-layer perceptron: linear layers with ReLU between them and a softmax cross-entropy
// loss, with a hand-written forward and backward pass over a flat parameter array.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "parameter_layout.h"
#include "random.h"

namespace ddp {

class Mlp {
 public:
  // widths: input, hidden..., classes.
  Mlp(std::vector<int> widths, const ParameterLayout& layout);

  int layers() const { return static_cast<int>(widths_.size()) - 1; }
  int inputs() const { return widths_.front(); }
  int classes() const { return widths_.back(); }
  // {weights, biases} per layer, for ParameterLayout.
  static std::vector<std::pair<size_t, size_t>> layerSizes(const std::vector<int>& widths);

  // He-uniform weights (ReLU), zero biases, from the seed only.
  void initialize(float* params, uint64_t seed) const;

  struct Result {
    double lossSum = 0;  // sum over the batch of -log p(label)
    int correct = 0;     // argmax == label
  };

  // Forward pass over batch rows of x; keeps the activations for backward.
  Result forward(const float* params, const float* x, const int* labels, int batch);

  // Backward of the last forward: adds d(lossSum * lossScale)/d(params) into grads. Calls
  // layerDone(l) as soon as layer l's gradients are complete (last layer first), before the
  // gradient flows on into layer l-1: DDP starts reducing a bucket there.
  void backward(const float* params, float lossScale, float* grads, const std::function<void(int)>& layerDone);

 private:
  std::vector<int> widths_;
  const ParameterLayout& layout_;
  // Per layer l: its input (rows x widths_[l]) and pre-activation (rows x widths_[l+1]);
  // kept across steps so that no step faults in fresh pages.
  std::vector<std::vector<float>> inputs_, outputs_;
  std::vector<float> gradOut_, gradIn_, probabilities_;
  std::vector<int> labels_;
  int batch_ = 0;
};

}  // namespace ddp
