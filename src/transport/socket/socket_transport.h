// SPDX-License-Identifier: Apache-2.0
// TCP transport for peers on other hosts (or on this host with LOOM_SHM_DISABLE=1).
// Non-blocking sockets with TCP_NODELAY; several sockets per peer, each message striped over
// them in fixed-size blocks so large messages use several streams. Every connection proves
// it knows the communicator's secret before any other byte is read from it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/bootstrap.h"
#include "transport/transport.h"

namespace loom::transport {

struct SocketOptions {
  int socketsPerPeer = 2;          // LOOM_SOCKET_NSOCKS
  size_t stripeBytes = 512 * 1024; // messages larger than this use several sockets
  int timeoutMs = 600000;          // connecting and accepting during setup
};

// The transport (transport.h) of one rank for one communicator: one SocketConnection per peer.
// Its failAll() tells every peer why where a message boundary allows (a Failure frame: the
// peer fails with the same code and reason) and shuts every connection down, so that the
// peers' calls fail at once instead of waiting for their timeout.

// Collective over `bootstrap`: every rank calls it with its list of socket peers (symmetric;
// lists may be empty).
std::unique_ptr<Transport> createSocketTransport(Bootstrap& bootstrap, const std::vector<int>& peers,
                                                 const SocketOptions& options);

}  // namespace loom::transport
