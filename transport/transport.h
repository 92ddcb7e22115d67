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
#include <vector>

namespace loom::transport {

class Doorbell;

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
};

}  // namespace loom::transport
