// SPDX-License-Identifier: Apache-2.0
// NCCL_* aliases: whether the process honours them, and what it says about the NCCL_*
// variables it does not take. An NCCL job's environment often carries many NCCL_* settings
// tuned for NCCL; one that Loom silently ignores is the surprise this report prevents.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <string_view>
#include <vector>

#include "base/config.h"
#include "base/log.h"

namespace loom::config {
namespace {

constexpr std::string_view kNcclPrefix = "NCCL_";

// Sticky: a communicator's settings were read under one answer and must not meet another.
std::atomic<bool> honoured{false};

}  // namespace

void honourNcclAliases() { honoured.store(true, std::memory_order_release); }

bool ncclAliasesHonoured() { return honoured.load(std::memory_order_acquire); }

std::vector<std::string> unhonouredNcclVariables() {
  std::vector<std::string> lines;
  if (!ncclAliasesHonoured()) return lines;
  for (char** variable = environ; variable != nullptr && *variable != nullptr; ++variable) {
    const std::string_view assignment(*variable);
    const size_t equals = assignment.find('=');
    if (equals == std::string_view::npos || equals + 1 == assignment.size()) continue;  // empty: unset
    const std::string name(assignment.substr(0, equals));
    if (!std::string_view(name).starts_with(kNcclPrefix)) continue;
    const auto aliased = std::find_if(entries().begin(), entries().end(), [&](const Entry& entry) {
      return entry.ncclAlias != nullptr && name == entry.ncclAlias;
    });
    if (aliased == entries().end()) {
      lines.push_back(name + ": not honoured by Loom (docs/nccl.md lists the NCCL_* variables it reads)");
    } else if (std::string_view(sourceName(aliased->knob)) != name) {
      lines.push_back(name + ": not read, " + aliased->name + " is set and wins");
    }
  }
  std::sort(lines.begin(), lines.end());  // environ's order means nothing to a reader
  return lines;
}

void reportNcclVariablesOnce() {
  static std::atomic<bool> reported{false};
  if (!ncclAliasesHonoured() || reported.exchange(true)) return;
  for (const std::string& line : unhonouredNcclVariables()) LOOM_INFO(ENV, "%s", line.c_str());
}

}  // namespace loom::config
