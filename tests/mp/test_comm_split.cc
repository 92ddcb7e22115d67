// SPDX-License-Identifier: Apache-2.0
// loomCommSplit with 4 and 5 processes: sub-communicator sizes and rank order (by key, then by
// parent rank), collectives confined to one color, LOOM_SPLIT_NOCOLOR, reversed keys, a split of
// a split, and the parent communicator still working afterwards.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "loom.h"
#include "tests/mp/collective_checks.h"
#include "tests/support/multiprocess.h"

namespace loom::test {
namespace {

std::string lastError(loomResult_t rc) {
  return std::string(loomGetErrorString(rc)) + ": " + loomGetLastError(nullptr);
}

// Checks a sub-communicator from the inside: its size, this rank's position, and (through an
// allgather of parent ranks) the exact order of its members; then that an allreduce sums over
// the members only.
void checkSubComm(loomComm_t sub, const std::vector<int>& expectedMembers, int parentRank,
                  const std::string& what) {
  LOOM_REQUIRE(sub != nullptr, what + ": got a NULL communicator");
  int size = -1, subRank = -1;
  LOOM_REQUIRE(loomCommCount(sub, &size) == loomSuccess, what);
  LOOM_REQUIRE(loomCommUserRank(sub, &subRank) == loomSuccess, what);
  LOOM_REQUIRE(size == int(expectedMembers.size()), what + ": size " + std::to_string(size) +
                                                        ", expected " +
                                                        std::to_string(expectedMembers.size()));
  LOOM_REQUIRE(subRank >= 0 && subRank < size && expectedMembers[subRank] == parentRank,
               what + ": parent rank " + std::to_string(parentRank) + " got sub rank " +
                   std::to_string(subRank));

  std::vector<int32_t> members(size, -1);
  const int32_t mine = parentRank;
  loomResult_t rc = loomAllGather(&mine, members.data(), 1, loomInt32, sub, nullptr);
  LOOM_REQUIRE(rc == loomSuccess, what + ": allgather " + lastError(rc));
  for (int i = 0; i < size; ++i) {
    LOOM_REQUIRE(members[i] == expectedMembers[i], what + ": member " + std::to_string(i) +
                                                       " is parent rank " +
                                                       std::to_string(members[i]) + ", expected " +
                                                       std::to_string(expectedMembers[i]));
  }

  // Each member contributes (parent rank + 1) * (i + 1): the sum identifies the color exactly.
  constexpr size_t kCount = 1001;
  std::vector<int64_t> values(kCount), sums(kCount, -1);
  for (size_t i = 0; i < kCount; ++i) values[i] = int64_t(parentRank + 1) * int64_t(i + 1);
  rc = loomAllReduce(values.data(), sums.data(), kCount, loomInt64, loomSum, sub, nullptr);
  LOOM_REQUIRE(rc == loomSuccess, what + ": allreduce " + lastError(rc));
  int64_t memberSum = 0;
  for (int member : expectedMembers) memberSum += member + 1;
  for (size_t i = 0; i < kCount; ++i) {
    LOOM_REQUIRE(sums[i] == memberSum * int64_t(i + 1),
                 what + ": allreduce element " + std::to_string(i) + " is " +
                     std::to_string(sums[i]) + ", expected " +
                     std::to_string(memberSum * int64_t(i + 1)));
  }
}

std::vector<int> ranksWhere(int n, bool (*predicate)(int rank, int n)) {
  std::vector<int> ranks;
  for (int r = 0; r < n; ++r) {
    if (predicate(r, n)) ranks.push_back(r);
  }
  return ranks;
}

void destroy(loomComm_t comm, const std::string& what) {
  loomResult_t rc = loomCommFinalize(comm);
  LOOM_REQUIRE(rc == loomSuccess, what + ": finalize " + lastError(rc));
  rc = loomCommDestroy(comm);
  LOOM_REQUIRE(rc == loomSuccess, what + ": destroy " + lastError(rc));
}

void splitRank(int rank, int n, const loomUniqueId& id) {
  loomConfig_t config = LOOM_CONFIG_INITIALIZER;
  config.timeoutMs = 30000;  // a bug must fail the test, not hang it
  loomComm_t world = nullptr;
  loomResult_t rc = loomCommInitRankConfig(&world, n, id, rank, &config);
  LOOM_REQUIRE(rc == loomSuccess, "init " + lastError(rc));

  // 1. By parity, key = rank: members in parent order. Both colors run their collectives at
  //    the same time, so they must not see each other's traffic.
  loomComm_t parity = nullptr;
  rc = loomCommSplit(world, rank % 2, rank, &parity, nullptr);
  LOOM_REQUIRE(rc == loomSuccess, "split by parity " + lastError(rc));
  const std::vector<int> sameParity = rank % 2
                                          ? ranksWhere(n, [](int r, int) { return r % 2 == 1; })
                                          : ranksWhere(n, [](int r, int) { return r % 2 == 0; });
  checkSubComm(parity, sameParity, rank, "parity split");

  // 2. A split of the split: the first member of each parity group alone, the rest together.
  int parityRank = -1;
  LOOM_REQUIRE(loomCommUserRank(parity, &parityRank) == loomSuccess, "rank in parity comm");
  loomComm_t nested = nullptr;
  rc = loomCommSplit(parity, parityRank == 0 ? 0 : 1, 0, &nested, nullptr);
  LOOM_REQUIRE(rc == loomSuccess, "nested split " + lastError(rc));
  std::vector<int> nestedMembers;
  if (parityRank == 0) {
    nestedMembers = {sameParity[0]};
  } else {
    nestedMembers.assign(sameParity.begin() + 1, sameParity.end());
  }
  checkSubComm(nested, nestedMembers, rank, "nested split");
  destroy(nested, "nested split");
  destroy(parity, "parity split");

  // 3. key = -rank reverses the order.
  loomComm_t reversed = nullptr;
  rc = loomCommSplit(world, 7, -rank, &reversed, nullptr);
  LOOM_REQUIRE(rc == loomSuccess, "reversed split " + lastError(rc));
  std::vector<int> backwards;
  for (int r = n - 1; r >= 0; --r) backwards.push_back(r);
  checkSubComm(reversed, backwards, rank, "reversed split");
  destroy(reversed, "reversed split");

  // 4. Equal keys: ordered by parent rank.
  loomComm_t tied = nullptr;
  rc = loomCommSplit(world, 0, 42, &tied, nullptr);
  LOOM_REQUIRE(rc == loomSuccess, "equal-key split " + lastError(rc));
  std::vector<int> everyone;
  for (int r = 0; r < n; ++r) everyone.push_back(r);
  checkSubComm(tied, everyone, rank, "equal-key split");
  destroy(tied, "equal-key split");

  // 5. Rank 1 opts out with LOOM_SPLIT_NOCOLOR: it still takes part, and gets NULL.
  loomComm_t withoutOne = reinterpret_cast<loomComm_t>(uintptr_t(1));  // must be overwritten
  rc = loomCommSplit(world, rank == 1 ? LOOM_SPLIT_NOCOLOR : 3, rank, &withoutOne, nullptr);
  LOOM_REQUIRE(rc == loomSuccess, "NOCOLOR split " + lastError(rc));
  if (rank == 1) {
    LOOM_REQUIRE(withoutOne == nullptr, "LOOM_SPLIT_NOCOLOR must give a NULL communicator");
  } else {
    checkSubComm(withoutOne, ranksWhere(n, [](int r, int) { return r != 1; }), rank,
                 "NOCOLOR split");
    destroy(withoutOne, "NOCOLOR split");
  }

  // 6. The parent is unaffected by all of the above.
  checkSubComm(world, everyone, rank, "parent after splits");
  rc = loomCommDestroy(world);
  LOOM_REQUIRE(rc == loomSuccess, "destroy world " + lastError(rc));
}

class CommSplit : public ::testing::TestWithParam<int> {};

TEST_P(CommSplit, SizesOrderAndIsolation) {
  const int n = GetParam();
  setenv("LOOM_SOCKET_IFNAME", "lo", 0);
  const std::vector<std::string> shmBefore = loomShmEntries();
  for (const RankOutcome& outcome : loom::test::runRanksWithUniqueId(
           n, [&](int rank, const loomUniqueId& id) { splitRank(rank, n, id); }, 120)) {
    EXPECT_TRUE(outcome.ok()) << outcome.describe();
  }
  EXPECT_EQ(leakedShmSegments(shmBefore), std::vector<std::string>{});
}

INSTANTIATE_TEST_SUITE_P(Ranks, CommSplit, ::testing::Values(4, 5));

}  // namespace
}  // namespace loom::test
