// The communicator: one rank's membership in a group of ranks, with its bootstrap, its data
// connections and the machinery that runs collectives as schedules over them.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "algorithms/direct/direct_engine.h"
#include "algorithms/schedule.h"
#include "base/bootstrap.h"
#include "core/settings.h"
#include "loom.h"
#include "transport/shm/shm_arena.h"
#include "transport/shm/shm_transport.h"
#include "transport/socket/socket_transport.h"

namespace loom {
namespace topology {
struct TopologyResult;
struct RankPlace;
}

struct CollectiveCall {
  algo::Collective collective = algo::Collective::AllReduce;
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;  // as in the API call (sendcount for all-gather, recvcount for reduce-scatter)
  loomDataType_t type = loomFloat32;
  loomRedOp_t op = loomSum;
  int root = 0;
};

class Communicator {
 public:
  // Collective over the nranks ranks that share `id`: bootstrap, peer discovery, transports.
  Communicator(const loomUniqueId& id, int nranks, int rank, CommSettings settings);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int size() const { return nranks_; }
  const CommSettings& settings() const { return settings_; }
  const std::string& name() const { return name_; }

  // Calls on one communicator execute in the order they were issued, whichever thread runs
  // them (the caller, a stream thread, a group thread): issuing takes a ticket, and run()
  // waits for its turn. Every ticket must be run exactly once.
  uint64_t takeTicket() { return nextTicket_.fetch_add(1); }
  // Runs one collective to completion on the calling thread. After a failure the
  // communicator is unusable (its connections may hold half a message): every later call
  // fails with the first error, which loomCommGetAsyncError also reports.
  void run(const CollectiveCall& call, uint64_t ticket);

  // Work queued on streams but not finished yet; loomCommFinalize waits for it.
  void asyncWorkAdded() { pendingAsync_.fetch_add(1); }
  void asyncWorkDone();
  void waitForAsyncWork();

  // Collective over this communicator; returns null for LOOM_SPLIT_NOCOLOR.
  std::unique_ptr<Communicator> split(int color, int key, const CommSettings& childSettings);

  // Collective over the survivors (every rank not in `excluded`; those do not call it):
  // a communicator of the survivors in parent-rank order, rendezvousing through the parent's
  // bootstrap listeners so that dead ranks are never waited on (comm_shrink.cc).
  std::unique_ptr<Communicator> shrink(const std::vector<int>& excluded, const CommSettings& childSettings);

  // Makes every wait of this communicator fail promptly (from any thread), also a call's
  // wait for its turn.
  void abort();
  bool aborted() const { return aborted_.load(); }
  // loomCommRevoke: calls in flight fail promptly and later ones are refused, but the
  // bootstrap stays usable (split, shrink) and the failures are not errors of the job.
  void revoke();
  bool revoked() const { return revoked_.load(); }
  // loomInProgress while a revoked communicator still runs a call, else the first error.

  // The first error of any collective, sticky, as loomCommGetAsyncError reports.
  void recordAsyncError(loomResult_t code, const std::string& message);
  loomResult_t asyncError(std::string* message = nullptr) const;

 private:
  struct PeerInfo;
  void connectTransports();
  // comm_topology.cc: the machine model when asked for (LOOM_TOPO_FILE and friends), and the
  // ring order every rank agrees on.
  void loadTopology();
  uint64_t topologyDigest() const;
  void planRing(const std::vector<topology::RankPlace>& places);
  void setUpDirect(const std::vector<PeerInfo>& peers);
  void waitForTurn(uint64_t ticket, const CollectiveCall& call);
  void wakeTurnWaiters();
  void endTurn(uint64_t ticket);
  void runCall(const CollectiveCall& call, uint64_t sequence);
  std::string describeCall(const CollectiveCall& call, uint64_t sequence) const;
  size_t nonFiniteInput(const CollectiveCall& call) const;
  void checkFinite(const CollectiveCall& call, uint64_t sequence, size_t badInput) const;
  void agreeOnSetup(const char* stage, const std::function<void()>& setup);
  const algo::Schedule& scheduleFor(const CollectiveCall& call, const algo::CollectiveShape& shape);
  void* scratch(size_t bytes);

  int rank_;
  int nranks_;
  CommSettings settings_;
  std::string name_;
  std::atomic<bool> aborted_{false};           // stops collectives: abort or revoke
  std::atomic<bool> bootstrapAborted_{false};  // stops bootstrap exchanges: abort only
  std::atomic<bool> revoked_{false};
  std::atomic<int> running_{0};                // calls inside runCall (for revoke's state)
  uint32_t shrinks_ = 0;                       // shrink epochs, to tell offers apart
  std::unique_ptr<Bootstrap> bootstrap_;
  std::unique_ptr<transport::ShmTransport> shm_;
  std::unique_ptr<transport::SocketTransport> sockets_;
  std::vector<transport::Connection*> connections_;  // by peer rank; null when unconnected
  std::vector<pid_t> peerPids_;  // by rank: same-host peers to check for death (0: unchecked)
  std::unique_ptr<transport::ShmArena> arena_;       // all ranks on this host only
  std::unique_ptr<algo::DirectEngine> direct_;
  std::unique_ptr<topology::TopologyResult> topology_;  // null unless a topology was asked for
  std::vector<int> ringOrder_;  // ring position -> rank; ring and chain schedules follow it
  int ringChannels_ = 1;        // channels the topology search found (the host path runs one)

  // The turn: ticket t runs once servedTickets_ == t. The holder of a ticket whose turn has
  // come checks that with one atomic load (the common, uncontended case); only threads that
  // must wait take the mutex, and the finishing call notifies only when someone waits.
  std::mutex runMutex_;
  std::condition_variable turnChanged_;
  std::atomic<uint64_t> nextTicket_{0};
  std::atomic<uint64_t> servedTickets_{0};  // tickets whose call has finished (or failed)
  std::atomic<int> turnWaiters_{0};
  uint64_t sequence_ = 0;  // touched only by the turn holder
  std::atomic<int> pendingAsync_{0};
  std::mutex asyncMutex_;
  std::condition_variable asyncDrained_;
  using ScheduleKey = std::tuple<int, size_t, size_t, int, bool>;
  std::map<ScheduleKey, algo::Schedule> schedules_;
  struct FreeDeleter {
    void operator()(void* p) const { std::free(p); }
  };
  std::unique_ptr<char, FreeDeleter> scratch_;
  size_t scratchBytes_ = 0;

  mutable std::mutex errorMutex_;
  std::atomic<bool> failed_{false};  // asyncError_ != loomSuccess, readable without the lock
  loomResult_t asyncError_ = loomSuccess;
  std::string asyncMessage_;
};

}  // namespace loom

// The opaque handle of the C API.
// Shared ownership: queued stream work and a collective running on another thread keep the
// communicator alive after loomCommDestroy/Abort releases the handle's reference.
struct loomComm {
  std::shared_ptr<loom::Communicator> impl;
  pid_t creatorPid;
};
