// SPDX-License-Identifier: Apache-2.0
// Single-copy reads from another process's memory (Linux cross-memory attach:
// process_vm_readv). The kernel copies straight from the peer's pages into ours, so a large
// message crosses memory once instead of twice through a shared staging buffer.
//
// Permission follows ptrace rules (same user, and Yama's ptrace_scope or a container's seccomp
// profile may forbid it), so communicators probe it at init and fall back to the staged path.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace loom::transport {

enum class CrossMemoryStatus { Ok, PeerGone, NotPermitted, BadAddress, OtherError };

struct CrossMemoryResult {
  CrossMemoryStatus status = CrossMemoryStatus::Ok;
  int error = 0;  // errno when not Ok
};

// Reads `bytes` from `remote` in process `pid` into `local`, all of it (partial transfers are
// resumed). Never throws.
CrossMemoryResult crossMemoryRead(pid_t pid, uint64_t remote, void* local, size_t bytes);

// A word each process publishes at init so that peers can test whether they may read it.
uint64_t crossMemoryProbeAddress();
uint64_t crossMemoryProbeValue();

}  // namespace loom::transport
