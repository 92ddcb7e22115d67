// SPDX-License-Identifier: Apache-2.0
#include "algorithms/executor.h"

#include <sched.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <thread>

#include "algorithms/executor_quick.h"
#include "algorithms/peer_liveness.h"
#include "algorithms/staged_copies.h"
#include "base/backoff.h"
#include "base/per_thread.h"
#include "base/datatype.h"
#include "base/error.h"
#include "base/log.h"
#include "kernels/host/canonical_reduce.h"

namespace loom::algo {

namespace {

using Clock = std::chrono::steady_clock;

using namespace executor_detail;

// The call's buffers registered with one transport, for the span of the call.
struct Registration {
  transport::Transport* transport;
  transport::Region buffers[3];  // by Buffer: Send, Recv, Scratch
  std::vector<transport::Region> user;  // a batch's buffers, by operation
  const transport::Region& of(Buffer buffer) const {
    return isUserBuffer(buffer) ? user[userBufferIndex(buffer)] : buffers[static_cast<int>(buffer)];
  }
};

// Spin `spinPasses` passes (ExecutionContext::spinPasses; each pass also polls every busy
// connection), yield 128 passes, then sleep from 50 us, doubling every 8 passes, up to 10 ms
// between deadline checks.
constexpr BackoffPolicy executorBackoff(int spinPasses) { return BackoffPolicy{spinPasses, 128, 50, 8, 8, 10000}; }

// While yielding, the deadline clock is read every this many yields (the first read starts the
// idle time); executorBackoff's 128 yield rounds hold 16 of them before the first sleep.
constexpr int kYieldsPerClockRead = 8;
static_assert(executorBackoff(0).yieldRounds >= kYieldsPerClockRead, "the idle time must start before any sleep");

// The longest sleep of a rank whose next step waits for a device copy of its input.
constexpr int kDeviceCopyPollUs = 50;

// How long a rank must make no progress before the death of a rank it does not wait on fails it.
constexpr int kOtherDeathGraceMs = 1000;

// A call's bookkeeping, kept per thread between calls: a thread runs one call at a time, and
// reusing the memory spares a small call (a point-to-point exchange) a dozen allocations.
struct RunStorage {
  QuickMessages quick;
  QuickPlan plan;  // a call's own, when its caller keeps none
  std::vector<uint8_t> done;
  std::vector<int> local;
  std::vector<const void*> rankSources;
  LaneTable lanes;
  std::vector<Registration> registered;
  transport::WaitSet waits;
  std::vector<const transport::Connection*> waiting;
  std::vector<uint8_t> arrived;  // staged calls: by step, its staged input is on the host
  StagedWrites stagedWrites;
};

RunStorage& runStorage() { return PerThread<RunStorage>::get(); }

class Run {
 public:
  // `adopted`: the messages quickExchange posted (its QuickMessages), which this run waits for
  // instead of posting them; null: none. `spunRounds`: idle rounds already spun on them.
  Run(const CallSpec& call, const Schedule& schedule, const ExecutionBuffers& buffers,
      const ExecutionContext& context, const QuickMessages* adopted = nullptr, int spunRounds = 0)
      : adopting_(adopted != nullptr), call_(call), schedule_(schedule), buffers_(buffers), context_(context),
        elementBytes_(typeSize(call.type)), storage_(runStorage()), done_(storage_.done), local_(storage_.local),
        rankSources_(storage_.rankSources), lanes_(storage_.lanes), registered_(storage_.registered),
        waits_(storage_.waits), waiting_(storage_.waiting), staged_(context.staged) {
    done_.assign(schedule.steps.size(), 0);
    if (staged_ != nullptr) startStaged();
    local_.clear();
    lanes_.reset(context.connections != nullptr ? context.connections->size() : 0);
    remaining_ = schedule.steps.size();
    for (size_t i = 0; i < schedule.steps.size(); ++i) {
      const Step& step = schedule.steps[i];
      if (step.kind == StepKind::Copy || step.kind == StepKind::Divide || step.kind == StepKind::ReduceRanks) {
        local_.push_back(static_cast<int>(i));
        continue;
      }
      PeerLanes& lanes = peerLanes(step.peer);
      Lane& lane = step.kind == StepKind::Send ? lanes.send : lanes.recv;
      if (adopted == nullptr) {
        lane.pending.push_back(static_cast<int>(i));
      } else if (adopted->done[i]) {
        complete(static_cast<int>(i));
      } else {
        lane.active = static_cast<int>(i);  // posted, with its sink in `adopted`
      }
    }
    backoff_.skip(spunRounds);
  }

  ~Run() {
    flushWakeups();  // a peer asleep waiting for what this call sent learns of it now
    for (size_t i = 0; i < registrations_; ++i) {
      Registration& registration = registered_[i];
      for (const transport::Region& region : registration.buffers) {
        if (region.base != nullptr) registration.transport->deregisterRegion(region);
      }
      for (const transport::Region& region : registration.user) {
        if (region.base != nullptr) registration.transport->deregisterRegion(region);
      }
    }
  }

  // A transport error that `progress()` on the connection to `peer` threw (a socket's EOF: the
  // peer is gone), as this call's error: the call it broke and, when this host can tell, which
  // death caused it. Public for quickExchange's errors, which a Run built for them names.
  [[noreturn]] void rethrowTransportError(int peer, const std::exception_ptr& failure) {
    try {
      std::rethrow_exception(failure);
    } catch (const ExplainedError& error) {
      throw Error(error.code(), prefix() + error.what());
    } catch (const Error& error) {
      throw Error(error.code(), prefix() + error.what() + deathBehind(peer) + hostOf(peer));
    }
  }

  // "; rank 2 runs on host b7" for a peer on another host, "" otherwise.
  std::string hostOf(int peer) const {
    const std::string where = onHost(peer);
    return where.empty() ? where : "; rank " + std::to_string(peer) + " runs" + where;
  }
  // " on host b7" for a peer on another host, "" otherwise.
  std::string onHost(int peer) const {
    const std::vector<std::string>* hosts = context_.peerHosts;
    if (hosts == nullptr || peer < 0 || peer >= static_cast<int>(hosts->size()) || (*hosts)[peer].empty()) return "";
    return " on host " + (*hosts)[peer];
  }

  void run() {
    uint32_t passes = 0;
    while (remaining_ > 0) {
      if (pass()) {
        backoff_.reset();
        // A long transfer that keeps moving still notices loomCommAbort.
        if ((++passes & 1023) == 0) checkAbort();
        continue;
      }
      backOff();
    }
  }

 private:
  char* base(Buffer buffer) const { return bufferBase(buffers_, buffer); }

  // The call's buffers registered with `transport` (once per transport and call).
  size_t registrationFor(transport::Transport& transport) {
    for (size_t i = 0; i < registrations_; ++i) {
      if (registered_[i].transport == &transport) return i;
    }
    // Entries are reused (with their vector's memory) from the thread's earlier calls.
    if (registrations_ == registered_.size()) registered_.emplace_back();
    Registration& registration = registered_[registrations_];
    registration.transport = &transport;
    for (transport::Region& region : registration.buffers) region = transport::Region{};
    registration.user.clear();
    for (Buffer buffer : {Buffer::Send, Buffer::Recv, Buffer::Scratch}) {
      const size_t extent = schedule_.reach[static_cast<int>(buffer)];
      if (extent > 0 && base(buffer) != nullptr) {
        registration.buffers[static_cast<int>(buffer)] = transport.registerRegion(base(buffer), extent);
      }
    }
    if (buffers_.user != nullptr) {
      registration.user.resize(buffers_.user->size());
      for (size_t k = 0; k < buffers_.user->size(); ++k) {
        const UserBuffer& user = (*buffers_.user)[k];
        if (user.base != nullptr && user.bytes > 0) registration.user[k] = transport.registerRegion(user.base, user.bytes);
      }
    }
    return registrations_++;
  }

  PeerLanes& peerLanes(int peer) {
    auto it = lanes_.find(peer);
    if (it != lanes_.end()) return it->second;
    const auto& connections = *context_.connections;
    if (peer < 0 || peer >= static_cast<int>(connections.size()) || connections[peer] == nullptr) {
      throwInternal("rank " + std::to_string(context_.rank) + ": " + context_.operation() +
                    ": schedule needs a connection to rank " + std::to_string(peer) +
                    " that was not set up");
    }
    PeerLanes& lanes = lanes_.add(peer).second;
    lanes.connection = connections[peer];
    transport::Transport& transport = lanes.connection->transport();
    lanes.regions = transport.registersMemory() ? registrationFor(transport) : kUnregistered;
    // Before this call's first message (quickExchange has done it for messages it posted). A
    // point-to-point batch tags each message as it posts it.
    if (call_.sequence != transport::kPointToPointTag && !adopting_) lanes.connection->setCallTag(tag_);
    return lanes;
  }

  // The region a send posts from: the call's registration with the lane's transport, or the
  // buffer as it is where the transport registers nothing (Transport::registersMemory).
  transport::Region sendRegion(const PeerLanes& lanes, Buffer buffer) const {
    if (lanes.regions != kUnregistered) return registered_[lanes.regions].of(buffer);
    return unregisteredRegion(buffers_, schedule_, buffer);
  }

  bool ready(int index) {
    const Step& step = schedule_.steps[index];
    return (step.dependsOn < 0 || done_[step.dependsOn]) && (step.alsoDependsOn < 0 || done_[step.alsoDependsOn]) &&
           (staged_ == nullptr || stagedInputArrived(index));
  }

  // The memory a step reads (src) and writes (dst) in the call's buffers: what it must wait for
  // when they are staged copies of device memory (a ReduceRanks source spans every rank's block).
  static size_t sourceBytes(const Step& step) {
    if (step.kind == StepKind::ReduceRanks) return step.stride * static_cast<size_t>(step.blocks - 1) + step.dst.bytes;
    const bool reads = step.kind == StepKind::Send || step.kind == StepKind::Copy || step.kind == StepKind::RecvReduce;
    return reads ? step.src.bytes : 0;
  }

  // Queues the input's device copies in the order the steps first touch it, and counts the
  // steps that write each part of the output.
  void startStaged() {
    storage_.arrived.assign(schedule_.steps.size(), 0);
    storage_.stagedWrites.build(schedule_, buffers_);
    for (const Step& step : schedule_.steps) {
      const size_t read = sourceBytes(step);
      if (read > 0 && step.src.buffer != Buffer::Scratch) staged_->expect(source(step.src), read);
      if (writesStagedMemory(step)) staged_->expect(source(step.dst), step.dst.bytes);
    }
    staged_->startInput();
  }

  bool stagedInputArrived(int index) {
    if (storage_.arrived[index]) return true;
    const Step& step = schedule_.steps[index];
    const size_t read = sourceBytes(step);
    if ((read == 0 || step.src.buffer == Buffer::Scratch || staged_->arrived(source(step.src), read)) &&
        (!writesStagedMemory(step) || staged_->arrived(source(step.dst), step.dst.bytes))) {
      storage_.arrived[index] = 1;
      return true;
    }
    awaitingDevice_ = true;
    return false;
  }

  const char* source(const Range& range) const { return base(range.buffer) + range.offset; }
  char* target(const Range& range) const { return writableTarget(buffers_, range); }

  void complete(int index) {
    done_[index] = 1;
    --remaining_;
    if (staged_ != nullptr) storage_.stagedWrites.done(schedule_, index, buffers_, *staged_);
  }

  bool runLocalSteps() {
    bool moved = false;
    for (auto it = local_.begin(); it != local_.end();) {
      if (!ready(*it)) {
        ++it;
        continue;
      }
      const Step& step = schedule_.steps[*it];
      char* dst = target(step.dst);
      if (step.kind == StepKind::Copy) {
        const char* src = source(step.src);
        if (src != dst) std::memmove(dst, src, step.dst.bytes);
      } else if (step.kind == StepKind::Divide) {
        kernels::finishAverage(call_.type, dst, step.dst.bytes / elementBytes_, context_.nranks);
      } else {
        reduceRanks(step, dst);
      }
      complete(*it);
      it = local_.erase(it);
      moved = true;
    }
    return moved;
  }

  // Rank j's operand is step.src + j * stride (deterministicReduce lays them out by rank).
  void reduceRanks(const Step& step, char* dst) {
    rankSources_.resize(static_cast<size_t>(step.blocks));
    for (int j = 0; j < step.blocks; ++j) rankSources_[j] = source(step.src) + step.stride * static_cast<size_t>(j);
    kernels::reduceRanks(call_.type, call_.op, dst, rankSources_.data(), step.blocks, step.dst.bytes / elementBytes_);
  }

  // Posts the next step of a lane when the lane is idle and the step is ready.
  bool post(PeerLanes& lanes, Lane& lane, bool isSend) {
    if (lane.active >= 0 || lane.pending.empty() || !ready(lane.pending.front())) return false;
    lane.active = lane.pending.front();
    lane.pending.pop_front();
    const Step& step = schedule_.steps[lane.active];
    if (isSend) {
      if (carriesOwnTag(call_, step)) lanes.connection->setSendTag(messageTag(tag_, step, elementBytes_));
      lanes.connection->postSend(sendRegion(lanes, step.src.buffer), step.src.offset, step.src.bytes);
    } else {
      if (carriesOwnTag(call_, step)) lanes.connection->setRecvTag(messageTag(tag_, step, elementBytes_));
      const char* local = step.kind == StepKind::RecvReduce ? source(step.src) : nullptr;
      lane.sink.emplace(target(step.dst), local, call_, context_, elementBytes_, step.rawIncoming, step.partialLocal);
      lanes.connection->postRecv(step.dst.bytes, &*lane.sink);
    }
    return true;
  }

  bool retire(PeerLanes& lanes, Lane& lane, bool isSend) {
    if (lane.active < 0) return false;
    if (isSend ? !lanes.connection->sendDone() : !lanes.connection->recvDone()) return false;
    complete(lane.active);
    lane.active = -1;
    return true;
  }

  bool pass() {
    awaitingDevice_ = false;
    bool moved = runLocalSteps();
    for (auto& [peer, lanes] : lanes_) {
      moved |= post(lanes, lanes.send, true);
      moved |= post(lanes, lanes.recv, false);
      if (lanes.send.active < 0 && lanes.recv.active < 0) continue;
      moved |= progress(peer, lanes);
      // Retire and immediately post the next step, so a lane never idles for a whole pass.
      while (retire(lanes, lanes.send, true) && post(lanes, lanes.send, true)) moved = true;
      while (retire(lanes, lanes.recv, false) && post(lanes, lanes.recv, false)) moved = true;
    }
    return moved;
  }

  bool progress(int peer, PeerLanes& lanes) {
    try {
      return lanes.connection->progress();
    } catch (...) {
      rethrowTransportError(peer, std::current_exception());
    }
  }

  // A rank whose call fails tells its socket peers why (a Failure frame) and shuts its sockets
  // down, so a connection may break because of a failure further round the ring: prefer a
  // report that names the cause, on any connection, else name a dead rank. A killed process
  // closes its sockets before it becomes a zombie, and a report may still be on its way, so
  // look for up to 200 ms (an error path only).
  std::string deathBehind(int peer) {
    const std::vector<pid_t>* pids = context_.peerPids;
    const bool checkPids =
        pids != nullptr && std::any_of(pids->begin(), pids->end(), [](pid_t pid) { return pid != 0; });
    const auto giveUp = Clock::now() + std::chrono::milliseconds(200);
    for (;;) {
      for (auto& [other, lanes] : lanes_) {
        try {
          lanes.connection->throwPeerReport();
        } catch (const ExplainedError& report) {
          throw Error(report.code(), prefix() + report.what());
        } catch (const Error&) {
          // That connection is broken too; keep looking at the others.
        }
      }
      if (checkPids) {
        const std::vector<DeadPeer> dead = findDeadPeers(*pids);
        if (!dead.empty()) return "; " + describeDeadPeers(dead);
      }
      if (Clock::now() >= giveUp) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    const pid_t peerPid = checkPids && peer >= 0 && peer < static_cast<int>(pids->size()) ? (*pids)[peer] : 0;
    if (peerPid == 0) return "";
    // loom_torch (user_errors.cc) rewrites the parenthesis in PyTorch's words.
    return "; rank " + std::to_string(peer) + " (pid " + std::to_string(peerPid) +
           ") is still alive (its call failed, or it destroyed or aborted its communicator)";
  }

  std::string prefix() const {
    return "rank " + std::to_string(context_.rank) + ": " + context_.operation() + ": ";
  }

  // Checked only after the rank has idled for kLivenessCheckIntervalMs, then at that interval.
  void checkPeersAlive(Clock::time_point now) {
    if (now < nextLivenessCheck_) return;
    nextLivenessCheck_ = now + std::chrono::milliseconds(kLivenessCheckIntervalMs);
    checkAwaitedPeersPresent();
    if (context_.peerPids == nullptr) return;
    const std::vector<DeadPeer> dead = findDeadPeers(*context_.peerPids);
    if (dead.empty()) return;
    // A dead rank this one waits on is fatal at once. Another dead rank may just have finished
    // its part of the call and exited (a chain's far end): fatal only once nothing has moved
    // for a while, which a death further round the ring soon causes.
    bool awaited = false;
    for (const DeadPeer& peer : dead) {
      auto found = lanes_.find(peer.rank);
      awaited = awaited || (found != lanes_.end() && (found->second.send.active >= 0 || !found->second.send.pending.empty() ||
                                                      found->second.recv.active >= 0 || !found->second.recv.pending.empty()));
    }
    if (awaited || now - idleSince_ > std::chrono::milliseconds(kOtherDeathGraceMs)) {
      throw Error(loomRemoteError, prefix() + describeDeadPeers(dead) + "; " + waitingOn());
    }
  }

  // A peer that destroyed or aborted its communicator but lives on sends nothing more, yet no
  // socket breaks over shm and no pid dies: its transport tells (checkPeerPresent). Only peers
  // this rank waits on: one that finished its part of the call may leave.
  void checkAwaitedPeersPresent() {
    for (auto& [peer, lanes] : lanes_) {
      const bool awaited = lanes.send.active >= 0 || !lanes.send.pending.empty() || lanes.recv.active >= 0 ||
                           !lanes.recv.pending.empty();
      if (!awaited) continue;
      try {
        lanes.connection->checkPeerPresent();
      } catch (const Error& error) {
        throw Error(error.code(), prefix() + error.what() + "; " + waitingOn());
      }
    }
  }

  void checkAbort() const {
    if (context_.abortFlag && context_.abortFlag->load(std::memory_order_relaxed)) {
      throw Error(loomSystemError, "rank " + std::to_string(context_.rank) + ": " +
                                       context_.operation() + " aborted (loomCommAbort or loomCommRevoke)");
    }
  }

  // The timeout counts time without progress, so a large transfer that keeps moving is
  // never cut off, and a stalled one fails timeoutMs after it stalled.
  Clock::time_point checkDeadline(bool justWentIdle) {
    checkAbort();
    const auto now = Clock::now();
    if (justWentIdle) {
      idleSince_ = now;
      nextLivenessCheck_ = now + std::chrono::milliseconds(kLivenessCheckIntervalMs);
    }
    checkPeersAlive(now);
    if (now - idleSince_ > std::chrono::milliseconds(context_.timeoutMs)) {
      if (awaitsOnlyThisHost()) throwReportArrivingWithin(std::chrono::milliseconds(std::min(context_.timeoutMs / 10, 500)));
      throw Error(loomSystemError, "rank " + std::to_string(context_.rank) + ": " +
                                       context_.operation() + " timed out: no progress for " +
                                       std::to_string(context_.timeoutMs) + " ms " + waitingOn());
    }
    return now;
  }

  // A stall across hosts (a link gone down) stops a whole ring at once: the ranks that wait on
  // a peer of another host time out knowing that host, and their neighbours inside the host,
  // which wait only on them, time out a few milliseconds apart knowing nothing of it. Those
  // give the report of the rank they wait on (it names the lost host) a moment to arrive. Only
  // in a communicator that spans hosts: on one host a timeout is reported as it happens.
  bool awaitsOnlyThisHost() const {
    const std::vector<std::string>* hosts = context_.peerHosts;
    if (hosts == nullptr || std::all_of(hosts->begin(), hosts->end(), [](const std::string& h) { return h.empty(); })) {
      return false;
    }
    bool awaitsAny = false;
    for (const auto& [peer, lanes] : lanes_) {
      const bool awaited = lanes.send.active >= 0 || !lanes.send.pending.empty() || lanes.recv.active >= 0 ||
                           !lanes.recv.pending.empty();
      if (awaited && !(*hosts)[peer].empty()) return false;
      awaitsAny = awaitsAny || awaited;
    }
    return awaitsAny;
  }
  void throwReportArrivingWithin(std::chrono::milliseconds grace) {
    const auto giveUp = Clock::now() + grace;
    do {
      checkAbort();
      for (auto& [peer, lanes] : lanes_) {
        try {
          lanes.connection->throwPeerReport();
        } catch (const ExplainedError& report) {
          throw Error(report.code(), prefix() + report.what());
        } catch (const Error&) {
          // That connection is broken: no report will come on it.
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    } while (Clock::now() < giveUp);
  }

  std::string waitingOn() const {
    std::string text = awaitingDevice_ ? "waiting on the input's copy from the device," : "waiting on";
    for (const auto& [peer, lanes] : lanes_) {
      if (lanes.send.active >= 0 || !lanes.send.pending.empty()) {
        text += " send to rank " + std::to_string(peer) + onHost(peer) + " (" + lanes.connection->kind() + ")";
      }
      if (lanes.recv.active >= 0 || !lanes.recv.pending.empty()) {
        text += " recv from rank " + std::to_string(peer) + onHost(peer) + " (" + lanes.connection->kind() + ")";
      }
    }
    return text;
  }

  // Spin briefly (the peer is often a few hundred ns behind), then yield the core (8 ranks
  // may share 2), then sleep until a peer rings our doorbell or a socket becomes ready.
  void backOff() {
    switch (backoff_.next()) {
      case Backoff::Phase::Spin:
        // A short wait ends with data (whose progress call rings) before this; a longer one
        // must not leave a sleeping peer unwoken (Connection::flushWakeup).
        if (backoff_.rounds() == kFlushAfterIdleRounds) flushWakeups();
        cpuPause();
        return;
      case Backoff::Phase::Yield: {
        flushWakeups();
        // Most yields are a peer's turn on this core and the next pass finds its message, so
        // the clock (a vDSO call: pure overhead to such a wait) is read only every
        // kYieldsPerClockRead-th yield: the idle time starts at the first such read, a few
        // yields late, which no timeout of milliseconds can notice. Abort is checked each time.
        const int round = backoff_.yieldRound();
        if (round % kYieldsPerClockRead == 0) {
          checkDeadline(round == kYieldsPerClockRead);
        } else {
          checkAbort();
        }
        sched_yield();
        return;
      }
      case Backoff::Phase::Sleep:
        flushWakeups();
        if (checkDeadline(false) - idleSince_ < std::chrono::milliseconds(context_.yieldBeforeSleepMs)) {
          // Not idle long enough to give the core up: yield on, reading the clock as seldom.
          backoff_.yieldMore(kYieldsPerClockRead);
          sched_yield();
          return;
        }
        waiting_.clear();
        for (const auto& [peer, lanes] : lanes_) {
          if (lanes.send.active >= 0 || lanes.recv.active >= 0) waiting_.push_back(lanes.connection);
        }
        // A device copy that lands rings no doorbell: while a step waits for one, sleep briefly
        // (the emulated GPU's copies need this core; a real GPU's copy engine does not).
        waits_.sleep(waiting_, awaitingDevice_ ? std::min(backoff_.sleepUs(), kDeviceCopyPollUs) : backoff_.sleepUs());
        return;
    }
  }

  void flushWakeups() {
    for (auto& [peer, lanes] : lanes_) lanes.connection->flushWakeup();
  }

  const bool adopting_;  // the call's messages were posted by quickExchange
  const CallSpec& call_;
  const Schedule& schedule_;
  const ExecutionBuffers& buffers_;
  const ExecutionContext& context_;
  const size_t elementBytes_;
  RunStorage& storage_;
  std::vector<uint8_t>& done_;
  size_t remaining_ = 0;
  std::vector<int>& local_;
  std::vector<const void*>& rankSources_;
  LaneTable& lanes_;
  std::vector<Registration>& registered_;
  size_t registrations_ = 0;  // this call's: the first registrations_ of registered_
  const transport::CallTag tag_ = callTag(call_, context_);
  transport::WaitSet& waits_;
  std::vector<const transport::Connection*>& waiting_;  // kept: no allocation per sleep
  StagedCopies* const staged_;
  bool awaitingDevice_ = false;  // this pass found a step whose staged input has not arrived
  Backoff backoff_{executorBackoff(context_.spinPasses)};
  Clock::time_point idleSince_;
  Clock::time_point nextLivenessCheck_;
};

}  // namespace

void execute(const CallSpec& call, const Schedule& schedule, const ExecutionBuffers& buffers,
             const ExecutionContext& context) {
  RunStorage& storage = runStorage();
  QuickPlan& plan = context.quickPlan != nullptr ? *context.quickPlan : storage.plan;
  if (context.quickPlan == nullptr) plan.state = QuickPlan::State::Unknown;
  if (context.staged != nullptr) [[unlikely]] {  // its sends must wait for the device's copies
    Run(call, schedule, buffers, context).run();
    return;
  }
  if (plan.state == QuickPlan::State::Unknown) prepareQuickPlan(call, schedule, context, plan);
  if (plan.state != QuickPlan::State::Eligible) {
    Run(call, schedule, buffers, context).run();
    return;
  }
  QuickMessages& quick = storage.quick;
  int spunRounds = 0;
  int failedPeer = -1;
  std::exception_ptr failure;
  switch (quickExchange(call, schedule, plan, buffers, context, quick, spunRounds, failure, failedPeer)) {
    case QuickOutcome::Done:
      return;
    case QuickOutcome::Posted:
      Run(call, schedule, buffers, context, &quick, spunRounds).run();
      return;
    case QuickOutcome::Failed:
      // A Run over the posted messages only to name the error as its own progress() would.
      Run(call, schedule, buffers, context, &quick).rethrowTransportError(failedPeer, failure);
  }
}

}  // namespace loom::algo
