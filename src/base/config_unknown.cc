// SPDX-License-Identifier: Apache-2.0
// LOOM_* variables that no entry names, and the nearest-name suggestion shared with unknown
// choice values: a misspelt variable is otherwise silently ignored, which is the mistake
// hardest to see ("why is my timeout not taken?").
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <mutex>

#include "base/config.h"
#include "base/log.h"

namespace loom::config {
namespace {

constexpr std::string_view kPrefix = "LOOM_";

std::string lowered(std::string_view text) {
  std::string result(text);
  for (char& c : result) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return result;
}

// Edits (insert, delete, substitute, swap two neighbours) turning `a` into `b`: the swap makes
// LOOM_TIEMOUT_MS one edit away, as a person sees it.
size_t editDistance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

}  // namespace

std::optional<std::string> closest(std::string_view text, const std::vector<std::string>& candidates) {
  std::optional<std::string> best;
  size_t bestDistance = 0;
  const std::string target = lowered(text);
  for (const std::string& candidate : candidates) {
    const size_t distance = editDistance(target, lowered(candidate));
    if (!best || distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

std::vector<std::string> unknownVariables() {
  std::vector<std::string> known;
  for (const Entry& candidate : entries()) {
    if (std::string_view(candidate.name).starts_with(kPrefix)) known.emplace_back(candidate.name);
  }
  std::vector<std::string> warnings;
  for (char** variable = environ; variable != nullptr && *variable != nullptr; ++variable) {
    const std::string_view assignment(*variable);
    const std::string_view name = assignment.substr(0, assignment.find('='));
    if (!name.starts_with(kPrefix) || find(name) != nullptr) continue;
    std::string warning = std::string(name) + ": unknown variable";
    if (auto nearest = closest(name, known)) warning += "; did you mean " + *nearest + "?";
    warnings.push_back(warning);
  }
  return warnings;
}

void warnUnknownVariablesOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (const std::string& warning : unknownVariables()) LOOM_WARN_ALWAYS(ENV, "%s", warning.c_str());
  });
}

}  // namespace loom::config
