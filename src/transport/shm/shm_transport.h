// SPDX-License-Identifier: Apache-2.0
// Shared-memory transport for peers on the same host.
//
// Per directed pair a FIFO of slots in a POSIX shm segment (created by the receiver, mapped
// by the sender); per rank one doorbell segment that its peers ring, which also lists the
// rank's FIFOs for its peers to open and says when the rank has left the communicator.
// Segments are anonymous memory (shm_segment.h): nothing is ever in /dev/shm, whatever kill.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/bootstrap.h"
#include "transport/transport.h"

namespace loom::transport {

struct ShmOptions {
  size_t slotBytes = 128 * 1024;  // payload per slot (multiple of 64)
  int slotCount = 8;              // slots per FIFO
  std::string namePrefix;         // labels the segments, e.g. "loom-<commUid hex>"
  int timeoutMs = 600000;         // waiting for peers during setup
};

// The transport (transport.h) of one rank for one communicator: its own doorbell, which its
// connections offer as their Bell, the peers' doorbells and one Connection per shm peer.
// Destroying it unmaps everything. failAll() puts a failure report (code and reason) in each
// peer's FIFO where no message is half sent and a slot is free, so the peer fails with the
// cause at once rather than waiting for its timeout.
// Collective over `bootstrap`: every rank calls it, each with its list of same-host peers
// (symmetric: if a lists b, b lists a; lists may be empty).
std::unique_ptr<Transport> createShmTransport(Bootstrap& bootstrap, const std::vector<int>& peers,
                                                 const ShmOptions& options);

}  // namespace loom::transport
