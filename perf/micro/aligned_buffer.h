// SPDX-License-Identifier: Apache-2.0
// A heap buffer for benchmarks: page-aligned and touched before any timing starts, because a
// first touch costs a page fault (about 11 us per 4 KiB page on the development VM) and would
// otherwise be measured as bandwidth.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>

namespace loom::micro {

class AlignedBuffer {
 public:
  static constexpr size_t kAlignment = 4096;

  AlignedBuffer() = default;
  // `bytes` usable bytes, every page written with `fill`. Throws std::bad_alloc.
  AlignedBuffer(size_t bytes, unsigned char fill);

  char* data() const { return data_.get(); }
  size_t size() const { return size_; }

 private:
  struct Free {
    void operator()(char* memory) const { std::free(memory); }
  };
  std::unique_ptr<char, Free> data_;
  size_t size_ = 0;
};

}  // namespace loom::micro
