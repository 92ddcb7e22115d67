// SPDX-License-Identifier: Apache-2.0
#include "thread_bootstrap.h"

#include <condition_variable>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>
#include <exception>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

namespace loom::test {

// A generation-counted rendezvous: every rank deposits its block, the last one to arrive
// publishes the full table and wakes the others.
struct ThreadBootstrapGroup::Shared {
  int nranks;
  uint64_t commUid;
  Secret secret{};
  std::mutex mutex;
  std::condition_variable changed;
  uint64_t generation = 0;
  int arrived = 0;
  std::vector<std::vector<char>> blocks;
  std::vector<char> published;
};

namespace {

class ThreadBootstrap final : public Bootstrap {
 public:
  ThreadBootstrap(std::shared_ptr<ThreadBootstrapGroup::Shared> shared, int rank)
      : shared_(std::move(shared)), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return shared_->nranks; }
  const Secret& secret() const override { return shared_->secret; }
  uint64_t commUid() const override { return shared_->commUid; }
  sockaddr_storage localAddress() const override {
    sockaddr_storage address{};
    auto* in = reinterpret_cast<sockaddr_in*>(&address);
    in->sin_family = AF_INET;
    in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return address;
  }

  void allGather(void* data, size_t bytesPerRank) override {
    auto& s = *shared_;
    std::unique_lock lock(s.mutex);
    const uint64_t myGeneration = s.generation;
    auto* bytes = static_cast<char*>(data);
    s.blocks[rank_].assign(bytes + rank_ * bytesPerRank, bytes + (rank_ + 1) * bytesPerRank);
    if (++s.arrived == s.nranks) {
      s.published.clear();
      for (auto& block : s.blocks) s.published.insert(s.published.end(), block.begin(), block.end());
      s.arrived = 0;
      ++s.generation;
      s.changed.notify_all();
    } else {
      s.changed.wait(lock, [&] { return s.generation != myGeneration; });
    }
    std::memcpy(data, s.published.data(), bytesPerRank * s.nranks);
  }

  void barrier() override {
    std::vector<char> scratch(size());
    allGather(scratch.data(), 1);
  }

 private:
  std::shared_ptr<ThreadBootstrapGroup::Shared> shared_;
  int rank_;
};

}  // namespace

ThreadBootstrapGroup::ThreadBootstrapGroup(int nranks, uint64_t commUid)
    : shared_(std::make_shared<Shared>()) {
  shared_->nranks = nranks;
  std::random_device random;
  shared_->commUid = commUid != 0 ? commUid : (uint64_t(random()) << 32 | random());
  for (auto& byte : shared_->secret) byte = static_cast<uint8_t>(random());
  shared_->blocks.resize(nranks);
}

ThreadBootstrapGroup::~ThreadBootstrapGroup() = default;

std::unique_ptr<Bootstrap> ThreadBootstrapGroup::make(int rank) {
  return std::make_unique<ThreadBootstrap>(shared_, rank);
}

void runThreadRanks(int nranks, const std::function<void(int, Bootstrap&)>& body) {
  ThreadBootstrapGroup group(nranks);
  std::vector<std::exception_ptr> errors(nranks);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < nranks; ++rank) {
    threads.emplace_back([&, rank, bootstrap = group.make(rank)]() mutable {
      try {
        body(rank, *bootstrap);
      } catch (...) {
        errors[rank] = std::current_exception();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (auto& error : errors) {
    if (error) std::rethrow_exception(error);
  }
}

}  // namespace loom::test
