// SPDX-License-Identifier: Apache-2.0
// The fuzz targets' entry functions. Each takes one input of any size, feeds it to Loom's real
// parsing code and returns normally when Loom accepted or cleanly refused it (a loom::Error or
// another std::exception for bad input is the expected refusal). It throws Finding when an
// invariant of the code under test was broken; crashes, sanitizer reports, hangs and OOMs are
// the other findings.
//
// The same functions run under libFuzzer (libfuzzer_main.cc, built by run.sh with clang) and
// in the normal gtest build (tests/unit/test_fuzz_regressions.cc, over corpus/ and
// regressions/), so a crash input saved under regressions/<target>/ stays fixed without clang.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace loom::fuzz {

// Deliberately not a std::exception, so the targets' `catch (const std::exception&)` for
// expected refusals can never swallow it.
struct Finding {
  std::string what;
};

[[noreturn]] inline void fail(const std::string& what) { throw Finding{what}; }
inline void check(bool condition, const std::string& what) {
  if (!condition) fail(what);
}

void uniqueIdOneInput(const uint8_t* data, size_t size);
void bootstrapWireOneInput(const uint8_t* data, size_t size);
void transportWireOneInput(const uint8_t* data, size_t size);
void topologyXmlOneInput(const uint8_t* data, size_t size);

struct Target {
  const char* name;  // the folder name under corpus/ and regressions/
  void (*oneInput)(const uint8_t* data, size_t size);
};

inline constexpr Target kTargets[] = {
    {"unique_id", uniqueIdOneInput},
    {"bootstrap_wire", bootstrapWireOneInput},
    {"transport_wire", transportWireOneInput},
    {"topology_xml", topologyXmlOneInput},
};

// Reads the input front to back; past the end every read yields zeros, so a target never has
// to check lengths before taking a field.
class InputReader {
 public:
  InputReader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t byte() { return offset_ < size_ ? data_[offset_++] : 0; }
  uint32_t u32() {
    uint32_t value = 0;
    for (int i = 0; i < 4; ++i) value |= static_cast<uint32_t>(byte()) << (8 * i);
    return value;
  }
  // Up to `count` bytes (fewer at the end of the input).
  std::span<const uint8_t> bytes(size_t count) {
    const size_t taken = count < size_ - offset_ ? count : size_ - offset_;
    std::span<const uint8_t> out(data_ + offset_, taken);
    offset_ += taken;
    return out;
  }
  std::span<const uint8_t> rest() { return bytes(size_ - offset_); }
  bool empty() const { return offset_ >= size_; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t offset_ = 0;
};

}  // namespace loom::fuzz
