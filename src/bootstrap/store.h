// SPDX-License-Identifier: Apache-2.0
// A key-value store the ranks of a communicator share, for rendezvous without a unique id: the
// C++ side of loomStore_t (include/loom.h). PyTorch's c10d::Store backs it in loom_torch; a
// shared directory or MPI could back it elsewhere. Only set-up uses it, never a collective.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "loom.h"

namespace loom {

class Store {
 public:
  virtual ~Store() = default;
  virtual void set(const std::string& key, const std::vector<uint8_t>& value) = 0;
  // Waits up to timeoutMs for `key`: its value, or nothing when the key is still missing.
  virtual std::optional<std::vector<uint8_t>> get(const std::string& key, int timeoutMs) = 0;
  // The integer under `key` (0 when missing) plus delta, stored and returned.
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
};

// A Store over the caller's callbacks. Checks the struct (size, callbacks present) and copies
// it; every failed callback becomes a loom::Error naming the operation, the key and the
// callback's own reason (lastError). Throws loomInvalidArgument for a bad struct.
std::shared_ptr<Store> storeFromCallbacks(const loomStore_t* callbacks);

}  // namespace loom
