// SPDX-License-Identifier: Apache-2.0
#include "base/device_runtime.h"

#include <cstdio>

namespace loom {

const char* memoryDomainName(MemoryDomain domain) {
  switch (domain) {
    case MemoryDomain::Host: return "host";
    case MemoryDomain::PinnedHost: return "pinned host";
    case MemoryDomain::Device: return "device";
    case MemoryDomain::Managed: return "managed";
  }
  return "?";
}

std::string pointerText(const void* pointer) {
  char text[24];
  std::snprintf(text, sizeof(text), "%p", pointer);
  return text;
}

}  // namespace loom
