// SPDX-License-Identifier: Apache-2.0
#include "transport/shm/cross_memory.h"

#include <sys/uio.h>

#include <cerrno>

namespace loom::transport {

namespace {
// Distinct from zero and from anything a fresh page holds, so a successful probe cannot be
// an accident.
const volatile uint64_t probeWord = 0x4c4f4f4d434d4121ULL;  // "LOOMCMA!"

CrossMemoryStatus classify(int error) {
  switch (error) {
    case ESRCH: return CrossMemoryStatus::PeerGone;
    case EPERM:
    case EACCES:
    case ENOSYS: return CrossMemoryStatus::NotPermitted;
    case EFAULT: return CrossMemoryStatus::BadAddress;
    default: return CrossMemoryStatus::OtherError;
  }
}
}  // namespace

CrossMemoryResult crossMemoryRead(pid_t pid, uint64_t remote, void* local, size_t bytes) {
  char* destination = static_cast<char*>(local);
  while (bytes > 0) {
    iovec localIov{destination, bytes};
    iovec remoteIov{reinterpret_cast<void*>(remote), bytes};
    const ssize_t moved = process_vm_readv(pid, &localIov, 1, &remoteIov, 1, 0);
    if (moved < 0) {
      if (errno == EINTR) continue;
      return {classify(errno), errno};
    }
    if (moved == 0) return {CrossMemoryStatus::BadAddress, EFAULT};  // cannot progress
    destination += moved;
    remote += static_cast<uint64_t>(moved);
    bytes -= static_cast<size_t>(moved);
  }
  return {};
}

uint64_t crossMemoryProbeAddress() { return reinterpret_cast<uint64_t>(&probeWord); }
uint64_t crossMemoryProbeValue() { return probeWord; }

}  // namespace loom::transport
