// SPDX-License-Identifier: Apache-2.0
// Running a perf tool as a user runs it, and reading its table: shared by the tests of Loom's
// perf tools and of their MPI and Gloo peers (test_perf_tools.cc, test_perf_peers.cc).
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

namespace loom::test::tools {

struct ToolRun {
  int exitCode = -1;
  std::string out;  // stdout only: stderr goes to the test log
};

inline std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

inline std::string quoted(const std::string& text) { return "'" + text + "'"; }

// Runs `command` through the shell; its exit code (128 + the signal if one killed it) and stdout.
inline ToolRun runCommand(const std::string& command) {
  ToolRun run;
  std::FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return run;
  char chunk[4096];
  for (size_t n; (n = std::fread(chunk, 1, sizeof chunk, pipe)) > 0;) run.out.append(chunk, n);
  const int status = ::pclose(pipe);
  run.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return run;
}

// The table rows: every non-empty line that is not a '#' comment, split into columns.
inline std::vector<std::vector<std::string>> tableRows(const std::string& out) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::vector<std::string> columns;
    for (std::string word; words >> word;) columns.push_back(word);
    rows.push_back(columns);
  }
  return rows;
}

// The bytes of one element of a datatype as the tools name it (-d).
inline size_t typeSizeOf(const std::string& name) {
  if (name == "int8" || name == "uint8") return 1;
  if (name == "half" || name == "bfloat16") return 2;
  if (name == "int32" || name == "uint32" || name == "float") return 4;
  return 8;
}

}  // namespace loom::test::tools
