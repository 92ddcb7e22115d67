// SPDX-License-Identifier: Apache-2.0
// LOOM_FAULT: faults injected into the socket transport, so tests can show that each becomes
// a prompt error on every rank, or is tolerated when it should be.
//
//   LOOM_FAULT=item[,item...]     item = name=value[@rank]   (@rank: only that rank injects)
//   close_after=N     shut the connection down once N bytes (headers included) were sent on it
//   delay_ms=D        sleep D ms before sending each message           (tolerated)
//   short_io=K        move at most K bytes per send/recv system call    (tolerated)
//   corrupt_header=M  flip the magic of the M-th message header sent on each connection
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace loom::transport {

struct FaultPlan {
  int64_t closeAfterBytes = -1;  // -1: never
  int delayMs = 0;
  size_t shortIo = 0;          // 0: no limit
  int64_t corruptHeader = -1;  // 1-based message index; -1: never

  bool any() const { return closeAfterBytes >= 0 || delayMs > 0 || shortIo > 0 || corruptHeader > 0; }
  // Throws loom::Error(loomInvalidArgument) naming the bad item.
  static FaultPlan parse(const std::string& text, int rank);
  static FaultPlan fromEnvironment(int rank);  // LOOM_FAULT; empty plan when unset
  std::string describe() const;
};

}  // namespace loom::transport
