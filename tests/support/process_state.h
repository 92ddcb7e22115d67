// SPDX-License-Identifier: Apache-2.0
// Whether another process has ended, read from /proc, for tests that wait for a root's process
// to be gone before a late rank knocks on its port.
#pragma once

#include <sys/types.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>

namespace loom::test {

// Every thread of `pid` a zombie, or gone: the leader turns zombie before its other threads
// have exited, and the process's descriptors close only with the last one.
inline bool processGone(pid_t pid) {
  std::error_code error;
  for (const auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", error)) {
    FILE* stat = std::fopen((task.path() / "stat").c_str(), "r");
    if (stat == nullptr) continue;
    char state = '?';
    const int read = std::fscanf(stat, "%*d %*s %c", &state);
    std::fclose(stat);
    if (read == 1 && state != 'Z' && state != 'X') return false;
  }
  return true;
}

}  // namespace loom::test
