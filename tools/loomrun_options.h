// SPDX-License-Identifier: Apache-2.0
// Command line of loomrun: what to start, how many copies, and how to supervise them.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace loom::launcher {

enum class BindPolicy { kNone, kCore };

struct LaunchOptions {
  int nranks = 0;
  BindPolicy bind = BindPolicy::kNone;
  bool tagOutput = false;
  std::optional<double> timeoutSeconds;  // kill everything after this long
  bool help = false;
  bool version = false;              // --version: print "loomrun (Loom) <version>" and exit
  std::vector<std::string> command;  // program then its arguments
};

// Throws loom::Error(loomInvalidUsage) naming the bad argument; the caller prints the usage.
LaunchOptions parseOptions(int argc, char** argv);

std::string usageText();

}  // namespace loom::launcher
