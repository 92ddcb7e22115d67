// SPDX-License-Identifier: Apache-2.0
#include "random_programs.h"

#include <utility>

namespace loom::algo {

namespace {

class SplitMix {
 public:
  explicit SplitMix(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  size_t below(size_t bound) { return static_cast<size_t>(next() % bound); }
  template <typename T>
  void shuffle(std::vector<T>& items) {
    for (size_t i = items.size(); i > 1; --i) std::swap(items[i - 1], items[below(i)]);
  }

 private:
  uint64_t state_;
};

// Places blocks of `counts` (by rank) in a random order with random gaps: their displacements.
std::vector<size_t> scatterBlocks(const std::vector<size_t>& counts, SplitMix& random) {
  std::vector<size_t> order(counts.size()), displs(counts.size());
  for (size_t j = 0; j < order.size(); ++j) order[j] = j;
  random.shuffle(order);
  size_t cursor = 0;
  for (size_t j : order) {
    cursor += random.below(4);
    displs[j] = cursor;
    cursor += counts[j];
  }
  return displs;
}

}  // namespace

std::vector<VectorLayout> randomLayouts(int nranks, uint64_t seed, size_t maxCount) {
  SplitMix random(seed);
  const size_t n = static_cast<size_t>(nranks);
  std::vector<std::vector<size_t>> counts(n, std::vector<size_t>(n));  // [from][to]
  for (auto& row : counts) {
    for (size_t& count : row) count = random.below(3) == 0 ? 0 : 1 + random.below(maxCount);
  }
  std::vector<VectorLayout> layouts(n);
  for (size_t i = 0; i < n; ++i) {
    layouts[i].sendCounts = counts[i];
    for (size_t j = 0; j < n; ++j) layouts[i].recvCounts.push_back(counts[j][i]);
    layouts[i].sendDispls = scatterBlocks(layouts[i].sendCounts, random);
    layouts[i].recvDispls = scatterBlocks(layouts[i].recvCounts, random);
  }
  return layouts;
}

BatchProgram randomBatch(int nranks, uint64_t seed) {
  static const size_t kSizes[] = {0, 1, 3, 7, 8, 13, 64, 255};
  SplitMix random(seed);
  const size_t n = static_cast<size_t>(nranks);
  std::vector<std::vector<std::vector<size_t>>> sizes(n, std::vector<std::vector<size_t>>(n));  // [from][to]
  for (auto& row : sizes) {
    for (std::vector<size_t>& messages : row) {
      const size_t count = random.below(10) < 4 ? 0 : 1 + random.below(3);
      for (size_t m = 0; m < count; ++m) messages.push_back(kSizes[random.below(std::size(kSizes))]);
    }
  }
  BatchProgram batch(n);
  for (size_t r = 0; r < n; ++r) {
    // One entry per operation, (send, peer); shuffled, then each pair's k-th gets message k.
    std::vector<std::pair<bool, size_t>> order;
    for (size_t peer = 0; peer < n; ++peer) {
      for (size_t m = 0; m < sizes[r][peer].size(); ++m) order.emplace_back(true, peer);
      for (size_t m = 0; m < sizes[peer][r].size(); ++m) order.emplace_back(false, peer);
    }
    random.shuffle(order);
    std::vector<size_t> sent(n, 0), received(n, 0);
    for (const auto& [send, peer] : order) {
      const size_t bytes = send ? sizes[r][peer][sent[peer]++] : sizes[peer][r][received[peer]++];
      batch[r].push_back(PeerOperation{send, static_cast<int>(peer), bytes, 0});
    }
  }
  numberMessages(batch);
  return batch;
}

BatchProgram allPairsBatch(int nranks, size_t bytes) {
  BatchProgram batch(static_cast<size_t>(nranks));
  for (int r = 0; r < nranks; ++r) {
    for (int peer = 0; peer < nranks; ++peer) batch[r].push_back(PeerOperation{true, (r + peer) % nranks, bytes, 0});
    for (int peer = 0; peer < nranks; ++peer) {
      batch[r].push_back(PeerOperation{false, (r - peer + nranks) % nranks, bytes, 0});
    }
  }
  numberMessages(batch);
  return batch;
}

}  // namespace loom::algo
