// SPDX-License-Identifier: Apache-2.0
// Runs every saved fuzz input through its target's entry function in the normal build, so
// inputs that once crashed Loom (tests/fuzz/regressions/<target>/) stay fixed without clang,
// and the seed corpora (tests/fuzz/corpus/<target>/) keep working. Build with ASan+UBSan to
// get the fuzzers' memory checks too (CI's sanitizer build does).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_targets.h"

#ifndef LOOM_FUZZ_DIR
#error "LOOM_FUZZ_DIR must name tests/fuzz (tests/fuzz/meson.build defines it)"
#endif

namespace {

namespace fs = std::filesystem;

std::vector<fs::path> inputsOf(const std::string& kind, const std::string& target) {
  std::vector<fs::path> files;
  const fs::path folder = fs::path(LOOM_FUZZ_DIR) / kind / target;
  if (!fs::is_directory(folder)) return files;
  for (const auto& entry : fs::directory_iterator(folder)) {
    if (entry.is_regular_file() && entry.path().extension() != ".md") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void runAll(const std::string& kind) {
  size_t ran = 0;
  for (const auto& target : loom::fuzz::kTargets) {
    for (const auto& path : inputsOf(kind, target.name)) {
      SCOPED_TRACE(path.string());
      const std::string bytes = readFile(path);
      try {
        target.oneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      } catch (const loom::fuzz::Finding& finding) {
        ADD_FAILURE() << target.name << " on " << path << ": " << finding.what;
      } catch (const std::exception& error) {
        ADD_FAILURE() << target.name << " on " << path << " threw: " << error.what();
      }
      ++ran;
    }
  }
  std::printf("%s: %zu inputs\n", kind.c_str(), ran);
}

TEST(FuzzRegressions, SeedCorporaPass) { runAll("corpus"); }

// Every file here once crashed Loom or broke a target's check. A failure names the input: run
// the target's fuzzer on it (build-fuzz/fuzz_<target> FILE) for the sanitizer's report.
TEST(FuzzRegressions, SavedCrashInputsStayFixed) { runAll("regressions"); }

}  // namespace
