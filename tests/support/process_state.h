// SPDX-License-Identifier: Apache-2.0
// Whether another process has ended, read from /proc, for tests that wait for a root's process
// to be gone before a late rank knocks on its port.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

namespace loom::test {

// A task's state letter from its stat file; 0 when it cannot be read (the task is gone). The
// letter follows the last ')': the command name before it, in parentheses, may hold spaces
// and parentheses of its own.
inline char taskState(const std::filesystem::path& stat) {
  std::ifstream in(stat);
  std::string line;
  if (!std::getline(in, line)) return 0;
  const size_t close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() ? line[close + 2] : '?';
}

// Every thread of `pid` a zombie, or gone: the leader turns zombie before its other threads
// have exited, and the process's descriptors close only with the last one.
inline bool processGone(pid_t pid) {
  std::error_code error;
  for (const auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", error)) {
    const char state = taskState(task.path() / "stat");
    if (state != 0 && state != 'Z' && state != 'X') return false;
  }
  return true;
}

}  // namespace loom::test
