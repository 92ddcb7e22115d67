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

HeldListener HeldListener::listen(const sockaddr_storage& address) {
  RootRegistry& registry = RootRegistry::instance();
  HeldListener held;  // declared first: were it to close (reset) under the lock, it would wait for it
  std::lock_guard lock(registry.mutex_);
  registry.forgetInheritedLocked();
  net::Socket socket = net::openListener(address);
  const uint64_t id = registry.nextId_++;
  registry.held_[id] = socket.fd();
  held.id_ = id;
  held.fd_ = socket.release();  // ours now
  return held;
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

RootRegistry::RootRegistry() : closed_(std::make_unique<std::condition_variable>()), owner_(getpid()) {
  registryAlive.store(true);
  pthread_atfork(&RootRegistry::beforeFork, &RootRegistry::afterForkInParent, &RootRegistry::afterForkInChild);
}

// The keeper is stopped across fork, so that a process with tombstones forks without a thread
// of Loom's that it did not ask for (a child that starts threads of its own needs that, under
// ThreadSanitizer and with allocators that lack glibc's fork guard), and the lock is held, so
// the child sees every list whole. The keeper's tombstones wait in kept_ meanwhile. The join
// is bounded: woken (wake_), the keeper finishes the pass it is in, whose every step returns
// at once (non-blocking sends and reads, at most AuthenticatingAcceptor::kMaxPending accepts a
// listener, at most kMaxTombstones listeners), and leaves at the top of its loop.
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
  // Tombstones nobody would serve are closed (after the lock: each listener's reset takes it).
  std::vector<std::unique_ptr<Tombstone>> unservedKept, unservedBuried;
  if (!registry.stop_.load() && !registry.keeperFailed_ && (!registry.kept_.empty() || !registry.buried_.empty())) {
    try {
      registry.startKeeperLocked();
    } catch (const std::exception& error) {
      LOOM_WARN(NET, "root registry: the tombstones' keeper did not restart after fork (%s): closing them; later "
                "ranks are refused instead of answered", error.what());
      unservedKept.swap(registry.kept_);
      unservedBuried.swap(registry.buried_);
    }
  }
  registry.mutex_.unlock();
  registry.closed_->notify_all();  // a freePort waiting for the pause to end
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
// child leaks them; their listeners are closed already (afterForkInChild). The condition
// variable is leaked too: the parent's threads that waited on it at the fork are counted in
// it, and glibc would have a notify wait for them to wake.
void RootRegistry::forgetInheritedLocked() {
  if (getpid() == owner_) return;
  auto fresh = std::make_unique<std::condition_variable>();  // first: nothing is changed if it throws
  (void)closed_.release();
  closed_ = std::move(fresh);
  for (Server& server : servers_) (void)server.thread.release();
  servers_.clear();
  (void)keeper_.release();
  for (auto& tombstone : buried_) (void)tombstone.release();
  buried_.clear();
  for (auto& tombstone : kept_) (void)tombstone.release();
  kept_.clear();
  closeRequests_.clear();
  requested_ = served_ = 0;
  keeperFailed_ = false;
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
    for (Server& server : servers_) server.stop->store(true);
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
  closed_->wait_for(lock, std::chrono::milliseconds(kCloseWaitMs), [&] { return !pausing_; });
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
  if (keeper_ && !keeperFailed_) {
    closeRequests_.push_back(port);
    const uint64_t ticket = ++requested_;
    wakeKeeper();
    if (!closed_->wait_for(lock, std::chrono::milliseconds(kCloseWaitMs), [&] { return served_ >= ticket; })) {
      LOOM_WARN(NET, "root registry: the tombstone on %s did not close within %d ms", address.c_str(), kCloseWaitMs);
    }
  }
  lock.unlock();
  doomed.clear();  // their listeners take the lock to close
}

// `body` owns its server, and the server's listener takes the lock to close: `task` holds it so
// that, when the thread cannot start, it is destroyed after the lock is released, and the
// thread lets go of it before it says it has finished, so a thread that is joined (below, and
// in ~RootRegistry) never waits for the lock.
void RootRegistry::startServer(uint16_t port, std::function<void(const std::atomic<bool>&)> body, uint64_t tag) {
  auto task = std::make_shared<std::function<void(const std::atomic<bool>&)>>(std::move(body));
  std::vector<Server> over;
  {
    std::lock_guard lock(mutex_);
    forgetInheritedLocked();
    for (size_t i = servers_.size(); i-- > 0;) {
      if (!servers_[i].finished->load()) continue;
      over.push_back(std::move(servers_[i]));
      servers_.erase(servers_.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
  for (Server& server : over) server.thread->join();  // over already: returns at once
  auto finished = std::make_shared<std::atomic<bool>>(false);
  auto stop = std::make_shared<std::atomic<bool>>(false);
  std::lock_guard lock(mutex_);
  servers_.reserve(servers_.size() + 1);  // a running thread is never dropped for want of memory
  auto thread = std::make_unique<std::thread>([task, finished, stop]() mutable {
    try {
      (*task)(*stop);
    } catch (const std::exception& error) {
      LOOM_WARN(NET, "root server failed: %s", error.what());
    }
    task.reset();  // the last owner, unless startServer has not returned yet
    finished->store(true);
  });
  servers_.push_back(Server{std::move(thread), std::move(finished), port, std::move(stop), tag});
}

bool RootRegistry::stopServer(uint16_t port, uint64_t tag) {
  std::lock_guard lock(mutex_);
  for (Server& server : servers_) {
    if (server.port == port && server.tag == tag && !server.finished->load()) {
      server.stop->store(true);
      return true;
    }
  }
  return false;
}

void RootRegistry::bury(uint16_t port, std::unique_ptr<Tombstone> tombstone) noexcept {
  try {
    std::lock_guard lock(mutex_);
    forgetInheritedLocked();
    for (Server& server : servers_) {
      if (server.port == port) server.port = 0;
    }
    // At process exit nobody is left to answer, nor after the keeper's poll failed.
    if (tombstone && !stop_.load() && !keeperFailed_) {
      if (!keeper_ && !pausing_) startKeeperLocked();  // paused: restarted after the fork
      buried_.push_back(std::move(tombstone));
      wakeKeeper();
    }
  } catch (const std::exception& error) {
    LOOM_WARN(NET, "root tombstone on port %u not kept (%s): later ranks are refused instead of answered",
              static_cast<unsigned>(port), error.what());
  }
  tombstone.reset();  // not kept: closed here, after the lock (its listener's reset takes it)
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
    closed_->notify_all();
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
    if (ready < 0 && errno == EINTR) continue;  // the revents say nothing
    if (ready < 0) {
      leaveAfterPollFailure(errno);  // polling again would fail again, at once, for ever
      return;
    }
    if (fds[0].revents & POLLIN) {
      uint64_t count = 0;
      (void)!::read(wake_.fd(), &count, sizeof(count));
    }
    for (size_t i = kept_.size(); i-- > 0;) {
      tolerate(*kept_[i], [&] { kept_[i]->serve(fds.data() + firsts[i]); });
      // An accept tried in this pass (its listener was readable) failed. The listener stays
      // readable while accept fails: kept, it would wake the keeper at every poll, and a late
      // rank would wait in its queue for nothing.
      if ((fds[firsts[i]].revents & POLLIN) == 0 || kept_[i]->acceptError() == 0) continue;
      LOOM_WARN(NET, "root tombstone on port %u: accept fails (%s): closing it; later ranks are refused instead "
                "of answered", static_cast<unsigned>(kept_[i]->port()), errnoText(kept_[i]->acceptError()).c_str());
      kept_.erase(kept_.begin() + static_cast<std::ptrdiff_t>(i));  // closes it (its listener takes the lock)
    }
  }
}

void RootRegistry::leaveAfterPollFailure(int error) {
  LOOM_WARN(NET, "root registry: the tombstones' keeper cannot poll (%s): closing the %zu tombstones of this "
            "process; later ranks are refused instead of answered", errnoText(error).c_str(), kept_.size());
  std::vector<std::unique_ptr<Tombstone>> buried;
  {
    std::lock_guard lock(mutex_);
    keeperFailed_ = true;  // bury closes what comes later; freePort asks nobody
    buried.swap(buried_);
    closeRequests_.clear();
    served_ = requested_;
  }
  closed_->notify_all();
  buried.clear();
  kept_.clear();  // only this thread touches it while the keeper runs
}

}  // namespace loom::rendezvous
