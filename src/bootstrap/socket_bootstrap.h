// SPDX-License-Identifier: Apache-2.0
// The socket implementation of Bootstrap (base/bootstrap.h): the unique id, the root's
// rendezvous server and the TCP ring among the ranks.
#pragma once

#include <sys/socket.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/bootstrap.h"
#include "base/net/socket.h"
#include "loom.h"

namespace loom {

// What the 128-byte loomUniqueId carries (encoded with a magic and version, checked on decode).
struct UniqueIdContents {
  sockaddr_storage rootAddress{};  // the rendezvous listener (IPv4 or IPv6)
  Secret secret{};                 // every connection must prove it knows this
  uint64_t commUid = 0;            // random; names this communicator's shm segments
  // Set for env-based init (loomCommInitFromEnv), where ranks may start before rank 0 opens
  // the root: they retry a refused connection until their timeout. Otherwise the root was up
  // when the id was made, and a refusal (after a short grace) means it is gone for good.
  bool rootMayStartLate = false;
  // Which of the communicators made from one launcher's environment in this process this is
  // (rendezvous_wire.h): 1 for the first loomCommInitFromEnv, 2 for the next, ...; 0 for a
  // unique id's. Only with rootMayStartLate.
  uint32_t generation = 0;
  // No root listens yet: rank 0 starts it when it inits (an id made from a pinned address
  // with NCCL's meaning, loomGetUniqueIdFlags). Only with rootMayStartLate.
  bool rankZeroStartsRoot = false;
};

// The most ranks one communicator may have. The root holds a socket (a file descriptor) per
// rank until all have joined, and every rank keeps a table of all listener addresses; 65536
// keeps both within what one process and the bootstrap ring serve in reasonable time. Checked
// by the API before anything is sized by nranks.
constexpr int kMaxRanks = 1 << 16;

loomUniqueId encodeUniqueId(const UniqueIdContents& contents);
// Throws loom::Error(loomInvalidArgument) with a clear message on a malformed id.
UniqueIdContents decodeUniqueId(const loomUniqueId& id);

struct BootstrapOptions {
  int timeoutMs = 600000;
  const std::atomic<bool>* abortFlag = nullptr;  // checked while waiting; set by loomCommAbort
  std::string commName;                          // for messages
};

// Rendezvous at the root, authenticate, learn every rank's address, connect the ring.
std::unique_ptr<Bootstrap> createSocketBootstrap(const UniqueIdContents& id, int rank, int nranks,
                                                 const BootstrapOptions& options);

// How a ring learns where its ranks listen: given this rank's advertised listener address,
// every rank's, by rank, before the deadline.
using RingRendezvous =
    std::function<std::vector<sockaddr_storage>(const sockaddr_storage& advertised, net::Deadline deadline)>;

// The same TCP ring over another rendezvous (the root's, above; a store's,
// bootstrap/store_bootstrap.h): listens on `localAddress`, learns the table from `rendezvous`,
// connects the ring, every connection proving it knows `secret`.
std::unique_ptr<Bootstrap> createRingBootstrap(const Secret& secret, uint64_t commUid,
                                               const sockaddr_storage& localAddress, int rank, int nranks,
                                               const BootstrapOptions& options, const RingRendezvous& rendezvous);

// What a root is for.
struct RootOptions {
  // The id leaves the process (loomGetUniqueId, loomCommInitFromEnv): ranks Loom does not
  // control may come late, so the finished rendezvous leaves a tombstone (root_tombstone.h)
  // that answers them. The roots Loom starts for its own ranks (loomCommSplit, loomCommShrink,
  // loomCommInitAll) close their listener instead: nobody else knows their id.
  bool published = false;
  uint32_t generation = 0;  // UniqueIdContents::generation
};

// The root's rendezvous server, run on a background thread of the process that created it.
// It authenticates each rank, collects nranks hellos, answers each with the address table and
// ends. Strangers (bad secret, garbage, stalls) are dropped and logged; they never block it.
// `pinned`: listen on this address (LOOM_COMM_ID) rather than an ephemeral port.
// Returns the unique id that ranks pass to loomCommInitRank.
loomUniqueId startRootServer(const sockaddr_storage* pinned, const Secret* pinnedSecret,
                             const RootOptions& options = {});

// Stops this process's root server for `id` if it still runs (ncclCommInitRankScalable's
// unused ids): its port closes, and a rank that comes to it is refused. False: not this
// process's, or over. Throws loomInvalidArgument on a malformed id.
bool stopRootServer(const loomUniqueId& id);
Secret randomSecret();

}  // namespace loom
