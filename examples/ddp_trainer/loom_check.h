// SPDX-License-Identifier: Apache-2.0
// Loom calls that fail throw, carrying loomGetLastError's account (rank, peer, op, size).
#pragma once

#include <loom.h>

#include <stdexcept>
#include <string>

namespace ddp {

inline void check(loomResult_t result, const char* what, loomComm_t comm = nullptr) {
  if (result == loomSuccess) return;
  throw std::runtime_error(std::string(what) + " failed: " + loomGetErrorString(result) + ": " +
                           loomGetLastError(comm));
}

}  // namespace ddp
