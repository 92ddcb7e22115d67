// SPDX-License-Identifier: Apache-2.0
// A set of ranks for any rank count, plus a "divided" flag: what the symbolic simulator
// (simulator.h) holds per element (the ranks whose input it contains, and whether avg has
// divided it) and what the provenance simulator (movement_simulator.h) follows per step (the
// ranks whose start happened before it). The flag is kept apart from the ranks so that no rank
// number is lost to it.
//
// Bits are 64-bit words, ceil(nranks / 64) of them. A RankSet keeps a single word inline (up to
// 64 ranks: no allocation, as cheap to copy and combine as a uint64_t mask) and more on the
// heap. RankSets holds many sets of one room flat, one word each up to 64 ranks, so that the
// symbolic simulator's buffers cost what its uint64_t masks did (the tests run it over many
// shapes). One set per element per rank is O(n^2 * elements / 64) words beyond 64 ranks: keep
// the element counts small at hundreds of ranks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace loom::algo {

class RankSets;

class RankSet {
 public:
  RankSet() noexcept {}             // empty, with room for ranks 0..63
  explicit RankSet(int nranks);     // empty, with room for ranks 0..nranks-1
  static RankSet of(int nranks, int rank);  // {rank}
  static RankSet all(int nranks);           // {0, ..., nranks-1}

  RankSet(const RankSet& other) : words_(other.words_), divided_(other.divided_) {
    if (words_ == 1) word_ = other.word_;
    else copyHeap(other);
  }
  RankSet(RankSet&& other) noexcept : words_(other.words_), divided_(other.divided_) {
    if (words_ == 1) word_ = other.word_;
    else heap_ = other.heap_;
    other.words_ = 1;
    other.word_ = 0;
  }
  RankSet& operator=(const RankSet& other) {
    if (words_ == 1 && other.words_ == 1) word_ = other.word_;  // the common case: one word
    else if (this != &other) assignSlow(other);
    divided_ = other.divided_;
    return *this;
  }
  RankSet& operator=(RankSet&& other) noexcept {
    if (this != &other) {
      release();
      words_ = other.words_;
      divided_ = other.divided_;
      if (words_ == 1) word_ = other.word_;
      else heap_ = other.heap_;
      other.words_ = 1;
      other.word_ = 0;
    }
    return *this;
  }
  ~RankSet() { release(); }

  size_t words() const { return words_; }
  const uint64_t* data() const { return words_ == 1 ? &word_ : heap_; }

  // Throws loom::Error(loomInternalError) for a rank outside the set's room.
  void set(int rank);
  bool test(int rank) const {
    const size_t word = static_cast<size_t>(rank) / 64;
    return rank >= 0 && word < words_ && (data()[word] >> (rank % 64) & 1) != 0;
  }

  // Adds `other`'s ranks (growing the room when other has more); the flag is left alone.
  RankSet& operator|=(const RankSet& other) {
    if (words_ == 1 && other.words_ == 1) word_ |= other.word_;
    else unionSlow(other);
    return *this;
  }
  // Whether a rank is in both (the flags are not compared).
  bool intersects(const RankSet& other) const {
    if (words_ == 1 && other.words_ == 1) return (word_ & other.word_) != 0;
    return intersectsSlow(other);
  }
  // Same ranks and same flag (room beyond the ranks set does not matter).
  bool operator==(const RankSet& other) const {
    if (words_ == 1 && other.words_ == 1) return word_ == other.word_ && divided_ == other.divided_;
    return equalsSlow(other);
  }

  bool empty() const;
  int count() const;                  // how many ranks
  int firstAbsent(int nranks) const;  // the lowest rank < nranks not in the set, or -1

  bool divided() const { return divided_; }
  void setDivided(bool divided = true) { divided_ = divided; }

  // "{}", "{3}", "{0-62, 64} divided": for messages.
  std::string describe() const;

 private:
  void release() {
    if (words_ != 1) delete[] heap_;
  }
  void copyHeap(const RankSet& other);
  void assignSlow(const RankSet& other);
  void unionSlow(const RankSet& other);
  bool intersectsSlow(const RankSet& other) const;
  bool equalsSlow(const RankSet& other) const;
  uint64_t* mutableData() { return words_ == 1 ? &word_ : heap_; }
  friend class RankSets;

  uint32_t words_ = 1;
  bool divided_ = false;
  union {
    uint64_t word_ = 0;  // words_ == 1
    uint64_t* heap_;     // words_ > 1: words_ words
  };
};

// `size` sets with room for ranks 0..nranks-1, stored flat: words() words a set, the divided
// flags apart. Sets are named by index; copy() and unite() take another RankSets (or this one).
class RankSets {
 public:
  RankSets() = default;
  RankSets(int nranks, size_t size);  // `size` empty sets

  size_t size() const { return divided_.size(); }
  size_t words() const { return words_; }
  int nranks() const { return nranks_; }

  uint64_t* bits(size_t i) { return bits_.data() + i * words_; }
  const uint64_t* bits(size_t i) const { return bits_.data() + i * words_; }
  bool divided(size_t i) const { return divided_[i] != 0; }
  void setDivided(size_t i, bool divided = true) { divided_[i] = divided ? 1 : 0; }

  // Adds `rank` to set i; throws loom::Error(loomInternalError) outside the room.
  void set(size_t i, int rank) {
    if (rank < 0 || static_cast<size_t>(rank) / 64 >= words_) outsideRoom(rank);
    bits(i)[rank / 64] |= uint64_t{1} << (rank % 64);
  }
  RankSet get(size_t i) const;  // set i as a RankSet of the same room
  // Same ranks and flag.
  bool equals(size_t i, const RankSet& set) const {
    if (words_ == 1 && set.words() == 1) return bits(i)[0] == set.data()[0] && divided(i) == set.divided();
    return equalsSlow(i, set);
  }

  // Sets [at, at + count) become `from`'s sets [fromAt, fromAt + count), flags included, as
  // memmove would (from may be this, overlapping). Both have the same room.
  void copy(size_t at, const RankSets& from, size_t fromAt, size_t count);
  // `count` sets from `at` on, as a RankSets of their own.
  RankSets slice(size_t at, size_t count) const;
  // Whether set i and `other`'s set j share a rank; then set i gains set j's ranks.
  bool intersects(size_t i, const RankSets& other, size_t j) const {
    const uint64_t *a = bits(i), *b = other.bits(j);
    for (size_t w = 0; w < words_; ++w) {
      if ((a[w] & b[w]) != 0) return true;
    }
    return false;
  }
  void unite(size_t i, const RankSets& other, size_t j) {
    uint64_t* a = bits(i);
    const uint64_t* b = other.bits(j);
    for (size_t w = 0; w < words_; ++w) a[w] |= b[w];
  }

 private:
  [[noreturn]] void outsideRoom(int rank) const;
  bool equalsSlow(size_t i, const RankSet& set) const;

  int nranks_ = 0;
  size_t words_ = 1;
  std::vector<uint64_t> bits_;
  std::vector<uint8_t> divided_;
};

}  // namespace loom::algo
