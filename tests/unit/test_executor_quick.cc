// SPDX-License-Identifier: Apache-2.0
// The executor's quick exchange (src/algorithms/executor_quick.h) against a scripted connection:
// each outcome (done within the spin, adopted by a run after it, failed inside it) and what the
// run that adopts or names it must keep: the data delivered once, no message posted twice, the
// call's deadline and abort, and errors that name the call and the peer. Also the run alone on
// a rank that yields at once (spinPasses 0): its deadline and abort, and how long it yields
// before it sleeps.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/executor.h"
#include "algorithms/schedule.h"
#include "base/error.h"

namespace loom::algo {
namespace {

// A bell that records when its owner first chose to sleep on it (and sleeps at most 1 ms).
class RecordingBell final : public transport::Bell {
 public:
  void sleepUnless(const std::function<bool()>& ready, int timeoutUs) override {
    if (sleeps++ == 0) firstSleep = std::chrono::steady_clock::now();
    if (!ready()) std::this_thread::sleep_for(std::chrono::microseconds(std::min(timeoutUs, 1000)));
  }
  int sleeps = 0;
  std::chrono::steady_clock::time_point firstSleep;
};

// A connection that completes what is posted on it when the test says: a send after
// `sendAfter` progress() calls, a receive (delivering `incoming`) after `recvAfter`; -1: never.
class ScriptedConnection final : public transport::Connection {
 public:
  explicit ScriptedConnection(transport::Transport& owner) : owner_(owner) {}

  int sendAfter = 0;
  int recvAfter = 0;
  bool sendDoneAtPost = false;  // a transport that copies a send away when it is posted
  bool throwOnProgress = false;
  std::vector<char> incoming;
  int sendsPosted = 0, recvsPosted = 0, progressCalls = 0;
  std::vector<uint64_t> sendTags, recvTags;

  void postSend(const transport::Region& region, size_t offset, size_t bytes) override {
    ASSERT_NE(region.base, nullptr);
    ASSERT_LE(offset + bytes, region.bytes);
    ++sendsPosted;
    sendPending_ = !sendDoneAtPost;
    sendProgress_ = 0;
  }
  void postRecv(size_t bytes, transport::RecvSink* sink) override {
    ASSERT_EQ(bytes, incoming.size());
    ++recvsPosted;
    sink_ = sink;
    recvProgress_ = 0;
  }
  bool progress() override {
    ++progressCalls;
    if (throwOnProgress) throw Error(loomRemoteError, "scripted: the wire broke");
    bool moved = false;
    if (sendPending_ && sendAfter >= 0 && ++sendProgress_ > sendAfter) {
      sendPending_ = false;
      moved = true;
    }
    if (sink_ != nullptr && recvAfter >= 0 && ++recvProgress_ > recvAfter) {
      sink_->deliver(0, incoming.data(), incoming.size());
      sink_ = nullptr;
      moved = true;
    }
    return moved;
  }
  bool sendDone() const override { return !sendPending_; }
  bool recvDone() const override { return sink_ == nullptr; }
  int peer() const override { return 1; }
  transport::Bell* bell() const override { return withBell ? &recordingBell : nullptr; }
  bool withBell = false;
  mutable RecordingBell recordingBell;
  transport::Transport& transport() const override { return owner_; }
  void setSendTag(const transport::CallTag& tag) override { sendTags.push_back(tag.sequence); }
  void setRecvTag(const transport::CallTag& tag) override { recvTags.push_back(tag.sequence); }

 private:
  transport::Transport& owner_;
  bool sendPending_ = false;
  int sendProgress_ = 0;
  transport::RecvSink* sink_ = nullptr;
  int recvProgress_ = 0;
};

class ScriptedTransport final : public transport::Transport {
 public:
  const char* name() const override { return "scripted"; }
  transport::Connection* connection(int) override { return &link; }
  void failAll(int, const std::string&) override {}
  ScriptedConnection link{*this};
};

// Rank 0 of 2 sends 8 bytes to rank 1 and receives 8 from it in one batch (message #5 each
// way), as runPeerOps builds it, with `spinPasses` and `timeoutMs` for its waiting.
struct Exchange {
  ScriptedTransport transport;
  std::vector<transport::Connection*> connections{nullptr, &transport.link};
  std::vector<char> out = std::vector<char>(8, 'a'), in = std::vector<char>(8, '?');
  std::vector<UserBuffer> user{{out.data(), 8}, {in.data(), 8}};
  Schedule schedule = pointToPointBatch(0, {PeerOperation{true, 1, 8, 5}, PeerOperation{false, 1, 8, 5}});
  std::atomic<bool> abort{false};
  std::string name = "scripted exchange";
  std::function<std::string()> describe = [this] { return name; };

  Exchange() { transport.link.incoming.assign(8, 'z'); }

  void run(int spinPasses, int timeoutMs = 600000, int yieldBeforeSleepMs = 0) {
    CallSpec call;
    call.collective = Collective::Send;
    call.type = loomUint8;
    call.count = 16;
    call.sequence = transport::kPointToPointTag;
    ExecutionBuffers buffers;
    buffers.user = &user;
    ExecutionContext context;
    context.rank = 0;
    context.nranks = 2;
    context.connections = &connections;
    context.timeoutMs = timeoutMs;
    context.abortFlag = &abort;
    context.operation = describe;
    context.spinPasses = spinPasses;
    context.yieldBeforeSleepMs = yieldBeforeSleepMs;
    execute(call, schedule, buffers, context);
  }
};

TEST(QuickExchange, CompletesWithinTheSpinPostingEachMessageOnceWithItsTag) {
  Exchange exchange;
  exchange.transport.link.recvAfter = 3;  // three idle passes, well inside the spin
  exchange.run(100);
  const ScriptedConnection& link = exchange.transport.link;
  EXPECT_EQ(std::string(exchange.in.begin(), exchange.in.end()), "zzzzzzzz");
  EXPECT_EQ(link.sendsPosted, 1);
  EXPECT_EQ(link.recvsPosted, 1);
  // One pass pushes the send before the receive is posted, then the receive's three idle passes
  // and the one that delivers it.
  EXPECT_EQ(link.progressCalls, 5);
  const std::vector<uint64_t> message5{transport::kPointToPointTag | 5};
  EXPECT_EQ(link.sendTags, message5);
  EXPECT_EQ(link.recvTags, message5);
}

TEST(QuickExchange, ASendCompletedWhenPostedNeedsNoPass) {
  Exchange exchange;
  exchange.schedule = pointToPointBatch(0, {PeerOperation{true, 1, 8, 1}});
  exchange.transport.link.sendDoneAtPost = true;
  exchange.transport.link.sendAfter = -1;  // and no progress() would ever report it
  exchange.run(100000);
  EXPECT_EQ(exchange.transport.link.progressCalls, 0);
}

TEST(QuickExchange, WhatOutlastsTheSpinIsAdoptedNotPostedAgain) {
  Exchange exchange;
  exchange.transport.link.recvAfter = 500;  // long after a spin of 20 idle passes
  exchange.run(20);
  const ScriptedConnection& link = exchange.transport.link;
  EXPECT_EQ(std::string(exchange.in.begin(), exchange.in.end()), "zzzzzzzz");
  EXPECT_EQ(link.sendsPosted, 1);
  EXPECT_EQ(link.recvsPosted, 1);
  EXPECT_EQ(link.recvTags.size(), 1u);  // the adopting run left the posted receive's tag alone
  EXPECT_GT(link.progressCalls, 500);
}

// A receive that never completes, with a timeout of 300 ms: a timeout error naming the call and
// the peer, after the timeout and well within 5 s.
void expectTimeoutNamingThePeer(int spinPasses) {
  Exchange exchange;
  exchange.transport.link.recvAfter = -1;
  const auto start = std::chrono::steady_clock::now();
  try {
    exchange.run(spinPasses, 300);
    FAIL() << "a receive that never completes returned";
  } catch (const Error& error) {
    const std::string text = error.what();
    EXPECT_EQ(error.code(), loomSystemError) << text;
    EXPECT_NE(text.find("scripted exchange timed out"), std::string::npos) << text;
    EXPECT_NE(text.find("recv from rank 1 (scripted)"), std::string::npos) << text;
  }
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_GE(waited, std::chrono::milliseconds(300));
  EXPECT_LT(waited, std::chrono::seconds(5));
}

TEST(QuickExchange, AnAdoptedExchangeTimesOutNamingThePeer) { expectTimeoutNamingThePeer(20); }

TEST(QuickExchange, AnAdoptedExchangeStopsOnAbort) {
  Exchange exchange;
  exchange.transport.link.recvAfter = -1;
  exchange.abort = true;  // set before the call: the run's first yield sees it
  try {
    exchange.run(20);
    FAIL() << "an aborted exchange returned";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("aborted"), std::string::npos) << error.what();
  }
}

// Ranks that outnumber the cores (spinPasses 0) skip the quick exchange and yield at once; the
// run reads the deadline clock only every few yields, and must still time out and see abort.
TEST(QuickExchange, YieldingAtOnceStillTimesOutNamingThePeer) { expectTimeoutNamingThePeer(0); }

TEST(QuickExchange, YieldingAtOnceStopsOnAbortSetDuringTheWait) {
  Exchange exchange;
  exchange.transport.link.recvAfter = -1;
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    exchange.abort = true;
  });
  const auto start = std::chrono::steady_clock::now();
  try {
    exchange.run(0);
    FAIL() << "an aborted exchange returned";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("aborted"), std::string::npos) << error.what();
  }
  aborter.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

// Ranks that outnumber cores yield for ExecutionContext::yieldBeforeSleepMs before a wait
// sleeps (a sleeping rank idles its core, and the kernel refills it unevenly); then they sleep.
TEST(QuickExchange, YieldingAtOnceSleepsOnlyAfterItsYieldTime) {
  Exchange exchange;
  exchange.transport.link.recvAfter = -1;
  exchange.transport.link.withBell = true;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(exchange.run(0, 300, 100), Error);  // times out at 300 ms
  const RecordingBell& bell = exchange.transport.link.recordingBell;
  ASSERT_GT(bell.sleeps, 0) << "the wait never slept";
  EXPECT_GE(bell.firstSleep - start, std::chrono::milliseconds(100));
}

TEST(QuickExchange, AnErrorInsideTheSpinNamesTheCall) {
  Exchange exchange;
  exchange.transport.link.throwOnProgress = true;
  try {
    exchange.run(100);
    FAIL() << "a broken wire returned";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), loomRemoteError);
    EXPECT_EQ(std::string(error.what()).rfind("rank 0: scripted exchange: scripted: the wire broke", 0), 0u)
        << error.what();
  }
}

TEST(QuickExchange, AMessageAboveTheQuickLimitArrivesWhole) {
  // Above kQuickBytes (executor_quick.h) the general run posts them: posted once, delivered whole.
  Exchange exchange;
  exchange.out.assign(1 << 20, 'a');
  exchange.in.assign(1 << 20, '?');
  exchange.user = {{exchange.out.data(), exchange.out.size()}, {exchange.in.data(), exchange.in.size()}};
  exchange.schedule =
      pointToPointBatch(0, {PeerOperation{true, 1, 1 << 20, 1}, PeerOperation{false, 1, 1 << 20, 1}});
  exchange.transport.link.incoming.assign(1 << 20, 'y');
  exchange.transport.link.recvAfter = 2;
  exchange.run(100);
  EXPECT_EQ(exchange.in, std::vector<char>(1 << 20, 'y'));
  EXPECT_EQ(exchange.transport.link.recvsPosted, 1);
}

}  // namespace
}  // namespace loom::algo
