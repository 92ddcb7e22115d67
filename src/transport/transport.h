// SPDX-License-Identifier: Apache-2.0
// The one interface every transport implements (shm and socket today; UCX, verbs, CUDA IPC and
// plugins later), in the spirit of Gloo's Device / Pair / Buffer: a few abstract types with a
// handful of virtuals each. Nothing above this floor names a transport; the registry
// (transport/registry/registry.h) picks one per peer pair.
//
//   Transport   one rank's instance of a transport for one communicator: it owns the
//               connections to the peers it serves, registers memory and tells peers why a
//               call failed.
//   Connection  this rank and one peer, both directions: posted sends of registered regions
//               and posted receives into sinks, moved forward by progress(), never blocking.
//   WaitSet     what a rank sleeps on when nothing moves: the file descriptors and doorbells
//               (Bell) of the connections it waits on.
//
// Messages are matched in order: the k-th message this rank posts for sending to a peer
// arrives as the k-th message that peer posts for receiving from it, and both sides know its
// size (the schedule tells them). At most one send and one receive are in flight per
// connection; progress() moves them without ever blocking, so one thread can drive many
// connections (a ring sends right while it receives from the left) and the executor decides
// when to spin, yield or sleep.
#pragma once

#include <poll.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

namespace loom::transport {

// ---- Calls on the wire -------------------------------------------------------------------------

// What every rank must agree on about one call (algorithms/call_spec.h builds it). The in-place
// flag is each rank's own business and is not compared.
struct CallDescriptor {
  uint8_t collective;
  uint8_t type;
  uint8_t op;
  uint8_t flags;  // bit 0: in place
  int32_t root;
  uint64_t count;
  // Checked on every message's first piece: two 8-byte compares (the fields fill the 16 bytes,
  // no padding) instead of five.
  bool operator==(const CallDescriptor& other) const {
    uint64_t mine[2], theirs[2];
    std::memcpy(mine, this, sizeof(mine));
    std::memcpy(theirs, &other, sizeof(theirs));
    return ((mine[0] ^ theirs[0]) | (mine[1] ^ theirs[1])) == 0;
  }
};
static_assert(sizeof(CallDescriptor) == 16 && std::has_unique_object_representations_v<CallDescriptor>);

// Names a descriptor for error messages ("allreduce(count 4096, float32, sum)"); supplied by
// the layer that knows collectives, so transports need not.
using DescribeCall = std::string (*)(const CallDescriptor&);

// The call a connection's messages belong to. Transports that frame their messages send it
// with each one and compare what arrives with their own: ranks that disagree on a call fail
// with loomInvalidUsage naming both views instead of mixing data (LOOM_CHECK). sequence 0: not
// checked.
// Point-to-point messages carry kPointToPointTag | their place among the messages of their pair
// and direction (1, 2, ...) instead of a call number: not every rank takes part in them.
inline constexpr uint64_t kPointToPointTag = 1ull << 63;

struct CallTag {
  uint64_t sequence = 0;
  CallDescriptor call{};
  DescribeCall describe = nullptr;
};

// Throws loom::ExplainedError(loomInvalidUsage) naming both calls when a message from `peer`
// belongs to another call than `mine` (either sequence 0: not checked).
// Inline: every message's first piece is checked; the error is built out of line.
[[noreturn]] void throwOtherCall(const CallTag& mine, uint64_t theirSequence, const CallDescriptor& theirs, int self,
                                 int peer);
inline void checkSameCall(const CallTag& mine, uint64_t theirSequence, const CallDescriptor& theirs, int self,
                          int peer) {
  if (mine.sequence == 0 || theirSequence == 0) return;
  if (theirSequence == mine.sequence && theirs == mine.call) [[likely]] return;
  throwOtherCall(mine, theirSequence, theirs, self, peer);
}

// ---- Memory ------------------------------------------------------------------------------------

// Memory a transport reads from or writes to, registered with it for the span of a call. RDMA
// transports pin it and keep keys (`key`); host transports need nothing, so for them
// registration costs a few instructions and `key` is 0.
struct Region {
  char* base = nullptr;
  size_t bytes = 0;
  uint64_t key = 0;
};

// Where received bytes go. The transport hands over each piece of the message as soon as it
// is readable, possibly out of order; `offset` is the piece's position in the message and
// pieces never overlap. Pieces start at multiples of 16 bytes, so element boundaries hold for
// every datatype. For shm, `data` points into the peer's shared slot: a reduction reads it in
// place, with no intermediate copy. `data` is valid only during the call.
class RecvSink {
 public:
  virtual void deliver(size_t offset, const void* data, size_t bytes) = 0;
  // Where the message goes when it is only copied (no reduction): a transport that receives
  // into memory it chooses (sockets) can then receive straight there and call delivered()
  // instead of deliver(), saving a copy. Null: use deliver().
  virtual char* destination() { return nullptr; }

 protected:
  ~RecvSink() = default;
};

// ---- Waiting -----------------------------------------------------------------------------------

// A word in memory that peers ring after making progress visible to this rank (shared memory's
// doorbell). Ringing costs the ringer a write to the owner's line only when the owner sleeps:
// peers ring on every message, and owners sleep rarely (after spinning and yielding).
class Bell {
 public:
  // Sleeps until the bell rings or `timeoutUs` passes, unless `ready()` is true once this
  // sleeper is registered. A ring that found nobody asleep wakes nobody, so `ready()` must see
  // every piece of work a peer made visible before such a ring.
  virtual void sleepUnless(const std::function<bool()>& ready, int timeoutUs) = 0;

 protected:
  ~Bell() = default;
};

class Connection;

// What one rank sleeps on when a pass over its connections moved nothing. Connections
// contribute file descriptors (sockets) or their transport's bell (shared memory); poll()
// cannot see a bell, so when both kinds are waited on the sleep is kept short.
class WaitSet {
 public:
  // After a look that found nothing: sleep until one of `waiting`'s sources fires or
  // `timeoutUs` passes (no source: yield the core instead). A bell's sleep ends at once when
  // one of `waiting` on that bell is ready to progress (Connection::readyToProgress).
  void sleep(const std::vector<const Connection*>& waiting, int timeoutUs);

 private:
  std::vector<pollfd> fds_;  // kept between sleeps: no allocation per sleep
};

// ---- The three types -----------------------------------------------------------------------------

class Transport;

class Connection {
 public:
  virtual ~Connection() = default;
  Connection() = default;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Starts sending `bytes` of `region` from `offset`; the region must stay registered and its
  // bytes unchanged until sendDone(). bytes > 0.
  virtual void postSend(const Region& region, size_t offset, size_t bytes) = 0;
  // Starts receiving the next message, exactly `bytes` long, into `sink`. bytes > 0.
  virtual void postRecv(size_t bytes, RecvSink* sink) = 0;
  // Moves posted operations forward without blocking; true if any byte moved. Throws
  // loom::Error (loomRemoteError / loomSystemError) when the peer is gone or the wire is bad.
  virtual bool progress() = 0;
  // progress() may leave waking a sleeping peer about what it moved to a later call (shared
  // memory: the fence a wake-up needs, right after a push, would stall until the pushed line
  // has left for the peer, on the path of every small message). The caller of progress() calls
  // this soon after it stops moving anything, before it yields or sleeps, and when it is done
  // with the connection for now (the executor: after 16 idle rounds, at yield and sleep, at the
  // end of a call). Cheap when there is nothing to wake.
  virtual void flushWakeup() {}
  // A send is done once its bytes are handed to the transport (the buffer may be reused),
  // not necessarily received.
  virtual bool sendDone() const = 0;
  virtual bool recvDone() const = 0;

  virtual int peer() const = 0;
  virtual Transport& transport() const = 0;
  const char* kind() const;  // transport().name(): for logs and errors

  // For sleeping when nothing moves (WaitSet): a socket adds its fds with the events it waits
  // for; shared memory has a bell instead, which peers ring when they post data or free space.
  virtual void addPollFds(std::vector<pollfd>& /*fds*/) const {}
  virtual Bell* bell() const { return nullptr; }
  // Connections with a bell: whether progress() would move something now (data for a posted
  // receive, space for a posted send, a departed peer). A sleeper asks it after registering on
  // the bell, so it must cover everything a peer rings for; true when unsure.
  virtual bool readyToProgress() const { return true; }

  // The call the next messages belong to (see CallTag); set before they are posted. Sends and
  // receives have a tag each: a point-to-point batch tags every message with its own place in
  // its direction, set before that message is posted (a message in flight keeps its tag).
  void setCallTag(const CallTag& tag) {
    setSendTag(tag);
    setRecvTag(tag);
  }
  virtual void setSendTag(const CallTag& /*tag*/) {}
  virtual void setRecvTag(const CallTag& /*tag*/) {}
  // Error path only, after another connection failed: if the peer has reported its own
  // failure on this connection (sockets: a Failure frame), throws it as loom::ExplainedError;
  // otherwise returns. Never blocks. The connection is unusable afterwards.
  virtual void throwPeerReport() {}
  // Slow path only (a wait that has gone idle): throws loom::Error(loomRemoteError) naming the
  // peer when it has left the communicator (destroyed or aborted it) while its process lives
  // on, and nothing it sent before is left to read. Transports where leaving breaks the
  // connection (sockets: EOF) need nothing here.
  virtual void checkPeerPresent() {}
};

class Transport {
 public:
  virtual ~Transport() = default;
  Transport() = default;
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  // "shm", "socket": the registry name, for logs and errors.
  virtual const char* name() const = 0;
  // The connection to `peer`, one of the peers the transport was created for; owned by it.
  virtual Connection* connection(int peer) = 0;
  // Memory this transport's connections may send from (see Region).
  virtual Region registerRegion(void* base, size_t bytes) { return Region{static_cast<char*>(base), bytes, 0}; }
  virtual void deregisterRegion(const Region& /*region*/) {}
  // False for transports whose registerRegion is the plain {base, bytes} above (shm, sockets):
  // the executor then describes a call's buffers itself and skips the register/deregister
  // round per call, which a small exchange would otherwise pay on every message.
  virtual bool registersMemory() const { return false; }
  // After a failed call (the communicator is unusable): tells every peer why where a message
  // boundary allows, so that it fails at once with the same code and reason instead of
  // waiting for its timeout, and stops every connection. This is how a failure reaches ranks on
  // other hosts, which cannot watch this host's processes.
  virtual void failAll(int code, const std::string& reason) = 0;
  // This rank is leaving the communicator (loomCommAbort; destruction does it too): lets peers
  // that wait on it see so (Connection::checkPeerPresent). Safe while a call runs.
  virtual void announceDeparture() {}
};

inline const char* Connection::kind() const { return transport().name(); }

}  // namespace loom::transport
