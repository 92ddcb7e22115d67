// SPDX-License-Identifier: Apache-2.0
// DDP's reducer and ZeRO's partitioner: moves gradients and parameters between ranks.
//
// Buckets (ParameterLayout) are launched on a Loom stream as soon as backward has finished
// their last layer, so the reduction of late layers runs while backward computes earlier
// ones; finishBackward() waits for all of them. Without overlap every bucket is launched after
// backward. DDP all-reduces each bucket (sum; the loss is already scaled by 1 / global batch);
// ZeRO reduce-scatters it, so a rank receives only its shard's sum, and after the optimizer
// step all-gathers the updated parameter shards. In bf16 mode what travels is bf16.
#pragma once

#include <loom.h>

#include <cstdint>
#include <vector>

#include "options.h"
#include "parameter_layout.h"

namespace ddp {

class GradientSync {
 public:
  GradientSync(loomComm_t comm, int rank, int ranks, const ParameterLayout& layout, const Options& options);
  ~GradientSync();
  GradientSync(const GradientSync&) = delete;
  GradientSync& operator=(const GradientSync&) = delete;

  // Backward has finished layer `layer` of the last micro-batch: launch what is complete.
  void layerDone(int layer, float* grads);
  // Launches what is left, waits for every bucket; grads then holds the global sum (ZeRO: in
  // this rank's shard of each bucket only).
  void finishBackward(float* grads);
  // ZeRO: every rank has written its updated shard into params; gather the rest.
  void gatherParams(float* params);

  // Seconds this rank spent blocked on communication since the last call (and resets it).
  double takeWaitSeconds();
  size_t wireBytesPerStep() const;

 private:
  void launch(size_t bucket, float* grads);
  void wait();

  loomComm_t comm_;
  int rank_, ranks_;
  const ParameterLayout& layout_;
  Options options_;
  loomStream_t stream_ = nullptr;
  std::vector<uint16_t> wire_;  // bf16 staging, laid out like the flat gradient array
  size_t launched_ = 0;         // buckets launched this step (they complete in order)
  double waitSeconds_ = 0;
};

}  // namespace ddp
