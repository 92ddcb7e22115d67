// SPDX-License-Identifier: Apache-2.0
// Issue 15: bad input to the new calls is a clear error that names what is wrong, nothing of
// the refused call runs, and the communicator stays usable (each refusal is followed by a
// collective that must still pair and give the exact result).
#include <gtest/gtest.h>

#include "mesh_support.h"

namespace loom::test::mesh {
namespace {

// A refusal: `result` is `code`, the last error names `words`, and the communicator still works.
void expectRefused(loomResult_t result, loomResult_t code, const std::vector<std::string>& words, loomComm_t comm,
                   int nranks, const std::string& what) {
  const std::string text = loomGetLastError(nullptr);
  LOOM_REQUIRE(result == code, what + ": gave " + loomGetErrorString(result) + " (" + text + "), expected " +
                                   loomGetErrorString(code));
  for (const std::string& word : words) LOOM_REQUIRE(text.find(word) != std::string::npos, what + ": '" + word + "' not in: " + text);
  int32_t one = 1, total = 0;
  check(loomAllReduce(&one, &total, 1, loomInt32, loomSum, comm, nullptr), what + ": allreduce after the refusal");
  LOOM_REQUIRE(total == nranks, what + ": allreduce after the refusal gave " + std::to_string(total));
}

TEST(MeshErrors, BadArgumentsAreRefusedAndTheCommunicatorStaysUsable) {
  const bool ok = runOnCommunicators(3, transports()[0].env, [&](loomComm_t comm, int rank) {
    const int n = 3;
    std::vector<int32_t> a(64, 1), b(64, 0);
    const size_t negative = static_cast<size_t>(-1);  // a negative count, as a C caller's int becomes
    for (int peer : {-1, 3, 1000}) {
      const std::string p = std::to_string(peer);
      expectRefused(loomSend(a.data(), 4, loomInt32, peer, comm, nullptr), loomInvalidArgument, {"peer " + p, "size 3"}, comm, n,
                    "send to peer " + p);
      expectRefused(loomRecv(b.data(), 4, loomInt32, peer, comm, nullptr), loomInvalidArgument, {"peer " + p}, comm, n,
                    "recv from peer " + p);
    }
    expectRefused(loomSend(nullptr, 4, loomInt32, 0, comm, nullptr), loomInvalidArgument, {"sendbuff is NULL"}, comm, n, "send NULL");
    expectRefused(loomRecv(nullptr, 4, loomInt32, 0, comm, nullptr), loomInvalidArgument, {"recvbuff is NULL"}, comm, n, "recv NULL");
    expectRefused(loomSend(a.data(), negative, loomInt32, 0, comm, nullptr), loomInvalidArgument, {"overflows"}, comm, n,
                  "send of a negative count");
    expectRefused(loomAlltoAll(a.data(), b.data(), negative / 2, loomInt32, comm, nullptr), loomInvalidArgument, {"overflows"},
                  comm, n, "alltoall of a negative count");
    expectRefused(loomAlltoAll(nullptr, b.data(), 4, loomInt32, comm, nullptr), loomInvalidArgument, {"NULL"}, comm, n,
                  "alltoall NULL");
    expectRefused(loomAlltoAll(a.data(), a.data(), 4, loomInt32, comm, nullptr), loomInvalidArgument, {"overlap"}, comm, n,
                  "alltoall in place (nccl.h has no in-place form)");
    expectRefused(loomGather(a.data(), b.data(), 4, loomInt32, 3, comm, nullptr), loomInvalidArgument, {"root 3"}, comm, n,
                  "gather root 3");
    expectRefused(loomScatter(a.data(), b.data(), 4, loomInt32, -1, comm, nullptr), loomInvalidArgument, {"root -1"}, comm, n,
                  "scatter root -1");
    if (rank == 0) {
      expectRefused(loomGather(a.data(), nullptr, 4, loomInt32, 0, comm, nullptr), loomInvalidArgument,
                    {"recvbuff is NULL on the root"}, comm, n, "gather NULL recvbuff on the root");
    } else {
      expectRefused(loomScatter(a.data(), nullptr, 4, loomInt32, 0, comm, nullptr), loomInvalidArgument, {"recvbuff is NULL"}, comm,
                    n, "scatter NULL recvbuff");
    }
    expectRefused(loomAlltoAll(a.data(), b.data(), 4, loomDataType_t(99), comm, nullptr), loomInvalidArgument, {"datatype 99"},
                  comm, n, "alltoall of datatype 99");

    std::vector<size_t> counts(n, 2), displs = {0, 2, 4};
    expectRefused(loomAlltoAllv(a.data(), nullptr, displs.data(), b.data(), counts.data(), displs.data(), loomInt32, comm, nullptr),
                  loomInvalidArgument, {"must not be NULL"}, comm, n, "alltoallv NULL counts");
    std::vector<size_t> selfMismatch = counts;
    selfMismatch[rank] = 1;
    expectRefused(loomAlltoAllv(a.data(), selfMismatch.data(), displs.data(), b.data(), counts.data(), displs.data(), loomInt32,
                                comm, nullptr),
                  loomInvalidArgument, {"to itself must match"}, comm, n, "alltoallv own block mismatch");
    std::vector<size_t> huge = counts;
    huge[(rank + 1) % n] = negative;
    expectRefused(loomAlltoAllv(a.data(), huge.data(), displs.data(), b.data(), counts.data(), displs.data(), loomInt32, comm,
                                nullptr),
                  loomInvalidArgument, {"overflows"}, comm, n, "alltoallv negative count");
    expectRefused(loomAlltoAllv(a.data(), counts.data(), displs.data(), a.data() + 1, counts.data(), displs.data(), loomInt32,
                                comm, nullptr),
                  loomInvalidArgument, {"overlap"}, comm, n, "alltoallv overlapping buffers");
    expectRefused(loomBarrier(nullptr, nullptr), loomInvalidArgument, {}, comm, n, "barrier on a NULL communicator");
  });
  EXPECT_TRUE(ok);
}

// Mismatched all-to-all-v counts between a pair (rank 0 sends 5 to rank 1, which expects 3)
// fail on the receiving rank of that pair with both sizes named, never a hang.
TEST(MeshErrors, MismatchedPairCountsFailNamingThePair) {
  const bool ok = runOnCommunicators(2, {{"LOOM_SHM_DISABLE", "1"}, {"LOOM_TIMEOUT_MS", "2000"}}, [&](loomComm_t comm, int rank) {
    std::vector<int32_t> a(16, 1), b(16, 0);
    std::vector<size_t> send = {2, rank == 0 ? 5u : 3u}, recv = {2, 3}, displs = {0, 8};
    if (rank == 1) {
      send = {3, 2};
      recv = {3, 2};
    }
    const loomResult_t result =
        loomAlltoAllv(a.data(), send.data(), displs.data(), b.data(), recv.data(), displs.data(), loomInt32, comm, nullptr);
    // The receiving rank of the pair fails naming both sizes; the sender may finish first.
    const std::string text = loomGetLastError(nullptr);
    if (rank == 1) {
      LOOM_REQUIRE(result == loomInvalidUsage, std::string("mismatched alltoallv gave ") + loomGetErrorString(result) + ": " + text);
      LOOM_REQUIRE(text.find("count 3") != std::string::npos && text.find("count 5") != std::string::npos,
                   "names both counts: " + text);
    }
  });
  EXPECT_TRUE(ok);
}

}  // namespace
}  // namespace loom::test::mesh
