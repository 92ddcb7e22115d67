// SPDX-License-Identifier: Apache-2.0
// fp8 (e4m3, e5m2) in every reducing collective, exactly: every op (sum, prod, max, min, avg
// and a PreMulSum operator) x all-reduce, reduce-scatter and reduce x counts 1, 7, 4095, 65537
// (in and out of place alternating, the reduce root moving) on 1, 2, 3, 5 and 8 ranks, over the
// direct engine (shared memory, small calls), the ring over shared memory (LOOM_ALGO=ring) and
// the ring over TCP (LOOM_SHM_DISABLE=1). Then the documented saturation, on every path.
//
// Inputs are chosen so that every partial result on every path is exact in fp8, whatever the
// order in which ranks are reduced: each element is a small integer times a power of two that
// varies with the element (through the subnormal range up to near the largest value), with
// |sum over any set of ranks| <= 16 units in e4m3 and <= 8 in e5m2 (4 and 3 significant bits);
// products of at most eight factors of +-2, +-1/2 or +-1; max/min over any non-NaN patterns;
// avg around an exact mean, scaled (as Loom scales avg's inputs by 2^-k) within range;
// PreMulSum multiplies by 1/2. The expected bits come from tests/support/fp8_reference.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "loom.h"
#include "tests/mp/fp8_values.h"
#include "tests/support/fp8_reference.h"
#include "tests/support/multiprocess.h"

namespace loom::test {
namespace {

namespace ref = fp8;

constexpr loomDataType_t kFp8Types[] = {loomFloat8e4m3, loomFloat8e5m2};
constexpr size_t kCounts[] = {1, 7, 4095, 65537};
constexpr int kPreMulSum = kFp8PreMulSum;
constexpr int kOps[] = {loomSum, loomProd, loomMax, loomMin, loomAvg, kPreMulSum};
enum class ReducingColl { AllReduce, ReduceScatter, Reduce };
constexpr ReducingColl kReducingColls[] = {ReducingColl::AllReduce, ReducingColl::ReduceScatter, ReducingColl::Reduce};

const char* opLabel(int op) {
  static const char* names[] = {"sum", "prod", "max", "min", "avg"};
  return op == kPreMulSum ? "premulsum" : names[op];
}
const char* collLabel(ReducingColl coll) {
  return coll == ReducingColl::AllReduce       ? "allreduce"
         : coll == ReducingColl::ReduceScatter ? "reducescatter"
                                       : "reduce";
}

struct Fp8Path {
  const char* name;
  RankEnv env;
};
const Fp8Path kFp8Paths[] = {
    {"direct", {{"LOOM_TRANSPORT", "shm"}}},
    {"ring_shm", {{"LOOM_TRANSPORT", "shm"}, {"LOOM_ALGO", "ring"}}},
    {"ring_tcp", {{"LOOM_SHM_DISABLE", "1"}}},
};

// One rank: every case on one communicator. Failures are collected and thrown at the end, so
// the other ranks are never left waiting in a call this one skipped.
void runRank(int rank, int n, const loomUniqueId& id, const Fp8Path& path) {
  for (const auto& [name, value] : path.env) setenv(name.c_str(), value.c_str(), 1);
  loomConfig_t config = LOOM_CONFIG_INITIALIZER;
  config.timeoutMs = 60000;
  loomComm_t comm = nullptr;
  LOOM_REQUIRE(loomCommInitRankConfig(&comm, n, id, rank, &config) == loomSuccess,
               loomGetLastError(nullptr));
  // One PreMulSum operator per type, scalar 1/2: host-immediate for e4m3, read from memory
  // when each call runs for e5m2.
  static uint8_t half[2];
  loomRedOp_t premul[2];
  for (int t = 0; t < 2; ++t) {
    half[t] = ref::exactBits(kFp8Types[t], 0.5);
    const loomScalarResidence_t residence = t == 0 ? loomScalarHostImmediate : loomScalarDevice;
    LOOM_REQUIRE(
        loomRedOpCreatePreMulSum(&premul[t], &half[t], kFp8Types[t], residence, comm) == loomSuccess,
        loomGetLastError(comm));
  }
  std::vector<uint8_t> send, recv;
  std::string failures;
  int caseIndex = 0;
  for (int t = 0; t < 2; ++t) {
    for (int op : kOps) {
      for (ReducingColl coll : kReducingColls) {
        for (size_t count : kCounts) {
          ++caseIndex;
          const loomDataType_t type = kFp8Types[t];
          const Fp8Values values(type, op, n, static_cast<uint64_t>(caseIndex));
          // Each count in place in every other (type, op, collective) block, out of place in the
          // rest.
          const bool inPlace = (caseIndex + (caseIndex - 1) / 4) % 2 == 0;
          const int root = caseIndex % n;
          const size_t inputCount = coll == ReducingColl::ReduceScatter ? count * n : count;
          send.assign(inputCount, 0);
          recv.assign(inputCount, 0xee);
          for (size_t i = 0; i < inputCount; ++i) send[i] = values.inputBits(rank, i);
          if (inPlace) recv = send;
          const void* in = inPlace ? recv.data() : send.data();
          uint8_t* out = recv.data() + (inPlace && coll == ReducingColl::ReduceScatter ? rank * count : 0);
          const loomRedOp_t redOp = op == kPreMulSum ? premul[t] : static_cast<loomRedOp_t>(op);
          loomResult_t rc = loomSuccess;
          if (coll == ReducingColl::AllReduce)
            rc = loomAllReduce(in, out, count, type, redOp, comm, nullptr);
          if (coll == ReducingColl::ReduceScatter)
            rc = loomReduceScatter(in, out, count, type, redOp, comm, nullptr);
          if (coll == ReducingColl::Reduce)
            rc = loomReduce(in, out, count, type, redOp, root, comm, nullptr);
          const std::string what = std::string(path.name) + " " + std::to_string(n) +
                                   " ranks: " + collLabel(coll) + " type " + std::to_string(type) +
                                   " " + opLabel(op) + " count " + std::to_string(count) +
                                   (inPlace ? " in place" : "");
          LOOM_REQUIRE(rc == loomSuccess, what + ": " + loomGetLastError(comm));
          if (coll == ReducingColl::Reduce && rank != root) continue;
          const size_t base = coll == ReducingColl::ReduceScatter ? rank * count : 0;
          for (size_t i = 0; i < count; ++i) {
            const uint8_t want = values.expectedBits(base + i);
            if (out[i] != want) {
              char detail[128];
              std::snprintf(detail, sizeof detail,
                            ": element %zu is 0x%02x (%g), expected 0x%02x (%g)", i, out[i],
                            ref::decode(type, out[i]), want, ref::decode(type, want));
              failures += "\n  rank " + std::to_string(rank) + " " + what + detail;
              break;
            }
          }
        }
      }
    }
  }
  for (int t = 0; t < 2; ++t)
    LOOM_REQUIRE(loomRedOpDestroy(premul[t], comm) == loomSuccess, loomGetLastError(comm));
  LOOM_REQUIRE(loomCommDestroy(comm) == loomSuccess, "destroy");
  LOOM_REQUIRE(failures.empty(), failures);
}

void expectGridExact(const Fp8Path& path, int n) {
  const auto outcomes = runRanksWithUniqueId(
      n, [&](int rank, const loomUniqueId& id) { runRank(rank, n, id, path); }, 240);
  for (const RankOutcome& outcome : outcomes)
    EXPECT_TRUE(outcome.ok()) << path.name << ": " << outcome.describe();
}

class Fp8Grid : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(Fp8Grid, EveryOpCollectiveAndCountIsExact) {
  expectGridExact(kFp8Paths[std::get<0>(GetParam())], std::get<1>(GetParam()));
}

// One rank runs no transport and no direct engine: once is enough.
INSTANTIATE_TEST_SUITE_P(OneRank, Fp8Grid, ::testing::Values(std::make_tuple(0, 1)),
                         [](const auto&) { return std::string("1rank"); });
INSTANTIATE_TEST_SUITE_P(Paths, Fp8Grid,
                         ::testing::Combine(::testing::Values(0, 1, 2),
                                            ::testing::Values(2, 3, 5, 8)),
                         [](const auto& info) {
                           return std::string(kFp8Paths[std::get<0>(info.param)].name) + "_" +
                                  std::to_string(std::get<1>(info.param)) + "ranks";
                         });

// Overflow saturates (README, Numerics): the largest finite value plus itself is that value, as
// CUDA's saturating conversion (which NCCL's fp8 kernels use) gives. An e5m2 infinity is no
// overflow and stays infinite; NaN stays NaN. 2 ranks, where the order of the operands cannot
// matter; every path.
TEST(Fp8Saturation, OverflowSaturatesInfinityAndNanPropagateOnEveryPath) {
  for (const Fp8Path& path : kFp8Paths) {
    const bool ok = runOnCommunicators(
        2, path.env,
        [&](loomComm_t comm, int rank) {
          for (size_t count : {size_t{5}, size_t{65537}}) {  // direct engine and ring by default
            for (loomDataType_t type : kFp8Types) {
              const uint8_t top = ref::exactBits(type, ref::maxFinite(type));
              const uint8_t infinity = type == loomFloat8e5m2 ? 0x7c : top;  // e4m3 has none
              const uint8_t nan = type == loomFloat8e4m3 ? 0x7f : 0x7e;
              // Element i % 5: max + max; -max + -max; max + max / 2; inf + 1 (e4m3: max + 1);
              // NaN + max.
              const uint8_t halfTop = ref::exactBits(type, ref::maxFinite(type) / 2);
              std::vector<uint8_t> data(count), out(count);
              for (size_t i = 0; i < count; ++i) {
                const uint8_t mine[5] = {
                    top, static_cast<uint8_t>(top | 0x80), rank == 0 ? top : halfTop,
                    rank == 0 ? infinity : ref::exactBits(type, 1.0), rank == 0 ? nan : top};
                data[i] = mine[i % 5];
              }
              LOOM_REQUIRE(loomAllReduce(data.data(), out.data(), count, type, loomSum, comm,
                                         nullptr) == loomSuccess,
                           loomGetLastError(comm));
              for (size_t i = 0; i < count; ++i) {
                const uint8_t want[5] = {top, static_cast<uint8_t>(top | 0x80), top, infinity, nan};
                const bool ok = i % 5 == 4 ? ref::isNan(type, out[i]) : out[i] == want[i % 5];
                LOOM_REQUIRE(ok, std::string(path.name) + " type " + std::to_string(type) +
                                     " count " + std::to_string(count) + " element " +
                                     std::to_string(i) + ": got " + std::to_string(out[i]));
              }
              std::vector<uint8_t> two(
                  count, ref::exactBits(type, rank == 0 ? ref::maxFinite(type) : 2.0));
              LOOM_REQUIRE(loomReduce(two.data(), out.data(), count, type, loomProd, 0, comm,
                                      nullptr) == loomSuccess,
                           loomGetLastError(comm));
              if (rank == 0)
                LOOM_REQUIRE(out[count - 1] == top, std::string(path.name) + ": max * 2");
            }
          }
        },
        120);
    EXPECT_TRUE(ok) << path.name;
  }
}

// The direct engine sees every rank's input and, as for the 16-bit floats, accumulates in float32
// and rounds once: max + max - max is max in every rank order (element i holds permutation i % 6
// of the three values), where rounding after each rank would saturate 2 * max and end at 0 for
// some orders.
TEST(Fp8DirectEngine, SumsRoundOnceInEveryRankOrder) {
  constexpr int kRanks = 3;
  constexpr int kPermutations[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                       {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  const bool ok = runOnCommunicators(
      kRanks, kFp8Paths[0].env,
      [&](loomComm_t comm, int rank) {
        for (loomDataType_t type : kFp8Types) {
          const uint8_t top = ref::exactBits(type, ref::maxFinite(type));
          const uint8_t values[3] = {top, top, static_cast<uint8_t>(top | 0x80)};
          for (size_t count : {size_t{1}, size_t{7}, size_t{1000}}) {
            std::vector<uint8_t> in(count * kRanks), out(count * kRanks, 0xee);
            for (size_t i = 0; i < in.size(); ++i) in[i] = values[kPermutations[i % 6][rank]];
            LOOM_REQUIRE(loomAllReduce(in.data(), out.data(), count, type, loomSum, comm,
                                       nullptr) == loomSuccess,
                         loomGetLastError(comm));
            for (size_t i = 0; i < count; ++i)
              LOOM_REQUIRE(out[i] == top, "allreduce element " + std::to_string(i));
            LOOM_REQUIRE(loomReduceScatter(in.data(), out.data(), count, type, loomSum, comm,
                                           nullptr) == loomSuccess,
                         loomGetLastError(comm));
            for (size_t i = 0; i < count; ++i)
              LOOM_REQUIRE(out[i] == top, "reducescatter element " + std::to_string(i));
          }
        }
      },
      60);
  EXPECT_TRUE(ok);
}

// LOOM_CHECK=2 reports fp8 NaN (e4m3's S.1111.111, e5m2's) and e5m2 infinity in the input of the
// rank that holds it and in every rank's result; the communicator stays usable.
TEST(Fp8CheckLevelTwo, NanAndInfinityAreReported) {
  constexpr int kRanks = 3;
  for (const Fp8Path& path : {kFp8Paths[0], kFp8Paths[2]}) {
    RankEnv env = path.env;
    env.emplace_back("LOOM_CHECK", "2");
    const bool ok = runOnCommunicators(
        kRanks, env,
        [&](loomComm_t comm, int rank) {
          const std::pair<loomDataType_t, uint8_t> specials[] = {
              {loomFloat8e4m3, 0xff}, {loomFloat8e5m2, 0x7e}, {loomFloat8e5m2, 0xfc}};
          for (const auto& [type, special] : specials) {
            const uint8_t one = ref::exactBits(type, 1.0);
            std::vector<uint8_t> send(4097, one), recv(4097);
            if (rank == 1) send[1234] = special;
            loomResult_t rc =
                loomAllReduce(send.data(), recv.data(), send.size(), type, loomSum, comm, nullptr);
            const std::string error = loomGetLastError(comm);
            LOOM_REQUIRE(
                rc == loomInvalidUsage &&
                    error.find("result has NaN or infinity at element 1234") != std::string::npos,
                std::string(path.name) + " rank " + std::to_string(rank) + ": " + error);
            LOOM_REQUIRE((rank == 1) == (error.find("input has NaN or infinity at element 1234") !=
                                         std::string::npos),
                         error);
            send[1234] = one;
            rc = loomAllReduce(send.data(), recv.data(), send.size(), type, loomSum, comm, nullptr);
            LOOM_REQUIRE(rc == loomSuccess && recv[1234] == ref::exactBits(type, 3.0),
                         loomGetLastError(comm));
          }
        },
        60);
    EXPECT_TRUE(ok) << path.name;
  }
}

}  // namespace
}  // namespace loom::test
