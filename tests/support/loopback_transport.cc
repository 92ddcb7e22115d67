// SPDX-License-Identifier: Apache-2.0
#include "tests/support/loopback_transport.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "base/error.h"
#include "transport/registry/registry.h"

namespace loom::test {
namespace {

using transport::CallTag;
using transport::Connection;
using transport::RecvSink;
using transport::Region;
using transport::Transport;

// Pieces handed to a sink, as a real transport would (multiples of 16 bytes).
constexpr size_t kPieceBytes = 64 * 1024;

// One direction between two ranks: whole messages, each with the call it belongs to.
struct Channel {
  struct Message {
    std::vector<char> bytes;
    uint64_t sequence;
    transport::CallDescriptor call;
  };
  std::mutex mutex;
  std::deque<Message> messages;
  bool failed = false;  // the sender's call failed (failAll)
  int failureCode = 0;
  std::string failureReason;
};

// Channels by (communicator, from, to): both ranks of a pair find the same two channels.
class Hub {
 public:
  std::shared_ptr<Channel> channel(uint64_t commUid, int from, int to) {
    std::lock_guard lock(mutex_);
    std::weak_ptr<Channel>& slot = channels_[{commUid, from, to}];
    std::shared_ptr<Channel> channel = slot.lock();
    if (!channel) {
      channel = std::make_shared<Channel>();
      slot = channel;
    }
    return channel;
  }

 private:
  std::mutex mutex_;
  std::map<std::tuple<uint64_t, int, int>, std::weak_ptr<Channel>> channels_;
};

Hub& hub() {
  static Hub instance;
  return instance;
}

class LoopbackConnection final : public Connection {
 public:
  LoopbackConnection(Transport& owner, int rank, int peer, std::shared_ptr<Channel> out, std::shared_ptr<Channel> in)
      : owner_(owner), rank_(rank), peer_(peer), out_(std::move(out)), in_(std::move(in)) {}

  // Handed over at once: the bytes are copied into the peer's queue.
  void postSend(const Region& region, size_t offset, size_t bytes) override {
    if (bytes == 0 || offset + bytes > region.bytes) throwUsage("loopback: postSend outside its region");
    checkRegistered(region);
    Channel::Message message{std::vector<char>(region.base + offset, region.base + offset + bytes), sendTag_.sequence,
                             sendTag_.call};
    {
      std::lock_guard lock(out_->mutex);
      out_->messages.push_back(std::move(message));
    }
    loopbackCounters().bytesSent += bytes;
    ++loopbackCounters().messagesSent;
  }

  void postRecv(size_t bytes, RecvSink* sink) override {
    if (sink_ != nullptr || bytes == 0) throwUsage("loopback: bad postRecv");
    sink_ = sink;
    recvBytes_ = bytes;
  }

  bool progress() override {
    if (sink_ == nullptr) return false;
    Channel::Message message;
    {
      std::lock_guard lock(in_->mutex);
      if (in_->failed && in_->messages.empty()) {
        throw ExplainedError(static_cast<loomResult_t>(in_->failureCode),
                             "peer rank " + std::to_string(peer_) + " failed: " + in_->failureReason);
      }
      if (in_->messages.empty()) return false;
      message = std::move(in_->messages.front());
      in_->messages.pop_front();
    }
    transport::checkSameCall(recvTag_, message.sequence, message.call, rank_, peer_);
    if (message.bytes.size() != recvBytes_) {
      throwRemote("loopback: rank " + std::to_string(peer_) + " sent " + std::to_string(message.bytes.size()) +
                  " bytes, rank " + std::to_string(rank_) + " expected " + std::to_string(recvBytes_));
    }
    for (size_t offset = 0; offset < recvBytes_; offset += kPieceBytes) {
      sink_->deliver(offset, message.bytes.data() + offset, std::min(kPieceBytes, recvBytes_ - offset));
    }
    loopbackCounters().bytesReceived += recvBytes_;
    sink_ = nullptr;
    return true;
  }

  bool sendDone() const override { return true; }
  bool recvDone() const override { return sink_ == nullptr; }
  int peer() const override { return peer_; }
  Transport& transport() const override { return owner_; }
  void setSendTag(const CallTag& tag) override { sendTag_ = tag; }
  void setRecvTag(const CallTag& tag) override { recvTag_ = tag; }

  void fail(int code, const std::string& reason) {
    std::lock_guard lock(out_->mutex);
    out_->failed = true;
    out_->failureCode = code;
    out_->failureReason = reason;
  }

 private:
  void checkRegistered(const Region& region) const;

  Transport& owner_;
  int rank_;
  int peer_;
  std::shared_ptr<Channel> out_;
  std::shared_ptr<Channel> in_;
  CallTag sendTag_;
  CallTag recvTag_;
  RecvSink* sink_ = nullptr;
  size_t recvBytes_ = 0;
};

class LoopbackTransport final : public Transport {
 public:
  LoopbackTransport(Bootstrap& bootstrap, const std::vector<int>& peers, uint64_t commUid) {
    const int rank = bootstrap.rank();
    for (int peer : peers) {
      connections_[peer] = std::make_unique<LoopbackConnection>(
          *this, rank, peer, hub().channel(commUid, rank, peer), hub().channel(commUid, peer, rank));
    }
    bootstrap.barrier();  // both ends of every channel exist before anyone sends
  }

  const char* name() const override { return "loopback"; }
  Connection* connection(int peer) override {
    auto found = connections_.find(peer);
    if (found == connections_.end()) throwUsage("loopback: no connection to rank " + std::to_string(peer));
    return found->second.get();
  }
  void failAll(int code, const std::string& reason) override {
    for (auto& [peer, connection] : connections_) connection->fail(code, reason);
  }

  // Like a verbs memory region: a key per registration, which a send must present.
  bool registersMemory() const override { return true; }
  Region registerRegion(void* base, size_t bytes) override {
    const uint64_t key = nextKey_++;
    live_[key] = Region{static_cast<char*>(base), bytes, key};
    ++loopbackCounters().registrations;
    ++loopbackCounters().liveRegistrations;
    return live_[key];
  }
  void deregisterRegion(const Region& region) override {
    if (live_.erase(region.key) != 1) throwInternal("loopback: deregistering a region that is not registered");
    --loopbackCounters().liveRegistrations;
  }
  bool isRegistered(const Region& region) const {
    auto found = live_.find(region.key);
    return found != live_.end() && found->second.base == region.base && found->second.bytes == region.bytes;
  }

 private:
  std::map<int, std::unique_ptr<LoopbackConnection>> connections_;
  std::map<uint64_t, Region> live_;  // used by the rank's own thread only
  uint64_t nextKey_ = 1;
};

void LoopbackConnection::checkRegistered(const Region& region) const {
  if (!static_cast<const LoopbackTransport&>(owner_).isRegistered(region)) {
    throwInternal("loopback: postSend from a region this transport did not register (or deregistered)");
  }
}

}  // namespace

LoopbackCounters& loopbackCounters() {
  thread_local LoopbackCounters counters;
  return counters;
}

LoopbackRegistration::LoopbackRegistration() {
  transport::registerTransport(
      transport::TransportEntry{
          "loopback", "in-process queues",
          [](const transport::Endpoint& a, const transport::Endpoint& b) {
            return a.hostHash == b.hostHash && a.pid == b.pid;
          },
          "is in another process",
          [](Bootstrap& bootstrap, const std::vector<int>& peers, const transport::TransportOptions& options) {
            return std::make_unique<LoopbackTransport>(bootstrap, peers, options.commUid);
          },
          size_t{128} << 10},
      0);
}

LoopbackRegistration::~LoopbackRegistration() { transport::unregisterTransport("loopback"); }

}  // namespace loom::test
