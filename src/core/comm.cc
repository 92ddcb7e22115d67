// SPDX-License-Identifier: Apache-2.0
#include "core/comm.h"

#include <netinet/in.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>

#include "algorithms/executor.h"
#include "base/backoff.h"
#include "base/datatype.h"
#include "base/error.h"
#include "base/log.h"
#include "bootstrap/socket_bootstrap.h"
#include "bootstrap/store_bootstrap.h"
#include "device/device_select.h"
#include "kernels/host/non_finite.h"

namespace loom {

Communicator::Communicator(const loomUniqueId& id, int nranks, int rank, CommSettings settings, Connect when)
    : rank_(rank), nranks_(nranks), settings_(std::move(settings)), device_(deviceAtInit()), id_(id) {
  const UniqueIdContents contents = decodeUniqueId(id);
  char uid[17];
  std::snprintf(uid, sizeof(uid), "%016llx", static_cast<unsigned long long>(contents.commUid));
  name_ = settings_.commName.empty() ? std::string(uid) : settings_.commName;
  if (when == Connect::Now) connect();
}

Communicator::Communicator(std::shared_ptr<Store> store, std::string keyPrefix, int nranks, int rank,
                           CommSettings settings, Connect when)
    : rank_(rank), nranks_(nranks), settings_(std::move(settings)), device_(deviceAtInit()), id_{},
      store_(std::move(store)), storePrefix_(std::move(keyPrefix)) {
  name_ = !settings_.commName.empty() ? settings_.commName
          : storePrefix_.empty()      ? std::string("store")
                                      : "store:" + storePrefix_;
  if (when == Connect::Now) connect();
}

void Communicator::connect() {
  const int rank = rank_, nranks = nranks_;
  log::setThreadRank(rank);
  if (aborted()) throw Error(loomInvalidUsage, "rank " + std::to_string(rank) + ": init was aborted");
  LOOM_INFO(INIT, "comm %s: init rank %d of %d", name_.c_str(), rank, nranks);

  BootstrapOptions options;
  options.timeoutMs = settings_.timeoutMs;
  options.abortFlag = errors_.bootstrapStopFlag();
  options.commName = name_;
  if (store_ != nullptr) {
    bootstrap_ = createStoreBootstrap(*store_, storePrefix_, rank, nranks, options);
    store_.reset();  // only the rendezvous needs it: the caller's store may go away now
  } else {
    bootstrap_ = createSocketBootstrap(decodeUniqueId(id_), rank, nranks, options);
  }
  links_ = std::make_unique<Connector>(*bootstrap_, settings_, name_, errors_.callStopFlag());
  connected_.store(true, std::memory_order_release);
  if (aborted()) links_->announceDeparture();  // abort() ran just before connected_ was set
  LOOM_INFO(INIT, "comm %s: rank %d of %d ready", name_.c_str(), rank, nranks);
}

// Callers share ownership (loomComm, queued stream work, a running call), so nothing can be
// running when the last owner lets go.
Communicator::~Communicator() = default;

void Communicator::abort() {
  errors_.abort();
  order_.wakeWaiters();
  // A peer waiting on this rank over shared memory sees no socket close and no process die:
  // tell it (it may otherwise wait for its whole timeout while this process lives on).
  // Only once connect() has finished: a non-blocking init may still be building links_ on its
  // own thread (it sees the abort flag and fails; connect() announces if it lost that race).
  if (connected_.load(std::memory_order_acquire)) links_->announceDeparture();
}

void Communicator::revoke() {
  errors_.revoke();
  order_.wakeWaiters();
}

void Communicator::waitForTurn(uint64_t ticket, const algo::CallSpec& call) {
  // Aborted or revoked: run() refuses the call with that error; no timeout, nothing recorded.
  const bool othersFailedFirst = order_.failed();
  if (order_.waitForTurn(ticket, settings_.timeoutMs, *errors_.callStopFlag()) || aborted()) return;
  if (othersFailedFirst) {
    // An earlier call's wait timed out, so this call's turn cannot come either: fail at once
    // with that error (recorded just after the order broke, so it may still be on its way).
    std::string earlier;
    const loomResult_t code = errors_.asyncError(&earlier);
    throw Error(code != loomSuccess && code != loomInProgress ? code : loomSystemError,
                "rank " + std::to_string(rank_) + ": " + algo::collectiveName(call.collective) +
                    " failed at once: an earlier call on this communicator timed out waiting for its turn" +
                    (earlier.empty() ? std::string() : ": " + earlier));
  }
  const std::string message = "rank " + std::to_string(rank_) + ": " + algo::collectiveName(call.collective) +
                              " timed out after " + std::to_string(settings_.timeoutMs) +
                              " ms waiting for earlier calls on this communicator";
  errors_.record(loomSystemError, message, algo::collectiveName(call.collective));
  throw Error(loomSystemError, message);
}

uint64_t Communicator::nextSerial() {
  static std::atomic<uint64_t> serials{0};
  return serials.fetch_add(1, std::memory_order_relaxed) + 1;
}

namespace {
// "allreduce #2 (10 x float32": what callName and describeCall both begin with.
std::string callHead(const algo::CallSpec& call) {
  return std::string(algo::collectiveName(call.collective)) + " #" + std::to_string(call.sequence) + " (" +
         std::to_string(call.count) + " x " + typeName(call.type);
}
}  // namespace

std::string Communicator::callName(const algo::CallSpec& call) { return callHead(call) + ")"; }

std::string Communicator::describeCall(const algo::CallSpec& call) const {
  return callHead(call) + ", comm " + name_ + ", rank " + std::to_string(rank_) + ")";
}

// The direct engine takes the calls it handles and posts the others (see direct_engine.h);
// the rest run as schedules. A PreMulSum call runs as the sum of premultiplied inputs.
inline void Communicator::execute(const algo::CallSpec& issued) {
  if (issued.premul.active) {
    executeCall(premul_.prepare(issued, rank_, nranks_));
    return;
  }
  executeCall(issued);
}

inline void Communicator::runOnHost(const algo::CallSpec& call) {
  // LOOM_CHECK=2 looks at the input before the call (in place, the call overwrites it).
  const size_t badInput = settings_.checkLevel >= 2 ? nonFiniteInput(call) : 0;
  try {
    execute(call);
  } catch (...) {
    const auto name = [&call] { return callName(call); };  // built only once the peers are told
    recordFailure(name);
  }
  if (settings_.checkLevel >= 2) checkFinite(call, badInput);
}

void Communicator::run(const algo::CallSpec& issued, uint64_t ticket) {
  const TurnGuard turn(*this, ticket, issued);
  algo::CallSpec call = issued;
  call.sequence = order_.nextSequence();
  refuseIfFailed();
  ErrorState::Running running(errors_);
  if (call.deviceBuffers != 0) [[unlikely]] {
    runStaged(call);
    return;
  }
  runOnHost(call);
}

// The host path over pinned copies of the device buffers. A failed copy fails the call as a
// failed transfer does: the peers are told, and the communicator is unusable from then on.
// LOOM_CHECK=2's report comes after the result is back in device memory, as on the host path.
void Communicator::runStaged(const algo::CallSpec& call) {
  const algo::CallSpec* hostCall = nullptr;
  size_t badInput = 0;
  std::optional<DeviceGuard> onDevice;
  try {
    onDevice.emplace(device::processRuntime(), device_);
    // What reads the whole input at once waits for all of it, copied in one piece; a schedule
    // waits piece by piece, unless the call is one piece anyway (the pieces' bookkeeping would
    // only add to it). LOOM_DEVICE_COPY_BYTES=0: whole copies before and after, no overlap.
    algo::DirectEngine* direct = links_->direct();
    const bool whole = settings_.deviceCopyBytes == 0 || call.messageBytes(nranks_) <= settings_.deviceCopyBytes ||
                       settings_.checkLevel >= 2 || call.premul.active || (direct != nullptr && direct->handles(call));
    hostCall = &staging_.stageIn(std::span(&call, 1), device_, rank_, nranks_, whole ? 0 : settings_.deviceCopyBytes)
                    .front();
    if (whole) staging_.awaitInput(settings_.timeoutMs);
    if (settings_.checkLevel >= 2) badInput = nonFiniteInput(*hostCall);
    const StagedScope overlapped(*this, !whole);
    execute(*hostCall);
    staging_.stageOut(settings_.timeoutMs);
  } catch (...) {
    const auto name = [&call] { return callName(call); };
    failStaged(name);
  }
  if (settings_.checkLevel >= 2) checkFinite(*hostCall, badInput);
}

// A staged call failed: the peers are told first (recordFailure), then the copies still in flight
// are waited for (bounded), so that none lands in the pinned memory a later call uses.
void Communicator::failStaged(FunctionRef<std::string()> failedCall) {
  try {
    recordFailure(failedCall);
  } catch (...) {
    staging_.settle(settings_.timeoutMs);
    throw;
  }
}

// Wait for our turn; a thread issuing later waits for this one, whatever thread runs it. A
// wait that times out or sees an abort takes no turn (the communicator is dead anyway).
Communicator::TurnGuard::TurnGuard(Communicator& comm, uint64_t ticket, const algo::CallSpec& call)
    : comm_(comm), ticket_(ticket) {
  log::setThreadRank(comm.rank_);
  if (!comm.order_.turnHasCome(ticket, *comm.errors_.callStopFlag())) comm.waitForTurn(ticket, call);
  if (comm.revoked()) {
    throw Error(loomInvalidUsage, "rank " + std::to_string(comm.rank_) +
                                      ": communicator was revoked (loomCommRevoke): destroy it, or shrink or split it");
  }
  if (comm.aborted()) {
    throw Error(loomInvalidUsage, "rank " + std::to_string(comm.rank_) + ": communicator was aborted");
  }
  holds_ = true;  // from here on the turn is handed on whatever happens
}

Communicator::TurnGuard::~TurnGuard() {
  if (holds_) comm_.order_.endTurn(ticket_);
}

void Communicator::refuseIfFailed() {
  if (!errors_.failed()) return;
  auto [code, message] = errors_.refusal("rank " + std::to_string(rank_), name_);
  throw Error(code, std::move(message));
}

// A failure leaves connections holding half a message: peers learn of it from a failure report
// (socket frame, shm slot) or by EOF, and the communicator is unusable from here on. Called
// from the catch blocks of run() and runPeerOps(), with the exception in flight; `failedCall`
// names the call for the refusals of later calls (refuseIfFailed). The name is built only
// after failAll: were it built first, running out of memory there would leave the peers
// waiting for their timeout.
void Communicator::recordFailure(FunctionRef<std::string()> failedCall) {
  // Out of memory for the name: later refusals say "an earlier call", and the caller still
  // sees the original error rather than the allocation's.
  const auto nameOf = [&failedCall]() noexcept {
    try {
      return failedCall();
    } catch (...) {
      return std::string();
    }
  };
  try {
    throw;
  } catch (const Error& error) {
    links_->failAll(error.code(), error.what());
    if (revoked()) throw;  // stopped on purpose: not an error of the communicator
    errors_.record(error.code(), error.what(), nameOf());
    throw;
  } catch (const std::exception& error) {
    links_->failAll(loomInternalError, error.what());
    if (revoked()) throw;
    errors_.record(loomInternalError, error.what(), nameOf());
    throw;
  }
}

namespace {
bool checkedForNonFinite(const algo::CallSpec& call) {
  return algo::hasOp(call.collective) && kernels::hasNonFinite(call.type);
}
}  // namespace

// The index of the first NaN or infinity in the call's input; SIZE_MAX if none.
size_t Communicator::nonFiniteInput(const algo::CallSpec& call) const {
  if (!checkedForNonFinite(call)) return SIZE_MAX;
  const size_t count = call.collective == algo::Collective::ReduceScatter ? call.count * nranks_ : call.count;
  const size_t index = kernels::findNonFinite(call.type, call.send, count);
  return index == count ? SIZE_MAX : index;
}

// LOOM_CHECK=2. The call itself completed on every rank, so the communicator stays usable and
// in step: only this call reports the bad values.
void Communicator::checkFinite(const algo::CallSpec& call, size_t badInput) const {
  if (!checkedForNonFinite(call)) return;
  const bool hasOutput = call.collective != algo::Collective::Reduce || call.root == rank_;
  const size_t badOutput = hasOutput ? kernels::findNonFinite(call.type, call.recv, call.count) : call.count;
  const bool inputBad = badInput != SIZE_MAX, outputBad = badOutput != call.count;
  if (!inputBad && !outputBad) return;
  std::string message = "rank " + std::to_string(rank_) + ": LOOM_CHECK=2: " + describeCall(call) + ":";
  if (inputBad) message += " this rank's input has NaN or infinity at element " + std::to_string(badInput);
  if (outputBad) {
    message += std::string(inputBad ? ";" : "") + " the result has NaN or infinity at element " + std::to_string(badOutput);
  }
  throw Error(loomInvalidUsage, message);
}

void Communicator::executeCall(const algo::CallSpec& call) {
  if (algo::DirectEngine* direct = links_->direct()) {
    const auto describeThisCall = [this, &call] { return describeCall(call); };  // outlives the call
    const algo::DirectEngine::Describe describe = describeThisCall;
    if (direct->handles(call)) {
      direct->run(call, describe);
      return;
    }
    direct->postOnly(call, describe);
    // Posting waits for every rank's post of this call: that is already a barrier.
    if (call.collective == algo::Collective::Barrier) return;
  }
  algo::CollectiveShape shape;
  shape.collective = call.collective;
  shape.rank = rank_;
  shape.nranks = nranks_;
  shape.count = call.count;
  shape.elementBytes = typeSize(call.type);
  shape.root = call.root;
  shape.average = call.op == loomAvg && nranks_ > 1;
  shape.deterministic = settings_.deterministic;
  shape.pieceBytes = settings_.pieceBytes;
  shape.ringOrder = &links_->ringOrder();
  shape.hosts = links_->hosts();
  // All-to-all-v's per-peer counts differ from call to call: its schedule is built for the call.
  algo::Schedule ownSchedule;
  if (call.collective == algo::Collective::AllToAllv) {
    shape.layout = call.layout.get();
    ownSchedule = algo::buildSchedule(shape);
  }
  const algo::Schedule& schedule = shape.layout != nullptr ? ownSchedule : schedules_.scheduleFor(shape);

  algo::ExecutionBuffers buffers{call.send, call.recv, nullptr};
  if (schedule.scratchBytes > 0) buffers.scratch = schedules_.scratch(schedule.scratchBytes, rank_);

  algo::ExecutionContext context;
  const auto describe = [this, &call] { return describeCall(call); };  // outlives the execution
  fillContext(context, describe, call.messageBytes(nranks_));
  LOOM_TRACE(COLL, "%s op %s root %d: %zu steps", context.operation().c_str(), opName(call.op), call.root,
             schedule.steps.size());
  algo::execute(call, schedule, buffers, context);
}

void Communicator::fillContext(algo::ExecutionContext& context, FunctionRef<std::string()> operation,
                               size_t messageBytes) const {
  context.rank = rank_;
  context.nranks = nranks_;
  context.connections = &links_->connections();
  context.timeoutMs = settings_.timeoutMs;
  context.abortFlag = errors_.callStopFlag();
  context.peerPids = &links_->peerPids();
  context.peerHosts = &links_->peerHosts();
  context.operation = operation;
  context.checkCalls = settings_.checkLevel >= 1;
  context.streamCopies = messageBytes >= settings_.streamCopyBytes;
  context.streamReductions = messageBytes >= settings_.streamReduceBytes;
  // Ranks outnumber cores: the rank we wait for most likely waits for this core, so yield at
  // once, as the direct engine does (sendrecv 8 B on 4 ranks / 2 cores: 9.5 -> 8.4 us median
  // against 63 spin passes).
  context.spinPasses = links_->oversubscribed() ? 0 : 4095;
  context.yieldBeforeSleepMs = links_->oversubscribed() ? kOversubscribedYieldMs : 0;
  context.staged = staged_;
}

void Communicator::waitForAsyncWork() {
  int pending = 0;
  if (!order_.waitForAsyncWork(settings_.timeoutMs, &pending)) {
    throw Error(loomSystemError, "rank " + std::to_string(rank_) + ": " + std::to_string(pending) +
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
  auto child = makeChild(ids[group.front().rank], static_cast<int>(group.size()), newRank, childSettings);
  log::setThreadRank(rank_);
  return child;
}

}  // namespace loom
