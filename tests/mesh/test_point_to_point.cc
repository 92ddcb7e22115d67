// SPDX-License-Identifier: Apache-2.0
// Issue 15: point-to-point and groups with NCCL's semantics. Messages between a pair match in
// issue order, any size (0 too), over shm and TCP; groups nest, fuse a rank's sends and
// receives into one unit (every rank may send to all others before receiving), mix them with
// collectives and with several communicators, and work on streams; an unbalanced End or a bad
// call inside a group is a clear error that leaves the group and the communicator clean; a
// send nobody receives is a timeout naming the peer, never a hang.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "mesh_support.h"

namespace loom::test::mesh {
namespace {

const std::vector<size_t> kSizes = {0, 1, 7, 4095, (1u << 20) + 3};

TEST(PointToPoint, MessagesBetweenAPairMatchInIssueOrder) {
  for (const Transport& transport : transports()) {
    const bool ok = runOnCommunicators(3, transport.env, [&](loomComm_t comm, int rank) {
      // Rank 0 sends five messages of different sizes to rank 2, one by one outside any group
      // (each completes when received); rank 2 receives them one by one in the same order.
      uint64_t salt = 0;
      for (size_t count : kSizes) {
        ++salt;
        std::vector<float> buffer(count + 1, 0.0f);
        const std::string what = std::string("message of ") + std::to_string(count) + " floats over " + transport.label;
        if (rank == 0) {
          fill(buffer.data(), count, 4, 0, 2, salt);
          check(loomSend(buffer.data(), count, loomFloat32, 2, comm, nullptr), what);
        } else if (rank == 2) {
          check(loomRecv(buffer.data(), count, loomFloat32, 0, comm, nullptr), what);
          expectPattern(buffer.data(), count, 4, 0, 2, salt, what);
        }
      }
      // Collectives still pair on every rank after messages only some ranks took part in.
      int64_t value = rank + 1, sum = 0;
      check(loomAllReduce(&value, &sum, 1, loomInt64, loomSum, comm, nullptr), "allreduce after messages");
      LOOM_REQUIRE(sum == 6, "allreduce after messages gave " + std::to_string(sum));
    });
    EXPECT_TRUE(ok) << transport.label;
  }
}

// Lone sends and receives on a stream: each is a stream item, in issue order with the
// collective queued between them.
TEST(PointToPoint, LoneMessagesOnAStreamKeepTheirOrder) {
  const bool ok = runOnCommunicators(2, transports()[0].env, [&](loomComm_t comm, int rank) {
    loomStream_t stream = nullptr;
    check(loomStreamCreate(&stream), "stream");
    std::vector<int64_t> first(1000, rank * 10 + 1), second(3, rank * 10 + 2), in1(1000, 0), in2(3, 0);
    int64_t one = 1, sum = 0;
    const int peer = 1 - rank;
    if (rank == 0) {
      check(loomSend(first.data(), 1000, loomInt64, peer, comm, stream), "send 1");
      check(loomAllReduce(&one, &sum, 1, loomInt64, loomSum, comm, stream), "allreduce");
      check(loomSend(second.data(), 3, loomInt64, peer, comm, stream), "send 2");
      check(loomRecv(in1.data(), 1000, loomInt64, peer, comm, stream), "recv 1");
    } else {
      check(loomRecv(in1.data(), 1000, loomInt64, peer, comm, stream), "recv 1");
      check(loomAllReduce(&one, &sum, 1, loomInt64, loomSum, comm, stream), "allreduce");
      check(loomRecv(in2.data(), 3, loomInt64, peer, comm, stream), "recv 2");
      check(loomSend(first.data(), 1000, loomInt64, peer, comm, stream), "send 1");
    }
    check(loomStreamSynchronize(stream), "synchronize");
    for (int64_t v : in1) LOOM_REQUIRE(v == peer * 10 + 1, "first message");
    if (rank == 1) {
      for (int64_t v : in2) LOOM_REQUIRE(v == 2, "second message");
    }
    LOOM_REQUIRE(sum == 2, "allreduce between the messages");
    check(loomStreamDestroy(stream), "stream destroy");
  });
  EXPECT_TRUE(ok);
}

TEST(PointToPoint, GroupedAllPairsExchangeOf8RanksIsExact) {
  for (const Transport& transport : transports()) {
    if (transport.label == std::string("shm-fifo")) continue;  // the grid covers it
    const bool ok = runOnCommunicators(8, transport.env, [&](loomComm_t comm, int rank) {
      const size_t count = 256 * 1024 + 5;  // 1 MiB of float32 per pair
      std::vector<float> send(8 * count), recv(8 * count);
      for (int j = 0; j < 8; ++j) fill(send.data() + j * count, count, 4, rank, j, 77);
      check(loomGroupStart(), "start");
      for (int j = 0; j < 8; ++j) check(loomSend(send.data() + j * count, count, loomFloat32, j, comm, nullptr), "send");
      for (int i = 7; i >= 0; --i) check(loomRecv(recv.data() + i * count, count, loomFloat32, i, comm, nullptr), "recv");
      check(loomGroupEnd(), "end");
      for (int i = 0; i < 8; ++i) {
        expectPattern(recv.data() + i * count, count, 4, i, rank, 77, std::string("from rank ") + std::to_string(i) + " over " + transport.label);
      }
    });
    EXPECT_TRUE(ok) << transport.label;
  }
}

TEST(Groups, NestMixCollectivesAndMessagesAndRunOnStreams) {
  const bool ok = runOnCommunicators(4, transports()[0].env, [&](loomComm_t comm, int rank) {
    const int n = 4, right = (rank + 1) % n, left = (rank + n - 1) % n;
    loomStream_t stream = nullptr;
    check(loomStreamCreate(&stream), "stream");
    for (loomStream_t on : {static_cast<loomStream_t>(nullptr), stream}) {
      const std::string where = on == nullptr ? " (NULL stream)" : " (stream)";
      std::vector<int32_t> ring(33), fromLeft(33, -1);
      for (int i = 0; i < 33; ++i) ring[i] = rank * 1000 + i;
      int32_t value = rank + 1, sum = 0;
      std::vector<int32_t> gathered(n, -1);
      // Nested groups; the collective is issued after the messages on every rank, and the
      // receive before the send on odd ranks: one unit either way.
      check(loomGroupStart(), "start");
      check(loomGroupStart(), "nested start");
      if (rank % 2) check(loomRecv(fromLeft.data(), 33, loomInt32, left, comm, on), "recv" + where);
      check(loomSend(ring.data(), 33, loomInt32, right, comm, on), "send" + where);
      check(loomGroupEnd(), "nested end");
      if (rank % 2 == 0) check(loomRecv(fromLeft.data(), 33, loomInt32, left, comm, on), "recv" + where);
      check(loomAllReduce(&value, &sum, 1, loomInt32, loomSum, comm, on), "allreduce" + where);
      check(loomAllGather(&value, gathered.data(), 1, loomInt32, comm, on), "allgather" + where);
      check(loomGroupEnd(), "end");
      if (on != nullptr) check(loomStreamSynchronize(on), "synchronize");
      for (int i = 0; i < 33; ++i) LOOM_REQUIRE(fromLeft[i] == left * 1000 + i, "ring message" + where);
      LOOM_REQUIRE(sum == 10, "allreduce in the group" + where);
      for (int r = 0; r < n; ++r) LOOM_REQUIRE(gathered[r] == r + 1, "allgather in the group" + where);
    }
    check(loomStreamDestroy(stream), "stream destroy");
  });
  EXPECT_TRUE(ok);
}

TEST(Groups, DriveSeveralCommunicatorsFromOneThread) {
  const bool ok = runOnCommunicators(4, transports()[0].env, [&](loomComm_t comm, int rank) {
    loomComm_t half = nullptr;
    check(loomCommSplit(comm, rank % 2, rank, &half, nullptr), "split");
    // The pairs {0,2} and {1,3} exchange on `half` while everyone all-reduces on `comm`.
    const int partner = 1 - rank / 2;  // rank within half: rank / 2
    int32_t mine = 100 + rank, theirs = -1, value = 1, total = 0;
    check(loomGroupStart(), "start");
    check(loomSend(&mine, 1, loomInt32, partner, half, nullptr), "send on half");
    check(loomAllReduce(&value, &total, 1, loomInt32, loomSum, comm, nullptr), "allreduce on comm");
    check(loomRecv(&theirs, 1, loomInt32, partner, half, nullptr), "recv on half");
    check(loomGroupEnd(), "end");
    const int partnerRank = rank % 2 + 2 * partner;
    LOOM_REQUIRE(theirs == 100 + partnerRank, "message on the split communicator");
    LOOM_REQUIRE(total == 4, "allreduce beside it");
    check(loomCommDestroy(half), "destroy half");
  });
  EXPECT_TRUE(ok);
}

TEST(Groups, SelfMessagesAreLocalCopiesAndALoneOneIsRefused) {
  const bool ok = runOnCommunicators(2, transports()[0].env, [&](loomComm_t comm, int rank) {
    std::vector<int64_t> send(9, rank * 7 + 1), recv(9, 0);
    check(loomGroupStart(), "start");
    check(loomRecv(recv.data(), 9, loomInt64, rank, comm, nullptr), "recv from self");
    check(loomSend(send.data(), 9, loomInt64, rank, comm, nullptr), "send to self");
    check(loomGroupEnd(), "end");
    for (int64_t v : recv) LOOM_REQUIRE(v == rank * 7 + 1, "self message");
    // A send to itself outside a group could never complete: refused, communicator usable.
    const loomResult_t alone = loomSend(send.data(), 9, loomInt64, rank, comm, nullptr);
    LOOM_REQUIRE(alone == loomInvalidUsage, std::string("lone self send gave ") + loomGetErrorString(alone));
    LOOM_REQUIRE(std::string(loomGetLastError(nullptr)).find("no matching receive") != std::string::npos,
                 std::string("error text: ") + loomGetLastError(nullptr));
    int32_t one = 1, two = 0;
    check(loomAllReduce(&one, &two, 1, loomInt32, loomSum, comm, nullptr), "allreduce after the refusal");
    LOOM_REQUIRE(two == 2, "allreduce after the refusal");
  });
  EXPECT_TRUE(ok);
}

TEST(Groups, UnbalancedEndAndABadCallInsideLeaveTheGroupClean) {
  const bool ok = runOnCommunicators(2, transports()[0].env, [&](loomComm_t comm, int rank) {
    LOOM_REQUIRE(loomGroupEnd() == loomInvalidUsage, "GroupEnd without Start");
    LOOM_REQUIRE(std::string(loomGetLastError(nullptr)).find("without a matching loomGroupStart") != std::string::npos,
                 std::string("error text: ") + loomGetLastError(nullptr));
    int32_t value = 5, out = -1;
    check(loomGroupStart(), "start");
    check(loomSend(&value, 1, loomInt32, 1 - rank, comm, nullptr), "send");
    LOOM_REQUIRE(loomSend(&value, 1, loomInt32, 7, comm, nullptr) == loomInvalidArgument, "peer 7 of 2");
    check(loomRecv(&out, 1, loomInt32, 1 - rank, comm, nullptr), "recv");
    const loomResult_t end = loomGroupEnd();
    LOOM_REQUIRE(end == loomInvalidArgument, std::string("GroupEnd after a bad call gave ") + loomGetErrorString(end));
    LOOM_REQUIRE(out == -1, "nothing of the failed group ran");
    // The group is closed and the communicator in step: the same exchange now works.
    check(loomGroupStart(), "start again");
    check(loomSend(&value, 1, loomInt32, 1 - rank, comm, nullptr), "send again");
    check(loomRecv(&out, 1, loomInt32, 1 - rank, comm, nullptr), "recv again");
    check(loomGroupEnd(), "end again");
    LOOM_REQUIRE(out == 5, "exchange after the failed group");
  });
  EXPECT_TRUE(ok);
}

TEST(PointToPoint, ASendNobodyReceivesTimesOutNamingThePeer) {
  // Large enough that no transport can buffer it all: the send must wait for a receiver. Filled
  // once, before the ranks are forked: under ThreadSanitizer on a slow day the fill took 2 s,
  // more than the test's timeout and most of rank 1's wait.
  const std::vector<char> data(64 << 20, 1);
  for (const Transport& transport : transports()) {
    Env env = transport.env;
    env.emplace_back("LOOM_TIMEOUT_MS", "700");
    SharedAcrossFork<std::atomic<bool>> senderDone;  // rank 1 stays until rank 0 has checked
    const bool ok = runOnCommunicators(2, env, [&](loomComm_t comm, int rank) {
      if (rank == 1) {  // alive, receiving nothing, until the sender is done (at most 10 s)
        const auto giveUp = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (!senderDone->load() && std::chrono::steady_clock::now() < giveUp)
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        return;
      }
      struct SignalDone {  // however rank 0's checks end
        std::atomic<bool>& done;
        ~SignalDone() { done.store(true); }
      } signalDone{*senderDone};
      const auto start = std::chrono::steady_clock::now();
      const loomResult_t result = loomSend(data.data(), data.size(), loomUint8, 1, comm, nullptr);
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const std::string text = loomGetLastError(nullptr);
      LOOM_REQUIRE(result == loomSystemError, std::string("unreceived send gave ") + loomGetErrorString(result) + ": " + text);
      LOOM_REQUIRE(text.find("send to rank 1") != std::string::npos, "the error names the peer: " + text);
      // The timeout counts from the last progress, and a transport first fills what it can
      // buffer (TCP on loopback takes megabytes: up to 1 s under ThreadSanitizer). So the bound
      // is the timeout plus that fill; rank 1 stays alive until this check is done.
      LOOM_REQUIRE(seconds < 2.5, "the send failed after " + std::to_string(seconds) + " s, timeout 0.7 s");
    });
    EXPECT_TRUE(ok) << transport.label;
  }
}

// A size the two ranks disagree on is found on the wire (LOOM_CHECK), like any disagreement
// between ranks: the communicator is then unusable, as after a mismatched collective.
TEST(PointToPoint, MismatchedSizesAreAnErrorNamingThePair) {
  for (const Transport& transport : transports()) {
    const bool ok = runOnCommunicators(2, transport.env, [&](loomComm_t comm, int rank) {
      std::vector<int32_t> data(100, 3);
      const loomResult_t result = rank == 0 ? loomSend(data.data(), 100, loomInt32, 1, comm, nullptr)
                                            : loomRecv(data.data(), 60, loomInt32, 0, comm, nullptr);
      // The receiver fails naming the pair and both sizes. The sender may complete first: its
      // bytes left for the transport's buffer, as an MPI send of a small message does.
      const std::string text = loomGetLastError(nullptr);
      if (rank == 1) {
        LOOM_REQUIRE(result == loomInvalidUsage, std::string("mismatched receive gave ") + loomGetErrorString(result) + ": " + text);
        LOOM_REQUIRE(text.find("message #1 from rank 0 to rank 1") != std::string::npos, "names the pair: " + text);
        LOOM_REQUIRE(text.find("count 400") != std::string::npos && text.find("count 240") != std::string::npos,
                     "names both sizes (bytes): " + text);
      }
    });
    EXPECT_TRUE(ok) << transport.label;
  }
}

// A small exchange first polls its messages briefly without building the executor's run
// (algorithms/executor_quick.cc); a peer that comes later than that spin is waited
// for by a run that adopts the posted messages. Two ranks, so that each has a core here (ranks
// that outnumber the cores skip the spin); each is late in turn, 50 ms, far past the spin, in
// a grouped exchange, a lone receive and an all-to-all-v whose own block is empty (no local
// copy, so a quick exchange too, whose messages carry their own sizes).
TEST(PointToPoint, APeerLaterThanTheQuickSpinIsWaitedFor) {
  for (const Transport& transport : transports()) {
    const bool ok = runOnCommunicators(2, transport.env, [&](loomComm_t comm, int rank) {
      const int peer = 1 - rank;
      for (int late = 0; late < 2; ++late) {
        const std::string what = "rank " + std::to_string(late) + " late over " + transport.label;
        const auto pause = [&] {
          if (rank == late) std::this_thread::sleep_for(std::chrono::milliseconds(50));
        };
        pause();
        std::vector<int32_t> out(5, 100 * late + rank), in(5, -1);
        check(loomGroupStart(), "group start");
        check(loomSend(out.data(), 5, loomInt32, peer, comm, nullptr), "send " + what);
        check(loomRecv(in.data(), 5, loomInt32, peer, comm, nullptr), "recv " + what);
        check(loomGroupEnd(), "exchange " + what);
        for (int32_t value : in) LOOM_REQUIRE(value == 100 * late + peer, "exchange " + what + " got " + std::to_string(value));
        pause();
        int64_t value = rank == 1 ? 7 + late : -1;
        check(rank == 0 ? loomRecv(&value, 1, loomInt64, 1, comm, nullptr) : loomSend(&value, 1, loomInt64, 0, comm, nullptr),
              "lone message " + what);
        LOOM_REQUIRE(value == 7 + late, "lone receive " + what + " got " + std::to_string(value));
        pause();
        std::vector<size_t> counts(2, 3), displs = {0, 3};
        counts[rank] = 0;
        std::vector<int32_t> send(6, 10 * rank + peer), recv(6, -1);
        check(loomAlltoAllv(send.data(), counts.data(), displs.data(), recv.data(), counts.data(), displs.data(), loomInt32,
                            comm, nullptr),
              "alltoallv " + what);
        for (int k = 0; k < 6; ++k) {
          const int32_t expected = k / 3 == peer ? 10 * peer + rank : -1;
          LOOM_REQUIRE(recv[k] == expected, "alltoallv " + what + " element " + std::to_string(k) + ": " + std::to_string(recv[k]));
        }
      }
    });
    EXPECT_TRUE(ok) << transport.label;
  }
}

// A wrong-sized message already waiting when the receive is posted fails inside the quick
// spin: the error still names the call, the pair and both sizes, as from the executor's run.
TEST(PointToPoint, AMismatchFoundInTheQuickSpinNamesTheCall) {
  for (const Transport& transport : transports()) {
    const bool ok = runOnCommunicators(2, transport.env, [&](loomComm_t comm, int rank) {
      std::vector<int32_t> data(100, 3);
      if (rank == 0) {
        loomSend(data.data(), 100, loomInt32, 1, comm, nullptr);  // may complete: the bytes fit the buffers
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the message is waiting
      const loomResult_t result = loomRecv(data.data(), 60, loomInt32, 0, comm, nullptr);
      const std::string text = loomGetLastError(nullptr);
      LOOM_REQUIRE(result == loomInvalidUsage, std::string("mismatched receive gave ") + loomGetErrorString(result) + ": " + text);
      LOOM_REQUIRE(text.find("rank 1: recv from rank 0 (60 x int32)") != std::string::npos, "names the call: " + text);
      LOOM_REQUIRE(text.find("message #1 from rank 0 to rank 1") != std::string::npos, "names the pair: " + text);
      LOOM_REQUIRE(text.find("count 400") != std::string::npos && text.find("count 240") != std::string::npos,
                   "names both sizes (bytes): " + text);
    });
    EXPECT_TRUE(ok) << transport.label;
  }
}

}  // namespace
}  // namespace loom::test::mesh
