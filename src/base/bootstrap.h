// SPDX-License-Identifier: Apache-2.0
// Bootstrap: how the ranks of one communicator exchange small blobs before (and beside) the data
// transports. This is the interface transports and engines use; the real implementation
// rendezvous at the root listener named in the unique id and then runs a TCP ring among the
// ranks (bootstrap/socket_bootstrap.h); tests use an in-process one
// (tests/support/thread_bootstrap.h).
#pragma once

#include <sys/socket.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "loom.h"

namespace loom {

using Secret = std::array<uint8_t, 16>;  // 128-bit shared secret of one communicator

class Bootstrap {
 public:
  virtual ~Bootstrap() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // In place: `data` holds size() blocks of `bytesPerRank`; block rank() is this rank's input;
  // on return every block holds that rank's input. Collective.
  virtual void allGather(void* data, size_t bytesPerRank) = 0;
  virtual void barrier() = 0;
  virtual const Secret& secret() const = 0;
  virtual uint64_t commUid() const = 0;
  // The local address that data-transport listeners should bind to and advertise (chosen by
  // LOOM_SOCKET_IFNAME, or the interface that reaches the root).
  virtual sockaddr_storage localAddress() const = 0;
  // For loomCommShrink, which must reach survivors without the (possibly broken) ring: every
  // rank's bootstrap listener address, by rank, and this rank's listener, kept open for the
  // communicator's life. Empty / -1 where the implementation has none.
  virtual std::vector<sockaddr_storage> listenerAddresses() const { return {}; }
  virtual int listenerFd() const { return -1; }
};

// Runs `step` on every rank and lets every rank learn whether it failed anywhere: a set-up
// step may fail on some ranks only (a peer pair disagreeing on the shm geometry), and no rank
// may then go on to wait for a failed one. Rethrows this rank's own failure; a failure
// elsewhere becomes loomRemoteError naming the rank and `stage`. Collective.
void agreeOnOutcome(Bootstrap& bootstrap, const char* stage, const std::function<void()>& step);

}  // namespace loom
