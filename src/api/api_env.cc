// SPDX-License-Identifier: Apache-2.0
// The environment's NCCL side: Loom's libnccl.so.2 turns the NCCL_* aliases on as it loads
// (a program linked to libloom alone never reads them), and ncclResetDebugInit rereads the
// logging variables.
#include "api/api_internal.h"
#include "base/config.h"
#include "base/log.h"

using namespace loom;

extern "C" {

loomResult_t loomHonourNcclVariables(void) {
  return api::guarded("loomHonourNcclVariables", [] {
    config::honourNcclAliases();
    // Logging read its variables already if anything logged: NCCL_DEBUG must count from now on
    // too. Before that first read this does nothing, and the first log call reads the alias.
    log::rereadSettings();
  });
}

loomResult_t loomResetDebugInit(void) {
  return api::guarded("loomResetDebugInit", [] { log::rereadSettings(); });
}

}  // extern "C"
