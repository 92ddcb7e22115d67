// SPDX-License-Identifier: Apache-2.0
#include "micro_flags.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace loom::micro {

void printHelp() {
  benchmark::PrintDefaultHelp();
  std::fputs("          [--version]  print the version (Loom's) and exit\n", stdout);
}

MicroFlags::MicroFlags(int& argc, char** argv, const std::vector<std::string>& known) {
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string argument = argv[i];
    bool taken = false;
    for (const std::string& name : known) {
      const std::string prefix = "--" + name;
      if (argument == prefix) {
        values_[name] = "yes";
        taken = true;
      } else if (argument.rfind(prefix + "=", 0) == 0) {
        values_[name] = argument.substr(prefix.size() + 1);
        taken = true;
      }
    }
    if (!taken) argv[kept++] = argv[i];
  }
  argc = kept;
  argv[argc] = nullptr;
}

std::string MicroFlags::value(const std::string& name, const std::string& fallback) const {
  const auto found = values_.find(name);
  return found == values_.end() ? fallback : found->second;
}

bool MicroFlags::boolean(const std::string& name, bool fallback) const {
  const std::string text = value(name, fallback ? "yes" : "no");
  for (const char* yes : {"yes", "true", "1", "on"}) {
    if (text == yes) return true;
  }
  for (const char* no : {"no", "false", "0", "off"}) {
    if (text == no) return false;
  }
  std::fprintf(stderr, "--%s=%s: expected yes or no\n", name.c_str(), text.c_str());
  std::exit(2);
}

std::string MicroFlags::choice(const std::string& name, const std::string& fallback,
                               const std::vector<std::string>& allowed) const {
  const std::string text = value(name, fallback);
  if (std::find(allowed.begin(), allowed.end(), text) != allowed.end()) return text;
  std::string list;
  for (const std::string& option : allowed) list += (list.empty() ? "" : ", ") + option;
  std::fprintf(stderr, "--%s=%s: expected one of %s\n", name.c_str(), text.c_str(), list.c_str());
  std::exit(2);
}

}  // namespace loom::micro
