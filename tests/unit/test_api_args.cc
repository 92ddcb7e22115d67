// SPDX-License-Identifier: Apache-2.0
// Argument checking of the public C API (single process): every bad argument is rejected with
// the right code, quickly (no rendezvous is attempted), and with a last-error message that names
// the failing function and what was wrong.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "loom.h"

namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  return text;
}

// rc must be `want`, and the thread's last error must name `function` (so it is this call's
// message, not a stale one) and mention every word in `mentions` (case-insensitive).
void expectRejected(loomResult_t rc, loomResult_t want, const char* function,
                    std::vector<std::string> mentions = {}, loomComm_t comm = nullptr) {
  EXPECT_EQ(rc, want) << function << " returned " << loomGetErrorString(rc);
  const char* message = loomGetLastError(comm);
  ASSERT_NE(message, nullptr) << function;
  EXPECT_NE(std::string(message), "") << function << ": empty last error";
  EXPECT_NE(std::string(message).find(function), std::string::npos)
      << "last error does not name " << function << ": " << message;
  // Named once, in front: api::guarded puts the name there, and nothing below it repeats it
  // ("loomCommSplit: loomCommSplit cannot be called ...").
  EXPECT_EQ(std::string(message).rfind(std::string(function) + ": ", 0), 0u) << message;
  EXPECT_EQ(std::string(message).find(function, 1), std::string::npos) << "named twice: " << message;
  for (const std::string& word : mentions) {
    EXPECT_NE(lower(message).find(lower(word)), std::string::npos)
        << function << ": last error does not mention \"" << word << "\": " << message;
  }
}

class ApiArgs : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("LOOM_SOCKET_IFNAME", "lo", 0);
    ASSERT_EQ(loomCommInitAll(&comm_, 1, nullptr), loomSuccess) << loomGetLastError(nullptr);
  }
  void TearDown() override { EXPECT_EQ(loomCommDestroy(comm_), loomSuccess); }
  loomComm_t comm_ = nullptr;
  float send_[16] = {};
  float recv_[16] = {};
};

TEST(ApiVersionAndErrors, VersionAndErrorStrings) {
  int version = -1;
  ASSERT_EQ(loomGetVersion(&version), loomSuccess);
  EXPECT_EQ(version, LOOM_VERSION_CODE);
  expectRejected(loomGetVersion(nullptr), loomInvalidArgument, "loomGetVersion");

  std::set<std::string> distinct;
  for (int code = 0; code < loomNumResults; ++code) {
    const char* text = loomGetErrorString(loomResult_t(code));
    ASSERT_NE(text, nullptr) << code;
    EXPECT_GT(std::string(text).size(), 0u) << code;
    distinct.insert(text);
  }
  EXPECT_EQ(distinct.size(), size_t(loomNumResults)) << "two result codes share a string";
  EXPECT_NE(loomGetErrorString(loomNumResults), nullptr);
  EXPECT_NE(loomGetErrorString(loomResult_t(99)), nullptr);
  EXPECT_NE(loomGetErrorString(loomResult_t(-1)), nullptr);
}

TEST(ApiInit, BadArgumentsFailFastWithoutRendezvous) {
  setenv("LOOM_SOCKET_IFNAME", "lo", 0);
  unsetenv("LOOM_COMM_ID");  // loomGetUniqueId would listen there
  expectRejected(loomGetUniqueId(nullptr), loomInvalidArgument, "loomGetUniqueId");
  loomUniqueId id;
  ASSERT_EQ(loomGetUniqueId(&id), loomSuccess) << loomGetLastError(nullptr);
  loomComm_t comm = nullptr;
  const auto start = std::chrono::steady_clock::now();
  expectRejected(loomCommInitRank(nullptr, 2, id, 0), loomInvalidArgument, "loomCommInitRank");
  expectRejected(loomCommInitRank(&comm, -1, id, 0), loomInvalidArgument, "loomCommInitRank");
  expectRejected(loomCommInitRank(&comm, 0, id, 0), loomInvalidArgument, "loomCommInitRank");
  expectRejected(loomCommInitRank(&comm, 2, id, 2), loomInvalidArgument, "loomCommInitRank");
  expectRejected(loomCommInitRank(&comm, 2, id, 5), loomInvalidArgument, "loomCommInitRank");
  expectRejected(loomCommInitRank(&comm, 2, id, -1), loomInvalidArgument, "loomCommInitRank");
  loomUniqueId zeros = {};
  expectRejected(loomCommInitRank(&comm, 1, zeros, 0), loomInvalidArgument, "loomCommInitRank");

  loomConfig_t config = LOOM_CONFIG_INITIALIZER;
  config.magic = 0xdeadbeef;
  expectRejected(loomCommInitRankConfig(&comm, 1, id, 0, &config), loomInvalidArgument,
                 "loomCommInitRankConfig", {"magic"});
  config = LOOM_CONFIG_INITIALIZER;
  config.size = 0;
  expectRejected(loomCommInitRankConfig(&comm, 1, id, 0, &config), loomInvalidArgument,
                 "loomCommInitRankConfig", {"size"});
  config.size = 3;
  expectRejected(loomCommInitRankConfig(&comm, 1, id, 0, &config), loomInvalidArgument,
                 "loomCommInitRankConfig", {"size"});
  config = LOOM_CONFIG_INITIALIZER;
  config.netName = "carrier-pigeon";
  expectRejected(loomCommInitRankConfig(&comm, 1, id, 0, &config), loomInvalidArgument,
                 "loomCommInitRankConfig", {"config.netName=\"carrier-pigeon\"", "known: socket"});

  expectRejected(loomCommInitAll(nullptr, 1, nullptr), loomInvalidArgument, "loomCommInitAll");
  loomComm_t comms[2] = {};
  expectRejected(loomCommInitAll(comms, 0, nullptr), loomInvalidArgument, "loomCommInitAll");
  expectRejected(loomCommInitAll(comms, -3, nullptr), loomInvalidArgument, "loomCommInitAll");
  expectRejected(loomCommInitFromEnv(nullptr), loomInvalidArgument, "loomCommInitFromEnv");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 5.0) << "argument errors must not wait for a rendezvous";

  // A good config on a 1-rank communicator works (the id above is still unused).
  config = LOOM_CONFIG_INITIALIZER;
  config.timeoutMs = 10000;
  config.commName = "api-args";
  ASSERT_EQ(loomCommInitRankConfig(&comm, 1, id, 0, &config), loomSuccess)
      << loomGetLastError(nullptr);
  int count = -1, rank = -1;
  EXPECT_EQ(loomCommCount(comm, &count), loomSuccess);
  EXPECT_EQ(loomCommUserRank(comm, &rank), loomSuccess);
  EXPECT_EQ(count, 1);
  EXPECT_EQ(rank, 0);
  EXPECT_EQ(loomCommFinalize(comm), loomSuccess);
  EXPECT_EQ(loomCommDestroy(comm), loomSuccess);
}

TEST_F(ApiArgs, CommQueries) {
  int count = -1, rank = -1;
  ASSERT_EQ(loomCommCount(comm_, &count), loomSuccess);
  ASSERT_EQ(loomCommUserRank(comm_, &rank), loomSuccess);
  EXPECT_EQ(count, 1);
  EXPECT_EQ(rank, 0);
  expectRejected(loomCommCount(nullptr, &count), loomInvalidArgument, "loomCommCount");
  expectRejected(loomCommCount(comm_, nullptr), loomInvalidArgument, "loomCommCount", {}, comm_);
  expectRejected(loomCommUserRank(nullptr, &rank), loomInvalidArgument, "loomCommUserRank");
  expectRejected(loomCommUserRank(comm_, nullptr), loomInvalidArgument, "loomCommUserRank", {},
                 comm_);
  loomResult_t async = loomInternalError;
  ASSERT_EQ(loomCommGetAsyncError(comm_, &async), loomSuccess);
  EXPECT_EQ(async, loomSuccess);
  expectRejected(loomCommGetAsyncError(comm_, nullptr), loomInvalidArgument,
                 "loomCommGetAsyncError", {}, comm_);
  expectRejected(loomCommGetAsyncError(nullptr, &async), loomInvalidArgument,
                 "loomCommGetAsyncError");

  loomComm_t sub = nullptr;
  expectRejected(loomCommSplit(nullptr, 0, 0, &sub, nullptr), loomInvalidArgument, "loomCommSplit");
  expectRejected(loomCommSplit(comm_, 0, 0, nullptr, nullptr), loomInvalidArgument, "loomCommSplit",
                 {}, comm_);
  expectRejected(loomCommSplit(comm_, -5, 0, &sub, nullptr), loomInvalidArgument, "loomCommSplit",
                 {"color"}, comm_);

  expectRejected(loomStreamCreate(nullptr), loomInvalidArgument, "loomStreamCreate");
  expectRejected(loomGroupEnd(), loomInvalidUsage, "loomGroupEnd", {"without a matching loomGroupStart"});
  // Inside a group, a shrink is refused (inits and splits are queued: test_group_init), naming
  // the function once.
  ASSERT_EQ(loomGroupStart(), loomSuccess);
  expectRejected(loomCommShrink(comm_, nullptr, 0, &sub, nullptr, LOOM_SHRINK_DEFAULT), loomInvalidUsage,
                 "loomCommShrink", {"between loomGroupStart and loomGroupEnd"}, comm_);
  EXPECT_EQ(loomGroupEnd(), loomInvalidUsage);  // a call in it failed: the group fails too
  // Finalize after a revoke.
  loomComm_t revoked = nullptr;
  ASSERT_EQ(loomCommInitAll(&revoked, 1, nullptr), loomSuccess);
  ASSERT_EQ(loomCommRevoke(revoked, LOOM_REVOKE_DEFAULT), loomSuccess);
  expectRejected(loomCommFinalize(revoked), loomInvalidUsage, "loomCommFinalize", {"revoked", "destroy it"});
  EXPECT_EQ(loomCommDestroy(revoked), loomSuccess);
}

TEST_F(ApiArgs, NullCommunicator) {
  expectRejected(loomAllReduce(send_, recv_, 4, loomFloat32, loomSum, nullptr, nullptr),
                 loomInvalidArgument, "loomAllReduce");
  expectRejected(loomAllGather(send_, recv_, 4, loomFloat32, nullptr, nullptr), loomInvalidArgument,
                 "loomAllGather");
  expectRejected(loomReduceScatter(send_, recv_, 4, loomFloat32, loomSum, nullptr, nullptr),
                 loomInvalidArgument, "loomReduceScatter");
  expectRejected(loomBroadcast(send_, recv_, 4, loomFloat32, 0, nullptr, nullptr),
                 loomInvalidArgument, "loomBroadcast");
  expectRejected(loomReduce(send_, recv_, 4, loomFloat32, loomSum, 0, nullptr, nullptr),
                 loomInvalidArgument, "loomReduce");
}

TEST_F(ApiArgs, NullBuffers) {
  expectRejected(loomAllReduce(nullptr, recv_, 4, loomFloat32, loomSum, comm_, nullptr),
                 loomInvalidArgument, "loomAllReduce", {"NULL"}, comm_);
  expectRejected(loomAllReduce(send_, nullptr, 4, loomFloat32, loomSum, comm_, nullptr),
                 loomInvalidArgument, "loomAllReduce", {"NULL"}, comm_);
  expectRejected(loomAllGather(nullptr, recv_, 4, loomFloat32, comm_, nullptr), loomInvalidArgument,
                 "loomAllGather", {"NULL"}, comm_);
  expectRejected(loomAllGather(send_, nullptr, 4, loomFloat32, comm_, nullptr), loomInvalidArgument,
                 "loomAllGather", {"NULL"}, comm_);
  expectRejected(loomReduceScatter(nullptr, recv_, 4, loomFloat32, loomSum, comm_, nullptr),
                 loomInvalidArgument, "loomReduceScatter", {"NULL"}, comm_);
  expectRejected(loomReduceScatter(send_, nullptr, 4, loomFloat32, loomSum, comm_, nullptr),
                 loomInvalidArgument, "loomReduceScatter", {"NULL"}, comm_);
  // On the root (rank 0 of 1) both buffers of broadcast and reduce are needed.
  expectRejected(loomBroadcast(nullptr, recv_, 4, loomFloat32, 0, comm_, nullptr),
                 loomInvalidArgument, "loomBroadcast", {"NULL"}, comm_);
  expectRejected(loomBroadcast(send_, nullptr, 4, loomFloat32, 0, comm_, nullptr),
                 loomInvalidArgument, "loomBroadcast", {"NULL"}, comm_);
  expectRejected(loomReduce(nullptr, recv_, 4, loomFloat32, loomSum, 0, comm_, nullptr),
                 loomInvalidArgument, "loomReduce", {"NULL"}, comm_);
  expectRejected(loomReduce(send_, nullptr, 4, loomFloat32, loomSum, 0, comm_, nullptr),
                 loomInvalidArgument, "loomReduce", {"NULL"}, comm_);
  // Zero elements need no buffers (as in NCCL).
  EXPECT_EQ(loomAllReduce(nullptr, nullptr, 0, loomFloat32, loomSum, comm_, nullptr), loomSuccess)
      << loomGetLastError(comm_);
}

TEST_F(ApiArgs, BadDatatypes) {
  for (int bad : {99, -1, int(loomNumTypes)}) {
    const auto type = loomDataType_t(bad);
    SCOPED_TRACE("datatype " + std::to_string(bad));
    expectRejected(loomAllReduce(send_, recv_, 4, type, loomSum, comm_, nullptr),
                   loomInvalidArgument, "loomAllReduce", {"datatype"}, comm_);
    expectRejected(loomAllGather(send_, recv_, 4, type, comm_, nullptr), loomInvalidArgument,
                   "loomAllGather", {"datatype"}, comm_);
    expectRejected(loomReduceScatter(send_, recv_, 4, type, loomSum, comm_, nullptr),
                   loomInvalidArgument, "loomReduceScatter", {"datatype"}, comm_);
    expectRejected(loomBroadcast(send_, recv_, 4, type, 0, comm_, nullptr), loomInvalidArgument,
                   "loomBroadcast", {"datatype"}, comm_);
    expectRejected(loomReduce(send_, recv_, 4, type, loomSum, 0, comm_, nullptr),
                   loomInvalidArgument, "loomReduce", {"datatype"}, comm_);
  }
}

// fp8 is a datatype of every collective (the numerics are tested in test_float8.cc and
// tests/mp/test_fp8_collectives.cc): one rank, so each result is the input, bit for bit.
TEST_F(ApiArgs, Fp8IsAcceptedByEveryCollective) {
  for (loomDataType_t type : {loomFloat8e4m3, loomFloat8e5m2}) {
    SCOPED_TRACE("datatype " + std::to_string(type));
    const uint8_t in[5] = {0x00, 0x38, 0xb8, 0x44, 0x11};  // 0, +-1 (e4m3) / +-0.5 (e5m2), ...
    uint8_t out[5];
    for (loomRedOp_t op : {loomSum, loomProd, loomMax, loomMin, loomAvg}) {
      std::memset(out, 0xee, sizeof out);
      ASSERT_EQ(loomAllReduce(in, out, 5, type, op, comm_, nullptr), loomSuccess) << loomGetLastError(comm_);
      EXPECT_EQ(std::memcmp(in, out, 5), 0) << op;
      std::memset(out, 0xee, sizeof out);
      ASSERT_EQ(loomReduceScatter(in, out, 5, type, op, comm_, nullptr), loomSuccess) << loomGetLastError(comm_);
      EXPECT_EQ(std::memcmp(in, out, 5), 0) << op;
      std::memset(out, 0xee, sizeof out);
      ASSERT_EQ(loomReduce(in, out, 5, type, op, 0, comm_, nullptr), loomSuccess) << loomGetLastError(comm_);
      EXPECT_EQ(std::memcmp(in, out, 5), 0) << op;
    }
    std::memset(out, 0xee, sizeof out);
    ASSERT_EQ(loomAllGather(in, out, 5, type, comm_, nullptr), loomSuccess) << loomGetLastError(comm_);
    EXPECT_EQ(std::memcmp(in, out, 5), 0);
    std::memset(out, 0xee, sizeof out);
    ASSERT_EQ(loomBroadcast(in, out, 5, type, 0, comm_, nullptr), loomSuccess) << loomGetLastError(comm_);
    EXPECT_EQ(std::memcmp(in, out, 5), 0);
  }
}

TEST_F(ApiArgs, BadOps) {
  for (int bad : {99, -1, int(loomNumOps), int(loomMaxRedOp)}) {
    const auto op = loomRedOp_t(bad);
    SCOPED_TRACE("op " + std::to_string(bad));
    expectRejected(loomAllReduce(send_, recv_, 4, loomFloat32, op, comm_, nullptr),
                   loomInvalidArgument, "loomAllReduce", {"op"}, comm_);
    expectRejected(loomReduceScatter(send_, recv_, 4, loomFloat32, op, comm_, nullptr),
                   loomInvalidArgument, "loomReduceScatter", {"op"}, comm_);
    expectRejected(loomReduce(send_, recv_, 4, loomFloat32, op, 0, comm_, nullptr),
                   loomInvalidArgument, "loomReduce", {"op"}, comm_);
  }
}

TEST_F(ApiArgs, BadRoots) {
  for (int root : {-1, 1, 1000}) {  // the communicator has one rank
    SCOPED_TRACE("root " + std::to_string(root));
    expectRejected(loomBroadcast(send_, recv_, 4, loomFloat32, root, comm_, nullptr),
                   loomInvalidArgument, "loomBroadcast", {"root"}, comm_);
    expectRejected(loomReduce(send_, recv_, 4, loomFloat32, loomSum, root, comm_, nullptr),
                   loomInvalidArgument, "loomReduce", {"root"}, comm_);
  }
}

TEST_F(ApiArgs, CountsWhoseByteSizeOverflow) {
  // count * sizeof(float) does not fit in size_t.
  for (size_t count : {SIZE_MAX, SIZE_MAX / 2, SIZE_MAX / 4 + 1}) {
    SCOPED_TRACE("count " + std::to_string(count));
    expectRejected(loomAllReduce(send_, recv_, count, loomFloat32, loomSum, comm_, nullptr),
                   loomInvalidArgument, "loomAllReduce", {"count"}, comm_);
    expectRejected(loomAllGather(send_, recv_, count, loomFloat32, comm_, nullptr),
                   loomInvalidArgument, "loomAllGather", {"count"}, comm_);
    expectRejected(loomReduceScatter(send_, recv_, count, loomFloat32, loomSum, comm_, nullptr),
                   loomInvalidArgument, "loomReduceScatter", {"count"}, comm_);
    expectRejected(loomBroadcast(send_, recv_, count, loomFloat32, 0, comm_, nullptr),
                   loomInvalidArgument, "loomBroadcast", {"count"}, comm_);
    expectRejected(loomReduce(send_, recv_, count, loomFloat32, loomSum, 0, comm_, nullptr),
                   loomInvalidArgument, "loomReduce", {"count"}, comm_);
  }
}

TEST_F(ApiArgs, RejectedCallsLeaveTheCommunicatorUsable) {
  EXPECT_NE(loomAllReduce(send_, recv_, 4, loomDataType_t(99), loomSum, comm_, nullptr),
            loomSuccess);
  for (int i = 0; i < 16; ++i) send_[i] = float(i);
  ASSERT_EQ(loomAllReduce(send_, recv_, 16, loomFloat32, loomMax, comm_, nullptr), loomSuccess)
      << loomGetLastError(comm_);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(recv_[i], float(i));
  loomResult_t async = loomInternalError;
  ASSERT_EQ(loomCommGetAsyncError(comm_, &async), loomSuccess);
  EXPECT_EQ(async, loomSuccess) << "an argument error is not an asynchronous error";
}

}  // namespace
