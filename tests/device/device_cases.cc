// SPDX-License-Identifier: Apache-2.0
#include "tests/device/device_cases.h"

#include <cstdlib>
#include <cstring>

#include "kernels/float8.h"
#include "kernels/half_float.h"

namespace loom::test::device {

const char* collName(Coll coll) {
  static const char* const names[] = {"allreduce", "allgather", "reducescatter", "broadcast", "reduce",
                                      "alltoall",  "alltoallv", "gather",        "scatter",   "sendrecv"};
  return names[static_cast<int>(coll)];
}
bool reduces(Coll coll) { return coll == Coll::AllReduce || coll == Coll::ReduceScatter || coll == Coll::Reduce; }
bool hasRoot(Coll coll) {
  return coll == Coll::Broadcast || coll == Coll::Reduce || coll == Coll::Gather || coll == Coll::Scatter;
}
bool hasInPlaceForm(Coll coll) {
  return coll != Coll::AllToAll && coll != Coll::AllToAllv && coll != Coll::SendRecv;
}

namespace {
const char* const kTypeNames[] = {"int8",    "uint8",   "int32",    "uint32", "int64",  "uint64",
                                  "float16", "float32", "float64",  "bfloat16", "fp8e4m3", "fp8e5m2"};
const char* const kOpNames[] = {"sum", "prod", "max", "min", "avg"};

uint64_t mix64(uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
uint64_t hash(uint64_t seed, int rank, size_t index) {
  return mix64(seed * 0x2545f4914f6cdd1dull + uint64_t(rank + 1) * 0xd6e8feb86659fd93ull + index);
}
bool isUnsigned(loomDataType_t type) { return type == loomUint8 || type == loomUint32 || type == loomUint64; }
bool isFloat8(loomDataType_t type) { return type == loomFloat8e4m3 || type == loomFloat8e5m2; }

// Largest |value| a rank contributes so that every partial sum over <= 8 ranks is exact.
int64_t sumRange(loomDataType_t type) {
  switch (type) {
    case loomInt8:
    case loomUint8: return 15;
    case loomFloat16:
    case loomBfloat16: return 31;
    case loomFloat8e4m3:
    case loomFloat8e5m2: return 1;  // e5m2 holds the integers 0..4 exactly, then 6 and 8
    case loomFloat32: return 1 << 20;
    case loomInt32:
    case loomUint32: return 1 << 27;
    default: return int64_t{1} << 40;
  }
}
}  // namespace

std::string Case::name() const {
  std::string text = std::string(collName(coll)) + "/" + kTypeNames[type];
  if (reduces(coll)) text += std::string("/") + kOpNames[op];
  if (hasRoot(coll)) text += "/root" + std::to_string(root);
  return text + (inPlace ? "/inplace" : "/outofplace") + "/count" + std::to_string(count);
}

Placement Case::placement(int rank, size_t k) const {
  if (inPlace) return Placement{(k + rank) % 3 != 1, (k + rank) % 3 != 1};
  switch ((k + rank) % 3) {
    case 0: return Placement{true, true};
    case 1: return Placement{true, false};
    default: return Placement{false, true};
  }
}

std::vector<Case> buildCases(int nranks, const std::vector<size_t>& counts, bool everyType) {
  std::vector<loomDataType_t> types;
  if (everyType) {
    for (int t = 0; t < loomNumTypes; ++t) types.push_back(static_cast<loomDataType_t>(t));
  } else {
    types = {loomInt8, loomUint32, loomFloat16, loomBfloat16, loomFloat64, loomFloat8e5m2};
  }
  const std::vector<int> roots = nranks > 1 ? std::vector<int>{0, nranks - 1} : std::vector<int>{0};
  std::vector<Case> cases;
  for (size_t count : counts) {
    for (loomDataType_t type : types) {
      for (bool inPlace : {false, true}) {
        for (int c = 0; c <= static_cast<int>(Coll::SendRecv); ++c) {
          const auto coll = static_cast<Coll>(c);
          if (inPlace && !hasInPlaceForm(coll)) continue;
          const std::vector<loomRedOp_t> ops =
              reduces(coll) ? std::vector<loomRedOp_t>{loomSum, loomProd, loomMax, loomMin, loomAvg}
                            : std::vector<loomRedOp_t>{loomSum};
          for (loomRedOp_t op : ops) {
            for (int root : hasRoot(coll) ? roots : std::vector<int>{0}) {
              cases.push_back(Case{coll, type, op, inPlace, count, root});
            }
          }
        }
      }
    }
  }
  return cases;
}

std::vector<Case> gridCases(int nranks) {
  const char* grid = std::getenv("LOOM_DEVICE_GRID");
  const std::string mode = grid != nullptr ? grid : "";
  if (mode == "full") return buildCases(nranks, {0, 1, 7, 1003, 65537}, true);
  if (mode == "sample") return buildCases(nranks, {1, 7, 1003}, false);
  std::vector<Case> cases = buildCases(nranks, {0, 1, 7}, true);
  const std::vector<Case> larger = buildCases(nranks, {1003}, false);
  cases.insert(cases.end(), larger.begin(), larger.end());
  return cases;
}

size_t elementBytes(loomDataType_t type) {
  static const size_t sizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  return sizes[type];
}

uint64_t encode(loomDataType_t type, int64_t value) {
  const auto asFloat = static_cast<float>(value);
  uint32_t floatBits;
  std::memcpy(&floatBits, &asFloat, sizeof(floatBits));
  const auto asDouble = static_cast<double>(value);
  uint64_t doubleBits;
  std::memcpy(&doubleBits, &asDouble, sizeof(doubleBits));
  switch (type) {
    case loomInt8:
    case loomUint8: return static_cast<uint8_t>(value);
    case loomInt32:
    case loomUint32: return static_cast<uint32_t>(value);
    case loomInt64:
    case loomUint64: return static_cast<uint64_t>(value);
    case loomFloat16: return kernels::Float16::fromFloat(asFloat).bits;
    case loomFloat32: return floatBits;
    case loomFloat64: return doubleBits;
    case loomBfloat16: return kernels::Bfloat16::fromFloat(asFloat).bits;
    case loomFloat8e4m3: return kernels::Float8e4m3::fromFloat(asFloat).bits;
    case loomFloat8e5m2: return kernels::Float8e5m2::fromFloat(asFloat).bits;
    default: return 0;
  }
}

int64_t inputValue(const Case& c, uint64_t seed, int rank, int nranks, size_t index) {
  const uint64_t h = hash(seed, rank, index);
  const int64_t range = sumRange(c.type);
  const bool unsignedType = isUnsigned(c.type);
  const auto pick = [&](int64_t r) {  // [-r, r], or [0, r] for unsigned types
    return unsignedType ? int64_t(h % uint64_t(r + 1)) : int64_t(h % uint64_t(2 * r + 1)) - r;
  };
  switch (c.op) {
    case loomSum: return pick(range);
    case loomProd: {
      // +-1, and +-2 on two ranks at most: |product| <= 4, exact in every type.
      int64_t value = (rank < 2 && (h & 1)) ? 2 : 1;
      if (!unsignedType && ((h >> 1) & 1)) value = -value;
      return value;
    }
    case loomMax:
    case loomMin: return pick(isFloat8(c.type) ? 4 : range);
    case loomAvg: {
      // A common value t, plus 1 on rank 0 and minus 1 on rank 1: the mean is t exactly and
      // every partial sum stays small (|sum| <= 4 with fp8).
      const uint64_t t = hash(seed, -1, index);
      const int64_t common = unsignedType ? int64_t(1 + t % 5) : (isFloat8(c.type) ? int64_t(t % 3) - 1
                                                                                    : int64_t(t % 11) - 5);
      if (nranks >= 2 && rank == 0) return common + 1;
      if (nranks >= 2 && rank == 1) return common - 1;
      return common;
    }
    default: return 0;
  }
}

int64_t reducedValue(const Case& c, uint64_t seed, int nranks, size_t index) {
  int64_t result = inputValue(c, seed, 0, nranks, index);
  for (int rank = 1; rank < nranks; ++rank) {
    const int64_t value = inputValue(c, seed, rank, nranks, index);
    switch (c.op) {
      case loomSum:
      case loomAvg: result += value; break;
      case loomProd: result *= value; break;
      case loomMax: result = value > result ? value : result; break;
      case loomMin: result = value < result ? value : result; break;
      default: break;
    }
  }
  return c.op == loomAvg ? result / nranks : result;
}

uint64_t movedBits(uint64_t seed, int rank, size_t index) { return hash(seed ^ 0x6d6f766564ull, rank, index); }

VectorCounts vectorCounts(size_t count, int rank, int nranks) {
  VectorCounts counts;
  for (int peer = 0; peer < nranks; ++peer) {
    // What `rank` sends `peer` is what `peer` expects from `rank`: count + (rank + peer) % 3.
    const size_t blockCount = count + static_cast<size_t>((rank + peer) % 3);
    counts.sendDispls.push_back(counts.sendExtent + 1);  // one element of gap before each block
    counts.sendCounts.push_back(blockCount);
    counts.sendExtent = counts.sendDispls.back() + blockCount;
    counts.recvDispls.push_back(counts.recvExtent + 2);
    counts.recvCounts.push_back(blockCount);
    counts.recvExtent = counts.recvDispls.back() + blockCount;
  }
  return counts;
}

}  // namespace loom::test::device
