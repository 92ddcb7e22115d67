// SPDX-License-Identifier: Apache-2.0
#include "c10d_store.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace loom_torch {

namespace {

thread_local std::string lastError;

template <class Body>
loomResult_t guarded(Body&& body) {
  try {
    return body();
  } catch (const std::exception& error) {
    lastError = error.what();
    return loomSystemError;
  }
}

c10d::Store& storeOf(void* context) { return static_cast<C10dStore*>(context)->store(); }

loomResult_t storeSet(void* context, const char* key, const void* value, size_t bytes) {
  return guarded([&] {
    const auto* data = static_cast<const uint8_t*>(value);
    storeOf(context).set(key, std::vector<uint8_t>(data, data + bytes));
    return loomSuccess;
  });
}

// check() never blocks, so a missing key is "not yet" (loomInProgress) without the exception
// that a timed-out wait() throws.
loomResult_t storeGet(void* context, const char* key, void* value, size_t capacity, size_t* length, int timeoutMs) {
  return guarded([&] {
    c10d::Store& store = storeOf(context);
    const auto giveUp = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
    auto pause = std::chrono::microseconds(100);
    while (!store.check({key})) {
      if (std::chrono::steady_clock::now() >= giveUp) return loomInProgress;
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(20000));
    }
    const std::vector<uint8_t> contents = store.get(key);
    if (!contents.empty()) std::memcpy(value, contents.data(), std::min(capacity, contents.size()));
    *length = contents.size();
    return loomSuccess;
  });
}

loomResult_t storeAdd(void* context, const char* key, int64_t delta, int64_t* result) {
  return guarded([&] {
    *result = storeOf(context).add(key, delta);
    return loomSuccess;
  });
}

const char* storeLastError(void*) { return lastError.c_str(); }

}  // namespace

C10dStore::C10dStore(c10::intrusive_ptr<c10d::Store> store) : store_(std::move(store)), callbacks_{} {
  callbacks_.size = sizeof(loomStore_t);
  callbacks_.context = this;
  callbacks_.set = storeSet;
  callbacks_.get = storeGet;
  callbacks_.add = storeAdd;
  callbacks_.lastError = storeLastError;
}

}  // namespace loom_torch
