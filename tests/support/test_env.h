// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the multi-process tests: environment variables set for a scope (children
// forked inside it inherit them) and the /dev/shm names a communicator leaves behind.
#pragma once

#include <dirent.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace loom::test {

using EnvList = std::vector<std::pair<const char*, const char*>>;

// Sets the variables; the destructor puts back what was there before.
class ScopedEnv {
 public:
  explicit ScopedEnv(EnvList values) {
    for (const auto& [name, value] : values) {
      const char* old = std::getenv(name);
      saved_.emplace_back(name, old != nullptr ? std::optional<std::string>(old) : std::nullopt);
      setenv(name, value, 1);
    }
  }
  ScopedEnv(const char* name, const char* value) : ScopedEnv(EnvList{{name, value}}) {}
  ~ScopedEnv() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second) {
        setenv(it->first, it->second->c_str(), 1);
      } else {
        unsetenv(it->first);
      }
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::vector<std::pair<const char*, std::optional<std::string>>> saved_;
};

// Every /dev/shm name of the communicator with this uid (they all start "loom-<uid>").
inline std::vector<std::string> shmNamesOf(uint64_t commUid) {
  char prefix[32];
  std::snprintf(prefix, sizeof(prefix), "loom-%016" PRIx64, commUid);
  std::vector<std::string> names;
  if (DIR* dir = opendir("/dev/shm")) {
    while (dirent* entry = readdir(dir)) {
      if (std::strncmp(entry->d_name, prefix, std::strlen(prefix)) == 0) names.push_back(entry->d_name);
    }
    closedir(dir);
  }
  return names;
}

}  // namespace loom::test
