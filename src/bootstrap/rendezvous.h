// SPDX-License-Identifier: Apache-2.0
// The rendezvous protocol between the ranks and the root server (src/bootstrap/root_server.cc).
// After the authentication handshake (purpose RootRendezvous) each rank sends
//   hello {magic "LMRH", version, nranks, rank, its bootstrap listener address, how long it waits}
// and, once all nranks hellos are in, the root answers every rank with
//   reply {magic "LMRR", version, status, nranks, payload bytes} + payload
// where the payload is the table of listener addresses (status 0) or an error message; the
// records are in rendezvous_wire.h. A rank that comes after the rendezvous is over is answered
// at once with how it ended (root_tombstone.h).
#pragma once

#include <sys/socket.h>

#include <string>
#include <vector>

#include "base/net/socket.h"
#include "bootstrap/socket_bootstrap.h"

namespace loom::rendezvous {

// The rank side: connects to the root (retrying until the deadline: it may not be up yet),
// authenticates, announces itself and returns every rank's listener address. Throws
// loom::Error: loomInvalidUsage when the root reports an inconsistent communicator (duplicate
// rank, nranks mismatch) or one that formed without this rank, loomSystemError when not every
// rank arrived in time (naming those that did and those that did not), loomSystemError or
// loomRemoteError for network failures. `who` starts
// every message (e.g. "rank 2").
std::vector<sockaddr_storage> exchangeWithRoot(const UniqueIdContents& id, int rank, int nranks,
                                               const sockaddr_storage& listener,
                                               const BootstrapOptions& options,
                                               net::Deadline deadline, const std::string& who);

}  // namespace loom::rendezvous
