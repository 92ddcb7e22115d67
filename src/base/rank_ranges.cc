// SPDX-License-Identifier: Apache-2.0
#include "base/rank_ranges.h"

#include <algorithm>

namespace loom {

std::string rankRanges(std::vector<int> ranks, size_t maxChars) {
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  if (ranks.empty()) return "none";
  std::string text;
  size_t i = 0;
  while (i < ranks.size()) {
    size_t end = i;
    while (end + 1 < ranks.size() && ranks[end + 1] == ranks[end] + 1) ++end;
    if (!text.empty() && text.size() >= maxChars) {
      return text + ", ... (" + std::to_string(ranks.size() - i) + " more)";
    }
    if (!text.empty()) text += ", ";
    text += std::to_string(ranks[i]);
    if (end > i) text += "-" + std::to_string(ranks[end]);
    i = end + 1;
  }
  return text;
}

std::string arrivalSummary(const std::vector<bool>& arrived) {
  std::vector<int> in, out;
  for (size_t r = 0; r < arrived.size(); ++r) (arrived[r] ? in : out).push_back(static_cast<int>(r));
  std::string text = "arrived " + std::to_string(in.size()) + " of " + std::to_string(arrived.size());
  if (!in.empty()) text += ": " + rankRanges(in);
  if (!out.empty()) text += "; missing: " + rankRanges(out);
  return text;
}

}  // namespace loom
