// SPDX-License-Identifier: Apache-2.0
#include "aligned_buffer.h"

#include <cstring>
#include <new>

namespace loom::micro {

AlignedBuffer::AlignedBuffer(size_t bytes, unsigned char fill) : size_(bytes) {
  // aligned_alloc wants a multiple of the alignment; at least one page so data() is non-null.
  const size_t rounded = (bytes / kAlignment + 1) * kAlignment;
  data_.reset(static_cast<char*>(std::aligned_alloc(kAlignment, rounded)));
  if (!data_) throw std::bad_alloc();
  std::memset(data_.get(), fill, rounded);
}

}  // namespace loom::micro
