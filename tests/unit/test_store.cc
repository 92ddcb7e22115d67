// SPDX-License-Identifier: Apache-2.0
// The C++ side of loomStore_t (src/bootstrap/store.h) over the test's directory store: values
// of any length, a missing key as "not yet" rather than an error, counters, and failures that
// name the operation, the key and the store's reason.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "base/error.h"
#include "bootstrap/store.h"
#include "tests/support/file_store.h"

namespace {

TEST(Store, ValuesOfAnyLengthRoundTrip) {
  loom::test::StoreDirectory directory("values");
  loom::test::FileStore files(directory.path());
  const std::shared_ptr<loom::Store> store = loom::storeFromCallbacks(files.callbacks());
  for (const size_t bytes : {size_t{0}, size_t{1}, size_t{255}, size_t{256}, size_t{257}, size_t{100000}}) {
    std::vector<uint8_t> value(bytes);
    for (size_t i = 0; i < bytes; ++i) value[i] = static_cast<uint8_t>(i * 7 + bytes);
    const std::string key = "k/" + std::to_string(bytes);
    store->set(key, value);
    const auto read = store->get(key, 1000);
    ASSERT_TRUE(read.has_value()) << bytes;
    EXPECT_EQ(*read, value) << bytes;
  }
}

TEST(Store, AMissingKeyIsNotYetThere) {
  loom::test::StoreDirectory directory("missing");
  loom::test::FileStore files(directory.path());
  const std::shared_ptr<loom::Store> store = loom::storeFromCallbacks(files.callbacks());
  EXPECT_FALSE(store->get("nobody/wrote/this", 20).has_value());
  // timeoutMs 0 asks without waiting (how a waiting rank looks up who has arrived), and a
  // value longer than the first read's buffer is read again whole, still without waiting.
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(store->get("nobody/wrote/this", 0).has_value());
  store->set("long", std::vector<uint8_t>(1000, 7));
  EXPECT_EQ(store->get("long", 0), std::vector<uint8_t>(1000, 7));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(500));
}

TEST(Store, AddCountsFromZero) {
  loom::test::StoreDirectory directory("add");
  loom::test::FileStore files(directory.path());
  const std::shared_ptr<loom::Store> store = loom::storeFromCallbacks(files.callbacks());
  EXPECT_EQ(store->add("counter", 1), 1);
  EXPECT_EQ(store->add("counter", 5), 6);
  EXPECT_EQ(store->add("counter", -6), 0);
  EXPECT_EQ(store->add("other", 3), 3);
}

TEST(Store, AFailedCallbackNamesOperationKeyAndReason) {
  loom::test::StoreDirectory directory("failure");
  loom::test::FileStore files(directory.path());
  loomStore_t broken = *files.callbacks();
  broken.set = [](void*, const char*, const void*, size_t) { return loomSystemError; };
  broken.lastError = [](void*) { return "disk full"; };
  const std::shared_ptr<loom::Store> store = loom::storeFromCallbacks(&broken);
  try {
    store->set("a/b", {1, 2, 3});
    FAIL() << "set succeeded";
  } catch (const loom::Error& error) {
    EXPECT_EQ(error.code(), loomSystemError);
    EXPECT_NE(std::string(error.what()).find("store set of key 'a/b' failed"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("disk full"), std::string::npos) << error.what();
  }
}

}  // namespace
