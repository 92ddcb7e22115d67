// Shared-memory transport for peers on the same host.
//
// Per directed pair a FIFO of slots in a POSIX shm segment (created by the receiver, mapped
// by the sender); per rank one doorbell segment that its peers ring. Segments are unlinked
// as soon as every side has mapped them, so nothing stays in /dev/shm even after kill -9.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/bootstrap.h"
#include "transport/shm/doorbell.h"
#include "transport/transport.h"

namespace loom::transport {

struct ShmOptions {
  size_t slotBytes = 128 * 1024;  // payload per slot (multiple of 64)
  int slotCount = 8;              // slots per FIFO
  std::string namePrefix;         // unique per communicator, e.g. "loom-<commUid hex>-<seq>"
  int timeoutMs = 600000;         // waiting for peers during setup
};

// Everything one rank holds of the shm transport for one communicator: its own doorbell, the
// peers' doorbells and one Connection per shm peer. Destroying it unmaps everything.
class ShmTransport {
 public:
  virtual ~ShmTransport() = default;
  virtual Doorbell& doorbell() = 0;  // this rank's: sleep on it
  // Connection to `peer` (one of the peers given at setup); owned by the ShmTransport.
  virtual Connection* connection(int peer) = 0;
  // After a failed call: where no message is half sent and a slot is free, puts a failure
  // report (code and reason) in each peer's FIFO instead of the next message, so the peer
  // fails with the cause at once rather than waiting for its timeout.
  virtual void failAll(int code, const std::string& reason) = 0;
};

// Collective over `bootstrap`: every rank calls it, each with its list of same-host peers
// (symmetric: if a lists b, b lists a; lists may be empty).
std::unique_ptr<ShmTransport> createShmTransport(Bootstrap& bootstrap, const std::vector<int>& peers,
                                                 const ShmOptions& options);

}  // namespace loom::transport
