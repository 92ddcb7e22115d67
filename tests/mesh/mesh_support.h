// SPDX-License-Identifier: Apache-2.0
// Shared by the tests of issue 15's calls (point-to-point, groups, all-to-all(v), gather,
// scatter, barrier): bytes that say where they came from, a communicator per forked rank with
// environment variables set first, and the transports the grids run over.
#pragma once

#include <loom.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/multiprocess.h"

namespace loom::test::mesh {

using Env = RankEnv;

struct Transport {
  const char* label;
  Env env;
};
// shm with the direct engine (every collective is posted to the arena, then runs its schedule),
// shm FIFOs alone, and TCP.
inline const std::vector<Transport>& transports() {
  static const std::vector<Transport> all = {
      {"shm", {{"LOOM_TRANSPORT", "shm"}}},
      {"shm-fifo", {{"LOOM_TRANSPORT", "shm"}, {"LOOM_ALGO", "ring"}}},
      {"tcp", {{"LOOM_SHM_DISABLE", "1"}}},
  };
  return all;
}

inline size_t sizeOf(loomDataType_t type) {
  switch (type) {
    case loomInt8: case loomUint8: case loomFloat8e4m3: case loomFloat8e5m2: return 1;
    case loomFloat16: case loomBfloat16: return 2;
    case loomInt32: case loomUint32: case loomFloat32: return 4;
    default: return 8;
  }
}
inline std::string typeLabel(loomDataType_t type) {
  static const char* names[] = {"int8", "uint8", "int32", "uint32", "int64", "uint64", "float16",
                                "float32", "float64", "bfloat16", "f8e4m3", "f8e5m2"};
  return static_cast<int>(type) < 12 ? names[type] : "?";
}
inline const std::vector<loomDataType_t>& allTypes() {
  static const std::vector<loomDataType_t> all = {loomInt8, loomUint8, loomInt32, loomUint32, loomInt64, loomUint64,
                                                  loomFloat16, loomFloat32, loomFloat64, loomBfloat16,
                                                  loomFloat8e4m3, loomFloat8e5m2};
  return all;
}

// Byte `b` of element `index` that rank `from` sends to rank `to` in call `salt`: data-movement
// calls copy bits, so any pattern (NaN payloads included) must arrive exactly.
inline unsigned char patternByte(int from, int to, size_t index, size_t b, uint64_t salt) {
  uint64_t x = (static_cast<uint64_t>(from) * 1000003u) ^ (static_cast<uint64_t>(to) * 7919u) ^ (index * 0x9e3779b97f4a7c15ull) ^
               (b * 0x100000001b3ull) ^ (salt * 0xbf58476d1ce4e5b9ull);
  x ^= x >> 29;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 32;
  return static_cast<unsigned char>(x);
}
inline void fill(void* buffer, size_t elements, size_t size, int from, int to, uint64_t salt) {
  auto* bytes = static_cast<unsigned char*>(buffer);
  for (size_t i = 0; i < elements; ++i) {
    for (size_t b = 0; b < size; ++b) bytes[i * size + b] = patternByte(from, to, i, b, salt);
  }
}
// Throws naming the first wrong byte.
inline void expectPattern(const void* buffer, size_t elements, size_t size, int from, int to, uint64_t salt,
                          const std::string& what) {
  const auto* bytes = static_cast<const unsigned char*>(buffer);
  for (size_t i = 0; i < elements; ++i) {
    for (size_t b = 0; b < size; ++b) {
      const unsigned char want = patternByte(from, to, i, b, salt);
      if (bytes[i * size + b] != want) {
        LOOM_REQUIRE(false, what + ": element " + std::to_string(i) + " byte " + std::to_string(b) + " from rank " +
                                std::to_string(from) + " is " + std::to_string(bytes[i * size + b]) + ", expected " +
                                std::to_string(want));
      }
    }
  }
}
inline void expectUntouched(const void* buffer, size_t bytes, unsigned char marker, const std::string& what) {
  const auto* data = static_cast<const unsigned char*>(buffer);
  for (size_t i = 0; i < bytes; ++i) {
    LOOM_REQUIRE(data[i] == marker, what + ": byte " + std::to_string(i) + " outside the promised range was written");
  }
}

inline void check(loomResult_t result, const std::string& what) {
  LOOM_REQUIRE(result == loomSuccess, what + ": " + loomGetErrorString(result) + ": " + loomGetLastError(nullptr));
}

// "full" runs the whole grid (suite long); otherwise CI's sample.
inline bool fullGrid() {
  const char* grid = std::getenv("LOOM_MESH_GRID");
  return grid != nullptr && std::string(grid) == "full";
}

}  // namespace loom::test::mesh
