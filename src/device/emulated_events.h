// SPDX-License-Identifier: Apache-2.0
// The emulated GPU's events, with CUDA's semantics: each record is its own marker that the
// recording stream completes when it reaches it, and the event only remembers its latest
// record. A wait or query takes the marker that is latest when it is made, so a wait binds to
// the last record enqueued before it and a later re-record does not move it; an event never
// recorded has no marker and is complete.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

namespace loom::device::emulated {

// One record of an event. Shared by the event (while it is the latest), the recording stream's
// task and every wait bound to it, so it outlives a destroyed event as CUDA's records do.
class RecordMarker {
 public:
  // The stream ran the record (failure ""), or will never run it because its work failed.
  void complete(const std::string& failure);
  bool done() const;
  // Blocks until done (a stream's worker, carrying out a wait); returns the failure, "" if none.
  std::string wait() const;
  // "" unless done with a failure.
  std::string failure() const;

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable completed_;
  bool done_ = false;
  std::string failure_;
};

class Event {
 public:
  Event(int device, uint64_t id) : device_(device), id_(id) {}
  int device() const { return device_; }
  uint64_t id() const { return id_; }

  // The record `marker` is now the latest: called once it has been enqueued, so a record that
  // failed to enqueue leaves the event as it was.
  void setLatest(std::shared_ptr<RecordMarker> marker);
  // The latest record; null for an event never recorded.
  std::shared_ptr<RecordMarker> latest() const;

 private:
  const int device_;
  const uint64_t id_;
  mutable std::mutex mutex_;
  std::shared_ptr<RecordMarker> latest_;
};

}  // namespace loom::device::emulated
