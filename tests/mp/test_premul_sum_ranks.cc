// SPDX-License-Identifier: Apache-2.0
// PreMulSum operators across ranks (tests/unit/test_premul_sum.cc has the one-rank API):
//   - each rank's scalar multiplies its own input (nccl.h: "pre-multiplies input values by a
//     given scalar locally"), so ranks may pass different scalars, with either residence:
//     int8 (wrapping), int32, float32 and e4m3, all-reduce, reduce-scatter and reduce, in and out
//     of place, on the direct engine, the ring over shared memory and TCP, and in deterministic
//     mode, exact;
//   - loomScalarDevice: a scalar changed in memory between two calls is used by the second;
//   - an operator of another communicator is refused at issue on every rank (loomInvalidArgument
//     naming it) and the communicator stays usable;
//   - ranks that disagree (PreMulSum on one, sum on another) fail with loomInvalidUsage naming
//     both.
#include <gtest/gtest.h>

#include "tests/support/splitmix.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "loom.h"
#include "tests/support/fp8_reference.h"
#include "tests/support/multiprocess.h"

namespace loom::test {
namespace {

struct Path {
  const char* name;
  std::vector<std::pair<const char*, const char*>> env;
};
const Path kPaths[] = {
    {"direct", {{"LOOM_TRANSPORT", "shm"}}},
    {"ring_shm", {{"LOOM_TRANSPORT", "shm"}, {"LOOM_ALGO", "ring"}}},
    {"ring_tcp", {{"LOOM_SHM_DISABLE", "1"}}},
    {"deterministic", {{"LOOM_TRANSPORT", "shm"}, {"LOOM_DETERMINISTIC", "1"}}},
};

loomComm_t initComm(int rank, int n, const loomUniqueId& id, const Path& path) {
  for (const auto& [name, value] : path.env) setenv(name, value, 1);
  loomComm_t comm = nullptr;
  LOOM_REQUIRE(loomCommInitRank(&comm, n, id, rank) == loomSuccess, loomGetLastError(nullptr));
  return comm;
}

void expectAllOk(const std::vector<RankOutcome>& outcomes, const std::string& what) {
  for (const RankOutcome& outcome : outcomes)
    EXPECT_TRUE(outcome.ok()) << what << ": " << outcome.describe();
}

using loom::test::mix;

// One datatype's case: rank r's scalar and input element i, as bits, and the exact sum.
struct Weighted {
  loomDataType_t type;
  size_t size;
  uint64_t scalar(int rank) const {
    switch (type) {
      case loomInt8:
        return static_cast<uint8_t>(37 * rank + 3);
      case loomInt32:
        return static_cast<uint32_t>(rank - 2);
      case loomFloat32:
        return bitsOfFloat(0.5f * static_cast<float>(rank + 1));
      default:
        return fp8::exactBits(type, 0.5 * (rank + 1));  // e4m3: 0.5, 1, 1.5
    }
  }
  uint64_t input(int rank, size_t i) const {
    const uint64_t h = mix(static_cast<uint64_t>(rank) << 32 ^ i);
    switch (type) {
      case loomInt8:
        return h & 0xff;  // any bits: the weighted sum wraps exactly
      case loomInt32:
        return static_cast<uint32_t>(static_cast<int32_t>(h % 2001) - 1000);
      case loomFloat32:
        return bitsOfFloat(static_cast<float>(static_cast<int>(h % 2001) - 1000));
      default:
        return fp8::exactBits(type, static_cast<double>(static_cast<int>(h % 3) - 1));  // -1, 0, 1
    }
  }
  // sum_r scalar_r * input_r(i): exact in every order (wrapping integers; floats far from
  // rounding: |float32 sum| < 2^24, e4m3 multiples of 1/2 within +-3 on 3 ranks).
  uint64_t expected(int nranks, size_t i) const {
    if (type == loomInt8 || type == loomInt32) {
      uint64_t acc = 0;
      for (int r = 0; r < nranks; ++r) {
        const int64_t s =
            type == loomInt8 ? static_cast<int8_t>(scalar(r)) : static_cast<int32_t>(scalar(r));
        const int64_t x =
            type == loomInt8 ? static_cast<int8_t>(input(r, i)) : static_cast<int32_t>(input(r, i));
        acc += static_cast<uint64_t>(s * x);
      }
      return type == loomInt8 ? (acc & 0xff) : (acc & 0xffffffffu);
    }
    double acc = 0;
    for (int r = 0; r < nranks; ++r) acc += valueOf(scalar(r)) * valueOf(input(r, i));
    if (type == loomFloat32) return bitsOfFloat(static_cast<float>(acc));
    return fp8::exactBits(type, acc);
  }
  double valueOf(uint64_t bits) const {
    if (type == loomFloat32) {
      float f;
      const auto b = static_cast<uint32_t>(bits);
      std::memcpy(&f, &b, 4);
      return f;
    }
    return fp8::decode(type, static_cast<uint8_t>(bits));
  }
  static uint64_t bitsOfFloat(float value) {
    uint32_t bits;
    std::memcpy(&bits, &value, 4);
    return bits;
  }
};

const Weighted kTypes[] = {{loomInt8, 1}, {loomInt32, 4}, {loomFloat32, 4}, {loomFloat8e4m3, 1}};

void runWeightedRank(int rank, int n, const loomUniqueId& id, const Path& path) {
  loomComm_t comm = initComm(rank, n, id, path);
  std::string failures;
  int caseIndex = 0;
  for (const Weighted& w : kTypes) {
    // Half the ranks read the scalar from memory at each call, the others at creation.
    uint64_t scalar = w.scalar(rank);
    loomRedOp_t op;
    const loomScalarResidence_t residence = rank % 2 ? loomScalarDevice : loomScalarHostImmediate;
    LOOM_REQUIRE(loomRedOpCreatePreMulSum(&op, &scalar, w.type, residence, comm) == loomSuccess,
                 loomGetLastError(comm));
    for (int coll = 0; coll < 3; ++coll) {
      for (size_t count : {size_t{7}, size_t{65537}}) {
        const bool inPlace =
            (++caseIndex + coll) % 2 == 0;  // each count both ways across collectives
        const int root = caseIndex % n;
        const size_t inputCount = coll == 1 ? count * n : count;
        std::vector<char> send(inputCount * w.size), recv(inputCount * w.size, 0x5a);
        for (size_t i = 0; i < inputCount; ++i) {
          const uint64_t bits = w.input(rank, i);
          std::memcpy(send.data() + i * w.size, &bits, w.size);
        }
        if (inPlace) recv = send;
        const void* in = inPlace ? recv.data() : send.data();
        char* out = recv.data() + (inPlace && coll == 1 ? rank * count * w.size : 0);
        loomResult_t rc = loomSuccess;
        if (coll == 0) rc = loomAllReduce(in, out, count, w.type, op, comm, nullptr);
        if (coll == 1) rc = loomReduceScatter(in, out, count, w.type, op, comm, nullptr);
        if (coll == 2) rc = loomReduce(in, out, count, w.type, op, root, comm, nullptr);
        const std::string what = std::string(path.name) + " type " + std::to_string(w.type) +
                                 " collective " + std::to_string(coll) + " count " +
                                 std::to_string(count);
        LOOM_REQUIRE(rc == loomSuccess, what + ": " + loomGetLastError(comm));
        if (coll == 2 && rank != root) continue;
        const size_t base = coll == 1 ? rank * count : 0;
        for (size_t i = 0; i < count; ++i) {
          uint64_t got = 0;
          std::memcpy(&got, out + i * w.size, w.size);
          if (got != w.expected(n, base + i)) {
            failures += "\n  rank " + std::to_string(rank) + " " + what + ": element " +
                        std::to_string(i) + " is " + std::to_string(got) + ", expected " +
                        std::to_string(w.expected(n, base + i));
            break;
          }
        }
      }
    }
    LOOM_REQUIRE(loomRedOpDestroy(op, comm) == loomSuccess, loomGetLastError(comm));
  }
  LOOM_REQUIRE(loomCommDestroy(comm) == loomSuccess, "destroy");
  LOOM_REQUIRE(failures.empty(), failures);
}

TEST(PreMulSumRanks, EachRankWeightsItsOwnInputOnEveryPath) {
  for (const Path& path : kPaths) {
    for (int n : {2, 3}) {
      expectAllOk(
          runRanksWithUniqueId(
              n, [&](int rank, const loomUniqueId& id) { runWeightedRank(rank, n, id, path); },
              120),
          std::string(path.name) + " " + std::to_string(n) + " ranks");
    }
  }
}

TEST(PreMulSumRanks, DeviceScalarChangedBetweenCallsIsUsedByTheNextCall) {
  constexpr int kRanks = 3;
  for (const Path& path : {kPaths[0], kPaths[2]}) {
    expectAllOk(
        runRanksWithUniqueId(
            kRanks,
            [&](int rank, const loomUniqueId& id) {
              loomComm_t comm = initComm(rank, kRanks, id, path);
              float scalar = 2.0f;
              loomRedOp_t op;
              LOOM_REQUIRE(loomRedOpCreatePreMulSum(&op, &scalar, loomFloat32, loomScalarDevice,
                                                    comm) == loomSuccess,
                           loomGetLastError(comm));
              for (size_t count : {size_t{5}, size_t{70001}}) {
                std::vector<float> in(count * kRanks, static_cast<float>(rank + 1)),
                    out(count * kRanks);
                for (float value : {2.0f, -0.5f, 3.0f}) {
                  scalar = value *
                           static_cast<float>(rank + 1);  // rank r's input r+1 weighs value*(r+1)^2
                  const float want = value * (1 + 4 + 9);
                  LOOM_REQUIRE(loomAllReduce(in.data(), out.data(), count, loomFloat32, op, comm,
                                             nullptr) == loomSuccess,
                               loomGetLastError(comm));
                  LOOM_REQUIRE(out[0] == want && out[count - 1] == want,
                               "allreduce used a stale scalar");
                  LOOM_REQUIRE(loomReduceScatter(in.data(), out.data(), count, loomFloat32, op,
                                                 comm, nullptr) == loomSuccess,
                               loomGetLastError(comm));
                  LOOM_REQUIRE(out[0] == want && out[count - 1] == want,
                               "reducescatter used a stale scalar");
                  LOOM_REQUIRE(loomReduce(in.data(), out.data(), count, loomFloat32, op, 1, comm,
                                          nullptr) == loomSuccess,
                               loomGetLastError(comm));
                  LOOM_REQUIRE(rank != 1 || (out[0] == want && out[count - 1] == want),
                               "reduce used a stale scalar");
                }
              }
              LOOM_REQUIRE(loomRedOpDestroy(op, comm) == loomSuccess, loomGetLastError(comm));
              LOOM_REQUIRE(loomCommDestroy(comm) == loomSuccess, "destroy");
            },
            120),
        path.name);
  }
}

// Every rank passes an operator made on another communicator (its split child): refused at
// issue, before any rank waits on another, naming the operator; then a call on the
// communicator with its own operator is exact.
TEST(PreMulSumRanks, OperatorOfAnotherCommunicatorIsRefusedOnEveryRank) {
  constexpr int kRanks = 3;
  expectAllOk(
      runRanksWithUniqueId(
          kRanks,
          [&](int rank, const loomUniqueId& id) {
            loomComm_t comm = initComm(rank, kRanks, id, kPaths[0]), child = nullptr;
            LOOM_REQUIRE(loomCommSplit(comm, 0, rank, &child, nullptr) == loomSuccess,
                         loomGetLastError(comm));
            int32_t scalar = 3;
            loomRedOp_t foreign, own;
            LOOM_REQUIRE(loomRedOpCreatePreMulSum(&foreign, &scalar, loomInt32,
                                                  loomScalarHostImmediate, child) == loomSuccess,
                         loomGetLastError(child));
            LOOM_REQUIRE(loomRedOpCreatePreMulSum(&own, &scalar, loomInt32, loomScalarHostImmediate,
                                                  comm) == loomSuccess,
                         loomGetLastError(comm));
            int32_t x[4] = {rank, rank, rank, rank}, y[4] = {};
            const loomResult_t rc = loomAllReduce(x, y, 4, loomInt32, foreign, comm, nullptr);
            const std::string error = loomGetLastError(comm);
            LOOM_REQUIRE(rc == loomInvalidArgument, "got " + std::to_string(rc) + ": " + error);
            LOOM_REQUIRE(
                error.find("op " + std::to_string(static_cast<int>(foreign))) != std::string::npos,
                error);
            LOOM_REQUIRE(error.find("communicator") != std::string::npos, error);
            LOOM_REQUIRE(loomAllReduce(x, y, 4, loomInt32, own, comm, nullptr) == loomSuccess,
                         loomGetLastError(comm));
            LOOM_REQUIRE(y[3] == 3 * (0 + 1 + 2),
                         "sum after the refused call: " + std::to_string(y[3]));
            LOOM_REQUIRE(loomAllReduce(x, y, 4, loomInt32, foreign, child, nullptr) == loomSuccess,
                         loomGetLastError(child));
            LOOM_REQUIRE(y[0] == 9, "the child's own operator");
            LOOM_REQUIRE(
                loomCommDestroy(child) == loomSuccess && loomCommDestroy(comm) == loomSuccess,
                "destroy");
          },
          60),
      "foreign operator");
}

// Rank 0 calls a PreMulSum all-reduce, the others a sum: the descriptors differ, and every rank
// gets loomInvalidUsage naming what each called.
TEST(PreMulSumRanks, RanksThatDisagreeOnTheOperatorFailWithInvalidUsage) {
  constexpr int kRanks = 2;
  for (const Path& path : {kPaths[0], kPaths[2]}) {
    expectAllOk(
        runRanksWithUniqueId(
            kRanks,
            [&](int rank, const loomUniqueId& id) {
              loomComm_t comm = initComm(rank, kRanks, id, path);
              float scalar = 1.0f;
              loomRedOp_t op;
              LOOM_REQUIRE(loomRedOpCreatePreMulSum(&op, &scalar, loomFloat32, loomScalarDevice,
                                                    comm) == loomSuccess,
                           loomGetLastError(comm));
              std::vector<float> x(1000, 1.0f), y(1000);
              const loomResult_t rc = loomAllReduce(x.data(), y.data(), x.size(), loomFloat32,
                                                    rank == 0 ? op : loomSum, comm, nullptr);
              const std::string error = loomGetLastError(comm);
              LOOM_REQUIRE(rc == loomInvalidUsage, "got " + std::to_string(rc) + ": " + error);
              LOOM_REQUIRE(error.find("disagree") != std::string::npos &&
                               error.find("premulsum") != std::string::npos &&
                               error.find("float32, sum") != std::string::npos,
                           error);
              loomCommAbort(comm);
            },
            60),
        path.name);
  }
}

}  // namespace
}  // namespace loom::test
