// SPDX-License-Identifier: Apache-2.0
// Lists of ranks as people read them in messages: compact ranges ("0-2, 5, 7-9") and, for a
// rendezvous that waits, who has arrived and who is missing ("arrived 3 of 8: 0-2; missing:
// 3-7"). Capped in length, so a job of thousands of ranks still gets a one-line message.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace loom {

// "0-2, 5, 7-9" for {0, 1, 2, 5, 7, 8, 9} (sorted or not, duplicates ignored); "none" when
// empty. Past about `maxChars` the rest is left out as "... (N more)".
std::string rankRanges(std::vector<int> ranks, size_t maxChars = 160);

// "arrived 3 of 8: 0-2; missing: 3-7" where arrived[r] says whether rank r arrived;
// "arrived 0 of 8; missing: 0-7", "arrived 8 of 8: 0-7".
std::string arrivalSummary(const std::vector<bool>& arrived);

}  // namespace loom
