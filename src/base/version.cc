// SPDX-License-Identifier: Apache-2.0
// Part of loom_version (src/base/meson.build), like version_string.cc: the perf tools and their
// peers link only that library.
#include "base/version.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace loom {

void exitWithVersion(std::string_view tool) {
  std::fputs(versionLine(tool).c_str(), stdout);
  std::exit(0);
}

void exitOnVersionFlag(int argc, char** argv, std::string_view tool) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--version") == 0) exitWithVersion(tool);
  }
}

}  // namespace loom
