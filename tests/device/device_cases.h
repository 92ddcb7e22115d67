// SPDX-License-Identifier: Apache-2.0
// The device suite's cases: every collective and send/recv x every datatype x op x in/out of
// place x odd counts, and where each buffer lives (host or device) on each rank. Values are
// small integers chosen per type and op so that every result is exact in every type whatever
// the order of the reduction (fp8 included): the reference is computed in int64 and encoded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "loom.h"

namespace loom::test::device {

enum class Coll { AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, AllToAll, AllToAllv, Gather, Scatter, SendRecv };
const char* collName(Coll coll);
bool reduces(Coll coll);
bool hasRoot(Coll coll);
bool hasInPlaceForm(Coll coll);

// Where a rank's two buffers live. In place there is one buffer: sendDevice says where.
struct Placement {
  bool sendDevice = false, recvDevice = false;
};

struct Case {
  Coll coll = Coll::AllReduce;
  loomDataType_t type = loomFloat32;
  loomRedOp_t op = loomSum;
  bool inPlace = false;
  size_t count = 0;
  int root = 0;
  std::string name() const;
  // Case k of a run: which buffers are device memory on `rank`. Cycles through all-device,
  // device send + host recv, host send + device recv, so mixed calls (and ranks that differ)
  // come up in every collective.
  Placement placement(int rank, size_t k) const;
};

// Every case for nranks at the given counts; `everyType` false keeps a sample of the types
// (one per element size, plus the narrow floats) for the larger grids.
std::vector<Case> buildCases(int nranks, const std::vector<size_t>& counts, bool everyType);

// The grid a run takes, from LOOM_DEVICE_GRID: unset, CI's (every type at counts 0, 1 and 7, a
// sample of the types at 1003); `sample`, a few types at 1, 7 and 1003 (the sanitizer stage);
// `full`, every type at every count up to 65537 (suite long).
std::vector<Case> gridCases(int nranks);

// ---- values ----
size_t elementBytes(loomDataType_t type);
// The bits of integer `value` in `type` (exact for the values the generator makes).
uint64_t encode(loomDataType_t type, int64_t value);
// Rank `rank`'s input element `index` of case `c` (seeded by the case's position `seed`).
int64_t inputValue(const Case& c, uint64_t seed, int rank, int nranks, size_t index);
// The reduction of element `index` over every rank, as the library must compute it.
int64_t reducedValue(const Case& c, uint64_t seed, int nranks, size_t index);
// Data-movement collectives move bits: any bits, random.
uint64_t movedBits(uint64_t seed, int rank, size_t index);

// All-to-all-v's counts and displacements on `rank` (elements): uneven per peer, with gaps
// between the blocks, so only the written blocks may change.
struct VectorCounts {
  std::vector<size_t> sendCounts, sendDispls, recvCounts, recvDispls;
  size_t sendExtent = 0, recvExtent = 0;
};
VectorCounts vectorCounts(size_t count, int rank, int nranks);

}  // namespace loom::test::device
