#include <sched.h>

#include <algorithm>

#include "transport/transport.h"

namespace loom::transport {

void WaitSet::watch(const Connection& connection) {
  Bell* bell = connection.bell();
  if (bell == nullptr) return;
  for (const ArmedBell& known : bells_) {
    if (known.bell == bell) return;
  }
  bells_.push_back(ArmedBell{bell, bell->snapshot()});
}

void WaitSet::arm() {
  for (ArmedBell& armed : bells_) armed.seen = armed.bell->snapshot();
}

void WaitSet::sleep(const std::vector<const Connection*>& waiting, int timeoutUs) {
  fds_.clear();
  const ArmedBell* bell = nullptr;
  bool severalBells = false;
  for (const Connection* connection : waiting) {
    connection->addPollFds(fds_);
    Bell* own = connection->bell();
    if (own == nullptr) continue;
    auto armed = std::find_if(bells_.begin(), bells_.end(), [&](const ArmedBell& b) { return b.bell == own; });
    if (armed == bells_.end()) continue;  // not watched: poll or yield instead
    severalBells = severalBells || (bell != nullptr && bell->bell != own);
    bell = &*armed;
  }
  if (!fds_.empty()) {
    // poll cannot see a bell: keep the sleep short when a bell is waited on too.
    ::poll(fds_.data(), fds_.size(), bell != nullptr ? 1 : std::max(1, timeoutUs / 1000));
  } else if (bell != nullptr) {
    // One futex word at a time: with several bells, sleep briefly on one and look again.
    bell->bell->sleep(bell->seen, severalBells ? std::min(timeoutUs, 1000) : timeoutUs);
  } else {
    sched_yield();
  }
}

}  // namespace loom::transport
