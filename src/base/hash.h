// SPDX-License-Identifier: Apache-2.0
// Deterministic 64-bit FNV-1a: the same value for the same bytes in every rank and process
// (host identity, digests that ranks compare, derived names). Not a cryptographic hash: for
// secrets, base/net/auth.h has SipHash.
#pragma once

#include <cstddef>
#include <cstdint>

namespace loom {

uint64_t fnv1a(const void* data, size_t bytes, uint64_t seed = 0xcbf29ce484222325ull);

}  // namespace loom
