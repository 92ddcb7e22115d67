// SPDX-License-Identifier: Apache-2.0
// loomRedOpCreatePreMulSum / loomRedOpDestroy on one process (communicators of one rank made
// with loomCommInitAll; tests/mp/test_premul_sum_ranks.cc runs them across ranks):
//   - every datatype: the result is scalar * input, rounded as the type's product (integers
//     wrap, fp8 saturates), for all-reduce, reduce-scatter and reduce, in and out of place;
//   - loomScalarDevice reads the scalar when each call runs, loomScalarHostImmediate once at
//     creation;
//   - every misuse is loomInvalidArgument naming the operator, and the communicator stays usable:
//     another communicator's operator, the wrong datatype, a destroyed or never made operator, a
//     second destroy, a built-in op destroyed, NULL op pointer or scalar, bad datatype or
//     residence, an operator of a destroyed communicator.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "loom.h"
#include "tests/support/fp8_reference.h"

namespace {

// rc must be loomInvalidArgument and the last error must name `function` and every word.
void expectInvalid(loomResult_t rc, const char* function, const std::vector<std::string>& words) {
  EXPECT_EQ(rc, loomInvalidArgument) << function << " returned " << loomGetErrorString(rc);
  const std::string message = loomGetLastError(nullptr);
  EXPECT_NE(message.find(function), std::string::npos) << message;
  for (const std::string& word : words)
    EXPECT_NE(message.find(word), std::string::npos) << word << ": " << message;
}

class PreMulSum : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("LOOM_SOCKET_IFNAME", "lo", 0);
    ASSERT_EQ(loomCommInitAll(&comm_, 1, nullptr), loomSuccess) << loomGetLastError(nullptr);
    ASSERT_EQ(loomCommInitAll(&other_, 1, nullptr), loomSuccess) << loomGetLastError(nullptr);
  }
  void TearDown() override {
    EXPECT_EQ(loomCommDestroy(comm_), loomSuccess);
    EXPECT_EQ(loomCommDestroy(other_), loomSuccess);
  }
  // A plain all-reduce still works on comm_ (errors must leave it usable).
  void expectUsable() {
    float x = 3.0f, y = 0.0f;
    ASSERT_EQ(loomAllReduce(&x, &y, 1, loomFloat32, loomSum, comm_, nullptr), loomSuccess)
        << loomGetLastError(comm_);
    EXPECT_EQ(y, 3.0f);
  }
  loomComm_t comm_ = nullptr;
  loomComm_t other_ = nullptr;
};

// Element i of the input and the scalar, per type: products exact in every type (small
// integers times 3; floats: halves of small integers times -2, 448 * 2 saturating in e4m3 at
// the last element).
struct TypeCase {
  loomDataType_t type;
  size_t size;
  uint64_t scalar;                        // bits
  std::vector<uint64_t> input, expected;  // bits
};

uint64_t floatBits(loomDataType_t type, double value) {
  uint64_t bits = 0;
  if (type == loomFloat32) {
    const float f = static_cast<float>(value);
    std::memcpy(&bits, &f, 4);
  } else if (type == loomFloat64) {
    std::memcpy(&bits, &value, 8);
  } else if (type == loomFloat16 || type == loomBfloat16) {
    // Small values exact in both: build from float32 bits (bfloat16 = top half; float16 by hand).
    const float f = static_cast<float>(value);
    uint32_t b;
    std::memcpy(&b, &f, 4);
    if (type == loomBfloat16) return b >> 16;
    if (value == 0) return (b >> 16) & 0x8000;
    const uint32_t exponent = ((b >> 23) & 0xff) - 127 + 15;
    return ((b >> 16) & 0x8000) | (exponent << 10) | ((b >> 13) & 0x3ff);
  } else {
    return loom::test::fp8::exactBits(type, value);
  }
  return bits;
}

std::vector<TypeCase> typeCases(size_t count) {
  std::vector<TypeCase> cases;
  for (int t = 0; t < loomNumTypes; ++t) {
    const auto type = static_cast<loomDataType_t>(t);
    const bool isFloat = type >= loomFloat16;
    const size_t sizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
    TypeCase c{type, sizes[t], 0, {}, {}};
    if (!isFloat) {
      c.scalar = 3;
      for (size_t i = 0; i < count; ++i) {
        // Full-range bits: the product wraps, exactly (modular arithmetic, in the unsigned type).
        const uint64_t x = (i * 0x9e3779b97f4a7c15ull) >> 3;
        const uint64_t mask = c.size == 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * c.size)) - 1;
        c.input.push_back(x & mask);
        c.expected.push_back((x * 3) & mask);
      }
    } else {
      c.scalar = floatBits(type, -2.0);
      for (size_t i = 0; i < count; ++i) {
        const double x = static_cast<double>(static_cast<int>(i % 9) - 4) / 2;  // -2 .. 2 by halves
        c.input.push_back(floatBits(type, x));
        c.expected.push_back(floatBits(type, -2.0 * x));
      }
      if (type == loomFloat8e4m3) {  // 448 * -2 saturates to -448
        c.input.back() = floatBits(type, 448.0);
        c.expected.back() = floatBits(type, -448.0);
      }
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

std::vector<char> pack(const std::vector<uint64_t>& values, size_t size) {
  std::vector<char> bytes(values.size() * size + 1);
  for (size_t i = 0; i < values.size(); ++i) std::memcpy(bytes.data() + i * size, &values[i], size);
  return bytes;
}

TEST_F(PreMulSum, MultipliesTheInputInEveryDatatypeAndCollective) {
  constexpr size_t kCount = 37;
  for (const TypeCase& c : typeCases(kCount)) {
    SCOPED_TRACE("datatype " + std::to_string(c.type));
    for (loomScalarResidence_t residence : {loomScalarHostImmediate, loomScalarDevice}) {
      uint64_t scalar = c.scalar;
      loomRedOp_t op;
      ASSERT_EQ(loomRedOpCreatePreMulSum(&op, &scalar, c.type, residence, comm_), loomSuccess)
          << loomGetLastError(comm_);
      EXPECT_GE(static_cast<int>(op), static_cast<int>(loomNumOps));
      const std::vector<char> input = pack(c.input, c.size), expected = pack(c.expected, c.size);
      const size_t bytes = kCount * c.size;
      for (int call = 0; call < 3; ++call) {
        for (bool inPlace : {false, true}) {
          std::vector<char> send = input, recv(bytes + 1, 0x5a);
          void* out = inPlace ? send.data() : recv.data();
          loomResult_t rc = loomSuccess;
          if (call == 0) rc = loomAllReduce(send.data(), out, kCount, c.type, op, comm_, nullptr);
          if (call == 1)
            rc = loomReduceScatter(send.data(), out, kCount, c.type, op, comm_, nullptr);
          if (call == 2) rc = loomReduce(send.data(), out, kCount, c.type, op, 0, comm_, nullptr);
          ASSERT_EQ(rc, loomSuccess) << call << ": " << loomGetLastError(comm_);
          EXPECT_EQ(std::memcmp(out, expected.data(), bytes), 0)
              << "call " << call << (inPlace ? " in place" : "");
          if (!inPlace) {
            EXPECT_EQ(std::memcmp(send.data(), input.data(), bytes), 0)
                << "changed the send buffer";
          }
        }
      }
      ASSERT_EQ(loomRedOpDestroy(op, comm_), loomSuccess) << loomGetLastError(comm_);
    }
  }
}

TEST_F(PreMulSum, DeviceResidenceReadsTheScalarWhenEachCallRuns) {
  float scalar = 2.0f;
  loomRedOp_t device, immediate;
  ASSERT_EQ(loomRedOpCreatePreMulSum(&device, &scalar, loomFloat32, loomScalarDevice, comm_),
            loomSuccess);
  ASSERT_EQ(
      loomRedOpCreatePreMulSum(&immediate, &scalar, loomFloat32, loomScalarHostImmediate, comm_),
      loomSuccess);
  EXPECT_NE(device, immediate);
  const float x[3] = {1.0f, -4.0f, 0.5f};
  float y[3];
  ASSERT_EQ(loomAllReduce(x, y, 3, loomFloat32, device, comm_, nullptr), loomSuccess);
  EXPECT_EQ(y[1], -8.0f);
  scalar = -3.0f;  // between two calls: the next call with the Device operator sees it
  ASSERT_EQ(loomAllReduce(x, y, 3, loomFloat32, device, comm_, nullptr), loomSuccess);
  EXPECT_EQ(y[0], -3.0f);
  EXPECT_EQ(y[1], 12.0f);
  EXPECT_EQ(y[2], -1.5f);
  ASSERT_EQ(loomReduce(x, y, 3, loomFloat32, immediate, 0, comm_, nullptr), loomSuccess);
  EXPECT_EQ(y[1], -8.0f) << "HostImmediate read the scalar again";
  // A call inside a group runs at loomGroupEnd, and reads the scalar then.
  ASSERT_EQ(loomGroupStart(), loomSuccess);
  ASSERT_EQ(loomAllReduce(x, y, 3, loomFloat32, device, comm_, nullptr), loomSuccess);
  scalar = 10.0f;
  ASSERT_EQ(loomGroupEnd(), loomSuccess) << loomGetLastError(comm_);
  EXPECT_EQ(y[1], -40.0f);
  EXPECT_EQ(loomRedOpDestroy(device, comm_), loomSuccess);
  EXPECT_EQ(loomRedOpDestroy(immediate, comm_), loomSuccess);
}

TEST_F(PreMulSum, MisuseIsInvalidArgumentNamingTheOperator) {
  float scalar = 2.0f, x = 1.0f, y = 0.0f;
  loomRedOp_t op;
  expectInvalid(
      loomRedOpCreatePreMulSum(nullptr, &scalar, loomFloat32, loomScalarHostImmediate, comm_),
      "loomRedOpCreatePreMulSum", {"op is NULL"});
  expectInvalid(loomRedOpCreatePreMulSum(&op, nullptr, loomFloat32, loomScalarDevice, comm_),
                "loomRedOpCreatePreMulSum", {"scalar is NULL"});
  expectInvalid(loomRedOpCreatePreMulSum(&op, &scalar, loomDataType_t(12), loomScalarDevice, comm_),
                "loomRedOpCreatePreMulSum", {"datatype 12"});
  expectInvalid(loomRedOpCreatePreMulSum(&op, &scalar, loomDataType_t(-1), loomScalarDevice, comm_),
                "loomRedOpCreatePreMulSum", {"datatype -1"});
  expectInvalid(
      loomRedOpCreatePreMulSum(&op, &scalar, loomFloat32, loomScalarResidence_t(2), comm_),
      "loomRedOpCreatePreMulSum", {"residence 2"});
  expectInvalid(loomRedOpCreatePreMulSum(&op, &scalar, loomFloat32, loomScalarDevice, nullptr),
                "loomRedOpCreatePreMulSum", {"comm"});

  ASSERT_EQ(loomRedOpCreatePreMulSum(&op, &scalar, loomFloat32, loomScalarHostImmediate, comm_),
            loomSuccess);
  const std::string name = "op " + std::to_string(static_cast<int>(op));
  expectInvalid(loomAllReduce(&x, &y, 1, loomFloat32, op, other_, nullptr), "loomAllReduce",
                {name, "communicator"});
  expectInvalid(loomReduce(&x, &y, 1, loomFloat32, op, 0, other_, nullptr), "loomReduce",
                {name, "communicator"});
  expectInvalid(loomAllReduce(&x, &y, 1, loomFloat16, op, comm_, nullptr), "loomAllReduce",
                {name, "float32", "float16"});
  expectInvalid(loomReduceScatter(&x, &y, 1, loomInt32, op, comm_, nullptr), "loomReduceScatter",
                {name, "float32", "int32"});
  expectInvalid(loomRedOpDestroy(op, other_), "loomRedOpDestroy", {name, "communicator"});
  expectUsable();
  ASSERT_EQ(loomAllReduce(&x, &y, 1, loomFloat32, op, comm_, nullptr), loomSuccess)
      << loomGetLastError(comm_);
  EXPECT_EQ(y, 2.0f);

  ASSERT_EQ(loomRedOpDestroy(op, comm_), loomSuccess);
  expectInvalid(loomAllReduce(&x, &y, 1, loomFloat32, op, comm_, nullptr), "loomAllReduce",
                {name, "destroyed"});
  expectInvalid(loomRedOpDestroy(op, comm_), "loomRedOpDestroy", {name, "destroyed"});
  expectInvalid(loomRedOpDestroy(loomSum, comm_), "loomRedOpDestroy", {"op 0", "built-in"});
  expectInvalid(loomRedOpDestroy(loomRedOp_t(1 << 30), comm_), "loomRedOpDestroy", {"never"});
  expectInvalid(loomAllReduce(&x, &y, 1, loomFloat32, loomRedOp_t(1 << 30), comm_, nullptr),
                "loomAllReduce", {"op 1073741824", "never"});
  expectInvalid(loomRedOpDestroy(op, nullptr), "loomRedOpDestroy", {"comm"});
  expectUsable();
}

// A communicator's operators go with it: afterwards they are destroyed operators everywhere.
TEST_F(PreMulSum, OperatorsOfADestroyedCommunicatorAreGone) {
  loomComm_t third = nullptr;
  ASSERT_EQ(loomCommInitAll(&third, 1, nullptr), loomSuccess);
  int scalar = 5;
  loomRedOp_t op;
  ASSERT_EQ(loomRedOpCreatePreMulSum(&op, &scalar, loomInt32, loomScalarDevice, third),
            loomSuccess);
  ASSERT_EQ(loomCommDestroy(third), loomSuccess);
  int x = 1, y = 0;
  expectInvalid(loomAllReduce(&x, &y, 1, loomInt32, op, comm_, nullptr), "loomAllReduce",
                {"op " + std::to_string(static_cast<int>(op)), "destroyed"});
  expectUsable();
}

// Built-in ops keep working alongside, and a broadcast ignores its (absent) op.
TEST_F(PreMulSum, OperatorsDoNotDisturbOtherCalls) {
  double scalar = 0.25;
  loomRedOp_t op;
  ASSERT_EQ(loomRedOpCreatePreMulSum(&op, &scalar, loomFloat64, loomScalarHostImmediate, comm_),
            loomSuccess);
  double x[2] = {8.0, -4.0}, y[2] = {0, 0};
  ASSERT_EQ(loomAllReduce(x, y, 2, loomFloat64, loomMax, comm_, nullptr), loomSuccess);
  EXPECT_EQ(y[0], 8.0);
  ASSERT_EQ(loomGroupStart(), loomSuccess);
  ASSERT_EQ(loomAllReduce(x, y, 2, loomFloat64, op, comm_, nullptr), loomSuccess);
  ASSERT_EQ(loomGroupEnd(), loomSuccess) << loomGetLastError(comm_);
  EXPECT_EQ(y[0], 2.0);
  EXPECT_EQ(y[1], -1.0);
  ASSERT_EQ(loomBroadcast(x, y, 2, loomFloat64, 0, comm_, nullptr), loomSuccess);
  EXPECT_EQ(y[1], -4.0);
  EXPECT_EQ(loomRedOpDestroy(op, comm_), loomSuccess);
}

}  // namespace
