// SPDX-License-Identifier: Apache-2.0
// Loom's version as text: meson's project version, with the git revision when built from a git
// checkout ("0.1.0+g0123456789ab", ".dirty" appended when tracked files differed from that
// commit), just "0.1.0" otherwise. The build writes it (src/base/version_string.cc.in, through
// tools/version/loom_version.py) on every ninja run, so a new commit needs no reconfigure.
// loomGetVersionString() returns it; every tool's --version prints versionLine(), most through
// exitOnVersionFlag() (version.cc).
#pragma once

#include <string>
#include <string_view>

namespace loom {

// A static string, never null.
const char* versionString() noexcept;

// What a tool's --version prints: "<tool> (Loom) <version>\n".
inline std::string versionLine(std::string_view tool) {
  return std::string(tool) + " (Loom) " + versionString() + "\n";
}

// Prints versionLine(tool) to stdout and exits 0.
[[noreturn]] void exitWithVersion(std::string_view tool);

// When any argument after argv[0] is exactly "--version": exitWithVersion(tool). Called before
// any other argument is looked at, so --version answers whatever else the command line holds.
// Not for loomrun, whose words after the program's name are the program's own.
void exitOnVersionFlag(int argc, char** argv, std::string_view tool);

}  // namespace loom
