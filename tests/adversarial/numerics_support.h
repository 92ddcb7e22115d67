// SPDX-License-Identifier: Apache-2.0
// Shared by test_numerics.cc and test_deterministic.cc (issue 14, finding 6): values as raw
// bits of any datatype, the three reducing collectives run on one communicator with every
// rank's output checked element by element, and the reference reduction Loom documents for
// deterministic mode (canonical rank order, wide accumulator, one rounding).
#pragma once

#include <loom.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/half_float.h"
#include "tests/support/multiprocess.h"

namespace loom::test::numerics {

using kernels::Bfloat16;
using kernels::Float16;

inline size_t sizeOf(loomDataType_t type) {
  switch (type) {
    case loomInt8: case loomUint8: return 1;
    case loomFloat16: case loomBfloat16: return 2;
    case loomInt32: case loomUint32: case loomFloat32: return 4;
    default: return 8;
  }
}
inline bool isFloatType(loomDataType_t type) {
  return type == loomFloat16 || type == loomBfloat16 || type == loomFloat32 || type == loomFloat64;
}
inline const char* typeLabel(loomDataType_t type) {
  static const char* names[] = {"int8", "uint8", "int32", "uint32", "int64", "uint64",
                                "float16", "float32", "float64", "bfloat16"};
  return static_cast<int>(type) < 10 ? names[type] : "?";
}
inline const char* opLabel(loomRedOp_t op) {
  static const char* names[] = {"sum", "prod", "max", "min", "avg"};
  return static_cast<int>(op) < 5 ? names[op] : "?";
}

// Raw bits <-> the widest value of a float type (float for 16-bit types and float32).
inline double floatOf(loomDataType_t type, uint64_t bits) {
  switch (type) {
    case loomFloat16: return Float16::fromBits(static_cast<uint16_t>(bits)).toFloat();
    case loomBfloat16: return Bfloat16::fromBits(static_cast<uint16_t>(bits)).toFloat();
    case loomFloat32: { float f; uint32_t b = static_cast<uint32_t>(bits); std::memcpy(&f, &b, 4); return f; }
    default: { double d; std::memcpy(&d, &bits, 8); return d; }
  }
}
inline uint64_t bitsOf(loomDataType_t type, double value) {  // value already exact in `type`
  switch (type) {
    case loomFloat16: return Float16::fromFloat(static_cast<float>(value)).bits;
    case loomBfloat16: return Bfloat16::fromFloat(static_cast<float>(value)).bits;
    case loomFloat32: { float f = static_cast<float>(value); uint32_t b; std::memcpy(&b, &f, 4); return b; }
    default: { uint64_t b; std::memcpy(&b, &value, 8); return b; }
  }
}
inline bool isNanBits(loomDataType_t type, uint64_t bits) { return isFloatType(type) && std::isnan(floatOf(type, bits)); }

inline uint64_t load(const void* buffer, size_t index, size_t size) {
  uint64_t bits = 0;
  std::memcpy(&bits, static_cast<const char*>(buffer) + index * size, size);  // little-endian
  return bits;
}
inline void store(void* buffer, size_t index, size_t size, uint64_t bits) {
  std::memcpy(static_cast<char*>(buffer) + index * size, &bits, size);
}

// Element `index` of rank `rank`'s input (the collective's input index space).
using InputFn = std::function<uint64_t(int rank, size_t index)>;
// The expected bits at input index `index`; `matches` may accept more than one (NaN payloads).
using ExpectFn = std::function<uint64_t(size_t index)>;
using MatchFn = std::function<bool(uint64_t got, uint64_t want)>;

inline bool bitwiseEqual(uint64_t got, uint64_t want) { return got == want; }

enum class Coll { AllReduce, ReduceScatter, Reduce };
inline constexpr Coll kColls[] = {Coll::AllReduce, Coll::ReduceScatter, Coll::Reduce};
inline const char* collLabel(Coll coll) {
  return coll == Coll::AllReduce ? "allreduce" : coll == Coll::ReduceScatter ? "reducescatter" : "reduce";
}

// Which output elements a rank checks against the reference. Whole: all of its output.
// Share: all-reduce ranks check only their 1/n of the output against the reference and then
// prove, through a 64-bit hash of the whole output gathered from every rank, that all ranks hold
// the same bits. That splits the scalar reference (n inputs per element) across the ranks,
// which makes 16M-element grids feasible on 2 cores.
enum class Check { Whole, Share };

inline uint64_t hashBytes(const char* data, size_t bytes) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a, 8 bytes at a time
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    uint64_t word;
    std::memcpy(&word, data + i, 8);
    h = (h ^ word) * 1099511628211ull;
  }
  for (; i < bytes; ++i) h = (h ^ static_cast<unsigned char>(data[i])) * 1099511628211ull;
  return h;
}

// Runs one collective on `comm` (every rank calls it alike) and checks this rank's output.
// count: all-reduce/reduce elements; reduce-scatter: recvcount. Reduce's root is the last rank.
// The buffers persist across calls (fresh pages cost ~11 us each on the CI machine). The
// callables are template parameters (InputFn, ExpectFn and MatchFn are their shapes): a
// 16M-element check calls them per element.
template <typename Input, typename Expect, typename Match>
void runAndCheck(loomComm_t comm, int rank, int nranks, Coll coll, loomDataType_t type, loomRedOp_t op,
                 size_t count, const Input& input, const Expect& expect, const Match& matches,
                 const std::string& label, Check check = Check::Whole) {
  static std::vector<char> send, recv;
  const size_t size = sizeOf(type);
  const size_t inputCount = coll == Coll::ReduceScatter ? count * nranks : count;
  if (send.size() < inputCount * size + 1) send.resize(inputCount * size + 1);
  if (recv.size() < count * size + 1) recv.resize(count * size + 1);
  for (size_t i = 0; i < inputCount; ++i) store(send.data(), i, size, input(rank, i));
  const int root = nranks - 1;
  loomResult_t result = loomSuccess;
  switch (coll) {
    case Coll::AllReduce: result = loomAllReduce(send.data(), recv.data(), count, type, op, comm, nullptr); break;
    case Coll::ReduceScatter: result = loomReduceScatter(send.data(), recv.data(), count, type, op, comm, nullptr); break;
    case Coll::Reduce: result = loomReduce(send.data(), recv.data(), count, type, op, root, comm, nullptr); break;
  }
  const std::string what = label + " " + collLabel(coll) + " " + typeLabel(type) + " " + opLabel(op) +
                           " count " + std::to_string(count) + " on " + std::to_string(nranks) + " ranks";
  LOOM_REQUIRE(result == loomSuccess, what + ": " + loomGetErrorString(result));
  if (coll == Coll::Reduce && rank != root) return;
  const size_t base = coll == Coll::ReduceScatter ? static_cast<size_t>(rank) * count : 0;
  size_t first = 0, last = count;
  const bool share = check == Check::Share && coll == Coll::AllReduce && nranks > 1;
  if (share) {
    first = count * rank / nranks;
    last = count * (rank + 1) / nranks;
  }
  for (size_t i = first; i < last; ++i) {
    const uint64_t got = load(recv.data(), i, size), want = expect(base + i);
    if (!matches(got, want)) {
      char detail[160];
      std::snprintf(detail, sizeof detail, ": rank %d element %zu is 0x%llx (%g), expected 0x%llx (%g)", rank, i,
                    static_cast<unsigned long long>(got), isFloatType(type) ? floatOf(type, got) : 0.0,
                    static_cast<unsigned long long>(want), isFloatType(type) ? floatOf(type, want) : 0.0);
      LOOM_REQUIRE(false, what + detail);
    }
  }
  if (!share) return;
  const uint64_t mine = hashBytes(recv.data(), count * size);
  std::vector<uint64_t> all(nranks);
  LOOM_REQUIRE(loomAllGather(&mine, all.data(), 1, loomUint64, comm, nullptr) == loomSuccess,
               what + ": gathering output hashes failed");
  for (int r = 0; r < nranks; ++r) {
    LOOM_REQUIRE(all[r] == mine, what + ": rank " + std::to_string(r) + "'s output differs from rank " +
                                     std::to_string(rank) + "'s (hash)");
  }
}

}  // namespace loom::test::numerics
