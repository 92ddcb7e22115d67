// SPDX-License-Identifier: Apache-2.0
#include "bootstrap/root_registry.h"

#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "base/error.h"
#include "base/log.h"
#include "bootstrap/root_tombstone.h"

namespace loom::rendezvous {

namespace {

// How long freePort waits for the keeper to close a tombstone: it only has to finish a poll.
constexpr int kCloseWaitMs = 5000;
// The keeper's longest sleep: every change wakes it (wake_), so this only bounds a lost wake-up.
constexpr int kIdlePollMs = 60000;

// The fork handlers stay registered after the registry is destroyed at exit: they do nothing
// then (a fork from a later exit handler).
std::atomic<bool> registryAlive{false};

// Runs `step` of the keeper on `tombstone`: a failure (out of memory) costs that step, not
// the keeper.
template <class Step>
void tolerate(const Tombstone& tombstone, Step&& step) {
  try {
    step();
  } catch (const std::exception& error) {
    LOOM_WARN(NET, "root tombstone on port %u: %s", static_cast<unsigned>(tombstone.port()), error.what());
  }
}

}  // namespace

// ---- HeldListener -----------------------------------------------------------------------------

HeldListener::HeldListener(net::Socket socket) {
  RootRegistry& registry = RootRegistry::instance();
  std::lock_guard lock(registry.mutex_);
  registry.forgetInheritedLocked();
  id_ = registry.nextId_++;
  fd_ = socket.fd();
  registry.held_[id_] = fd_;
  (void)socket.release();  // ours now
}

HeldListener& HeldListener::operator=(HeldListener&& other) noexcept {
  if (this != &other) {
    reset();
    fd_ = other.fd_;
    id_ = other.id_;
    other.fd_ = -1;
  }
  return *this;
}

void HeldListener::reset() {
  if (fd_ < 0) return;
  RootRegistry& registry = RootRegistry::instance();
  std::lock_guard lock(registry.mutex_);
  // Not listed any more: a fork handler closed this (inherited) descriptor already. Closed
  // under the lock, so a fork in between cannot hand a child a descriptor nobody closes.
  if (registry.held_.erase(id_) != 0) ::close(fd_);
  fd_ = -1;
}

// ---- RootRegistry -----------------------------------------------------------------------------

RootRegistry& RootRegistry::instance() {
  static RootRegistry registry;
  return registry;
}

RootRegistry::RootRegistry() : owner_(getpid()) {
  registryAlive.store(true);
  pthread_atfork(&RootRegistry::beforeFork, &RootRegistry::afterForkInParent, &RootRegistry::afterForkInChild);
}

// The keeper is stopped across fork, so that a process with tombstones forks as a process
// without threads of Loom's (a child that starts threads of its own needs that, under
// ThreadSanitizer and with allocators that lack glibc's fork guard), and the lock is held, so
// the child sees every list whole. The keeper's tombstones wait in kept_ meanwhile.
void RootRegistry::beforeFork() {
  if (!registryAlive.load()) return;
  RootRegistry& registry = instance();
  std::unique_ptr<std::thread> keeper;
  {
    std::lock_guard lock(registry.mutex_);
    registry.forgetInheritedLocked();  // a child forking again: its keeper is not its own
    registry.pausing_ = true;
    keeper = std::move(registry.keeper_);
  }
  if (keeper) {
    registry.wakeKeeper();
    keeper->join();
  }
  registry.mutex_.lock();
}

void RootRegistry::afterForkInParent() {
  if (!registryAlive.load()) return;
  RootRegistry& registry = instance();
  registry.pausing_ = false;
  if (!registry.stop_.load() && (!registry.kept_.empty() || !registry.buried_.empty())) {
    try {
      registry.startKeeperLocked();
    } catch (const std::exception& error) {
      LOOM_WARN(NET, "root registry: the tombstones' keeper did not restart after fork: %s", error.what());
    }
  }
  registry.mutex_.unlock();
  registry.closed_.notify_all();  // a freePort waiting for the pause to end
}

void RootRegistry::afterForkInChild() {
  if (!registryAlive.load()) return;
  RootRegistry& registry = instance();
  // Little more than close(): the child of a threaded process may call little else here. The
  // threads and their objects are forgotten at the child's first use of the registry.
  for (const auto& [id, fd] : registry.held_) ::close(fd);
  registry.held_.clear();
  registry.pausing_ = false;
  registry.mutex_.unlock();
}

// A forked child inherits these objects but not the threads: joining one could hang, so the
// child leaks them; their listeners are closed already (afterForkInChild).
void RootRegistry::forgetInheritedLocked() {
  if (getpid() == owner_) return;
  for (Server& server : servers_) (void)server.thread.release();
  servers_.clear();
  (void)keeper_.release();
  for (auto& tombstone : buried_) (void)tombstone.release();
  buried_.clear();
  for (auto& tombstone : kept_) (void)tombstone.release();
  kept_.clear();
  closeRequests_.clear();
  requested_ = served_ = 0;
  wake_.reset();
  owner_ = getpid();
}

RootRegistry::~RootRegistry() {
  std::vector<Server> servers;
  std::unique_ptr<std::thread> keeper;
  std::vector<std::unique_ptr<Tombstone>> buried;
  {
    std::lock_guard lock(mutex_);
    forgetInheritedLocked();
    stop_.store(true);
    servers.swap(servers_);
    keeper = std::move(keeper_);
    buried.swap(buried_);
  }
  // Joined and destroyed without the lock: a listener's reset takes it.
  wakeKeeper();
  for (Server& server : servers) server.thread->join();
  if (keeper) keeper->join();
  kept_.clear();  // the keeper is gone: its tombstones close here, while the lock still exists
  registryAlive.store(false);
}

void RootRegistry::freePort(uint16_t port, const std::string& address) {
  std::vector<std::unique_ptr<Tombstone>> doomed;
  std::unique_lock lock(mutex_);
  forgetInheritedLocked();
  // A fork in another thread has the keeper stopped: its tombstones are back at once.
  closed_.wait_for(lock, std::chrono::milliseconds(kCloseWaitMs), [&] { return !pausing_; });
  for (const Server& server : servers_) {
    if (server.port == port && !server.finished->load()) {
      throwUsage("the rendezvous of an earlier communicator of this process still listens at " + address +
                 ": it waits for its ranks (or for its timeout, LOOM_TIMEOUT_MS); an address serves the next "
                 "communicator once the one before has formed");
    }
  }
  for (size_t i = buried_.size(); i-- > 0;) {
    if (buried_[i]->port() != port) continue;
    doomed.push_back(std::move(buried_[i]));
    buried_.erase(buried_.begin() + static_cast<std::ptrdiff_t>(i));
  }
  if (keeper_) {
    closeRequests_.push_back(port);
    const uint64_t ticket = ++requested_;
    wakeKeeper();
    if (!closed_.wait_for(lock, std::chrono::milliseconds(kCloseWaitMs), [&] { return served_ >= ticket; })) {
      LOOM_WARN(NET, "root registry: the tombstone on %s did not close within %d ms", address.c_str(), kCloseWaitMs);
    }
  }
  lock.unlock();
  doomed.clear();  // their listeners take the lock to close
}

void RootRegistry::startServer(uint16_t port, std::function<void(const std::atomic<bool>&)> body) {
  std::lock_guard lock(mutex_);
  forgetInheritedLocked();
  for (size_t i = servers_.size(); i-- > 0;) {
    if (servers_[i].finished->load()) {
      servers_[i].thread->join();  // over already: returns at once
      servers_.erase(servers_.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
  auto finished = std::make_shared<std::atomic<bool>>(false);
  auto thread = std::make_unique<std::thread>([this, body = std::move(body), finished] {
    try {
      body(stop_);
    } catch (const std::exception& error) {
      LOOM_WARN(NET, "root server failed: %s", error.what());
    }
    finished->store(true);
  });
  servers_.push_back(Server{std::move(thread), std::move(finished), port});
}

void RootRegistry::bury(uint16_t port, std::unique_ptr<Tombstone> tombstone) {
  std::lock_guard lock(mutex_);
  forgetInheritedLocked();
  for (Server& server : servers_) {
    if (server.port == port) server.port = 0;
  }
  if (stop_.load()) return;  // process exit: nobody to answer any more (destroyed after the lock)
  buried_.push_back(std::move(tombstone));
  if (!keeper_ && !pausing_) startKeeperLocked();  // paused: restarted after the fork
  wakeKeeper();
}

void RootRegistry::startKeeperLocked() {
  if (!wake_.valid()) wake_ = net::Socket(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!wake_.valid()) throwSystem("eventfd for the root's tombstones");
  keeper_ = std::make_unique<std::thread>([this] { keep(); });
}

void RootRegistry::wakeKeeper() const {
  if (!wake_.valid()) return;
  const uint64_t one = 1;
  (void)!::write(wake_.fd(), &one, sizeof(one));
}

// Serves every tombstone in one poll. While it runs only this thread touches kept_; the others
// hand theirs over (buried_) and ask for ports (closeRequests_) under the lock, and wake it. It
// returns at exit and before a fork (beforeFork), leaving kept_ whole.
void RootRegistry::keep() {
  std::vector<pollfd> fds;
  std::vector<size_t> firsts;  // each tombstone's first entry in fds
  for (;;) {
    std::vector<std::unique_ptr<Tombstone>> doomed;
    uint64_t servedUpTo = 0;
    bool leave = false;
    {
      std::lock_guard lock(mutex_);
      for (auto& tombstone : buried_) kept_.push_back(std::move(tombstone));
      buried_.clear();
      for (uint16_t port : closeRequests_) {
        for (size_t i = kept_.size(); i-- > 0;) {
          if (kept_[i]->port() != port) continue;
          doomed.push_back(std::move(kept_[i]));
          kept_.erase(kept_.begin() + static_cast<std::ptrdiff_t>(i));
        }
      }
      closeRequests_.clear();
      servedUpTo = requested_;
      while (kept_.size() > kMaxTombstones) {  // the oldest goes first
        doomed.push_back(std::move(kept_.front()));
        kept_.erase(kept_.begin());
      }
      leave = stop_.load() || pausing_;
    }
    doomed.clear();  // closes their listeners (each takes the lock)
    {
      std::lock_guard lock(mutex_);
      served_ = std::max(served_, servedUpTo);
    }
    closed_.notify_all();
    if (leave) return;
    for (const auto& tombstone : kept_) {
      tolerate(*tombstone, [&] { tombstone->answerWaiting(); });
    }

    // Asleep until a rank connects, a handshake runs out of time or the registry wakes it.
    net::Deadline wake = net::Deadline::afterMs(kIdlePollMs);
    fds.assign(1, pollfd{wake_.fd(), POLLIN, 0});
    firsts.clear();
    for (const auto& tombstone : kept_) {
      firsts.push_back(fds.size());
      tombstone->appendPollFds(fds, wake);
    }
    const int ready = ::poll(fds.data(), fds.size(), wake.pollTimeoutMs(kIdlePollMs));
    if (ready < 0) continue;  // interrupted: the revents say nothing
    if (fds[0].revents & POLLIN) {
      uint64_t count = 0;
      (void)!::read(wake_.fd(), &count, sizeof(count));
    }
    for (size_t i = 0; i < kept_.size(); ++i) {
      tolerate(*kept_[i], [&] { kept_[i]->serve(fds.data() + firsts[i]); });
    }
  }
}

}  // namespace loom::rendezvous
