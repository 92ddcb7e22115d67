// SPDX-License-Identifier: Apache-2.0
// The c10d::Store that torch hands a backend, as Loom's loomStore_t (include/loom.h): the ranks
// of every process group meet through it, so no LOOM_COMM_ID or second port is needed.
#pragma once

#include <loom.h>
#include <torch/csrc/distributed/c10d/Store.hpp>

namespace loom_torch {

// Holds a reference to the store; the callbacks are valid while this object lives.
class C10dStore {
 public:
  explicit C10dStore(c10::intrusive_ptr<c10d::Store> store);
  const loomStore_t* callbacks() const { return &callbacks_; }
  c10d::Store& store() const { return *store_; }

 private:
  c10::intrusive_ptr<c10d::Store> store_;
  loomStore_t callbacks_;
};

}  // namespace loom_torch
