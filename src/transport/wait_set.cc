// SPDX-License-Identifier: Apache-2.0
#include <sched.h>

#include <algorithm>

#include "transport/transport.h"

namespace loom::transport {

void WaitSet::sleep(const std::vector<const Connection*>& waiting, int timeoutUs) {
  fds_.clear();
  Bell* bell = nullptr;
  bool severalBells = false;
  for (const Connection* connection : waiting) {
    connection->addPollFds(fds_);
    Bell* own = connection->bell();
    if (own == nullptr) continue;
    severalBells = severalBells || (bell != nullptr && bell != own);
    bell = own;
  }
  if (!fds_.empty()) {
    // poll cannot see a bell: keep the sleep short when a bell is waited on too.
    ::poll(fds_.data(), fds_.size(), bell != nullptr ? 1 : std::max(1, timeoutUs / 1000));
  } else if (bell != nullptr) {
    // One futex word at a time: with several bells, sleep briefly on one and look again.
    const auto ready = [&] {
      return std::any_of(waiting.begin(), waiting.end(),
                         [](const Connection* connection) { return connection->bell() != nullptr && connection->readyToProgress(); });
    };
    bell->sleepUnless(ready, severalBells ? std::min(timeoutUs, 1000) : timeoutUs);
  } else {
    sched_yield();
  }
}

}  // namespace loom::transport
