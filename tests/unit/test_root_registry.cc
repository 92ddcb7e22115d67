// SPDX-License-Identifier: Apache-2.0
// The root registry (src/bootstrap/root_registry.h) when things fail: a rendezvous server whose
// thread ends without a tombstone, a tombstone that cannot be kept (no descriptor for the
// keeper), a tombstone whose listener cannot accept, a keeper whose poll fails. Each must end
// in a clear state (ranks answered, the port closed so late ranks are refused) without a
// deadlock or a thread spinning. Every case runs in a forked child under a guard of seconds,
// so a hang fails the test instead of stopping the suite; the children that run out of file
// descriptors do so on purpose (RLIMIT_NOFILE).
#include <gtest/gtest.h>
#include <loom.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/net/socket.h"
#include "bootstrap/root_registry.h"
#include "bootstrap/socket_bootstrap.h"
#include "tests/support/free_port.h"
#include "tests/support/multiprocess.h"

namespace loom::test {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kGuardSeconds = 20;

// Waits (bounded) until `flag` is set by another process.
void awaitFlag(const std::atomic<int>& flag, const char* what) {
  const auto giveUp = Clock::now() + std::chrono::seconds(kGuardSeconds);
  while (flag.load() == 0) {
    LOOM_REQUIRE(Clock::now() < giveUp, std::string("never happened: ") + what);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

// Lowers this process's descriptor limit to `limit` (at most) and takes every free descriptor
// below it but `spare`: the next `spare` descriptors the process makes succeed, the one after
// fails with EMFILE.
void fillDescriptorTable(rlim_t limit, int spare) {
  rlimit current{};
  LOOM_REQUIRE(getrlimit(RLIMIT_NOFILE, &current) == 0, "getrlimit");
  current.rlim_cur = std::min(current.rlim_cur, limit);
  LOOM_REQUIRE(setrlimit(RLIMIT_NOFILE, &current) == 0, "setrlimit");
  std::vector<int> taken;
  for (int fd; (fd = ::dup(0)) >= 0;) taken.push_back(fd);
  LOOM_REQUIRE(errno == EMFILE && static_cast<int>(taken.size()) >= spare, "could not fill the descriptor table");
  for (int i = 0; i < spare; ++i) ::close(taken[taken.size() - 1 - static_cast<size_t>(i)]);
}

// CPU time this process has used (every thread), in milliseconds.
long cpuMillis() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1000L +
         (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1000L;
}

// A plain TCP connection to `port` on loopback: -1 with errno set when it fails.
int connectTo(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0) return fd;
  const int error = errno;
  ::close(fd);
  errno = error;
  return -1;
}

// Whether `port` refuses connections now (its listener closed), retrying for up to 2 s.
bool refusesSoon(int port) {
  const auto giveUp = Clock::now() + std::chrono::seconds(2);
  for (;;) {
    const int fd = connectTo(port);
    if (fd < 0 && errno == ECONNREFUSED) return true;
    if (fd >= 0) ::close(fd);
    if (Clock::now() > giveUp) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// A communicator of one rank on a published root pinned to `port` (below the ephemeral range,
// so nothing else takes the port once it closes): its rendezvous is over at once, leaving a
// tombstone.
void tombstoneAt(int port) {
  setenv("LOOM_COMM_ID", ("127.0.0.1:" + std::to_string(port)).c_str(), 1);
  loomUniqueId id;
  LOOM_REQUIRE(loomGetUniqueId(&id) == loomSuccess, loomGetLastError(nullptr));
  loomComm_t comm = nullptr;
  LOOM_REQUIRE(loomCommInitRank(&comm, 1, id, 0) == loomSuccess, loomGetLastError(nullptr));
  LOOM_REQUIRE(loomCommDestroy(comm) == loomSuccess, loomGetLastError(nullptr));
}

// A server whose thread ends without burying (its acceptor failed) leaves its listener to be
// closed as its body goes, which takes the registry's lock. The next startServer joins the
// finished threads: never while it holds that lock.
TEST(RootRegistry, AServerEndingWithoutATombstoneDoesNotBlockTheNextStart) {
  const auto outcomes = runProcesses(1, [](int) {
    // Closes its listener (taking the registry's lock) a while after it starts to go.
    struct SlowToClose {
      explicit SlowToClose(rendezvous::HeldListener held) : listener(std::move(held)) {}
      ~SlowToClose() { std::this_thread::sleep_for(std::chrono::milliseconds(300)); }
      rendezvous::HeldListener listener;
    };
    auto owned = std::make_shared<SlowToClose>(rendezvous::HeldListener::listen(net::loopbackAddress(AF_INET)));
    rendezvous::RootRegistry& registry = rendezvous::RootRegistry::instance();
    registry.startServer(0, [owned](const std::atomic<bool>&) {});  // returns at once, burying nothing
    owned.reset();  // the body is its last owner
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // it has returned, and is being destroyed
    registry.startServer(0, [](const std::atomic<bool>&) {});
  }, 10);
  for (const RankOutcome& outcome : outcomes) EXPECT_TRUE(outcome.ok()) << outcome.describe();
}

// The first tombstone of a process starts the keeper, which needs a descriptor (its eventfd).
// Without one the tombstone cannot be kept: the communicator still forms (the root answers its
// ranks) and the port is closed, so a late rank is refused rather than left waiting.
TEST(RootRegistry, ATombstoneThatCannotBeKeptIsClosedAndTheRanksAreAnswered) {
  const auto outcomes = runProcesses(1, [](int) {
    const int port = freePortBelowEphemeralRange();
    sockaddr_storage pinned = net::loopbackAddress(AF_INET);
    net::setPort(pinned, static_cast<uint16_t>(port));
    RootOptions published;
    published.published = true;
    const UniqueIdContents id = decodeUniqueId(startRootServer(&pinned, nullptr, published));
    // Two descriptors: the rank's connection to the root and the root's end of it.
    fillDescriptorTable(256, 2);
    BootstrapOptions options;
    options.timeoutMs = 10000;
    try {
      (void)createSocketBootstrap(id, 0, 1, options);
    } catch (const std::exception& error) {
      LOOM_REQUIRE(false, std::string("the rank was not answered: ") + error.what());
    }
    LOOM_REQUIRE(refusesSoon(port), "the tombstone that could not be kept still holds the port");
  }, kGuardSeconds);
  for (const RankOutcome& outcome : outcomes) EXPECT_TRUE(outcome.ok()) << outcome.describe();
}

// What the tombstones' process says after a rank has knocked (slot 0), and when.
struct KeeperUnderTest {
  int ports[3] = {0, 0, 0};
  std::atomic<int> ready{0};    // the tombstones stand and the process has run out of something
  std::atomic<int> knocked{0};  // a connection waits at the first tombstone
  std::atomic<long> cpuMs{-1};  // the process's CPU time in the second after the knock
  std::atomic<int> checked{0};  // the other slot is done with the ports
};

// Slot 0 keeps `count` tombstones, then runs `starve` (which takes away what the keeper needs);
// slot 1 knocks at the first tombstone. The keeper must close the tombstones it cannot serve
// within a second or two, and not spin meanwhile.
void expectKeeperGivesUp(int count, const std::function<void()>& starve) {
  SharedAcrossFork<KeeperUnderTest> shared;
  const auto outcomes = runProcesses(2, [&](int slot) {
    unsetenv("LOOM_TIMEOUT_MS");
    if (slot == 0) {
      for (int i = 0; i < count; ++i) {
        shared->ports[i] = freePortBelowEphemeralRange();  // not one of the ports taken before it
        tombstoneAt(shared->ports[i]);
      }
      starve();
      shared->ready.store(1);
      awaitFlag(shared->knocked, "the knock");
      const long before = cpuMillis();
      std::this_thread::sleep_for(std::chrono::seconds(1));
      shared->cpuMs.store(cpuMillis() - before);
      awaitFlag(shared->checked, "the checks");
      return;
    }
    awaitFlag(shared->ready, "the starved tombstones");
    // Waits in the listener's queue, where accept fails; refused when the keeper has woken for
    // another reason and given up already (its poll fails whatever wakes it).
    const int knock = connectTo(shared->ports[0]);
    LOOM_REQUIRE(knock >= 0 || errno == ECONNREFUSED, "could not knock");
    shared->knocked.store(1);
    for (int i = 0; i < count; ++i) {
      LOOM_REQUIRE(refusesSoon(shared->ports[i]), "tombstone " + std::to_string(i) + " still listens");
    }
    while (shared->cpuMs.load() < 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    shared->checked.store(1);
    if (knock >= 0) ::close(knock);
    LOOM_REQUIRE(shared->cpuMs.load() < 300,
                 "the tombstones' process spun: " + std::to_string(shared->cpuMs.load()) + " ms of CPU in 1 s");
  }, kGuardSeconds);
  for (const RankOutcome& outcome : outcomes) EXPECT_TRUE(outcome.ok()) << outcome.describe();
}

// No descriptor left: the listener stays readable and every accept fails (EMFILE).
TEST(RootRegistry, ATombstoneThatCannotAcceptIsClosedInsteadOfSpinning) {
  expectKeeperGivesUp(1, [] { fillDescriptorTable(256, 0); });
}

// A poll that fails for good (more descriptors to poll than RLIMIT_NOFILE allows: EINVAL) ends
// the keeper, which closes every tombstone first.
TEST(RootRegistry, AKeeperWhosePollFailsClosesItsTombstonesAndLeaves) {
  expectKeeperGivesUp(3, [] {
    rlimit limit{};
    LOOM_REQUIRE(getrlimit(RLIMIT_NOFILE, &limit) == 0, "getrlimit");
    limit.rlim_cur = 2;  // the keeper polls 4: its eventfd and a listener per tombstone
    LOOM_REQUIRE(setrlimit(RLIMIT_NOFILE, &limit) == 0, "setrlimit");
  });
}

}  // namespace
}  // namespace loom::test
