// The one interface every transport implements (shm, socket; later UCX, verbs, CUDA IPC).
//
// A Connection joins this rank to one peer in both directions. Messages are matched in order:
// the k-th message this rank posts for sending arrives as the k-th message the peer posts for
// receiving, and both sides know its size (the schedule tells them). At most one send and one
// receive are in flight per connection; progress() moves them without ever blocking, so one
// thread can drive many connections (a ring sends right while it receives from the left) and
// the executor decides when to spin, yield or sleep.
#pragma once

#include <poll.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace loom::transport {

class Doorbell;

// What every rank must agree on about one collective call. The in-place flag is each rank's
// own business and is not compared.
struct CallDescriptor {
  uint8_t collective;
  uint8_t type;
  uint8_t op;
  uint8_t flags;  // bit 0: in place
  int32_t root;
  uint64_t count;
  bool operator==(const CallDescriptor&) const = default;
};
static_assert(sizeof(CallDescriptor) == 16);

// Names a descriptor for error messages ("allreduce(count 4096, float32, sum)"); supplied by
// the layer that knows collectives, so transports need not.
using DescribeCall = std::string (*)(const CallDescriptor&);

// The call a connection's messages belong to. Transports that frame their messages (sockets)
// send it with each one and compare what arrives with their own: ranks that disagree on a
// call fail with loomInvalidUsage naming both views instead of mixing data (LOOM_CHECK).
// sequence 0: not checked.
struct CallTag {
  uint64_t sequence = 0;
  CallDescriptor call{};
  DescribeCall describe = nullptr;
};

// Throws loom::ExplainedError(loomInvalidUsage) naming both calls when a message from `peer`
// belongs to another call than `mine` (either sequence 0: not checked).
void checkSameCall(const CallTag& mine, uint64_t theirSequence, const CallDescriptor& theirs, int self, int peer);

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

class Connection {
 public:
  virtual ~Connection() = default;
  Connection() = default;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Starts sending `bytes` from `data`; `data` must stay valid until sendDone(). bytes > 0.
  virtual void postSend(const void* data, size_t bytes) = 0;
  // Starts receiving the next message, exactly `bytes` long, into `sink`. bytes > 0.
  virtual void postRecv(size_t bytes, RecvSink* sink) = 0;
  // Moves posted operations forward without blocking; true if any byte moved. Throws
  // loom::Error (loomRemoteError / loomSystemError) when the peer is gone or the wire is bad.
  virtual bool progress() = 0;
  // A send is done once its bytes are handed to the transport (the buffer may be reused),
  // not necessarily received.
  virtual bool sendDone() const = 0;
  virtual bool recvDone() const = 0;

  virtual int peer() const = 0;
  virtual const char* kind() const = 0;  // "shm", "socket": for logs and errors

  // For sleeping when nothing moves: a socket adds its fd with the events it waits for;
  // shared memory instead rings this rank's doorbell when it posts data or frees space.
  virtual void addPollFds(std::vector<pollfd>& /*fds*/) const {}

  // The call the next messages belong to (see CallTag); set before they are posted.
  virtual void setCallTag(const CallTag& /*tag*/) {}
  // Error path only, after another connection failed: if the peer has reported its own
  // failure on this connection (sockets: a Failure frame), throws it as loom::ExplainedError;
  // otherwise returns. Never blocks. The connection is unusable afterwards.
  virtual void throwPeerReport() {}
};

}  // namespace loom::transport
