// SPDX-License-Identifier: Apache-2.0
// Which host a rank runs on, as a 64-bit hash: ranks with equal hashes share memory.
#pragma once

#include <cstdint>
#include <string>

namespace loom {

// FNV-1a of LOOM_HOSTID when set, else of hostname + kernel boot id (so two containers with
// one hostname on different machines differ, and a rebooted host changes identity).
uint64_t hostHash();
std::string hostName();

}  // namespace loom
