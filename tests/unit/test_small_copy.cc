// SPDX-License-Identifier: Apache-2.0
// copyBytes (src/base/small_copy.h): the inline copy of small messages, exact for every size
// around its width boundaries, at every alignment, writing nothing outside the target.
#include <gtest/gtest.h>

#include <vector>

#include "base/small_copy.h"

namespace loom {
namespace {

TEST(SmallCopy, CopiesExactlyTheBytesAtEverySizeAndAlignment) {
  constexpr size_t kGuard = 24;  // bytes around the target that must stay untouched
  for (size_t bytes = 0; bytes <= 40; ++bytes) {
    for (size_t srcOffset = 0; srcOffset < 8; ++srcOffset) {
      for (size_t dstOffset = 0; dstOffset < 8; ++dstOffset) {
        std::vector<unsigned char> src(bytes + 16), dst(bytes + 2 * kGuard + 8, 0xee);
        for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 37 + 1);
        unsigned char* target = dst.data() + kGuard + dstOffset;
        copyBytes(target, src.data() + srcOffset, bytes);
        for (size_t i = 0; i < dst.size(); ++i) {
          const unsigned char* at = dst.data() + i;
          const bool inside = at >= target && at < target + bytes;
          const unsigned char want = inside ? src[srcOffset + static_cast<size_t>(at - target)] : 0xee;
          ASSERT_EQ(dst[i], want) << bytes << " bytes from +" << srcOffset << " to +" << dstOffset << ", byte " << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace loom
