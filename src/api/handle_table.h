// SPDX-License-Identifier: Apache-2.0
// The handles the C API gives out (loomComm_t, loomStream_t) are not pointers into Loom's memory
// but numbers naming a slot of a table: (generation << 32) | (slot << 8) | tag. Loom never
// dereferences what a caller passes; it looks the number up, so
// - a garbage value (a wild pointer, a small integer) is an unknown handle, not a crash;
// - a destroyed handle stays dead: its slot's generation moves on when it is freed, so the next
//   object in that slot gets a different number (with raw pointers, malloc hands the freed block
//   to the next communicator and the stale handle drives it — NCCL has that bug);
// - two threads removing one handle race on the table: one wins, the other finds it gone.
// The tag is odd and differs per kind, so a handle is never NULL, never an aligned pointer, and a
// stream handle passed as a communicator is unknown too. 2^24 slots, 2^32 generations per slot.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "base/fork_guard.h"

namespace loom::api {

template <class Entry>
class HandleTable {
 public:
  explicit HandleTable(uint8_t tag) : tag_(tag) {}

  // Returns the new handle's value; nullopt when every slot is taken.
  std::optional<uintptr_t> add(Entry entry) {
    std::lock_guard lock(mutex_);
    uint32_t index;
    if (!free_.empty()) {
      index = free_.back();
      free_.pop_back();
    } else {
      if (slots_.size() >= kMaxSlots) return std::nullopt;
      index = static_cast<uint32_t>(slots_.size());
      slots_.emplace_back();
    }
    Slot& slot = slots_[index];
    slot.entry = std::move(entry);
    slot.live = true;
    return encode(index, slot.generation);
  }

  // Runs `read(entry)` under the table's lock if `handle` names a live entry; false if not.
  template <class Read>
  bool find(uintptr_t handle, Read&& read) const {
    std::lock_guard lock(mutex_);
    const Slot* slot = lookup(handle);
    if (slot == nullptr) return false;
    read(slot->entry);
    return true;
  }

  // Takes the entry out; nullopt if `handle` is not live (never was, or already removed).
  std::optional<Entry> remove(uintptr_t handle) {
    std::lock_guard lock(mutex_);
    Slot* slot = const_cast<Slot*>(lookup(handle));
    if (slot == nullptr) return std::nullopt;
    std::optional<Entry> entry(std::move(slot->entry));
    slot->entry = Entry();
    slot->live = false;
    ++slot->generation;  // the old number never names this slot again (until 2^32 reuses)
    if (slot->generation == 0) slot->generation = 1;
    free_.push_back(static_cast<uint32_t>(slot - slots_.data()));
    removals_.fetch_add(1, std::memory_order_release);
    return entry;
  }

  // A fork while another thread holds the lock leaves the child a working table
  // (base/fork_guard.h). Only for a table that lives until the process ends.
  void guardAcrossFork() { loom::guardAcrossFork(mutex_); }

  // Counts removals. A thread that found a handle live may trust that finding, without the
  // lock, for as long as this number has not moved (api_handles.cc keeps such a finding per
  // thread for the communicator it used last): only a removal ends a handle's life.
  uint64_t removals() const { return removals_.load(std::memory_order_acquire); }

 private:
  static constexpr size_t kMaxSlots = size_t{1} << 24;
  static_assert(sizeof(uintptr_t) == 8, "handles encode a generation in the upper 32 bits");

  struct Slot {
    uint32_t generation = 1;
    bool live = false;
    Entry entry{};
  };

  uintptr_t encode(uint32_t index, uint32_t generation) const {
    return (uintptr_t{generation} << 32) | (uintptr_t{index} << 8) | tag_;
  }

  const Slot* lookup(uintptr_t handle) const {
    if ((handle & 0xff) != tag_) return nullptr;
    const size_t index = (handle >> 8) & (kMaxSlots - 1);
    const auto generation = static_cast<uint32_t>(handle >> 32);
    if (index >= slots_.size()) return nullptr;
    const Slot& slot = slots_[index];
    if (!slot.live || slot.generation != generation) return nullptr;
    return &slot;
  }

  const uint8_t tag_;
  std::atomic<uint64_t> removals_{0};
  mutable std::mutex mutex_;
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_;
};

}  // namespace loom::api
