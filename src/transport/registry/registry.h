// SPDX-License-Identifier: Apache-2.0
// Which transport joins two ranks. The registry holds one entry per transport, in order of
// preference: {name, can-connect(a, b), create}. For each peer pair the first entry that both
// ranks allow and that can connect them wins. Every rank decides from the same published facts
// (Endpoint, TransportPolicy), so both sides of a pair always pick alike.
//
// Built in: shm (same host), then socket (anywhere). A new transport is a new folder under
// transport/ plus one entry in registry.cc; tests and plugins may add entries at run time
// (registerTransport) before they create communicators.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/bootstrap.h"
#include "transport/transport.h"

namespace loom::transport {

// What the choice knows about a rank; every rank publishes its own at init.
struct Endpoint {
  int rank = 0;
  uint64_t hostHash = 0;  // base/host_identity.h: equal hashes share memory
  pid_t pid = 0;
};

// Settings of the communicator that its transports follow (from the environment and
// loomConfig_t). A transport with knobs of its own reads them from the configuration registry.
struct TransportOptions {
  int timeoutMs = 600000;  // connection set-up
  uint64_t commUid = 0;    // unique per communicator: names what a transport creates
  size_t shmSlotBytes = 128 * 1024;  // LOOM_SHM_SLOT_BYTES
  int shmSlots = 8;                  // LOOM_SHM_SLOTS
  int socketsPerPeer = 2;            // LOOM_SOCKET_NSOCKS / loomConfig_t.nChannelsPerNetPeer
};

struct TransportEntry {
  std::string name;         // "shm": what LOOM_TRANSPORT names, logs show
  std::string description;  // "shared memory": for errors
  // Whether this transport can join the two ranks; symmetric.
  std::function<bool(const Endpoint& a, const Endpoint& b)> canConnect;
  // What a rank that cannot be reached says in errors ("is on another host").
  std::string unreachable;
  // Collective over `bootstrap`: every rank calls it with its peers for this transport
  // (symmetric lists, possibly empty).
  std::function<std::unique_ptr<Transport>(Bootstrap& bootstrap, const std::vector<int>& peers,
                                           const TransportOptions& options)>
      create;
  // The pipelining granularity that suits it; a ring runs at the largest of its links'.
  size_t pieceBytes = 128 * 1024;
};

// Which entries a rank allows. bit i: entry i.
struct TransportPolicy {
  uint64_t allowed = 0;
  int32_t required = -1;  // the entry a forced choice names (its peers must use it too), or -1
};

// A snapshot of the registered entries, most preferred first: a communicator takes one when
// it connects, so a registration meanwhile cannot change its choices half way.
class TransportRegistry {
 public:
  explicit TransportRegistry(std::shared_ptr<const std::vector<TransportEntry>> entries)
      : entries_(std::move(entries)) {}

  const std::vector<TransportEntry>& entries() const { return *entries_; }
  const TransportEntry& entry(size_t index) const { return entries_->at(index); }
  // Index of the entry called `name`, or -1.
  int index(const std::string& name) const;
  // A digest of the names in order: ranks whose registries differ must not connect.
  uint64_t digest() const;

  // The network transports: the entries that can join ranks on different hosts, most
  // preferred first. What LOOM_NET / loomConfig_t.netName may name.
  std::vector<std::string> networkTransports() const;
  // `forced` ("" = any) names the one transport this rank must use (LOOM_TRANSPORT);
  // `shmDisabled` drops shm (LOOM_SHM_DISABLE=1); `net` ("" = any) names the one network
  // transport allowed (LOOM_NET, loomConfig_t.netName): the other network transports are
  // dropped, on one host too, and the local ones stay. `forced` wins over `net`. Throws
  // loomInvalidArgument for a name no entry has, or for a `net` that is not a network transport.
  TransportPolicy policy(const std::string& forced, bool shmDisabled, const std::string& net = "") const;
  // The first entry both `a` and `b` allow that can connect them; -1 if there is none.
  int firstJoining(const Endpoint& a, const TransportPolicy& pa, const Endpoint& b, const TransportPolicy& pb) const;
  // The entry that joins `a` and `b`: firstJoining(), checked. Throws
  // loomInvalidUsage, as rank `self`, when none can, or when one side requires an entry that
  // does not ("LOOM_TRANSPORT=shm but rank 3 is on another host").
  size_t choose(const Endpoint& a, const TransportPolicy& pa, const Endpoint& b, const TransportPolicy& pb,
                int self) const;
  // True when the entry called `name` joins every pair of `endpoints` (every rank allows it
  // and it can connect them all): what an engine built on that transport alone needs.
  bool joinsEveryPair(const std::string& name, const std::vector<Endpoint>& endpoints,
                      const std::vector<TransportPolicy>& policies) const;

 private:
  std::shared_ptr<const std::vector<TransportEntry>> entries_;
};

// The entries registered now: shm, then socket, unless tests or plugins added others.
TransportRegistry registeredTransports();
// Adds `entry` at `position` (0: preferred over every other). Call it before creating
// communicators, on every rank alike. Throws loomInvalidUsage for a name that is taken.
void registerTransport(TransportEntry entry, size_t position = 0);
// Removes the entry (a test's, when it is done); unknown names are ignored.
void unregisterTransport(const std::string& name);

}  // namespace loom::transport
