// SPDX-License-Identifier: Apache-2.0
#include "parameter_layout.h"

namespace ddp {

ParameterLayout::ParameterLayout(const std::vector<std::pair<size_t, size_t>>& layerSizes, size_t bucketBytes,
                                 int ranks) {
  const size_t capElements = bucketBytes / sizeof(float) > 0 ? bucketBytes / sizeof(float) : 1;
  const int layers = static_cast<int>(layerSizes.size());
  weightIndex_.resize(layers);
  Bucket open;
  open.ranks = static_cast<size_t>(ranks);
  auto closeBucket = [&] {
    if (open.count == 0) return;
    const size_t padded = (open.count + open.ranks - 1) / open.ranks * open.ranks;
    total_ += padded - open.count;
    open.count = padded;
    buckets_.push_back(open);
    open.offset = total_;
    open.count = 0;
  };
  for (int layer = layers - 1; layer >= 0; --layer) {
    weightIndex_[layer] = tensors_.size();
    const auto [weights, biases] = layerSizes[layer];
    for (int part = 0; part < 2; ++part) {
      const size_t count = part == 0 ? weights : biases;
      // A layer's weight and bias go into the same bucket unless the cap forces a cut, and a
      // bucket is cut before a tensor that would overflow it.
      if (open.count > 0 && open.count + count > capElements) closeBucket();
      tensors_.push_back({"layer" + std::to_string(layer) + (part == 0 ? ".weight" : ".bias"), layer, total_, count});
      total_ += count;
      parameters_ += count;
      open.count += count;
      open.lastLayer = layer;
    }
  }
  closeBucket();
}

std::vector<ParameterLayout::Range> ParameterLayout::shardRanges(int rank) const {
  std::vector<Range> ranges;
  for (const Bucket& bucket : buckets_) {
    ranges.push_back({bucket.offset + static_cast<size_t>(rank) * bucket.shardCount(), bucket.shardCount()});
  }
  return ranges;
}

}  // namespace ddp
