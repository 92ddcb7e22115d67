// SPDX-License-Identifier: Apache-2.0
#include "optimizer_shard.h"

#include <cmath>

#include "bf16.h"

namespace ddp {
namespace {
constexpr double kBeta1 = 0.9, kBeta2 = 0.999, kEpsilon = 1e-8;
}

OptimizerShard::OptimizerShard(const Options& options, std::vector<ParameterLayout::Range> owned)
    : options_(options), owned_(std::move(owned)) {
  size_t count = 0;
  for (const auto& range : owned_) count += range.count;
  master_.assign(count, 0.0f);
  first_.assign(count, 0.0f);
  if (options_.optimizer == OptimizerKind::kAdamW) second_.assign(count, 0.0f);
}

void OptimizerShard::loadMaster(const float* params) {
  size_t at = 0;
  for (const auto& range : owned_) {
    for (size_t i = 0; i < range.count; ++i) master_[at++] = params[range.offset + i];
  }
}

void OptimizerShard::step(const float* grads) {
  ++steps_;
  const float lr = static_cast<float>(options_.learningRate);
  const float decay = static_cast<float>(options_.weightDecay);
  if (options_.optimizer == OptimizerKind::kAdamW) {
    // AdamW (Loshchilov & Hutter): bias-corrected moments; weight decay applied to the weight
    // directly, not through the gradient.
    const float b1 = static_cast<float>(kBeta1), b2 = static_cast<float>(kBeta2);
    const float correction1 = static_cast<float>(1 - std::pow(kBeta1, static_cast<double>(steps_)));
    const float correction2 = static_cast<float>(1 - std::pow(kBeta2, static_cast<double>(steps_)));
    const float epsilon = static_cast<float>(kEpsilon);
    size_t at = 0;
    for (const auto& range : owned_) {
      for (size_t i = 0; i < range.count; ++i, ++at) {
        const float g = grads[range.offset + i];
        first_[at] = b1 * first_[at] + (1 - b1) * g;
        second_[at] = b2 * second_[at] + (1 - b2) * g * g;
        const float update = (first_[at] / correction1) / (std::sqrt(second_[at] / correction2) + epsilon);
        master_[at] -= lr * (update + decay * master_[at]);
      }
    }
    return;
  }
  // SGD with (heavy-ball) momentum and L2 weight decay.
  const float momentum = static_cast<float>(options_.momentum);
  size_t at = 0;
  for (const auto& range : owned_) {
    for (size_t i = 0; i < range.count; ++i, ++at) {
      const float g = grads[range.offset + i] + decay * master_[at];
      first_[at] = momentum * first_[at] + g;
      master_[at] -= lr * first_[at];
    }
  }
}

void OptimizerShard::storeParams(float* params) const {
  const bool bf16 = options_.precision == Precision::kBf16;
  size_t at = 0;
  for (const auto& range : owned_) {
    for (size_t i = 0; i < range.count; ++i, ++at) {
      params[range.offset + i] = bf16 ? roundToBf16(master_[at]) : master_[at];
    }
  }
}

}  // namespace ddp
