// SPDX-License-Identifier: Apache-2.0
// Finding 5 of issue 14: stream and communicator handles are validated, never trusted.
//
// Before the fix a stream handle was a raw pointer: a second loomStreamDestroy hung, a call on a
// destroyed stream hung or aborted with std::system_error, and a garbage pointer segfaulted. A
// communicator handle whose address was reused by a later communicator drove the new one (NCCL
// has this bug). What must hold: each of these is a clear loomInvalidArgument, and two threads
// racing destroy/abort on one handle see one success and one error. Every case runs in a forked
// child with a watchdog, so a hang or a crash is reported as such.
#include <gtest/gtest.h>
#include <loom.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/multiprocess.h"

namespace {

using loom::test::runProcesses;

void inChild(const std::function<void()>& body) {
  auto outcomes = runProcesses(1, [&](int) { body(); }, 30);
  EXPECT_TRUE(outcomes[0].ok()) << outcomes[0].describe();
}

loomComm_t oneRankComm(const char* name = nullptr) {
  loomComm_t comm = nullptr;
  loomUniqueId id;
  LOOM_REQUIRE(loomGetUniqueId(&id) == loomSuccess, loomGetLastError(nullptr));
  loomConfig_t config = LOOM_CONFIG_INITIALIZER;
  config.timeoutMs = 5000;
  if (name != nullptr) config.commName = name;
  LOOM_REQUIRE(loomCommInitRankConfig(&comm, 1, id, 0, &config) == loomSuccess, loomGetLastError(nullptr));
  return comm;
}

void requireInvalidArgument(loomResult_t code, const char* what, const char* fragment) {
  const std::string message = loomGetLastError(nullptr);
  LOOM_REQUIRE(code == loomInvalidArgument,
               std::string(what) + " returned " + loomGetErrorString(code) + " (" + message + ")");
  LOOM_REQUIRE(message.find(fragment) != std::string::npos,
               std::string(what) + ": message does not say '" + fragment + "': " + message);
}

TEST(Handles, SecondStreamDestroyIsAnError) {
  inChild([] {
    loomStream_t stream = nullptr;
    LOOM_REQUIRE(loomStreamCreate(&stream) == loomSuccess, loomGetLastError(nullptr));
    LOOM_REQUIRE(loomStreamDestroy(stream) == loomSuccess, loomGetLastError(nullptr));
    requireInvalidArgument(loomStreamDestroy(stream), "second loomStreamDestroy", "stream");
  });
}

TEST(Handles, CallsOnADestroyedStreamAreErrors) {
  inChild([] {
    loomComm_t comm = oneRankComm();
    loomStream_t stream = nullptr;
    LOOM_REQUIRE(loomStreamCreate(&stream) == loomSuccess, loomGetLastError(nullptr));
    LOOM_REQUIRE(loomStreamDestroy(stream) == loomSuccess, loomGetLastError(nullptr));
    int32_t in = 3, out = -1;
    requireInvalidArgument(loomAllReduce(&in, &out, 1, loomInt32, loomSum, comm, stream), "loomAllReduce", "stream");
    LOOM_REQUIRE(out == -1, "the call ran");
    requireInvalidArgument(loomStreamSynchronize(stream), "loomStreamSynchronize", "stream");
    requireInvalidArgument(loomStreamQuery(stream), "loomStreamQuery", "stream");
    // A group with a call on the destroyed stream fails at the call, and End reports it.
    LOOM_REQUIRE(loomGroupStart() == loomSuccess, loomGetLastError(nullptr));
    requireInvalidArgument(loomBroadcast(&in, &out, 1, loomInt32, 0, comm, stream), "loomBroadcast in a group", "stream");
    LOOM_REQUIRE(loomGroupEnd() == loomInvalidArgument, "GroupEnd after a refused call did not fail");
    LOOM_REQUIRE(out == -1, "the grouped call ran");
    // The communicator is unharmed.
    LOOM_REQUIRE(loomAllReduce(&in, &out, 1, loomInt32, loomSum, comm, nullptr) == loomSuccess && out == 3,
                 loomGetLastError(comm));
    LOOM_REQUIRE(loomCommDestroy(comm) == loomSuccess, loomGetLastError(nullptr));
  });
}

TEST(Handles, GarbageStreamHandlesAreErrorsNotCrashes) {
  inChild([] {
    loomComm_t comm = oneRankComm();
    // Not handles Loom gave out: small integers, a heap block full of 0xff, a stack address.
    auto block = std::make_unique<unsigned char[]>(4096);
    std::memset(block.get(), 0xff, 4096);
    int onStack = 0;
    const loomStream_t garbage[] = {reinterpret_cast<loomStream_t>(uintptr_t{0x1234}),
                                    reinterpret_cast<loomStream_t>(block.get()),
                                    reinterpret_cast<loomStream_t>(&onStack),
                                    reinterpret_cast<loomStream_t>(~uintptr_t{0} - 7)};
    for (loomStream_t stream : garbage) {
      int32_t in = 1, out = -1;
      requireInvalidArgument(loomAllReduce(&in, &out, 1, loomInt32, loomSum, comm, stream), "loomAllReduce", "stream");
      requireInvalidArgument(loomStreamSynchronize(stream), "loomStreamSynchronize", "stream");
      requireInvalidArgument(loomStreamQuery(stream), "loomStreamQuery", "stream");
      requireInvalidArgument(loomStreamDestroy(stream), "loomStreamDestroy", "stream");
      LOOM_REQUIRE(out == -1, "a call on a garbage stream ran");
    }
    LOOM_REQUIRE(loomCommDestroy(comm) == loomSuccess, loomGetLastError(nullptr));
  });
}

TEST(Handles, GarbageCommunicatorHandlesAreErrorsNotCrashes) {
  inChild([] {
    auto block = std::make_unique<unsigned char[]>(4096);
    std::memset(block.get(), 0xff, 4096);
    const loomComm_t garbage[] = {reinterpret_cast<loomComm_t>(uintptr_t{0x1234}),
                                  reinterpret_cast<loomComm_t>(block.get())};
    for (loomComm_t comm : garbage) {
      int32_t in = 1, out = -1;
      requireInvalidArgument(loomAllReduce(&in, &out, 1, loomInt32, loomSum, comm, nullptr), "loomAllReduce",
                             "communicator");
      requireInvalidArgument(loomCommDestroy(comm), "loomCommDestroy", "communicator");
      requireInvalidArgument(loomCommAbort(comm), "loomCommAbort", "communicator");
    }
  });
}

// The stale handle of a destroyed communicator must not drive a communicator created after
// it, even one that lands at the same address (malloc hands a freed block of the same size out
// again, so with raw pointers a stale handle and a live one can compare equal). Every stale
// handle so far is tried after every new communicator.
TEST(Handles, AStaleCommunicatorHandleDoesNotDriveItsSuccessor) {
  inChild([] {
    std::vector<loomComm_t> stale;
    for (int round = 0; round < 30; ++round) {
      loomComm_t successor = oneRankComm("successor");
      for (loomComm_t old : stale) {
        int count = 0;
        requireInvalidArgument(loomCommCount(old, &count), "loomCommCount on a destroyed communicator's handle",
                               "communicator");
        int32_t in = 7, out = -1;
        requireInvalidArgument(loomAllReduce(&in, &out, 1, loomInt32, loomSum, old, nullptr),
                               "loomAllReduce on a destroyed communicator's handle", "communicator");
        LOOM_REQUIRE(out == -1, "a stale handle drove a live communicator (round " + std::to_string(round) + ")");
      }
      int32_t in = 7, out = -1;
      LOOM_REQUIRE(loomAllReduce(&in, &out, 1, loomInt32, loomSum, successor, nullptr) == loomSuccess && out == 7,
                   loomGetLastError(successor));
      LOOM_REQUIRE(loomCommDestroy(successor) == loomSuccess, loomGetLastError(nullptr));
      requireInvalidArgument(loomCommDestroy(successor), "a second loomCommDestroy", "communicator");
      stale.push_back(successor);
    }
  });
}

// Likewise for streams: a stale stream handle must not reach a new stream at the same address.
TEST(Handles, AStaleStreamHandleDoesNotReachItsSuccessor) {
  inChild([] {
    loomComm_t comm = oneRankComm();
    std::vector<loomStream_t> stale;
    for (int round = 0; round < 20; ++round) {
      loomStream_t successor = nullptr;
      LOOM_REQUIRE(loomStreamCreate(&successor) == loomSuccess, loomGetLastError(nullptr));
      int32_t in = 2, out = -1;
      for (loomStream_t old : stale) {
        requireInvalidArgument(loomAllReduce(&in, &out, 1, loomInt32, loomSum, comm, old), "loomAllReduce", "stream");
        requireInvalidArgument(loomStreamQuery(old), "loomStreamQuery on a stale handle", "stream");
      }
      LOOM_REQUIRE(loomAllReduce(&in, &out, 1, loomInt32, loomSum, comm, successor) == loomSuccess,
                   loomGetLastError(comm));
      LOOM_REQUIRE(loomStreamSynchronize(successor) == loomSuccess && out == 2, loomGetLastError(comm));
      LOOM_REQUIRE(loomStreamDestroy(successor) == loomSuccess, loomGetLastError(nullptr));
      stale.push_back(successor);
    }
    LOOM_REQUIRE(loomCommDestroy(comm) == loomSuccess, loomGetLastError(nullptr));
  });
}

// Runs first() and second() on two threads released at the same instant; requires that
// exactly one returns loomSuccess and the other loomInvalidArgument.
void requireOneWinner(const std::function<loomResult_t()>& first, const std::function<loomResult_t()>& second,
                      const char* what) {
  std::atomic<int> ready{0};
  loomResult_t codes[2] = {loomInternalError, loomInternalError};
  auto racer = [&](int which) {
    ready.fetch_add(1);
    while (ready.load() < 2) {
    }
    codes[which] = which == 0 ? first() : second();
  };
  std::thread other(racer, 1);
  racer(0);
  other.join();
  const int successes = (codes[0] == loomSuccess) + (codes[1] == loomSuccess);
  const int refusals = (codes[0] == loomInvalidArgument) + (codes[1] == loomInvalidArgument);
  LOOM_REQUIRE(successes == 1 && refusals == 1, std::string(what) + ": " + loomGetErrorString(codes[0]) + " / " +
                                                    loomGetErrorString(codes[1]));
}

// Two threads racing to destroy (or abort) one handle: exactly one succeeds, the other gets
// loomInvalidArgument, and nothing crashes or hangs.
TEST(Handles, RacingDestroyAndAbortOnOneHandle) {
  inChild([] {
    for (int round = 0; round < 100; ++round) {
      loomComm_t comm = oneRankComm();
      requireOneWinner([&] { return loomCommDestroy(comm); }, [&] { return loomCommAbort(comm); },
                       "destroy/abort race");
    }
    for (int round = 0; round < 100; ++round) {
      loomStream_t stream = nullptr;
      LOOM_REQUIRE(loomStreamCreate(&stream) == loomSuccess, loomGetLastError(nullptr));
      requireOneWinner([&] { return loomStreamDestroy(stream); }, [&] { return loomStreamDestroy(stream); },
                       "stream destroy race");
    }
  });
}

}  // namespace
