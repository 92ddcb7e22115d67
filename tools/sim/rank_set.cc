// SPDX-License-Identifier: Apache-2.0
#include "rank_set.h"

#include <algorithm>
#include <cstring>

#include "base/error.h"

namespace loom::algo {

namespace {

uint32_t wordsFor(int nranks) { return nranks <= 64 ? 1 : static_cast<uint32_t>((nranks + 63) / 64); }

// Word `w` of a set, zero past its room.
uint64_t wordAt(const RankSet& set, size_t w) { return w < set.words() ? set.data()[w] : 0; }

}  // namespace

RankSet::RankSet(int nranks) : words_(wordsFor(nranks)) {
  if (words_ > 1) heap_ = new uint64_t[words_]();
}

RankSet RankSet::of(int nranks, int rank) {
  RankSet set(nranks);
  set.set(rank);
  return set;
}

RankSet RankSet::all(int nranks) {
  RankSet set(nranks);
  uint64_t* words = set.mutableData();
  for (int w = 0; w * 64 < nranks; ++w) {
    const int left = nranks - w * 64;
    words[w] = left >= 64 ? ~uint64_t{0} : (uint64_t{1} << left) - 1;
  }
  return set;
}

void RankSet::set(int rank) {
  if (rank < 0 || static_cast<size_t>(rank) / 64 >= words_) {
    throwInternal("rank set: rank " + std::to_string(rank) + " outside a set of room " + std::to_string(64 * words_));
  }
  mutableData()[rank / 64] |= uint64_t{1} << (rank % 64);
}

void RankSet::copyHeap(const RankSet& other) {
  heap_ = new uint64_t[words_];
  std::copy(other.heap_, other.heap_ + words_, heap_);
}

void RankSet::assignSlow(const RankSet& other) {
  if (words_ != other.words_) {
    release();
    words_ = other.words_;
    if (words_ == 1) {
      word_ = other.word_;
      return;
    }
    heap_ = new uint64_t[words_];
  }
  std::copy(other.data(), other.data() + words_, mutableData());
}

void RankSet::unionSlow(const RankSet& other) {
  if (other.words_ > words_) {  // grow to other's room, keeping what is here
    RankSet grown(static_cast<int>(64 * other.words_));
    std::copy(data(), data() + words_, grown.mutableData());
    grown.divided_ = divided_;
    *this = std::move(grown);
  }
  uint64_t* mine = mutableData();
  for (size_t w = 0; w < other.words_; ++w) mine[w] |= other.data()[w];
}

bool RankSet::intersectsSlow(const RankSet& other) const {
  const size_t words = std::min(words_, other.words_);
  for (size_t w = 0; w < words; ++w) {
    if ((data()[w] & other.data()[w]) != 0) return true;
  }
  return false;
}

bool RankSet::equalsSlow(const RankSet& other) const {
  if (divided_ != other.divided_) return false;
  const size_t words = std::max(words_, other.words_);
  for (size_t w = 0; w < words; ++w) {
    if (wordAt(*this, w) != wordAt(other, w)) return false;
  }
  return true;
}

bool RankSet::empty() const {
  for (size_t w = 0; w < words_; ++w) {
    if (data()[w] != 0) return false;
  }
  return true;
}

int RankSet::count() const {
  int total = 0;
  for (size_t w = 0; w < words_; ++w) total += __builtin_popcountll(data()[w]);
  return total;
}

int RankSet::firstAbsent(int nranks) const {
  for (int rank = 0; rank < nranks; ++rank) {
    if (!test(rank)) return rank;
  }
  return -1;
}

std::string RankSet::describe() const {
  std::string text = "{";
  const int room = static_cast<int>(64 * words_);
  for (int rank = 0; rank < room;) {
    if (!test(rank)) {
      ++rank;
      continue;
    }
    int last = rank;
    while (last + 1 < room && test(last + 1)) ++last;
    if (text.size() > 1) text += ", ";
    text += std::to_string(rank);
    if (last > rank) text += "-" + std::to_string(last);
    rank = last + 1;
  }
  return text + "}" + (divided_ ? " divided" : "");
}

RankSets::RankSets(int nranks, size_t size)
    : nranks_(nranks), words_(wordsFor(nranks)), bits_(size * words_, 0), divided_(size, 0) {}

void RankSets::outsideRoom(int rank) const {
  throwInternal("rank sets: rank " + std::to_string(rank) + " outside sets of room " + std::to_string(64 * words_));
}

RankSet RankSets::get(size_t i) const {
  RankSet set(static_cast<int>(64 * words_));
  std::copy(bits(i), bits(i) + words_, set.mutableData());
  set.setDivided(divided(i));
  return set;
}

bool RankSets::equalsSlow(size_t i, const RankSet& set) const {
  if (divided(i) != set.divided()) return false;
  const size_t words = std::max(words_, set.words());
  for (size_t w = 0; w < words; ++w) {
    if ((w < words_ ? bits(i)[w] : 0) != wordAt(set, w)) return false;
  }
  return true;
}

void RankSets::copy(size_t at, const RankSets& from, size_t fromAt, size_t count) {
  if (from.words_ != words_) throwInternal("rank sets: copy between sets of different rooms");
  if (count == 0) return;
  std::memmove(bits(at), from.bits(fromAt), count * words_ * sizeof(uint64_t));
  std::memmove(divided_.data() + at, from.divided_.data() + fromAt, count);
}

RankSets RankSets::slice(size_t at, size_t count) const {
  RankSets part(nranks_, count);
  part.copy(0, *this, at, count);
  return part;
}

}  // namespace loom::algo
