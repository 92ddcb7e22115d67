// SPDX-License-Identifier: Apache-2.0
// Which host a rank runs on, and which machine: ranks of one host share memory, ranks of one
// machine share its cores. They differ where hosts are containers or network namespaces on
// one node (each its own host ID, all on the same cores), or where LOOM_HOSTID is set.
#pragma once

#include <cstdint>
#include <string>

namespace loom {

// FNV-1a of LOOM_HOSTID when set, else of hostname + kernel boot id (so two containers with
// one hostname on different machines differ, and a rebooted host changes identity). Ranks with
// equal hashes mean to share memory; memoryDomainHash says whether they can.
uint64_t hostHash();
std::string hostName();

// The kernel this rank runs on (its boot id), whatever LOOM_HOSTID, the hostname or the
// namespaces say: ranks with equal hashes may compete for the same cores (the connector also
// compares their CPU affinity). hostHash() where the boot id cannot be read.
uint64_t machineHash();

// The kernel and the PID namespace: Loom's shared memory opens a peer's memfd through
// /proc/<pid>/fd, which works only between processes of one PID namespace on one kernel.
uint64_t memoryDomainHash();

// hostHash() joined with the kernel and the network namespace: ranks with equal values can
// reach each other over loopback (the store bootstrap's choice of listen address).
uint64_t loopbackDomainHash();

}  // namespace loom
