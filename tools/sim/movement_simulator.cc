// SPDX-License-Identifier: Apache-2.0
#include "movement_simulator.h"

#include <algorithm>

#include "base/error.h"

namespace loom::algo {

namespace {

std::string bufferName(size_t which) {
  switch (which) {
    case 0: return "send";
    case 1: return "recv";
    case 2: return "scratch";
    default: return "op" + std::to_string(which - kFirstUserBuffer);
  }
}

// A step's reach into its rank's arena: what it reads and what it writes (bytes == 0: none).
struct Access {
  size_t readAt = 0, readBytes = 0, writeAt = 0, writeBytes = 0;
};

// One lane's steps in order, taken from the front. A rank has two lanes per peer (2n in all),
// most of them empty past a few ranks: an empty one allocates nothing (a deque would).
struct Lane {
  std::vector<int> steps;
  size_t next = 0;
  bool empty() const { return next == steps.size(); }
  int front() const { return steps[next]; }
  void popFront() { ++next; }
};

class MovementRun {
 public:
  explicit MovementRun(const std::vector<RankProgram>& programs)
      : programs_(programs), n_(static_cast<int>(programs.size())), ranks_(programs.size()) {
    for (int r = 0; r < n_; ++r) prepare(r);
    for (int r = 0; r < n_; ++r) checkUnorderedAccesses(r);
  }

  MovementResult run() {
    bool moved = true;
    while (moved) {
      moved = false;
      for (int r = 0; r < n_; ++r) moved |= runLocalSteps(r);
      for (int from = 0; from < n_; ++from) {
        for (int to = 0; to < n_; ++to) moved |= exchange(from, to);
      }
    }
    reportDeadlock();
    MovementResult result;
    for (int r = 0; r < n_; ++r) {
      RankState& state = ranks_[r];
      RankSet heard = RankSet::of(n_, r);
      for (const RankSet& known : state.causal) heard |= known;
      result.heardFrom.push_back(std::move(heard));
      result.memory.push_back(std::move(state.memory));
      result.writes.push_back(std::move(state.writes));
    }
    result.messages = messages_;
    result.bytes = bytes_;
    return result;
  }

 private:
  struct RankState {
    std::vector<Origin> memory;
    std::vector<uint32_t> writes;
    std::vector<Access> access;
    std::vector<int> lanePredecessor;  // the previous step of the same lane, or -1
    std::vector<bool> done;
    std::vector<RankSet> causal;  // per step: ranks whose start happened before it completed
    std::vector<Lane> sendLanes, recvLanes;  // by peer
    std::vector<int> local;
    size_t remaining = 0;
  };

  [[noreturn]] void fail(int rank, int index, const std::string& what) const {
    const Step& step = programs_[rank].schedule.steps[index];
    throwInternal("movement simulator: rank " + std::to_string(rank) + " step " + std::to_string(index) + " (" +
                  describe(step) + "): " + what);
  }

  // The arena byte where `range` starts, after checking it lies in a buffer this rank has.
  size_t locate(int rank, int index, const Range& range, bool write) const {
    const RankProgram& program = programs_[rank];
    const size_t which = static_cast<size_t>(range.buffer);
    const std::string name = bufferName(which);
    if (range.bytes == 0) fail(rank, index, "moves zero bytes (schedule.h: such steps are never emitted)");
    if (which >= program.buffers.size() || !program.buffers[which].present) {
      fail(rank, index, "touches " + name + ", which is NULL on this rank");
    }
    const Region& region = program.buffers[which];
    if (range.offset > region.bytes || range.bytes > region.bytes - range.offset) {
      fail(rank, index, "reaches past the end of " + name + " (" + std::to_string(region.bytes) + " bytes)");
    }
    if (write && range.buffer == Buffer::Send) fail(rank, index, "writes into the send buffer");
    return region.at + range.offset;
  }

  void prepare(int r) {
    const RankProgram& program = programs_[r];
    RankState& state = ranks_[r];
    for (const Region& region : program.buffers) {
      if (region.present && region.at + region.bytes > program.arenaBytes) {
        throwInternal("movement simulator: rank " + std::to_string(r) + " has a buffer outside its arena");
      }
    }
    state.memory.resize(program.arenaBytes);
    for (size_t at = 0; at < program.arenaBytes; ++at) state.memory[at] = Origin{r, static_cast<uint32_t>(at)};
    state.writes.assign(program.arenaBytes, 0);
    const std::vector<Step>& steps = program.schedule.steps;
    state.access.resize(steps.size());
    state.lanePredecessor.assign(steps.size(), -1);
    state.done.assign(steps.size(), false);
    state.causal.assign(steps.size(), RankSet(n_));
    state.sendLanes.resize(n_);
    state.recvLanes.resize(n_);
    state.remaining = steps.size();
    for (size_t i = 0; i < steps.size(); ++i) {
      const int index = static_cast<int>(i);
      const Step& step = steps[i];
      if (step.dependsOn >= index || step.alsoDependsOn >= index) fail(r, index, "depends on a later step");
      Access& access = state.access[i];
      switch (step.kind) {
        case StepKind::Send:
        case StepKind::Recv: {
          if (step.peer < 0 || step.peer >= n_ || step.peer == r) fail(r, index, "bad peer");
          const bool send = step.kind == StepKind::Send;
          if (send) {
            access.readAt = locate(r, index, step.src, false);
            access.readBytes = step.src.bytes;
          } else {
            access.writeAt = locate(r, index, step.dst, true);
            access.writeBytes = step.dst.bytes;
          }
          std::vector<int>& lane = (send ? state.sendLanes : state.recvLanes)[step.peer].steps;
          if (!lane.empty()) state.lanePredecessor[i] = lane.back();
          lane.push_back(index);
          break;
        }
        case StepKind::Copy: {
          if (step.src.bytes != step.dst.bytes) fail(r, index, "copies between ranges of different sizes");
          const size_t from = locate(r, index, step.src, false);
          const size_t to = locate(r, index, step.dst, true);
          // The executor skips a copy onto the same memory (in-place forms): it touches nothing.
          if (from != to) access = Access{from, step.src.bytes, to, step.dst.bytes};
          state.local.push_back(index);
          break;
        }
        default: fail(r, index, "not a data-movement step (use simulator.h for reductions)");
      }
    }
  }

  // Steps with no chain of dependencies or lane order between them may run at once in the
  // executor (lanes progress together, local steps run between passes), so neither may write
  // a byte the other reads or writes. Only steps whose reaches overlap can clash: a sweep over
  // the reaches in order of their first byte finds those pairs, so a rank's s steps cost
  // O(s log s) plus the overlapping pairs rather than s^2 (all-to-all at hundreds of ranks).
  // The clash reported is the first in step order, as a scan of every pair would find it.
  void checkUnorderedAccesses(int r) const {
    const RankState& state = ranks_[r];
    const std::vector<Step>& steps = programs_[r].schedule.steps;
    const size_t count = steps.size();
    const size_t words = (count + 63) / 64;
    // before[i * words + w]: bit set for every step that must finish before step i starts.
    std::vector<uint64_t> before(count * words, 0);
    auto row = [&](size_t i) { return before.data() + i * words; };
    for (size_t i = 0; i < count; ++i) {
      for (int predecessor : {steps[i].dependsOn, steps[i].alsoDependsOn, state.lanePredecessor[i]}) {
        if (predecessor < 0) continue;
        const size_t p = static_cast<size_t>(predecessor);
        for (size_t w = 0; w < words; ++w) row(i)[w] |= row(p)[w];
        row(i)[p / 64] |= uint64_t{1} << (p % 64);
      }
    }
    struct Reach {
      size_t at, end;  // arena bytes [at, end)
      size_t step;
      bool write;
    };
    std::vector<Reach> reaches;
    for (size_t i = 0; i < count; ++i) {
      const Access& access = state.access[i];
      if (access.readBytes > 0) reaches.push_back(Reach{access.readAt, access.readAt + access.readBytes, i, false});
      if (access.writeBytes > 0) reaches.push_back(Reach{access.writeAt, access.writeAt + access.writeBytes, i, true});
    }
    std::sort(reaches.begin(), reaches.end(), [](const Reach& a, const Reach& b) { return a.at < b.at; });
    size_t firstLater = count, firstEarlier = count;  // the clash (j, i), i < j, least in step order
    std::vector<size_t> open;                         // reaches that may overlap the next one
    for (size_t k = 0; k < reaches.size(); ++k) {
      const Reach& b = reaches[k];
      std::erase_if(open, [&](size_t o) { return reaches[o].end <= b.at; });
      for (size_t o : open) {
        const Reach& a = reaches[o];
        if (a.step == b.step || (!a.write && !b.write)) continue;
        const size_t j = std::max(a.step, b.step), i = std::min(a.step, b.step);
        if (row(j)[i / 64] >> (i % 64) & 1) continue;  // ordered: i finishes before j starts
        if (j < firstLater || (j == firstLater && i < firstEarlier)) {
          firstLater = j;
          firstEarlier = i;
        }
      }
      open.push_back(k);
    }
    if (firstLater < count) {
      fail(r, static_cast<int>(firstLater), "may run at the same time as step " + std::to_string(firstEarlier) +
                                                " (" + describe(steps[firstEarlier]) + ") and touches the same bytes");
    }
  }

  bool ready(int r, int index) const {
    const Step& step = programs_[r].schedule.steps[index];
    const std::vector<bool>& done = ranks_[r].done;
    return (step.dependsOn < 0 || done[step.dependsOn]) && (step.alsoDependsOn < 0 || done[step.alsoDependsOn]);
  }

  // What the step knows when it starts: this rank's start, and all its predecessors knew.
  RankSet knownAtStart(int r, int index) const {
    const Step& step = programs_[r].schedule.steps[index];
    const RankState& state = ranks_[r];
    RankSet known = RankSet::of(n_, r);
    for (int predecessor : {step.dependsOn, step.alsoDependsOn, state.lanePredecessor[index]}) {
      if (predecessor >= 0) known |= state.causal[predecessor];
    }
    return known;
  }

  void complete(int r, int index, RankSet known) {
    RankState& state = ranks_[r];
    state.done[index] = true;
    state.causal[index] = std::move(known);
    --state.remaining;
  }

  void write(RankState& state, size_t at, const std::vector<Origin>& labels) {
    for (size_t i = 0; i < labels.size(); ++i) {
      state.memory[at + i] = labels[i];
      ++state.writes[at + i];
    }
  }

  bool runLocalSteps(int r) {
    RankState& state = ranks_[r];
    bool moved = false;
    for (auto it = state.local.begin(); it != state.local.end();) {
      if (!ready(r, *it)) {
        ++it;
        continue;
      }
      const Access& access = state.access[*it];
      if (access.writeBytes > 0) {
        const auto from = state.memory.begin() + static_cast<std::ptrdiff_t>(access.readAt);
        write(state, access.writeAt, std::vector<Origin>(from, from + static_cast<std::ptrdiff_t>(access.readBytes)));
      }
      complete(r, *it, knownAtStart(r, *it));
      it = state.local.erase(it);
      moved = true;
    }
    return moved;
  }

  // Moves messages from `from` to `to` while both lane fronts are ready (a rendezvous).
  bool exchange(int from, int to) {
    if (from == to) return false;
    RankState& sender = ranks_[from];
    RankState& receiver = ranks_[to];
    Lane& sends = sender.sendLanes[to];
    Lane& recvs = receiver.recvLanes[from];
    bool moved = false;
    while (!sends.empty() && !recvs.empty() && ready(from, sends.front()) && ready(to, recvs.front())) {
      const int s = sends.front(), v = recvs.front();
      const Step& send = programs_[from].schedule.steps[s];
      const Step& recv = programs_[to].schedule.steps[v];
      if (send.src.bytes != recv.dst.bytes) {
        fail(to, v, "message of " + std::to_string(send.src.bytes) + " bytes from rank " + std::to_string(from) +
                        " (its step " + std::to_string(s) + ") does not match the receive's size");
      }
      if (send.message != recv.message) {
        fail(to, v, "message tagged " + std::to_string(send.message) + " by rank " + std::to_string(from) +
                        " (its step " + std::to_string(s) + ") meets a receive tagged " + std::to_string(recv.message));
      }
      const Access& read = sender.access[s];
      const auto first = sender.memory.begin() + static_cast<std::ptrdiff_t>(read.readAt);
      write(receiver, receiver.access[v].writeAt,
            std::vector<Origin>(first, first + static_cast<std::ptrdiff_t>(read.readBytes)));
      const RankSet sent = knownAtStart(from, s);
      complete(from, s, sent);
      RankSet received = knownAtStart(to, v);
      received |= sent;
      complete(to, v, std::move(received));
      sends.popFront();
      recvs.popFront();
      ++messages_;
      bytes_ += send.src.bytes;
      moved = true;
    }
    return moved;
  }

  void reportDeadlock() const {
    std::string stuck;
    int shown = 0;
    for (int r = 0; r < n_ && shown < 4; ++r) {
      const std::vector<Step>& steps = programs_[r].schedule.steps;
      for (size_t i = 0; i < steps.size() && shown < 4; ++i) {
        if (ranks_[r].done[i]) continue;
        stuck += (shown++ ? "; " : "") + std::string("rank ") + std::to_string(r) + " step " + std::to_string(i) +
                 " (" + describe(steps[i]) + ")";
      }
    }
    if (!stuck.empty()) throwInternal("movement simulator: deadlock: steps that can never run: " + stuck);
  }

  const std::vector<RankProgram>& programs_;
  int n_;
  std::vector<RankState> ranks_;
  size_t messages_ = 0;
  size_t bytes_ = 0;
};

}  // namespace

MovementResult simulateMovement(const std::vector<RankProgram>& programs) { return MovementRun(programs).run(); }

Promise::Promise(const std::vector<RankProgram>& programs) {
  for (const RankProgram& program : programs) {
    std::vector<Byte>& rank = bytes.emplace_back(program.arenaBytes);
    const size_t scratch = static_cast<size_t>(Buffer::Scratch);
    if (program.buffers.size() > scratch && program.buffers[scratch].present) {
      const Region& region = program.buffers[scratch];
      for (size_t i = 0; i < region.bytes; ++i) rank[region.at + i].kind = Kind::Free;
    }
  }
}

void Promise::holds(int rank, size_t at, int fromRank, size_t fromAt, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    bytes[rank][at + i] = Byte{Kind::Holds, Origin{fromRank, static_cast<uint32_t>(fromAt + i)}};
  }
}

std::string describeByte(const std::vector<RankProgram>& programs, int rank, size_t at) {
  const std::vector<Region>& buffers = programs[rank].buffers;
  for (size_t which = 0; which < buffers.size(); ++which) {
    const Region& region = buffers[which];
    if (region.present && at >= region.at && at < region.at + region.bytes) {
      return "rank " + std::to_string(rank) + " " + bufferName(which) + " byte " + std::to_string(at - region.at);
    }
  }
  return "rank " + std::to_string(rank) + " arena byte " + std::to_string(at);
}

std::string verifyPromise(const std::vector<RankProgram>& programs, const Promise& promise,
                          const MovementResult& result) {
  for (size_t r = 0; r < programs.size(); ++r) {
    const int rank = static_cast<int>(r);
    for (size_t at = 0; at < promise.bytes[r].size(); ++at) {
      const Promise::Byte& expected = promise.bytes[r][at];
      const Origin& held = result.memory[r][at];
      if (expected.kind == Promise::Kind::Untouched && result.writes[r][at] != 0) {
        return describeByte(programs, rank, at) + " was written " + std::to_string(result.writes[r][at]) +
               " time(s), outside what the operation may write";
      }
      if (expected.kind == Promise::Kind::Holds && !(held == expected.origin)) {
        return describeByte(programs, rank, at) + " holds " + describeByte(programs, held.rank, held.at) +
               ", expected " + describeByte(programs, expected.origin.rank, expected.origin.at);
      }
    }
  }
  return "";
}

}  // namespace loom::algo
