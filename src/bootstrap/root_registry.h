// SPDX-License-Identifier: Apache-2.0
// Everything of the root's rendezvous that outlives one call: the server threads of this
// process, and the tombstones of finished rendezvous (root_tombstone.h), which one thread of
// the process (the keeper) serves together for as long as the process lives, so that a rank
// arriving late learns at once why it cannot join instead of waiting for its timeout.
//
// Bounded: at most kMaxTombstones tombstones (the oldest is closed first), one keeper thread
// for all. A port is given back before it is bound again (freePort: a LOOM_COMM_ID reused for
// the next communicator of the same process). Around fork (pthread_atfork) the keeper is
// stopped, so a process whose rendezvous are over forks without threads of Loom's here (the
// server threads of rendezvous still in progress run on), and the child closes its copies of
// every listener: a child that outlived the root would otherwise hold the port open with nobody
// serving it, and late ranks would wait on it for their whole timeout. A tombstone that cannot
// be kept (no descriptor or thread for the keeper, its listener no longer accepts, the keeper's
// poll fails) is closed: late ranks are then refused instead of answered, never left waiting.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "base/net/socket.h"

namespace loom::rendezvous {

class Tombstone;

// A root's listening socket (a server's, then its tombstone's), known to the registry so that
// a forked child closes its copy. Closed by its owner, or in a child by the fork handler; never
// both (an fd number closed twice may name another file by then).
class HeldListener {
 public:
  HeldListener() = default;
  // Binds and listens (net::openListener) under the registry's lock, so that a fork cannot
  // come between and hand the child a copy the fork handler does not know of (it would hold
  // the port for as long as the child lives).
  static HeldListener listen(const sockaddr_storage& address);
  ~HeldListener() { reset(); }
  HeldListener(HeldListener&& other) noexcept : fd_(other.fd_), id_(other.id_) { other.fd_ = -1; }
  HeldListener& operator=(HeldListener&& other) noexcept;
  HeldListener(const HeldListener&) = delete;
  HeldListener& operator=(const HeldListener&) = delete;

  int fd() const { return fd_; }
  void reset();

 private:
  int fd_ = -1;
  uint64_t id_ = 0;
};

class RootRegistry {
 public:
  static constexpr size_t kMaxTombstones = 16;

  static RootRegistry& instance();

  // Before a new root binds `port`: closes this process's tombstone on it. Throws
  // loomInvalidUsage, naming `address`, when a rendezvous of this process still listens there.
  void freePort(uint16_t port, const std::string& address);
  // Runs `body` (a server's rendezvous on `port`) on a thread of its own. `tag` (the id's
  // commUid) names it for stopServer.
  void startServer(uint16_t port, std::function<void(const std::atomic<bool>& stop)> body, uint64_t tag = 0);
  // Stops the server of this process still running on `port` with `tag` (its body sees its stop
  // flag and returns; the listener closes): a rendezvous nobody will come to. False: none.
  bool stopServer(uint16_t port, uint64_t tag);
  // From a finished rendezvous' server thread, before the server answers its ranks: `port` is
  // free to bind again. `tombstone` (null: the server closed its listener) is kept: from now
  // on the keeper answers whoever comes later; where it cannot be kept it is closed (WARN).
  void bury(uint16_t port, std::unique_ptr<Tombstone> tombstone) noexcept;

  ~RootRegistry();
  RootRegistry(const RootRegistry&) = delete;
  RootRegistry& operator=(const RootRegistry&) = delete;

 private:
  friend class HeldListener;
  RootRegistry();

  struct Server {
    std::unique_ptr<std::thread> thread;
    std::shared_ptr<std::atomic<bool>> finished;
    uint16_t port = 0;  // 0 once buried: its port belongs to the tombstone
    std::shared_ptr<std::atomic<bool>> stop;  // this server's; set by stopServer and at exit
    uint64_t tag = 0;
  };

  void keep();  // the keeper thread
  void leaveAfterPollFailure(int error);
  void startKeeperLocked();
  void wakeKeeper() const;
  void forgetInheritedLocked();
  static void beforeFork();
  static void afterForkInParent();
  static void afterForkInChild();

  std::mutex mutex_;
  // The keeper has served a close request. Replaced in a forked child (forgetInheritedLocked):
  // the copy may count waiters of the parent's threads, which glibc would wait for.
  std::unique_ptr<std::condition_variable> closed_;
  std::vector<Server> servers_;
  std::vector<std::unique_ptr<Tombstone>> buried_;  // handed over, not yet taken by the keeper
  std::vector<std::unique_ptr<Tombstone>> kept_;    // the keeper's (see keep())
  std::vector<uint16_t> closeRequests_;             // ports whose tombstone must go
  uint64_t requested_ = 0;                          // close requests made ...
  uint64_t served_ = 0;                             // ... and served by the keeper
  std::unique_ptr<std::thread> keeper_;
  bool keeperFailed_ = false;  // its poll failed: it left, closing every tombstone, for good
  net::Socket wake_;  // an eventfd the keeper polls
  std::map<uint64_t, int> held_;  // every HeldListener's fd, by id
  uint64_t nextId_ = 1;
  std::atomic<bool> stop_{false};
  bool pausing_ = false;  // a fork is under way: the keeper stops and is not restarted
  pid_t owner_;
};

}  // namespace loom::rendezvous
