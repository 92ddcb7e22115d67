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

#include "tests/support/splitmix.h"

#include <algorithm>
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

namespace ref = fp8;

constexpr loomDataType_t kFp8Types[] = {loomFloat8e4m3, loomFloat8e5m2};
constexpr size_t kCounts[] = {1, 7, 4095, 65537};
constexpr int kPreMulSum = -1;  // stands for the PreMulSum operator in the case list
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

using loom::test::mix;

// The values of one case: the input bits of (rank, element) and the exact result of an element
// over all ranks. Each input is drawn as a small integer (a multiple of the element's unit, a
// factor, or a pattern for max/min) and turned into bits through tables made once per case
// with fp8::exactBits, which throws if a value is not exact (a bug of this test): the
// reference is exact arithmetic on those integers, cheap enough for 8 ranks x 524k elements.
class Values {
 public:
  Values(loomDataType_t type, int op, int nranks, uint64_t seed)
      : type_(type), op_(op), n_(nranks), seed_(seed) {
    const bool e4m3 = type == loomFloat8e4m3;
    const int limit = e4m3 ? 16 : 8;  // integers up to this are exact (4 and 3 significant bits)
    units_ =
        std::max(1, limit / nranks);  // |value| in units, so any subset sum stays within the limit
    // Exponents of the unit: the whole range sums can use. avg: 2^-k scaling (k <= 4) must stay
    // above the smallest subnormal; PreMulSum: so must the product with 1/2.
    int minExponent = e4m3 ? -9 : -16;
    const int maxExponent = e4m3 ? 4 : 12;
    if (op == loomAvg) minExponent += 4;
    if (op == kPreMulSum) minExponent += 1;
    exponents_ = maxExponent - minExponent + 1;
    const double scale = op == kPreMulSum ? 0.5 : 1.0;  // what the result multiplies the sum by
    for (int e = 0; e < exponents_; ++e) {
      for (int k = -16; k <= 16; ++k) {
        const double unit = std::ldexp(1.0, minExponent + e);
        scaled_.push_back(std::abs(k) <= units_ ? ref::exactBits(type, k * unit) : 0);
        scaledResult_.push_back(std::abs(k) <= limit ? ref::exactBits(type, k * unit * scale) : 0);
      }
    }
    for (int bits = 0; bits < 256; ++bits)
      decoded_[bits] = ref::decode(type, static_cast<uint8_t>(bits));
    for (int j = -8; j <= 8; ++j) power_.push_back(ref::exactBits(type, std::ldexp(1.0, j)));
  }

  uint8_t inputBits(int rank, size_t i) const {
    const int drawn = draw(rank, i);
    switch (op_) {
      case loomProd:
        return factorBits(drawn);
      case loomMax:
      case loomMin:
        return static_cast<uint8_t>(drawn);
      default:
        return scaled_[unitIndex(i) * 33 + drawn + 16];
    }
  }

  uint8_t expectedBits(size_t i) const {
    if (op_ == loomMax || op_ == loomMin) {
      auto best = static_cast<uint8_t>(draw(0, i));
      for (int r = 1; r < n_; ++r) {
        const auto bits = static_cast<uint8_t>(draw(r, i));
        const double x = decoded_[bits], acc = decoded_[best];
        const bool takeX =
            x == acc ? std::signbit(acc) == (op_ == loomMax) : (x > acc) == (op_ == loomMax);
        if (takeX) best = bits;
      }
      return best;
    }
    if (op_ == loomProd) {
      bool zero = false, negative = false;
      int exponent = 0;
      for (int r = 0; r < n_; ++r) {
        const int factor = draw(r, i);  // 0, 1: +-0; then +-1, +-2, +-1/2
        zero = zero || factor < 2;
        negative = negative != (factor % 2 == 1);
        exponent += factor < 4 ? 0 : factor < 6 ? 1 : -1;
      }
      const uint8_t sign = negative ? 0x80 : 0x00;
      return static_cast<uint8_t>(sign | (zero ? 0 : power_[exponent + 8]));
    }
    int sum = 0;
    for (int r = 0; r < n_; ++r) sum += draw(r, i);
    if (op_ == loomAvg) sum /= n_;  // exact: the inputs sum to n * mean
    return scaledResult_[unitIndex(i) * 33 + sum + 16];
  }

 private:
  size_t unitIndex(size_t i) const { return (i * 7 + seed_) % static_cast<size_t>(exponents_); }

  // The integer behind input (rank, i): a multiple of the unit (sum, avg, PreMulSum), a factor
  // index (prod) or a non-NaN pattern (max, min).
  int draw(int rank, size_t i) const {
    const uint64_t h = mix(seed_ * 0xd1b54a32d192ed03ull +
                           static_cast<uint64_t>(rank) * 0x9e3779b97f4a7c15ull + i);
    switch (op_) {
      case loomProd:  // 1 in 16 a signed zero, else one of +-1, +-2, +-1/2
        return h % 16 == 0 ? static_cast<int>((h >> 4) & 1) : 2 + static_cast<int>((h >> 8) % 6);
      case loomMax:
      case loomMin: {
        auto bits = static_cast<uint8_t>(h);
        while (ref::isNan(type_, bits))
          bits = static_cast<uint8_t>(bits + 1);  // infinities are fine
        return bits;
      }
      case loomAvg: {
        // Around the mean t: +d on even ranks, -d on the odd one after each, 0 on an unpaired last.
        const uint64_t e = mix(seed_ ^ (i << 8));
        const int t = static_cast<int>(e % (2 * units_ + 1)) - units_;
        const int d = static_cast<int>((e >> 8) % (units_ - std::abs(t) + 1));
        const int offset = (rank % 2 == 0) ? (rank + 1 < n_ ? d : 0) : -d;
        return t + offset;
      }
      default:  // sum, PreMulSum
        return static_cast<int>(h % (2 * units_ + 1)) - units_;
    }
  }

  // Factor index -> bits: +0, -0, 1, -1, 2, -2, 1/2, -1/2 (odd indices negative).
  uint8_t factorBits(int factor) const {
    const uint8_t sign = factor % 2 ? 0x80 : 0x00;
    if (factor < 2) return sign;
    return static_cast<uint8_t>(sign | power_[8 + (factor < 4 ? 0 : factor < 6 ? 1 : -1)]);
  }

  loomDataType_t type_;
  int op_, n_;
  uint64_t seed_;
  int units_, exponents_;
  std::vector<uint8_t> scaled_, scaledResult_;  // [unit index][k + 16]: bits of k * unit (* 1/2)
  std::vector<uint8_t> power_;                  // [j + 8]: bits of 2^j
  double decoded_[256];
};

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
          const Values values(type, op, n, static_cast<uint64_t>(caseIndex));
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
