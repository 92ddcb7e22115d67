// SPDX-License-Identifier: Apache-2.0
// What happens when the library is loaded: from then on the process honours the NCCL_*
// variables whose meaning Loom shares (NCCL_DEBUG, NCCL_SOCKET_IFNAME, ...; docs/nccl.md). Done
// at load, before main, so the first thing Loom reads already sees them; a program that links
// libloom alone never gets here, and keeps ignoring them.
#include "nccl/nccl_shim.h"

namespace {

[[gnu::constructor]] void honourNcclVariables() { (void)loomHonourNcclVariables(); }

}  // namespace
