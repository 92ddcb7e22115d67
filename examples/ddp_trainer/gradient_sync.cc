// SPDX-License-Identifier: Apache-2.0
#include "gradient_sync.h"

#include <chrono>

#include "bf16.h"
#include "loom_check.h"

namespace ddp {
namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

}  // namespace

GradientSync::GradientSync(loomComm_t comm, int rank, int ranks, const ParameterLayout& layout,
                           const Options& options)
    : comm_(comm), rank_(rank), ranks_(ranks), layout_(layout), options_(options) {
  check(loomStreamCreate(&stream_), "loomStreamCreate", comm_);
  // Touched now: fresh pages fault slowly on this VM, and never inside a timed step.
  if (options_.precision == Precision::kBf16) wire_.assign(layout_.total(), 0);
}

GradientSync::~GradientSync() {
  if (stream_ != nullptr) loomStreamDestroy(stream_);
}

void GradientSync::layerDone(int layer, float* grads) {
  // Buckets complete in launch order: each holds layers >= its lastLayer, and backward walks
  // the layers downwards, so every rank issues the same collectives in the same order.
  const auto& buckets = layout_.buckets();
  while (launched_ < buckets.size() && buckets[launched_].lastLayer >= layer) launch(launched_++, grads);
}

void GradientSync::launch(size_t index, float* grads) {
  const Bucket& bucket = layout_.buckets()[index];
  const size_t shard = bucket.shardCount();
  const bool bf16 = options_.precision == Precision::kBf16;
  // What travels: the bucket's fp32 gradients in place, or their bf16 copy in the staging area.
  if (bf16) toBf16(grads + bucket.offset, wire_.data() + bucket.offset, bucket.count);
  char* data = bf16 ? reinterpret_cast<char*>(wire_.data() + bucket.offset) : reinterpret_cast<char*>(grads + bucket.offset);
  const loomDataType_t type = bf16 ? loomBfloat16 : loomFloat32;
  const size_t element = bf16 ? sizeof(uint16_t) : sizeof(float);
  if (options_.strategy == Strategy::kZero) {
    check(loomReduceScatter(data, data + rank_ * shard * element, shard, type, loomSum, comm_, stream_),
          "loomReduceScatter (gradient bucket)", comm_);
  } else {
    check(loomAllReduce(data, data, bucket.count, type, loomSum, comm_, stream_), "loomAllReduce (gradient bucket)",
          comm_);
  }
}

void GradientSync::wait() {
  const double start = now();
  check(loomStreamSynchronize(stream_), "loomStreamSynchronize (gradient buckets)", comm_);
  waitSeconds_ += now() - start;
}

void GradientSync::finishBackward(float* grads) {
  const double start = now();
  const auto& buckets = layout_.buckets();
  while (launched_ < buckets.size()) launch(launched_++, grads);
  waitSeconds_ += now() - start;  // without overlap the launches are communication time too
  wait();
  launched_ = 0;
  if (options_.precision != Precision::kBf16) return;
  // Back to fp32 for the optimizer: the whole bucket under DDP, this rank's shard under ZeRO.
  const bool zero = options_.strategy == Strategy::kZero;
  for (const Bucket& bucket : buckets) {
    const size_t from = zero ? bucket.offset + rank_ * bucket.shardCount() : bucket.offset;
    const size_t count = zero ? bucket.shardCount() : bucket.count;
    fromBf16(wire_.data() + from, grads + from, count);
  }
}

void GradientSync::gatherParams(float* params) {
  const double start = now();
  const bool bf16 = options_.precision == Precision::kBf16;
  const loomDataType_t type = bf16 ? loomBfloat16 : loomFloat32;
  const size_t element = bf16 ? sizeof(uint16_t) : sizeof(float);
  for (const Bucket& bucket : layout_.buckets()) {
    const size_t shard = bucket.shardCount(), mine = bucket.offset + rank_ * shard;
    // bf16: the shard is already bf16-exact (OptimizerShard::storeParams), so this is lossless.
    if (bf16) toBf16(params + mine, wire_.data() + mine, shard);
    char* data = bf16 ? reinterpret_cast<char*>(wire_.data() + bucket.offset) : reinterpret_cast<char*>(params + bucket.offset);
    check(loomAllGather(data + rank_ * shard * element, data, shard, type, comm_, stream_),
          "loomAllGather (parameter shard)", comm_);
  }
  check(loomStreamSynchronize(stream_), "loomStreamSynchronize (parameter shards)", comm_);
  if (bf16) fromBf16(wire_.data(), params, layout_.total());
  waitSeconds_ += now() - start;
}

double GradientSync::takeWaitSeconds() {
  const double seconds = waitSeconds_;
  waitSeconds_ = 0;
  return seconds;
}

size_t GradientSync::wireBytesPerStep() const {
  const size_t element = options_.precision == Precision::kBf16 ? 2 : 4;
  // What one rank hands to Loom per step: every gradient bucket, plus the gathered parameters.
  const size_t gather = options_.strategy == Strategy::kZero ? layout_.total() : 0;
  return (layout_.total() + gather) * element;
}

}  // namespace ddp
