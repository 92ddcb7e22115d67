// SPDX-License-Identifier: Apache-2.0
// A buffer's address plus a byte offset: the direct algorithms address every rank's slice in
// bytes, whatever the element type.
#pragma once

#include <cstddef>

namespace loom::algo {

inline char* byteAt(void* base, size_t offset) { return static_cast<char*>(base) + offset; }
inline const char* byteAt(const void* base, size_t offset) { return static_cast<const char*>(base) + offset; }

}  // namespace loom::algo
