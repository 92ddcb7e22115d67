// SPDX-License-Identifier: Apache-2.0
#include <string>

#include "base/error.h"
#include "transport/transport.h"

namespace loom::transport {

void throwOtherCall(const CallTag& mine, uint64_t theirSequence, const CallDescriptor& theirs, int self, int peer) {
  auto describe = [&](const CallDescriptor& call) {
    return mine.describe != nullptr ? mine.describe(call) : "count " + std::to_string(call.count);
  };
  auto place = [](uint64_t sequence) {
    return (sequence & kPointToPointTag) ? "message #" + std::to_string(sequence & ~kPointToPointTag)
                                         : "call #" + std::to_string(sequence);
  };
  std::string theirText = describe(theirs);
  if (theirSequence != mine.sequence) theirText += " as " + place(theirSequence);
  if (mine.sequence & kPointToPointTag) {
    throw ExplainedError(loomInvalidUsage, "ranks disagree on point-to-point " + place(mine.sequence) + " from rank " +
                                               std::to_string(peer) + " to rank " + std::to_string(self) + ": rank " +
                                               std::to_string(self) + " posted " + describe(mine.call) + " but rank " +
                                               std::to_string(peer) + " posted " + theirText);
  }
  throw ExplainedError(loomInvalidUsage, "ranks disagree on " + place(mine.sequence) + ": rank " +
                                             std::to_string(self) + " called " + describe(mine.call) + " but rank " +
                                             std::to_string(peer) + " called " + theirText);
}

}  // namespace loom::transport
