// SPDX-License-Identifier: Apache-2.0
// The part of training state a rank updates: fp32 master weights and optimizer state for the
// parameter ranges it owns — every parameter under DDP, its shard of each bucket under ZeRO.
// State is stored compactly (owned elements only), which is where ZeRO saves memory.
#pragma once

#include <cstdio>
#include <vector>

#include "options.h"
#include "parameter_layout.h"

namespace ddp {

class OptimizerShard {
 public:
  OptimizerShard(const Options& options, std::vector<ParameterLayout::Range> owned);

  // Copies the owned ranges of the full parameter array into the master weights.
  void loadMaster(const float* params);
  // One optimizer step from the (reduced) gradients of the owned ranges of the flat array.
  void step(const float* grads);
  // Writes the master weights into the owned ranges of params, rounded to bf16 in bf16 mode
  // (the weights forward and backward compute with).
  void storeParams(float* params) const;

  long steps() const { return steps_; }
  size_t ownedCount() const { return master_.size(); }
  size_t stateBytes() const { return (master_.size() + first_.size() + second_.size()) * sizeof(float); }
  const std::vector<ParameterLayout::Range>& owned() const { return owned_; }

  // Everything step() reads, so that a resumed run continues bit for bit. The arrays are
  // indexed like the owned ranges laid end to end.
  std::vector<float>& master() { return master_; }
  std::vector<float>& firstMoment() { return first_; }    // AdamW m, SGD momentum buffer
  std::vector<float>& secondMoment() { return second_; }  // AdamW v (empty for SGD)
  void setSteps(long steps) { steps_ = steps; }

 private:
  Options options_;
  std::vector<ParameterLayout::Range> owned_;
  std::vector<float> master_, first_, second_;
  long steps_ = 0;
};

}  // namespace ddp
