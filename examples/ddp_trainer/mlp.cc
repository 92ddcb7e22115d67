// SPDX-License-Identifier: Apache-2.0
#include "mlp.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "dense_kernels.h"

namespace ddp {
namespace {
constexpr uint64_t kInitPurpose = 2;
}

Mlp::Mlp(std::vector<int> widths, const ParameterLayout& layout)
    : widths_(std::move(widths)), layout_(layout), inputs_(layers()), outputs_(layers()) {}

std::vector<std::pair<size_t, size_t>> Mlp::layerSizes(const std::vector<int>& widths) {
  std::vector<std::pair<size_t, size_t>> sizes;
  for (size_t l = 0; l + 1 < widths.size(); ++l) {
    sizes.push_back({static_cast<size_t>(widths[l]) * widths[l + 1], static_cast<size_t>(widths[l + 1])});
  }
  return sizes;
}

void Mlp::initialize(float* params, uint64_t seed) const {
  std::memset(params, 0, layout_.total() * sizeof(float));
  for (int l = 0; l < layers(); ++l) {
    // Uniform(-a, a) with a = sqrt(6 / fan_in): variance 2 / fan_in, right for ReLU.
    Random random(deriveSeed(seed, kInitPurpose, static_cast<uint64_t>(l)));
    const double bound = std::sqrt(6.0 / widths_[l]);
    const Tensor& weight = layout_.weight(l);
    for (size_t i = 0; i < weight.count; ++i) {
      params[weight.offset + i] = static_cast<float>((2 * random.uniform() - 1) * bound);
    }
  }
}

Mlp::Result Mlp::forward(const float* params, const float* x, const int* labels, int batch) {
  batch_ = batch;
  labels_.assign(labels, labels + batch);
  Result result;
  const float* in = x;
  for (int l = 0; l < layers(); ++l) {
    const int fanIn = widths_[l], fanOut = widths_[l + 1];
    inputs_[l].resize(static_cast<size_t>(batch) * fanIn);
    std::copy(in, in + static_cast<size_t>(batch) * fanIn, inputs_[l].begin());
    outputs_[l].resize(static_cast<size_t>(batch) * fanOut);
    linearForward(inputs_[l].data(), batch, fanIn, params + layout_.weight(l).offset,
                  params + layout_.bias(l).offset, fanOut, outputs_[l].data());
    if (l + 1 < layers()) {
      // The next layer's input is ReLU of this output; outputs_ keeps the pre-activation so
      // backward knows where ReLU let the gradient through.
      inputs_[l + 1].resize(outputs_[l].size());
      for (size_t i = 0; i < outputs_[l].size(); ++i) inputs_[l + 1][i] = std::max(outputs_[l][i], 0.0f);
      in = inputs_[l + 1].data();
    }
  }
  // Softmax cross-entropy, shifted by the row maximum so exp never overflows.
  const int k = classes();
  probabilities_.resize(static_cast<size_t>(batch) * k);
  const std::vector<float>& logits = outputs_.back();
  for (int b = 0; b < batch; ++b) {
    const float* row = logits.data() + static_cast<size_t>(b) * k;
    float* p = probabilities_.data() + static_cast<size_t>(b) * k;
    const int best = static_cast<int>(std::max_element(row, row + k) - row);
    double sum = 0;
    for (int c = 0; c < k; ++c) sum += p[c] = std::exp(row[c] - row[best]);
    for (int c = 0; c < k; ++c) p[c] = static_cast<float>(p[c] / sum);
    result.lossSum += std::log(sum) - (row[labels[b]] - row[best]);
    result.correct += best == labels[b];
  }
  return result;
}

void Mlp::backward(const float* params, float lossScale, float* grads, const std::function<void(int)>& layerDone) {
  const int k = classes();
  // d(loss)/d(logits) = softmax - onehot, times the scale (1 / global batch: the mean).
  gradOut_.resize(probabilities_.size());
  for (int b = 0; b < batch_; ++b) {
    for (int c = 0; c < k; ++c) {
      const size_t i = static_cast<size_t>(b) * k + c;
      gradOut_[i] = (probabilities_[i] - (c == labels_[b] ? 1.0f : 0.0f)) * lossScale;
    }
  }
  for (int l = layers() - 1; l >= 0; --l) {
    const int fanIn = widths_[l], fanOut = widths_[l + 1];
    linearWeightGrad(gradOut_.data(), batch_, fanOut, inputs_[l].data(), fanIn, grads + layout_.weight(l).offset,
                     grads + layout_.bias(l).offset);
    layerDone(l);
    if (l == 0) break;
    gradIn_.resize(static_cast<size_t>(batch_) * fanIn);
    linearInputGrad(gradOut_.data(), batch_, fanOut, params + layout_.weight(l).offset, fanIn, gradIn_.data());
    const std::vector<float>& below = outputs_[l - 1];  // pre-activation of layer l-1
    for (size_t i = 0; i < gradIn_.size(); ++i) {
      if (below[i] <= 0) gradIn_[i] = 0;
    }
    gradOut_.swap(gradIn_);
  }
}

}  // namespace ddp
