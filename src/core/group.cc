// SPDX-License-Identifier: Apache-2.0
#include "core/group.h"

#include <algorithm>
#include <map>
#include <vector>

#include "algorithms/schedule.h"
#include "base/datatype.h"
#include "base/error.h"
#include "base/per_thread.h"
#include "core/call_batch.h"
#include "core/comm.h"
#include "core/group_inits.h"
#include "core/stream.h"

namespace loom::group {

namespace {

// Where a queued call goes. Kept apart from the calls themselves, so that a group of sends and
// receives hands its calls to Communicator::runPeerOps as they are, without a copy.
// `pin` keeps the communicator alive until the group ends; a call on the same communicator as
// the call before it needs none of its own (issuePinned), which spares the reference count's
// two locked instructions per call of an exchange.
struct Target {
  Communicator* comm;
  std::shared_ptr<Communicator> pin;  // null: the same communicator as the target before
  std::shared_ptr<Stream> stream;     // null: the NULL stream
};

[[noreturn]] void refuseConcurrentIssue(const Communicator& comm) {
  throwUsage("rank " + std::to_string(comm.rank()) + ": concurrent issue on communicator " + comm.name() +
             ": another thread is inside a call on it at this instant, so the call was not queued. Calls "
             "pair across ranks in the order they enter Loom on each rank; threads sharing a communicator "
             "must order their calls themselves (NCCL forbids concurrent use of one communicator)");
}

// One communicator's issuing step, held for the scope (no allocation: every call takes it).
class IssueStep {
 public:
  explicit IssueStep(Communicator& comm) : comm_(comm) {
    if (!comm_.beginIssue()) refuseConcurrentIssue(comm_);
  }
  ~IssueStep() { comm_.endIssue(); }
  IssueStep(const IssueStep&) = delete;
  IssueStep& operator=(const IssueStep&) = delete;

 private:
  Communicator& comm_;
};

// The issuing steps of a group's communicators: all or none (refused if one is busy).
class IssueSteps {
 public:
  void enter(Communicator& comm) {
    if (!comm.beginIssue()) refuseConcurrentIssue(comm);
    held_.push_back(&comm);
  }
  ~IssueSteps() { release(); }
  void release() {
    for (Communicator* comm : held_) comm->endIssue();
    held_.clear();
  }

 private:
  std::vector<Communicator*> held_;
};

// The depth is apart from the rest and a plain int: every call outside a group reads it, and a
// thread_local with a destructor (the rest) costs a guard and a TLS lookup call per access in a
// shared library. initial-exec: the library's static TLS block is the few bytes below.
[[gnu::tls_model("initial-exec")]] thread_local int groupDepth = 0;

struct GroupState {
  std::vector<algo::CallSpec> calls;  // queued, in issue order
  std::vector<Target> targets;        // calls[i] goes to targets[i]
  std::vector<algo::CallSpec> peerOps;   // endOnOneTarget's, kept: no allocation per exchange
  std::vector<algo::CallSpec> lone{1};   // a lone send or receive, as a batch of one
  std::vector<DeferredInit> inits;       // deferInit's, in issue order
  loomResult_t failure = loomSuccess;
  std::string failureMessage;
};
GroupState& groupState() { return PerThread<GroupState>::get(); }

}  // namespace

bool active() { return groupDepth > 0; }



void start() { ++groupDepth; }

void noteFailure(loomResult_t code, const std::string& message) {
  if (groupState().failure == loomSuccess) {
    groupState().failure = code;
    groupState().failureMessage = message;
  }
}

// A batch's sends to and receives from the rank itself must pair up: checked before any turn is
// taken, so a bad batch is refused and the communicator stays usable.
void checkSelfMessages(const Communicator& comm, const std::vector<algo::CallSpec>& ops) {
  // The usual batch has none: looked for before any list is built.
  if (std::none_of(ops.begin(), ops.end(), [&comm](const algo::CallSpec& op) { return op.peer == comm.rank(); })) {
    return;
  }
  std::vector<algo::PeerOperation> operations;
  for (const algo::CallSpec& op : ops) {
    if (op.peer != comm.rank()) continue;
    const bool send = op.collective == algo::Collective::Send;
    operations.push_back(algo::PeerOperation{send, op.peer, op.count * typeSize(op.type), 0});
  }
  if (!operations.empty()) algo::checkSelfMessages(comm.rank(), operations);
}

void issue(const algo::CallSpec& call, std::shared_ptr<Communicator> comm, std::shared_ptr<Stream> stream) {
  if (active()) {
    GroupState& state = groupState();
    state.calls.push_back(call);
    Communicator* const raw = comm.get();
    if (!state.targets.empty() && state.targets.back().comm == raw) comm.reset();  // pinned already
    state.targets.emplace_back(raw, std::move(comm), std::move(stream));
    return;
  }
  const bool peerOp = algo::isPointToPoint(call.collective);
  if (peerOp && call.peer == comm->rank()) checkSelfMessages(*comm, {call});  // refused: no partner
  if (stream == nullptr) {
    uint64_t ticket;
    {
      const IssueStep step(*comm);
      ticket = comm->takeTicket();
    }
    if (peerOp) {
      std::vector<algo::CallSpec>& lone = groupState().lone;
      lone.front() = call;
      comm->runPeerOps(lone, ticket);
    } else {
      comm->run(call, ticket);
    }
    return;
  }
  // Built before the turn is taken: nothing that can fail lies between the ticket and the queue.
  std::vector<CallBatch> item(1);
  item.front().calls.reserve(1);
  std::vector<algo::CallSpec> peerOps;
  if (peerOp) peerOps.push_back(call);
  Communicator& target = *comm;
  item.front().comm = std::move(comm);
  const IssueStep step(target);
  if (peerOp) {
    item.front().calls.emplace_back(std::move(peerOps), target.takeTicket());
  } else {
    item.front().calls.emplace_back(call, target.takeTicket());
  }
  stream->enqueue(std::move(item));
}

Communicator* pinned() {
  if (!active()) return nullptr;
  const std::vector<Target>& targets = groupState().targets;
  return targets.empty() ? nullptr : targets.back().comm;
}

void issuePinned(algo::CallSpec call, std::shared_ptr<Stream> stream) {
  GroupState& state = groupState();
  state.calls.push_back(std::move(call));
  state.targets.emplace_back(state.targets.back().comm, nullptr, std::move(stream));
}

namespace {

// The common group, every call on one communicator and one stream (a rank's sends and
// receives of one exchange): the same order as the general case below, one batch, no maps.
// Returns false, having done nothing, when the group is not of that shape.
bool endOnOneTarget(const std::vector<algo::CallSpec>& calls, std::vector<Target>& targets) {
  if (calls.empty()) return true;
  Communicator* comm = targets.front().comm;
  Stream* stream = targets.front().stream.get();
  size_t peerCount = 0;
  bool toSelf = false;  // a send to or receive from this rank itself: checked before the turn
  for (size_t i = 0; i < calls.size(); ++i) {
    if (targets[i].comm != comm || targets[i].stream.get() != stream) return false;
    const bool peerOp = algo::isPointToPoint(calls[i].collective);
    peerCount += peerOp ? 1 : 0;
    toSelf = toSelf || (peerOp && calls[i].peer == comm->rank());
  }
  if (stream == nullptr && peerCount == calls.size()) {
    // Sends and receives only, completed here: one ticket, one unit, as a lone send is.
    if (toSelf) checkSelfMessages(*comm, calls);
    uint64_t ticket;
    {
      const IssueStep step(*comm);
      ticket = comm->takeTicket();
    }
    comm->runPeerOps(calls, ticket);
    return true;
  }
  // Kept per thread: an exchange repeated in a loop allocates nothing here.
  std::vector<algo::CallSpec>& peerOps = groupState().peerOps;
  peerOps.clear();
  for (const algo::CallSpec& call : calls) {
    if (algo::isPointToPoint(call.collective)) peerOps.push_back(call);
  }
  if (!peerOps.empty()) checkSelfMessages(*comm, peerOps);
  CallBatch batch;
  batch.comm = targets.front().pin;  // the first target always pins
  batch.calls.reserve(calls.size() - peerCount + (peerCount > 0 ? 1 : 0));
  std::vector<CallBatch> item;  // a stream's queue entry; built before the turns are taken
  if (stream != nullptr) item.reserve(1);
  {
    const IssueStep step(*comm);
    for (const algo::CallSpec& call : calls) {
      if (!algo::isPointToPoint(call.collective)) batch.calls.emplace_back(call, comm->takeTicket());
    }
    if (!peerOps.empty()) batch.calls.emplace_back(std::move(peerOps), comm->takeTicket());
    if (stream != nullptr) {
      item.push_back(std::move(batch));
      targets.front().stream->enqueue(std::move(item));
      return true;
    }
  }
  runBatch(batch);
  return true;
}

// A group that queued inits: they run together (group_inits.h); the group's state is left empty
// whatever happens.
loomResult_t endInits(GroupState& state) {
  std::vector<DeferredInit> inits = std::move(state.inits);
  state.inits.clear();
  const size_t otherCalls = state.calls.size();
  const loomResult_t failure = state.failure;
  const std::string failureMessage = std::move(state.failureMessage);
  state.calls.clear();
  state.targets.clear();
  state.failure = loomSuccess;
  state.failureMessage.clear();
  return runDeferredInits(inits, otherCalls, failure, failureMessage);
}

}  // namespace

void deferInit(DeferredInit init) { groupState().inits.push_back(std::move(init)); }

void endWithoutRunning() {
  if (groupDepth == 0) throwUsage("called without a matching loomGroupStart (no group is open on this thread)");
  if (--groupDepth > 0) return;
  GroupState& state = groupState();
  const std::string why = "the group was ended without running (loomGroupSimulateEnd)";
  for (DeferredInit& init : state.inits) init.finish(loomInvalidUsage, why);
  state.inits.clear();
  state.calls.clear();
  state.targets.clear();
  state.failure = loomSuccess;
  state.failureMessage.clear();
}

loomResult_t end() {
  if (groupDepth == 0) throwUsage("called without a matching loomGroupStart (no group is open on this thread)");
  if (--groupDepth > 0) return loomSuccess;
  if (!groupState().inits.empty()) return endInits(groupState());
  // Used in place and cleared on the way out, whatever happens: the queue keeps its memory
  // for the next group.
  GroupState& state = groupState();
  std::vector<algo::CallSpec>& calls = state.calls;
  std::vector<Target>& targets = state.targets;
  struct ClearOnExit {
    GroupState& state;
    ~ClearOnExit() {
      state.calls.clear();
      state.targets.clear();
    }
  } clearOnExit{state};
  if (state.failure != loomSuccess) {
    const loomResult_t failure = state.failure;
    const std::string failureMessage = std::move(state.failureMessage);
    state.failure = loomSuccess;
    state.failureMessage.clear();
    throw Error(failure, "a call in the group failed, so none of its " + std::to_string(calls.size()) +
                             " queued calls ran: " + failureMessage);
  }

  if (endOnOneTarget(calls, targets)) return loomSuccess;

  // Each communicator's sends and receives run as one unit, after its collectives (the same
  // place on every rank, so no mix of the two can deadlock), on the one stream they share.
  std::map<Communicator*, std::vector<algo::CallSpec>> peerOps;
  std::map<Communicator*, Stream*> peerStream;
  for (size_t i = 0; i < calls.size(); ++i) {
    if (!algo::isPointToPoint(calls[i].collective)) continue;
    Communicator* comm = targets[i].comm;
    auto [place, first] = peerStream.emplace(comm, targets[i].stream.get());
    if (!first && place->second != targets[i].stream.get()) {
      throwUsage("rank " + std::to_string(comm->rank()) + ": a group's sends and receives on communicator " +
                 comm->name() + " use more than one stream; they run as one unit, so give them one stream");
    }
    peerOps[comm].push_back(calls[i]);
  }
  for (const auto& [comm, ops] : peerOps) checkSelfMessages(*comm, ops);

  // Each communicator's reference: from the first target of each run of calls on it.
  std::map<Communicator*, std::shared_ptr<Communicator>> involved;
  for (const Target& target : targets) {
    if (target.pin) involved[target.comm] = target.pin;
  }
  // Every communicator's issuing step is held while the tickets are taken and the stream items
  // queued, so each stream's order is its communicators' turn order.
  IssueSteps steps;
  for (auto& [comm, unused] : involved) steps.enter(*comm);

  // Tickets in issue order, then per stream (NULL included) one batch per communicator.
  std::map<Stream*, std::map<Communicator*, CallBatch>> perStream;
  std::map<Stream*, std::shared_ptr<Stream>> streams;
  std::map<Communicator*, Target*> lastPeerOp;
  for (size_t i = 0; i < calls.size(); ++i) {
    Target& target = targets[i];
    if (target.stream) streams[target.stream.get()] = target.stream;
    if (algo::isPointToPoint(calls[i].collective)) {
      lastPeerOp[target.comm] = &target;
      continue;
    }
    CallBatch& batch = perStream[target.stream.get()][target.comm];
    batch.comm = involved.at(target.comm);
    batch.calls.emplace_back(calls[i], target.comm->takeTicket());
  }
  for (auto& [comm, target] : lastPeerOp) {
    CallBatch& batch = perStream[target->stream.get()][comm];
    batch.comm = involved.at(comm);
    batch.calls.emplace_back(std::move(peerOps[comm]), comm->takeTicket());
  }
  auto batchesOf = [](std::map<Communicator*, CallBatch>& byComm) {
    std::vector<CallBatch> batches;
    for (auto& [key, batch] : byComm) batches.push_back(std::move(batch));
    return batches;
  };
  for (auto& [stream, byComm] : perStream) {
    if (stream != nullptr) streams[stream]->enqueue(batchesOf(byComm));
  }
  steps.release();
  if (auto it = perStream.find(nullptr); it != perStream.end()) runBatches(batchesOf(it->second));
  return loomSuccess;
}

}  // namespace loom::group
