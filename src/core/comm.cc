#include "base/datatype.h"
#include "core/comm.h"

#include <netinet/in.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <set>

#include "algorithms/executor.h"
#include "algorithms/peer_liveness.h"
#include "base/error.h"
#include "kernels/host/host_reduce.h"
#include "kernels/host/non_finite.h"
#include "base/log.h"
#include "base/host_identity.h"
#include "topology/rank_order.h"
#include "topology/topology_engine.h"
#include "transport/shm/cross_memory.h"

namespace loom {

// What every rank tells the others at init, to pick a transport per peer.
struct Communicator::PeerInfo {
  uint64_t hostHash;
  int32_t pid;
  uint8_t shmAllowed;   // not disabled by LOOM_SHM_DISABLE / LOOM_TRANSPORT=socket
  uint8_t shmRequired;  // LOOM_TRANSPORT=shm
  uint8_t directAllowed;  // not LOOM_ALGO=ring
  uint8_t crossMemoryAllowed;  // LOOM_CMA=1
  uint64_t pieceBytes;  // schedules must agree: every rank cuts messages the same way
  uint64_t directEagerBytes;  // so must the direct collectives
  uint64_t directChunkBytes;
  uint64_t crossMemoryProbe;  // address of a word peers try to read with process_vm_readv
  uint64_t topologyDigest;    // rings from LOOM_TOPO_FILE / LOOM_GRAPH_FILE; 0 without
  int32_t package;            // CPU socket and NUMA node this rank runs on (-1 unknown)
  int32_t numaNode;
};

Communicator::Communicator(const loomUniqueId& id, int nranks, int rank, CommSettings settings)
    : rank_(rank), nranks_(nranks), settings_(std::move(settings)), connections_(nranks, nullptr) {
  const UniqueIdContents contents = decodeUniqueId(id);
  char uid[17];
  std::snprintf(uid, sizeof(uid), "%016llx", static_cast<unsigned long long>(contents.commUid));
  name_ = settings_.commName.empty() ? std::string(uid) : settings_.commName;
  log::setThreadRank(rank);
  LOOM_INFO(INIT, "comm %s: init rank %d of %d", name_.c_str(), rank, nranks);

  BootstrapOptions options;
  options.timeoutMs = settings_.timeoutMs;
  options.abortFlag = &bootstrapAborted_;
  options.commName = name_;
  bootstrap_ = createSocketBootstrap(contents, rank, nranks, options);
  connectTransports();
  LOOM_INFO(INIT, "comm %s: rank %d of %d ready", name_.c_str(), rank, nranks);
}

// Callers share ownership (loomComm, queued stream work, a running call), so nothing can be
// running when the last owner lets go.
Communicator::~Communicator() = default;

void Communicator::connectTransports() {
  std::vector<PeerInfo> peers(nranks_);
  PeerInfo& mine = peers[rank_];
  std::memset(&mine, 0, sizeof(mine));
  mine.hostHash = topology::hostHash();
  mine.pid = getpid();
  mine.shmAllowed = !settings_.shmDisabled && settings_.transport != TransportChoice::Socket;
  mine.shmRequired = settings_.transport == TransportChoice::Shm;
  mine.pieceBytes = settings_.pieceBytes;
  mine.directAllowed = !settings_.directDisabled;
  mine.crossMemoryAllowed = settings_.crossMemoryEnabled;
  mine.directEagerBytes = settings_.directEagerBytes;
  mine.directChunkBytes = settings_.directChunkBytes;
  mine.crossMemoryProbe = transport::crossMemoryProbeAddress();
  loadTopology();
  mine.topologyDigest = topologyDigest();
  const topology::RankPlace place = topology::placeThisProcess(mine.hostHash);
  mine.package = place.package;
  mine.numaNode = place.numaNode;
  bootstrap_->allGather(peers.data(), sizeof(PeerInfo));
  auto requireSame = [&](const char* variable, uint64_t PeerInfo::*field) {
    for (int peer = 0; peer < nranks_; ++peer) {
      if (peers[peer].*field != mine.*field) {
        throwUsage("rank " + std::to_string(rank_) + ": " + variable + " is " + std::to_string(mine.*field) +
                   " here but " + std::to_string(peers[peer].*field) + " on rank " + std::to_string(peer) +
                   "; set the same value on every rank");
      }
    }
  };
  requireSame("LOOM_PIECE_BYTES", &PeerInfo::pieceBytes);
  requireSame("LOOM_DIRECT_EAGER_BYTES", &PeerInfo::directEagerBytes);
  requireSame("LOOM_DIRECT_CHUNK_BYTES", &PeerInfo::directChunkBytes);
  requireSame("the ring from LOOM_TOPO_FILE/LOOM_GRAPH_FILE (digest)", &PeerInfo::topologyDigest);
  std::vector<topology::RankPlace> places(peers.size());
  for (size_t r = 0; r < peers.size(); ++r) {
    places[r] = topology::RankPlace{peers[r].hostHash, peers[r].package, peers[r].numaNode};
  }
  planRing(places);
  std::vector<pid_t> pids(nranks_);
  std::vector<bool> sameHost(nranks_);
  for (int r = 0; r < nranks_; ++r) {
    pids[r] = peers[r].pid;
    sameHost[r] = peers[r].hostHash == mine.hostHash;
  }
  peerPids_ = algo::checkablePeerPids(pids, sameHost, rank_);

  // Ring and chain algorithms talk to the two ring neighbours; connect each once.
  std::set<int> neighbours;
  const int position = static_cast<int>(std::find(ringOrder_.begin(), ringOrder_.end(), rank_) - ringOrder_.begin());
  if (nranks_ > 1) {
    neighbours.insert(ringOrder_[(position + 1) % nranks_]);
    neighbours.insert(ringOrder_[(position - 1 + nranks_) % nranks_]);
  }
  // Decided from data every rank sees, so every rank picks the same piece size.
  if (settings_.pieceBytes == 0) {
    bool anySocket = false;
    for (int p = 0; p < nranks_ && nranks_ > 1; ++p) {
      const PeerInfo& a = peers[ringOrder_[p]];
      const PeerInfo& b = peers[ringOrder_[(p + 1) % nranks_]];
      anySocket = anySocket || a.hostHash != b.hostHash || !a.shmAllowed || !b.shmAllowed;
    }
    settings_.pieceBytes = anySocket ? size_t{1} << 20 : size_t{128} << 10;
  }
  std::vector<int> shmPeers, socketPeers;
  for (int peer : neighbours) {
    const PeerInfo& other = peers[peer];
    // Decided from data both sides see, so both sides decide the same.
    const bool sameHost = other.hostHash == mine.hostHash;
    const bool useShm = sameHost && mine.shmAllowed && other.shmAllowed;
    if (!useShm && (mine.shmRequired || other.shmRequired)) {
      throwUsage("rank " + std::to_string(rank_) + ": LOOM_TRANSPORT=shm but rank " +
                 std::to_string(peer) + (sameHost ? " disabled shared memory" : " is on another host"));
    }
    (useShm ? shmPeers : socketPeers).push_back(peer);
  }

  transport::ShmOptions shmOptions;
  shmOptions.slotBytes = settings_.shmSlotBytes;
  shmOptions.slotCount = settings_.shmSlots;
  char prefix[64];
  std::snprintf(prefix, sizeof(prefix), "loom-%016llx", static_cast<unsigned long long>(bootstrap_->commUid()));
  shmOptions.namePrefix = prefix;
  shmOptions.timeoutMs = settings_.timeoutMs;
  agreeOnSetup("shared-memory transport", [&] {
    shm_ = transport::createShmTransport(*bootstrap_, shmPeers, shmOptions);
  });

  transport::SocketOptions socketOptions;
  socketOptions.socketsPerPeer = settings_.socketsPerPeer;
  socketOptions.timeoutMs = settings_.timeoutMs;
  agreeOnSetup("socket transport", [&] {
    sockets_ = transport::createSocketTransport(*bootstrap_, socketPeers, socketOptions);
  });

  for (int peer : shmPeers) connections_[peer] = shm_->connection(peer);
  for (int peer : socketPeers) connections_[peer] = sockets_->connection(peer);
  for (int peer : neighbours) {
    LOOM_INFO(INIT, "comm %s: rank %d <-> rank %d over %s", name_.c_str(), rank_, peer,
              connections_[peer]->kind());
  }
  setUpDirect(peers);
}

// Direct collectives need every rank on this host, shared memory allowed everywhere, and
// LOOM_ALGO not forcing schedules. Every rank sees the same PeerInfo, so all decide alike.
void Communicator::setUpDirect(const std::vector<PeerInfo>& peers) {
  if (nranks_ < 2) return;
  bool direct = true;
  bool crossMemory = true;
  for (const PeerInfo& peer : peers) {
    direct = direct && peer.hostHash == peers[rank_].hostHash && peer.shmAllowed && peer.directAllowed;
    crossMemory = crossMemory && peer.crossMemoryAllowed;
  }
  if (!direct) return;
  char name[80];
  std::snprintf(name, sizeof(name), "/loom-%016llx-arena", static_cast<unsigned long long>(bootstrap_->commUid()));
  agreeOnSetup("shared arena", [&] {
    arena_ = transport::ShmArena::create(*bootstrap_, name, settings_.directEagerBytes, settings_.timeoutMs);
  });

  // Cross-memory attach may be forbidden (Yama ptrace_scope, seccomp): try it on every peer;
  // single-copy is used only if every rank could read every other.
  std::vector<int32_t> readable(nranks_, 0);
  if (crossMemory) {
    int32_t ok = 1;
    for (int peer = 0; peer < nranks_; ++peer) {
      if (peer == rank_) continue;
      uint64_t value = 0;
      const auto result = transport::crossMemoryRead(peers[peer].pid, peers[peer].crossMemoryProbe, &value, sizeof(value));
      if (result.status != transport::CrossMemoryStatus::Ok || value != transport::crossMemoryProbeValue()) {
        LOOM_INFO(INIT, "comm %s: process_vm_readv from rank %d not possible (%s): no single-copy transfers",
                  name_.c_str(), peer, result.error ? std::strerror(result.error) : "wrong value");
        ok = 0;
      }
    }
    readable[rank_] = ok;
  }
  bootstrap_->allGather(readable.data(), sizeof(int32_t));
  for (int32_t ok : readable) crossMemory = crossMemory && ok;

  algo::DirectSettings direct_settings;
  direct_settings.eagerBytes = settings_.directEagerBytes;
  direct_settings.chunkBytes = settings_.directChunkBytes;
  direct_settings.streamBytes = settings_.streamCopyBytes;
  direct_settings.crossMemory = crossMemory;
  cpu_set_t cpus;
  const int cores = sched_getaffinity(0, sizeof(cpus), &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
  direct_settings.oversubscribed = nranks_ > cores;
  direct_settings.checkCalls = settings_.checkLevel >= 1;
  std::vector<pid_t> pids;
  for (const PeerInfo& peer : peers) pids.push_back(peer.pid);
  direct_ = std::make_unique<algo::DirectEngine>(*arena_, std::move(pids), rank_, direct_settings,
                                                 settings_.timeoutMs, &aborted_);
  LOOM_INFO(INIT, "comm %s: direct collectives on (eager up to %zu bytes, single-copy %s)", name_.c_str(),
            direct_settings.eagerBytes, crossMemory ? "on" : "off");
}

void Communicator::agreeOnSetup(const char* stage, const std::function<void()>& setup) {
  // A setup step may fail on some ranks only (e.g. a peer pair disagreeing on the shm
  // geometry). Everyone learns the outcome, so no rank goes on to wait for a failed one.
  int32_t failed = 0;
  std::exception_ptr error;
  try {
    setup();
  } catch (...) {
    failed = 1;
    error = std::current_exception();
  }
  std::vector<int32_t> outcomes(nranks_);
  outcomes[rank_] = failed;
  bootstrap_->allGather(outcomes.data(), sizeof(int32_t));
  if (error) std::rethrow_exception(error);
  for (int peer = 0; peer < nranks_; ++peer) {
    if (outcomes[peer] != 0) {
      throwRemote("rank " + std::to_string(rank_) + ": rank " + std::to_string(peer) + " failed to set up the " +
                  stage + " (its own error says why)");
    }
  }
}

const algo::Schedule& Communicator::scheduleFor(const CollectiveCall& call,
                                                const algo::CollectiveShape& shape) {
  // Applications repeat the same few calls; building a schedule costs more than a small
  // message takes, so keep them.
  ScheduleKey key{static_cast<int>(call.collective), shape.count, shape.elementBytes, shape.root,
                  shape.average};
  auto it = schedules_.find(key);
  if (it != schedules_.end()) return it->second;
  if (schedules_.size() >= 256) schedules_.clear();
  return schedules_.emplace(key, algo::buildSchedule(shape)).first->second;
}

void* Communicator::scratch(size_t bytes) {
  if (bytes <= scratchBytes_) return scratch_.get();
  // Persistent and pre-faulted: fresh pages cost ~11 us each on this class of VM.
  const size_t rounded = (bytes + 4095) / 4096 * 4096;
  void* memory = std::aligned_alloc(4096, rounded);
  if (memory == nullptr) throwSystem("rank " + std::to_string(rank_) + ": scratch of " + std::to_string(rounded) + " bytes", ENOMEM);
  std::memset(memory, 0, rounded);
  scratch_.reset(static_cast<char*>(memory));
  scratchBytes_ = rounded;
  return memory;
}

void Communicator::abort() {
  bootstrapAborted_.store(true);
  aborted_.store(true);
  wakeTurnWaiters();
}

void Communicator::revoke() {
  revoked_.store(true);
  aborted_.store(true);
  wakeTurnWaiters();
}

// A call waiting for its turn behind one that cannot end (queued on a stream that is stuck
// elsewhere, say) would otherwise sleep until LOOM_TIMEOUT_MS. The flag is set before the lock
// is taken, so a waiter either sees it in its predicate or is already asleep and woken here.
void Communicator::wakeTurnWaiters() {
  std::lock_guard guard(runMutex_);
  turnChanged_.notify_all();
}

void Communicator::waitForTurn(uint64_t ticket, const CollectiveCall& call) {
  if (servedTickets_.load(std::memory_order_acquire) == ticket && !aborted()) return;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(settings_.timeoutMs);
  // Register first, then look (under the lock): pairs with endTurn's store-then-look.
  turnWaiters_.fetch_add(1, std::memory_order_seq_cst);
  std::unique_lock lock(runMutex_);
  const bool ourTurn = turnChanged_.wait_until(lock, deadline, [&] {
    return servedTickets_.load(std::memory_order_seq_cst) == ticket || aborted();
  });
  turnWaiters_.fetch_sub(1, std::memory_order_seq_cst);
  // Aborted or revoked: run() refuses the call with that error; no timeout, nothing recorded.
  if (!ourTurn && !aborted()) {
    const std::string message = "rank " + std::to_string(rank_) + ": " + algo::collectiveName(call.collective) +
                                " timed out after " + std::to_string(settings_.timeoutMs) +
                                " ms waiting for earlier calls on this communicator";
    recordAsyncError(loomSystemError, message);
    throw Error(loomSystemError, message);
  }
}

void Communicator::endTurn(uint64_t ticket) {
  servedTickets_.store(ticket + 1, std::memory_order_seq_cst);
  if (turnWaiters_.load(std::memory_order_seq_cst) != 0) {
    std::lock_guard guard(runMutex_);
    turnChanged_.notify_all();
  }
}

std::string Communicator::describeCall(const CollectiveCall& call, uint64_t sequence) const {
  return std::string(algo::collectiveName(call.collective)) + " #" + std::to_string(sequence) + " (" +
         std::to_string(call.count) + " x " + typeName(call.type) + ", comm " + name_ + ", rank " +
         std::to_string(rank_) + ")";
}

void Communicator::run(const CollectiveCall& call, uint64_t ticket) {
  log::setThreadRank(rank_);
  // Wait for our turn; a thread issuing later waits for this one, whatever thread runs it.
  // A wait that times out or sees an abort takes no turn (the communicator is dead anyway).
  waitForTurn(ticket, call);
  if (revoked()) {
    throw Error(loomInvalidUsage, "rank " + std::to_string(rank_) +
                                      ": communicator was revoked (loomCommRevoke): destroy it, or shrink or split it");
  }
  if (aborted()) {
    throw Error(loomInvalidUsage, "rank " + std::to_string(rank_) + ": communicator was aborted");
  }
  // From here on the turn is handed on whatever happens.
  struct TurnRelease {
    Communicator& comm;
    uint64_t ticket;
    ~TurnRelease() { comm.endTurn(ticket); }
  } release{*this, ticket};
  const uint64_t sequence = ++sequence_;
  if (failed_.load(std::memory_order_acquire)) {
    std::string earlier;
    const loomResult_t failed = asyncError(&earlier);
    throw Error(failed, "rank " + std::to_string(rank_) + ": communicator is unusable after an earlier error: " + earlier);
  }
  struct Running {
    std::atomic<int>& count;
    explicit Running(std::atomic<int>& c) : count(c) { count.fetch_add(1); }
    ~Running() { count.fetch_sub(1); }
  } running{running_};
  // LOOM_CHECK=2 looks at the input before the call (in place, the call overwrites it).
  const size_t badInput = settings_.checkLevel >= 2 ? nonFiniteInput(call) : 0;
  try {
    runCall(call, sequence);
  } catch (const Error& error) {
    // Peers learn of it from a failure report (socket frame, shm slot), or by EOF.
    if (sockets_) sockets_->failAll(error.code(), error.what());
    if (shm_) shm_->failAll(error.code(), error.what());
    if (revoked()) throw;  // stopped on purpose: not an error of the communicator
    recordAsyncError(error.code(), error.what());
    throw;
  } catch (const std::exception& error) {
    if (sockets_) sockets_->failAll(loomInternalError, error.what());
    if (shm_) shm_->failAll(loomInternalError, error.what());
    if (revoked()) throw;
    recordAsyncError(loomInternalError, error.what());
    throw;
  }
  if (settings_.checkLevel >= 2) checkFinite(call, sequence, badInput);
}

namespace {
bool checkedForNonFinite(const CollectiveCall& call) {
  const bool reduction = call.collective == algo::Collective::AllReduce ||
                         call.collective == algo::Collective::ReduceScatter ||
                         call.collective == algo::Collective::Reduce;
  return reduction && kernels::hasNonFinite(call.type);
}
}  // namespace

// The index of the first NaN or infinity in the call's input; SIZE_MAX if none.
size_t Communicator::nonFiniteInput(const CollectiveCall& call) const {
  if (!checkedForNonFinite(call)) return SIZE_MAX;
  const size_t count = call.collective == algo::Collective::ReduceScatter ? call.count * nranks_ : call.count;
  const size_t index = kernels::findNonFinite(call.type, call.send, count);
  return index == count ? SIZE_MAX : index;
}

// LOOM_CHECK=2. The call itself completed on every rank, so the communicator stays usable and
// in step: only this call reports the bad values.
void Communicator::checkFinite(const CollectiveCall& call, uint64_t sequence, size_t badInput) const {
  if (!checkedForNonFinite(call)) return;
  const bool hasOutput = call.collective != algo::Collective::Reduce || call.root == rank_;
  const size_t badOutput = hasOutput ? kernels::findNonFinite(call.type, call.recv, call.count) : call.count;
  const bool inputBad = badInput != SIZE_MAX, outputBad = badOutput != call.count;
  if (!inputBad && !outputBad) return;
  std::string message = "rank " + std::to_string(rank_) + ": LOOM_CHECK=2: " + describeCall(call, sequence) + ":";
  if (inputBad) message += " this rank's input has NaN or infinity at element " + std::to_string(badInput);
  if (outputBad) {
    message += std::string(inputBad ? ";" : "") + " the result has NaN or infinity at element " + std::to_string(badOutput);
  }
  throw Error(loomInvalidUsage, message);
}

void Communicator::runCall(const CollectiveCall& call, uint64_t sequence) {
  if (direct_) {
    const algo::DirectCall directCall{call.collective, call.send, call.recv, call.count,
                                      call.type,       call.op,   call.root, sequence};
    // Captures two references: std::function keeps it inline, no allocation per call.
    const algo::DirectEngine::Describe describe = [this, &call, sequence] { return describeCall(call, sequence); };
    if (direct_->handles(directCall)) {
      direct_->run(directCall, describe);
      return;
    }
    direct_->postOnly(directCall, describe);
  }
  algo::CollectiveShape shape;
  shape.collective = call.collective;
  shape.rank = rank_;
  shape.nranks = nranks_;
  shape.count = call.count;
  shape.elementBytes = typeSize(call.type);
  shape.root = call.root;
  shape.average = call.op == loomAvg && nranks_ > 1;
  shape.pieceBytes = settings_.pieceBytes;
  shape.ringOrder = &ringOrder_;
  const algo::Schedule& schedule = scheduleFor(call, shape);

  algo::ExecutionBuffers buffers{call.send, call.recv, nullptr};
  if (schedule.scratchBytes > 0) buffers.scratch = scratch(schedule.scratchBytes);

  algo::ExecutionContext context;
  context.type = call.type;
  context.op = call.op;
  context.rank = rank_;
  context.nranks = nranks_;
  context.connections = &connections_;
  context.doorbell = shm_ ? &shm_->doorbell() : nullptr;
  context.timeoutMs = settings_.timeoutMs;
  context.abortFlag = &aborted_;
  context.peerPids = &peerPids_;
  context.operation = describeCall(call, sequence);
  if (settings_.checkLevel >= 1) {
    context.tag.sequence = sequence;
    context.tag.call = algo::callDescriptor(call.collective, call.type, call.op, call.root, call.count);
    context.tag.describe = algo::describeCallDescriptor;
  }
  const size_t messageBytes = call.count * shape.elementBytes *
                              (call.collective == algo::Collective::AllReduce || call.collective == algo::Collective::Broadcast ||
                                       call.collective == algo::Collective::Reduce
                                   ? 1
                                   : static_cast<size_t>(nranks_));
  context.streamCopies = messageBytes >= settings_.streamCopyBytes;
  context.streamReductions = messageBytes >= settings_.streamReduceBytes;
  LOOM_TRACE(COLL, "%s op %s root %d: %zu steps", context.operation.c_str(),
             opName(call.op), call.root, schedule.steps.size());
  algo::execute(schedule, buffers, context);
}

void Communicator::asyncWorkDone() {
  if (pendingAsync_.fetch_sub(1) == 1) {
    std::lock_guard lock(asyncMutex_);
    asyncDrained_.notify_all();
  }
}

void Communicator::waitForAsyncWork() {
  std::unique_lock lock(asyncMutex_);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(settings_.timeoutMs);
  if (!asyncDrained_.wait_until(lock, deadline, [&] { return pendingAsync_.load() == 0; })) {
    throw Error(loomSystemError, "rank " + std::to_string(rank_) + ": " + std::to_string(pendingAsync_.load()) +
                                     " queued collectives did not finish within " +
                                     std::to_string(settings_.timeoutMs) + " ms");
  }
}

std::unique_ptr<Communicator> Communicator::split(int color, int key, const CommSettings& childSettings) {
  struct Member {
    int32_t color, key, rank;
  };
  std::vector<Member> members(nranks_);
  members[rank_] = Member{color, key, rank_};
  bootstrap_->allGather(members.data(), sizeof(Member));

  std::vector<Member> group;
  for (const Member& member : members) {
    if (color != LOOM_SPLIT_NOCOLOR && member.color == color) group.push_back(member);
  }
  std::sort(group.begin(), group.end(), [](const Member& a, const Member& b) {
    return std::tie(a.key, a.rank) < std::tie(b.key, b.rank);
  });
  const bool leader = !group.empty() && group.front().rank == rank_;

  // Each group's leader opens a rendezvous on this rank's bootstrap interface; everyone
  // learns every leader's id in one exchange.
  std::vector<loomUniqueId> ids(nranks_);
  std::memset(ids.data(), 0, ids.size() * sizeof(loomUniqueId));
  if (leader) {
    sockaddr_storage address = bootstrap_->localAddress();
    if (address.ss_family == AF_INET) reinterpret_cast<sockaddr_in*>(&address)->sin_port = 0;
    if (address.ss_family == AF_INET6) reinterpret_cast<sockaddr_in6*>(&address)->sin6_port = 0;
    ids[rank_] = startRootServer(&address, nullptr);
  }
  bootstrap_->allGather(ids.data(), sizeof(loomUniqueId));
  if (color == LOOM_SPLIT_NOCOLOR) return nullptr;

  int newRank = 0;
  while (group[newRank].rank != rank_) ++newRank;
  LOOM_INFO(INIT, "comm %s: split color %d key %d -> rank %d of %d", name_.c_str(), color, key,
            newRank, static_cast<int>(group.size()));
  auto child = std::make_unique<Communicator>(ids[group.front().rank], static_cast<int>(group.size()),
                                              newRank, childSettings);
  log::setThreadRank(rank_);
  return child;
}

void Communicator::recordAsyncError(loomResult_t code, const std::string& message) {
  std::lock_guard lock(errorMutex_);
  if (asyncError_ == loomSuccess) {
    asyncError_ = code;
    asyncMessage_ = message;
    failed_.store(true, std::memory_order_release);
  }
}

loomResult_t Communicator::asyncError(std::string* message) const {
  if (revoked() && running_.load() > 0) return loomInProgress;
  std::lock_guard lock(errorMutex_);
  if (message) *message = asyncMessage_;
  return asyncError_;
}

}  // namespace loom
