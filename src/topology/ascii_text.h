// SPDX-License-Identifier: Apache-2.0
// The two text tests the topology files share: XML attributes, sysfs and NVML spell hex and
// bus ids in either case, so comparisons go through lowerCase.
#pragma once

#include <string>

namespace loom::topology {

inline bool startsWith(const std::string& text, const char* prefix) { return text.rfind(prefix, 0) == 0; }

// ASCII only, independent of the C locale.
inline std::string lowerCase(std::string text) {
  for (char& c : text) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return text;
}

}  // namespace loom::topology
