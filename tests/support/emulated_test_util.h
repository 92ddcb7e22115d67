// SPDX-License-Identifier: Apache-2.0
// What the emulated GPU's tests (tests/unit/test_emulated_*.cc) share: RAII for buffers,
// streams and events of device::emulatedRuntime(), a gate that holds a stream's worker, and
// error and data helpers.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "base/device_runtime.h"
#include "base/error.h"
#include "device/device_select.h"
#include "device/emulated_runtime.h"

namespace loom::test {

using device::emulatedClearStickyErrorForTesting;
using device::emulatedEnqueueHostFunctionForTesting;

inline constexpr int kSyncMs = 20000;

inline DeviceRuntime& rt() { return device::emulatedRuntime(); }

inline char* at(void* base, size_t offset) { return static_cast<char*>(base) + offset; }

// Runs `fn`, which must throw loom::Error with `code` and a message containing every word.
inline void expectError(const std::function<void()>& fn, loomResult_t code, const std::vector<std::string>& words) {
  try {
    fn();
    ADD_FAILURE() << "no error thrown";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), code) << error.what();
    for (const std::string& word : words) {
      EXPECT_NE(std::string(error.what()).find(word), std::string::npos) << "'" << word << "' not in: " << error.what();
    }
  }
}

// RAII for what the tests make.
struct DeviceBuffer {
  explicit DeviceBuffer(size_t bytes) : pointer(rt().allocDevice(bytes)) {}
  ~DeviceBuffer() { rt().freeDevice(pointer); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  char* get() const { return static_cast<char*>(pointer); }
  void* pointer;
};
struct PinnedBuffer {
  explicit PinnedBuffer(size_t bytes) : pointer(rt().allocPinnedHost(bytes)) {}
  ~PinnedBuffer() { rt().freePinnedHost(pointer); }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  char* get() const { return static_cast<char*>(pointer); }
  void* pointer;
};
struct StreamHandle {
  StreamHandle() : stream(rt().createStream()) {}
  ~StreamHandle() { rt().destroyStream(stream); }
  StreamHandle(const StreamHandle&) = delete;
  StreamHandle& operator=(const StreamHandle&) = delete;
  operator DeviceStream() const { return stream; }
  DeviceStream stream;
};
struct EventHandle {
  EventHandle() : event(rt().createEvent()) {}
  ~EventHandle() { rt().destroyEvent(event); }
  EventHandle(const EventHandle&) = delete;
  EventHandle& operator=(const EventHandle&) = delete;
  operator DeviceEvent() const { return event; }
  DeviceEvent event;
};

// Holds a stream's worker inside a host function until opened (or 10 s, so a failing test
// cannot hang the suite).
class Gate {
 public:
  void block(DeviceStream stream) {
    emulatedEnqueueHostFunctionForTesting(stream, [this] {
      std::unique_lock lock(mutex_);
      opened_.wait_for(lock, std::chrono::seconds(10), [&] { return open_; });
    });
  }
  void open() {
    {
      const std::lock_guard lock(mutex_);
      open_ = true;
    }
    opened_.notify_all();
  }
  ~Gate() { open(); }

 private:
  std::mutex mutex_;
  std::condition_variable opened_;
  bool open_ = false;
};

inline std::vector<unsigned char> randomBytes(size_t bytes, uint64_t seed) {
  std::mt19937_64 random(seed);
  std::vector<unsigned char> out(bytes);
  for (auto& byte : out) byte = static_cast<unsigned char>(random());
  return out;
}

}  // namespace loom::test
