// SPDX-License-Identifier: Apache-2.0
#include "bootstrap/store.h"

#include <cstddef>

#include "base/error.h"

namespace loom {

namespace {

// The first layout of loomStore_t: a caller compiled against it passes at least this size.
constexpr size_t kStoreV1Bytes = offsetof(loomStore_t, lastError) + sizeof(loomStore_t::lastError);

// Values Loom reads are small (an address, a secret); a longer one is read again whole.
constexpr size_t kFirstReadBytes = 256;

class CallbackStore final : public Store {
 public:
  explicit CallbackStore(const loomStore_t& callbacks) : callbacks_(callbacks) {}

  void set(const std::string& key, const std::vector<uint8_t>& value) override {
    check(callbacks_.set(callbacks_.context, key.c_str(), value.data(), value.size()), "set", key);
  }

  std::optional<std::vector<uint8_t>> get(const std::string& key, int timeoutMs) override {
    std::vector<uint8_t> value(kFirstReadBytes);
    size_t length = 0;
    const loomResult_t first =
        callbacks_.get(callbacks_.context, key.c_str(), value.data(), value.size(), &length, timeoutMs);
    if (first == loomInProgress) return std::nullopt;
    check(first, "get", key);
    if (length > value.size()) {  // the key exists now: this read does not wait
      value.resize(length);
      check(callbacks_.get(callbacks_.context, key.c_str(), value.data(), value.size(), &length, timeoutMs),
            "get", key);
      if (length != value.size()) {
        throwUsage("store get of key '" + key + "': its value changed length while it was read (" +
                   std::to_string(value.size()) + " then " + std::to_string(length) + " bytes)");
      }
    }
    value.resize(length);
    return value;
  }

  int64_t add(const std::string& key, int64_t delta) override {
    int64_t result = 0;
    check(callbacks_.add(callbacks_.context, key.c_str(), delta, &result), "add", key);
    return result;
  }

 private:
  void check(loomResult_t result, const char* operation, const std::string& key) const {
    if (result == loomSuccess) return;
    std::string why;
    if (callbacks_.lastError != nullptr) {
      const char* text = callbacks_.lastError(callbacks_.context);
      if (text != nullptr && *text != '\0') why = std::string(": ") + text;
    }
    const loomResult_t code = result > loomSuccess && result < loomNumResults && result != loomInProgress
                                  ? result
                                  : loomSystemError;
    throw Error(code, std::string("store ") + operation + " of key '" + key + "' failed (result " +
                          std::to_string(static_cast<int>(result)) + ")" + why);
  }

  loomStore_t callbacks_;
};

}  // namespace

std::shared_ptr<Store> storeFromCallbacks(const loomStore_t* callbacks) {
  if (callbacks == nullptr) throwArgument("store is NULL");
  if (callbacks->size < kStoreV1Bytes) {
    throwArgument("store->size is " + std::to_string(callbacks->size) + ", expected sizeof(loomStore_t) = " +
                  std::to_string(sizeof(loomStore_t)) + " (initialise it from the loom.h you compile against)");
  }
  if (callbacks->set == nullptr || callbacks->get == nullptr || callbacks->add == nullptr) {
    throwArgument(std::string("store->") +
                  (callbacks->set == nullptr ? "set" : callbacks->get == nullptr ? "get" : "add") +
                  " is NULL: set, get and add are required");
  }
  loomStore_t copy{};
  copy.size = sizeof(loomStore_t);
  copy.context = callbacks->context;
  copy.set = callbacks->set;
  copy.get = callbacks->get;
  copy.add = callbacks->add;
  copy.lastError = callbacks->lastError;
  return std::make_shared<CallbackStore>(copy);
}

}  // namespace loom
