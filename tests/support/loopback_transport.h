// SPDX-License-Identifier: Apache-2.0
// A transport for tests only: ranks that are threads of one process exchange messages through
// in-memory queues. Registered from a test (registerLoopbackTransport), it shows that a
// transport is a folder's worth of code plus one registry entry: nothing in core names it.
//
// Each rank thread counts the bytes its connections moved (thread-local, since a call on the
// NULL stream runs on the thread that issued it), so a test can prove the loopback carried a
// collective rather than shm or sockets.
#pragma once

#include <cstdint>

namespace loom::test {

// Adds the "loopback" entry to the transport registry, preferred over every other; it joins
// ranks of the same process. Unregisters in the destructor.
class LoopbackRegistration {
 public:
  LoopbackRegistration();
  ~LoopbackRegistration();
  LoopbackRegistration(const LoopbackRegistration&) = delete;
  LoopbackRegistration& operator=(const LoopbackRegistration&) = delete;
};

struct LoopbackCounters {
  uint64_t bytesSent = 0;
  uint64_t bytesReceived = 0;
  uint64_t messagesSent = 0;
  // The loopback registers memory as an RDMA transport must (Transport::registersMemory), so
  // the executor's registration path runs in tests: regions registered, and those still live.
  uint64_t registrations = 0;
  int64_t liveRegistrations = 0;
};
// This thread's counts since the last reset.
LoopbackCounters& loopbackCounters();

}  // namespace loom::test
