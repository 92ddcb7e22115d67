// SPDX-License-Identifier: Apache-2.0
// The benchmarks' own command-line options (--name=value), taken out of argv before
// benchmark::Initialize() sees it, so that Google Benchmark still rejects misspelled flags.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace loom::micro {

// Google Benchmark's --help, then the flags every program here adds (--version); pass it to
// benchmark::Initialize.
void printHelp();

class MicroFlags {
 public:
  // Removes every --name=value (and bare --name, read as "yes") whose name is in `known`
  // from argv and adjusts argc.
  MicroFlags(int& argc, char** argv, const std::vector<std::string>& known);

  // The value given on the command line, else `fallback`.
  std::string value(const std::string& name, const std::string& fallback) const;
  // yes/no, true/false, 1/0, on/off; exits with a message on anything else.
  bool boolean(const std::string& name, bool fallback) const;
  // Exits with a message unless the value is one of `allowed`.
  std::string choice(const std::string& name, const std::string& fallback,
                     const std::vector<std::string>& allowed) const;

 private:
  std::map<std::string, std::string> values_;
};

}  // namespace loom::micro
