// SPDX-License-Identifier: Apache-2.0
// The shm FIFO on its own, both ends in one process: a slot is published by its header's
// sequence number (so a small message is one line), pieces of up to kInlineBytes ride in the
// header, laps reuse slots, and a sequence number that is neither this lap's nor the last one's
// is an error, not a wait.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "transport/shm/shm_fifo.h"

namespace loom::transport {
namespace {

struct FifoPair {
  explicit FifoPair(ShmFifoGeometry geometry) {
    const size_t bytes = ShmFifo::segmentBytes(geometry);
    ShmSegment created = ShmSegment::create("loom-test-fifo", bytes);
    ShmSegment opened = ShmSegment::open(getpid(), created.fd(), "loom-test-fifo", bytes);
    consumer.emplace(ShmFifo::format(std::move(created), geometry, 1, 0));
    producer.emplace(ShmFifo::attach(std::move(opened), geometry, 1, 0));
  }
  std::optional<ShmFifo> consumer, producer;
};

std::vector<unsigned char> pattern(size_t bytes, int seed) {
  std::vector<unsigned char> data(bytes);
  for (size_t i = 0; i < bytes; ++i) data[i] = static_cast<unsigned char>(seed * 31 + i * 7);
  return data;
}

// The header that the front slot's payload follows (tests only: reaches into shared memory).
ShmSlotHeader* frontSlotHeader(const ShmFifo& fifo) {
  return reinterpret_cast<ShmSlotHeader*>(const_cast<char*>(static_cast<const char*>(fifo.frontPayload(64))) - 64);
}

TEST(ShmFifo, EmptyFifoHasNothingAndRoom) {
  FifoPair pair({64, 4});
  EXPECT_EQ(pair.consumer->filledSlots(), 0u);
  EXPECT_FALSE(pair.consumer->anyFilled());
  EXPECT_EQ(pair.producer->freeSlots(), 4u);
  EXPECT_TRUE(pair.producer->anyFree());
}

TEST(ShmFifo, EightBytesRideInTheHeaderLine) {
  FifoPair pair({64, 4});
  const std::vector<unsigned char> data = pattern(8, 1);
  pair.producer->push(data.data(), 8, 0, 0);
  ASSERT_EQ(pair.consumer->filledSlots(), 1u);
  EXPECT_TRUE(pair.consumer->anyFilled());
  const ShmSlotHeader header = pair.consumer->frontHeader();
  EXPECT_EQ(header.bytes, 8u);
  const auto* payload = static_cast<const char*>(pair.consumer->frontPayload(8));
  const auto* header64 = reinterpret_cast<const char*>(frontSlotHeader(*pair.consumer));
  EXPECT_GE(payload, header64);
  EXPECT_LE(payload + 8, header64 + 64) << "an 8-byte piece must sit in the header's line";
  EXPECT_EQ(std::memcmp(payload, data.data(), 8), 0);
  pair.consumer->pop();
  EXPECT_EQ(pair.consumer->filledSlots(), 0u);
}

// Receivers reduce straight from the slot (executor: deliver -> combine), so an inline piece
// must be aligned for the widest element (8 bytes: int64, f64): UBSan flagged int64 and f64
// sums read from a payload at header offset 52.
TEST(ShmFifo, AnInlinePieceIsAlignedForTheWidestElement) {
  FifoPair pair({64, 4});
  for (uint32_t bytes : {1u, 2u, 4u, 8u}) {
    const std::vector<unsigned char> data = pattern(bytes, 3);
    pair.producer->push(data.data(), bytes, 0, 0);
    const auto payload = reinterpret_cast<uintptr_t>(pair.consumer->frontPayload(bytes));
    EXPECT_EQ(payload % alignof(uint64_t), 0u) << bytes << "-byte piece at header offset " << payload % 64;
    pair.consumer->pop();
  }
}

TEST(ShmFifo, EveryPieceSizeOverManyLapsArrivesIntact) {
  const ShmFifoGeometry geometry{128, 3};
  FifoPair pair(geometry);
  uint32_t sent = 0, received = 0;
  std::vector<size_t> sizes(40);
  std::iota(sizes.begin(), sizes.end(), 1);  // 1..40, then the slot's edges
  for (size_t extra : {63, 64, 65, 127, 128}) sizes.push_back(extra);
  while (received < sizes.size()) {
    // Fill what fits, then drain part of it: the slots are reused lap after lap.
    while (sent < sizes.size() && pair.producer->freeSlots() > 0) {
      const std::vector<unsigned char> data = pattern(sizes[sent], static_cast<int>(sent));
      pair.producer->push(data.data(), static_cast<uint32_t>(data.size()), 0, sent);
      ++sent;
    }
    EXPECT_FALSE(pair.producer->anyFree() && sent - received == geometry.slotCount);
    for (int i = 0; i < 2 && pair.consumer->filledSlots() > 0; ++i) {
      const ShmSlotHeader header = pair.consumer->frontHeader();
      ASSERT_EQ(header.messageSeq, received);
      ASSERT_EQ(header.bytes, sizes[received]);
      const std::vector<unsigned char> want = pattern(sizes[received], static_cast<int>(received));
      ASSERT_EQ(std::memcmp(pair.consumer->frontPayload(header.bytes), want.data(), want.size()), 0)
          << "message " << received << " of " << want.size() << " bytes";
      pair.consumer->pop();
      ++received;
    }
  }
  EXPECT_EQ(pair.consumer->filledSlots(), 0u);  // last lap's sequence numbers: nothing new
}

TEST(ShmFifo, AnOverwrittenSequenceNumberIsAnErrorNotAWait) {
  FifoPair pair({64, 4});
  const std::vector<unsigned char> data = pattern(16, 2);
  pair.producer->push(data.data(), 16, 0, 0);
  ASSERT_EQ(pair.consumer->filledSlots(), 1u);
  pair.consumer->pop();
  // The next slot has never been written (0); a peer scribbling 77 there is neither 0 nor 2.
  frontSlotHeader(*pair.consumer)->slotSeq = 77;
  try {
    pair.consumer->filledSlots();
    FAIL() << "a corrupt sequence number was taken for an empty slot";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), loomRemoteError);
    EXPECT_NE(std::string(error.what()).find("overwritten"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace loom::transport
