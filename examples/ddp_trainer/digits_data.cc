// SPDX-License-Identifier: Apache-2.0
#include "digits_data.h"

#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <stdexcept>

#include "random.h"

namespace ddp {
namespace {

constexpr const char* kRelativePath = "sklearn/datasets/data/digits.csv.gz";
constexpr double kTestFraction = 0.2;
constexpr uint64_t kSplitPurpose = 1;

// Where Debian's python3-sklearn (and a pip install into a system Python) put the file.
std::vector<std::string> candidatePaths() {
  std::vector<std::string> paths = {std::string("/usr/lib/python3/dist-packages/") + kRelativePath};
  for (const char* base : {"/usr/local/lib", "/usr/lib"}) {
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(base, error)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("python3", 0) != 0) continue;
      for (const char* site : {"/dist-packages/", "/site-packages/"}) {
        paths.push_back(entry.path().string() + site + kRelativePath);
      }
    }
  }
  return paths;
}

std::string findDigits() {
  const std::vector<std::string> paths = candidatePaths();
  for (const auto& path : paths) {
    if (std::filesystem::exists(path)) return path;
  }
  throw std::runtime_error("digits data set not found (looked for " + paths.front() +
                           " and python3.*/{dist,site}-packages): install Debian's python3-sklearn "
                           "(apt-get install python3-sklearn) or pass --data PATH/digits.csv.gz");
}

std::string readGzip(const std::string& path) {
  std::unique_ptr<gzFile_s, decltype(&gzclose)> file(gzopen(path.c_str(), "rb"), &gzclose);
  if (!file) throw std::runtime_error("cannot open " + path + " (install python3-sklearn or pass --data)");
  std::string text;
  char chunk[1 << 16];
  for (;;) {
    const int got = gzread(file.get(), chunk, sizeof chunk);
    if (got < 0) {
      int code = 0;
      throw std::runtime_error(path + ": not a readable gzip file: " + gzerror(file.get(), &code));
    }
    if (got == 0) break;
    text.append(chunk, static_cast<size_t>(got));
  }
  return text;
}

// Each line: 64 integer pixels 0..16, then the label 0..9.
Dataset parseCsv(const std::string& text, const std::string& path) {
  Dataset all;
  const char* cursor = text.c_str();
  int line = 0;
  while (*cursor != '\0') {
    ++line;
    for (int column = 0; column <= Dataset::kFeatures; ++column) {
      char* end = nullptr;
      const long value = std::strtol(cursor, &end, 10);
      const long high = column < Dataset::kFeatures ? 16 : Dataset::kClasses - 1;
      const char expected = column < Dataset::kFeatures ? ',' : '\n';
      if (end == cursor || value < 0 || value > high || (*end != expected && !(expected == '\n' && *end == '\0'))) {
        throw std::runtime_error(path + ": line " + std::to_string(line) + ", column " + std::to_string(column + 1) +
                                 ": expected an integer in [0, " + std::to_string(high) + "]");
      }
      if (column < Dataset::kFeatures) all.features.push_back(static_cast<float>(value) / 16.0f);
      else all.labels.push_back(static_cast<int>(value));
      cursor = *end == '\0' ? end : end + 1;
    }
  }
  if (all.size() < 100) throw std::runtime_error(path + ": only " + std::to_string(all.size()) + " images");
  return all;
}

void append(Dataset& to, const Dataset& from, int index) {
  to.features.insert(to.features.end(), from.row(index), from.row(index) + Dataset::kFeatures);
  to.labels.push_back(from.labels[index]);
}

}  // namespace

DigitsSplit loadDigits(const std::string& path, uint64_t seed) {
  DigitsSplit split;
  split.path = path.empty() ? findDigits() : path;
  const Dataset all = parseCsv(readGzip(split.path), split.path);
  std::vector<int> order(all.size());
  for (int i = 0; i < all.size(); ++i) order[i] = i;
  Random(deriveSeed(seed, kSplitPurpose)).shuffle(order);
  const int testCount = static_cast<int>(all.size() * kTestFraction);
  for (int i = 0; i < all.size(); ++i) append(i < all.size() - testCount ? split.train : split.test, all, order[i]);
  return split;
}

}  // namespace ddp
