// SPDX-License-Identifier: Apache-2.0
// Finding 7 of issue 14: partially overlapping send and receive buffers.
//
// Before the fix, recv = send + 1 element (and other partial overlaps) was accepted and gave
// garbage. What must hold: a host-memory overlap that is neither the exact in-place form of
// the collective nor disjoint is loomInvalidArgument, naming the call, and nothing is written;
// the exact in-place forms and disjoint buffers keep working.
//
// In-place forms (as nccl.h defines them), with c the call's count and r the rank:
//   allreduce, broadcast, reduce: recvbuff == sendbuff
//   allgather:                    sendbuff == recvbuff + r * c
//   reducescatter:                recvbuff == sendbuff + r * c
#include <gtest/gtest.h>
#include <loom.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tests/support/multiprocess.h"

namespace {

using loom::test::runRanksWithUniqueId;

constexpr size_t kCount = 1001;

void requireRefused(loomResult_t code, loomComm_t comm, const std::string& what) {
  const std::string message = loomGetLastError(comm);
  LOOM_REQUIRE(code == loomInvalidArgument, what + " returned " + loomGetErrorString(code) + ": " + message);
  LOOM_REQUIRE(message.find("overlap") != std::string::npos, what + ": message does not say 'overlap': " + message);
}

// Every collective with a partial overlap at several offsets (one element either way, half the
// buffer, the last element) on 1 and 3 ranks; then the in-place forms and disjoint buffers work
// with exact results, so the refusals cost the communicator nothing.
void overlapCases(int rank, int nranks, loomComm_t comm) {
  const size_t n = static_cast<size_t>(nranks);
  std::vector<int32_t> arena(8 * kCount * n, -1);
  int32_t* base = arena.data() + 2 * kCount * n;  // room on both sides
  const std::vector<long> shifts = {1, -1, static_cast<long>(kCount / 2), static_cast<long>(kCount) - 1,
                                    -static_cast<long>(kCount) + 1};
  for (long shift : shifts) {
    const std::string at = " with recv = send + " + std::to_string(shift);
    requireRefused(loomAllReduce(base, base + shift, kCount, loomInt32, loomSum, comm, nullptr), comm,
                   "allreduce" + at);
    requireRefused(loomBroadcast(base, base + shift, kCount, loomInt32, rank, comm, nullptr), comm,
                   "broadcast from this rank" + at);
    requireRefused(loomReduce(base, base + shift, kCount, loomInt32, loomSum, rank, comm, nullptr), comm,
                   "reduce to this rank" + at);
    // allgather: recv spans n * c; an overlap that is not send == recv + r * c.
    int32_t* gatherRecv = base;
    int32_t* gatherSend = gatherRecv + rank * kCount + shift;
    requireRefused(loomAllGather(gatherSend, gatherRecv, kCount, loomInt32, comm, nullptr), comm,
                   "allgather with send = recv + r*c + " + std::to_string(shift));
    // reducescatter: send spans n * c; an overlap that is not recv == send + r * c.
    int32_t* scatterSend = base;
    int32_t* scatterRecv = scatterSend + rank * kCount + shift;
    requireRefused(loomReduceScatter(scatterSend, scatterRecv, kCount, loomInt32, loomSum, comm, nullptr), comm,
                   "reducescatter with recv = send + r*c + " + std::to_string(shift));
  }
  for (int32_t value : arena) LOOM_REQUIRE(value == -1, "a refused call wrote into the buffers");

  // The legal forms still work, exactly. Values: element i of rank r is r * 1000 + i.
  auto fill = [&](int32_t* data, size_t count, int owner) {
    for (size_t i = 0; i < count; ++i) data[i] = static_cast<int32_t>(owner * 1000 + static_cast<int>(i % 1000));
  };
  fill(base, kCount, rank);
  LOOM_REQUIRE(loomAllReduce(base, base, kCount, loomInt32, loomSum, comm, nullptr) == loomSuccess, loomGetLastError(comm));
  const int32_t rankSum = static_cast<int32_t>(1000 * (nranks * (nranks - 1) / 2));
  for (size_t i = 0; i < kCount; ++i) {
    LOOM_REQUIRE(base[i] == rankSum + nranks * static_cast<int32_t>(i % 1000), "in-place allreduce result");
  }
  fill(base + rank * kCount, kCount, rank);
  LOOM_REQUIRE(loomAllGather(base + rank * kCount, base, kCount, loomInt32, comm, nullptr) == loomSuccess,
               loomGetLastError(comm));
  for (int r = 0; r < nranks; ++r) {
    for (size_t i = 0; i < kCount; ++i) {
      LOOM_REQUIRE(base[r * kCount + i] == r * 1000 + static_cast<int32_t>(i % 1000), "in-place allgather result");
    }
  }
  // Disjoint, adjacent buffers (recv right after send) are not an overlap.
  fill(base, kCount, rank);
  LOOM_REQUIRE(loomAllReduce(base, base + kCount, kCount, loomInt32, loomMax, comm, nullptr) == loomSuccess,
               loomGetLastError(comm));
  for (size_t i = 0; i < kCount; ++i) {
    LOOM_REQUIRE(base[kCount + i] == (nranks - 1) * 1000 + static_cast<int32_t>(i % 1000), "adjacent allreduce");
  }
  loomResult_t async = loomSuccess;
  LOOM_REQUIRE(loomCommGetAsyncError(comm, &async) == loomSuccess && async == loomSuccess, "an error was recorded");
}

void runOn(int nranks) {
  auto outcomes = runRanksWithUniqueId(nranks, [&](int rank, const loomUniqueId& id) {
    loomComm_t comm = nullptr;
    LOOM_REQUIRE(loomCommInitRank(&comm, nranks, id, rank) == loomSuccess, loomGetLastError(nullptr));
    overlapCases(rank, nranks, comm);
    LOOM_REQUIRE(loomCommDestroy(comm) == loomSuccess, loomGetLastError(nullptr));
  }, 120);
  for (const auto& outcome : outcomes) EXPECT_TRUE(outcome.ok()) << outcome.describe();
}

TEST(Overlap, PartialOverlapIsRefusedOnOneRank) { runOn(1); }
TEST(Overlap, PartialOverlapIsRefusedOnThreeRanks) { runOn(3); }

}  // namespace
