// SPDX-License-Identifier: Apache-2.0
// Where each weight and bias lives in the flat parameter (and gradient) array, and how that
// array is cut into communication buckets.
//
// Tensors are placed in the order backward produces their gradients (last layer first), and
// consecutive tensors are grouped into buckets of at most bucketBytes (a larger tensor gets a
// bucket of its own), as PyTorch DDP does: a bucket can be reduced as soon as backward has
// passed its layers. Each bucket is padded to a multiple of the rank count so that ZeRO can
// reduce-scatter it into equal shards; padding elements stay zero.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace ddp {

struct Tensor {
  std::string name;  // "layer2.weight"
  int layer = 0;
  size_t offset = 0, count = 0;
};

struct Bucket {
  size_t offset = 0, count = 0;  // count includes the padding
  int lastLayer = 0;             // the bucket is complete once backward has finished this layer
  size_t shardCount() const { return count / ranks; }
  size_t ranks = 1;
};

class ParameterLayout {
 public:
  // layerSizes[l] = {weights, biases} of layer l (0 = first layer).
  ParameterLayout(const std::vector<std::pair<size_t, size_t>>& layerSizes, size_t bucketBytes, int ranks);

  size_t total() const { return total_; }              // with padding
  size_t parameterCount() const { return parameters_; }  // without
  const std::vector<Tensor>& tensors() const { return tensors_; }
  const std::vector<Bucket>& buckets() const { return buckets_; }
  const Tensor& weight(int layer) const { return tensors_[weightIndex_[layer]]; }
  const Tensor& bias(int layer) const { return tensors_[weightIndex_[layer] + 1]; }

  // The element ranges rank owns under ZeRO: its shard of every bucket, in bucket order.
  struct Range {
    size_t offset, count;
  };
  std::vector<Range> shardRanges(int rank) const;

 private:
  std::vector<Tensor> tensors_;
  std::vector<size_t> weightIndex_;  // per layer, index of its weight in tensors_ (bias follows)
  std::vector<Bucket> buckets_;
  size_t total_ = 0, parameters_ = 0;
};

}  // namespace ddp
