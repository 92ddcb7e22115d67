// SPDX-License-Identifier: Apache-2.0
// The numeric schedule simulator (schedule_numeric_sim.h). Compiled once, into the tests' support
// library: it walks every element of every step, so it runs at the build's optimisation, also
// where the test programs' own code has none.
#include "tests/unit/schedule_numeric_sim.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace loom::algo::numeric_sim {
namespace {

// ---- A numeric simulator --------------------------------------------------------------------
// Every rank's memory is one vector of doubles laid out as the symbolic simulator lays it out
// (in place: all-reduce's send is recv, all-gather's send is recv's block r, reduce-scatter's
// recv is send's block r). Input element i of rank r is an integer, so sums (scaled by powers
// of two for avg) are exact and the result can be compared bit for bit.
constexpr size_t kElement = 8;
constexpr double kUntouched = -12345.0;

inline double inputOf(int rank, size_t i) { return static_cast<double>((rank + 1) * 1024 + static_cast<int>(i % 97)); }

inline int averageShiftOf(int n) {  // kernels/reduce_ops.h: 2^k >= 2n
  int k = 0;
  while ((1 << k) < 2 * n) ++k;
  return k;
}

struct NumericRank {
  Schedule schedule;
  size_t sendAt = 0, sendCount = 0, recvAt = 0, recvCount = 0, scratchAt = 0;
  std::vector<double> memory;
  std::vector<uint8_t> done;
  std::vector<int> localSteps;
  std::map<int, std::deque<int>> sendLanes, recvLanes;  // by peer
  std::map<int, std::deque<int>> posted;                // by peer: sends posted, not yet taken
};

class NumericSimulation {
 public:
  NumericSimulation(const CollectiveShape& shape, bool inPlace) : shape_(shape), ranks_(shape.nranks) {
    shape_.elementBytes = kElement;
    const int n = shape.nranks;
    for (int r = 0; r < n; ++r) {
      CollectiveShape mine = shape_;
      mine.rank = r;
      NumericRank& rank = ranks_[r];
      rank.schedule = buildSchedule(mine);
      const size_t blocks = static_cast<size_t>(n) * shape.count;
      rank.sendCount = shape.collective == Collective::ReduceScatter ? blocks : shape.count;
      rank.recvCount = shape.collective == Collective::AllGather ? blocks : shape.count;
      if (!inPlace) {
        rank.recvAt = rank.sendCount;
        rank.scratchAt = rank.sendCount + rank.recvCount;
      } else if (shape.collective == Collective::AllGather) {
        rank.sendAt = static_cast<size_t>(r) * shape.count;
        rank.scratchAt = rank.recvCount;
      } else {
        rank.recvAt = shape.collective == Collective::ReduceScatter ? static_cast<size_t>(r) * shape.count : 0;
        rank.scratchAt = rank.sendCount;
      }
      rank.memory.assign(rank.scratchAt + rank.schedule.scratchBytes / kElement, kUntouched);
      for (size_t i = 0; i < rank.sendCount; ++i) rank.memory[rank.sendAt + i] = inputOf(r, i);
      rank.done.assign(rank.schedule.steps.size(), 0);
      for (size_t i = 0; i < rank.schedule.steps.size(); ++i) {
        const Step& step = rank.schedule.steps[i];
        if (step.kind == StepKind::Send) rank.sendLanes[step.peer].push_back(static_cast<int>(i));
        else if (step.kind == StepKind::Recv || step.kind == StepKind::RecvReduce)
          rank.recvLanes[step.peer].push_back(static_cast<int>(i));
        else rank.localSteps.push_back(static_cast<int>(i));
      }
    }
  }

  // Runs every step, choosing among the possible actions at random; "" when every step ran.
  std::string run(uint32_t seed) {
    std::mt19937 random(seed);
    struct Action {
      int rank, kind, peer, index;  // kind 0: local step, 1: post a send, 2: take a message
    };
    std::vector<Action> actions;
    for (;;) {
      actions.clear();
      for (int r = 0; r < shape_.nranks; ++r) {
        NumericRank& rank = ranks_[r];
        for (size_t k = 0; k < rank.localSteps.size(); ++k) {
          if (ready(rank, rank.localSteps[k])) actions.push_back({r, 0, -1, static_cast<int>(k)});
        }
        for (auto& [peer, lane] : rank.sendLanes) {
          // One message in flight a lane, as the executor posts them, and as a transport that
          // holds no message until its receiver takes it (the strictest) lets it.
          if (!lane.empty() && ready(rank, lane.front()) && rank.posted[peer].empty()) {
            actions.push_back({r, 1, peer, lane.front()});
          }
        }
        for (auto& [peer, lane] : rank.recvLanes) {
          if (lane.empty() || !ready(rank, lane.front())) continue;
          auto sent = ranks_[peer].posted.find(r);
          if (sent != ranks_[peer].posted.end() && !sent->second.empty()) actions.push_back({r, 2, peer, lane.front()});
        }
      }
      if (actions.empty()) break;
      const Action action = actions[random() % actions.size()];
      NumericRank& rank = ranks_[action.rank];
      if (action.kind == 0) {
        const int index = rank.localSteps[static_cast<size_t>(action.index)];
        rank.localSteps.erase(rank.localSteps.begin() + action.index);
        if (std::string problem = runLocal(action.rank, index); !problem.empty()) return problem;
      } else if (action.kind == 1) {
        rank.sendLanes[action.peer].pop_front();
        rank.posted[action.peer].push_back(action.index);  // done when the receiver takes it
      } else {
        rank.recvLanes[action.peer].pop_front();
        if (std::string problem = take(action.rank, action.peer, action.index); !problem.empty()) return problem;
      }
    }
    for (int r = 0; r < shape_.nranks; ++r) {
      for (uint8_t stepDone : ranks_[r].done) {
        if (!stepDone) return "rank " + std::to_string(r) + ": deadlock";
      }
    }
    return "";
  }

  // What each rank's output must hold, compared bit for bit; "" when right.
  std::string verify(bool inPlace) const {
    const int n = shape_.nranks;
    const double scale = std::ldexp(1.0, -averageShiftOf(n));
    const auto reduced = [&](size_t i) {
      double sum = 0;
      for (int r = 0; r < n; ++r) sum += inputOf(r, i);
      return shape_.average ? (sum * scale) / (n * scale) : sum;
    };
    for (int r = 0; r < n; ++r) {
      const NumericRank& rank = ranks_[r];
      for (size_t i = 0; i < rank.recvCount; ++i) {
        double expected = 0;
        const size_t count = shape_.count;
        switch (shape_.collective) {
          case Collective::AllReduce: expected = reduced(i); break;
          case Collective::ReduceScatter: expected = reduced(static_cast<size_t>(r) * count + i); break;
          case Collective::AllGather: expected = inputOf(static_cast<int>(i / count), i % count); break;
          case Collective::Broadcast: expected = inputOf(shape_.root, i); break;
          case Collective::Reduce:
            expected = r == shape_.root ? reduced(i) : inPlace ? inputOf(r, i) : kUntouched;
            break;
          default: return "no numeric check";
        }
        const double got = rank.memory[rank.recvAt + i];
        if (std::memcmp(&got, &expected, sizeof(double)) != 0) {
          return "rank " + std::to_string(r) + " element " + std::to_string(i) + " is " + std::to_string(got) +
                 ", expected " + std::to_string(expected);
        }
      }
      if (!inPlace) {
        for (size_t i = 0; i < rank.sendCount; ++i) {
          if (rank.memory[rank.sendAt + i] != inputOf(r, i)) return "rank " + std::to_string(r) + " changed its input";
        }
      }
    }
    return "";
  }

 private:
  static bool ready(const NumericRank& rank, int index) {
    const Step& step = rank.schedule.steps[static_cast<size_t>(index)];
    return (step.dependsOn < 0 || rank.done[static_cast<size_t>(step.dependsOn)]) &&
           (step.alsoDependsOn < 0 || rank.done[static_cast<size_t>(step.alsoDependsOn)]);
  }

  double* at(NumericRank& rank, const Range& range) {
    size_t base = 0, limit = 0;
    switch (range.buffer) {
      case Buffer::Send: base = rank.sendAt; limit = rank.sendCount; break;
      case Buffer::Recv: base = rank.recvAt; limit = rank.recvCount; break;
      default: base = rank.scratchAt; limit = rank.schedule.scratchBytes / kElement; break;
    }
    const bool aligned = range.offset % kElement == 0 && range.bytes % kElement == 0;
    if (!aligned || (range.offset + range.bytes) / kElement > limit) {
      return nullptr;
    }
    return rank.memory.data() + base + range.offset / kElement;
  }

  std::string runLocal(int r, int index) {
    NumericRank& rank = ranks_[r];
    const Step& step = rank.schedule.steps[static_cast<size_t>(index)];
    double* dst = at(rank, step.dst);
    if (dst == nullptr || step.dst.buffer == Buffer::Send) {
      return "rank " + std::to_string(r) + ": bad " + describe(step);
    }
    const size_t count = step.dst.bytes / kElement;
    if (step.kind == StepKind::Copy) {
      const double* src = at(rank, step.src);
      if (src == nullptr) return "rank " + std::to_string(r) + ": bad " + describe(step);
      std::vector<double> copy(src, src + count);
      std::copy(copy.begin(), copy.end(), dst);
    } else if (step.kind == StepKind::Divide) {
      const int n = shape_.nranks;
      const double divisor = n * std::ldexp(1.0, -averageShiftOf(n));
      for (size_t i = 0; i < count; ++i) dst[i] /= divisor;
    } else {
      return "rank " + std::to_string(r) + ": unexpected " + describe(step);
    }
    rank.done[static_cast<size_t>(index)] = 1;
    return "";
  }

  // Rank r takes the oldest message `peer` posted to it: the send reads its memory now.
  std::string take(int r, int peer, int index) {
    NumericRank& rank = ranks_[r];
    NumericRank& sender = ranks_[peer];
    const int sendIndex = sender.posted[r].front();
    sender.posted[r].pop_front();
    const Step& send = sender.schedule.steps[static_cast<size_t>(sendIndex)];
    const Step& step = rank.schedule.steps[static_cast<size_t>(index)];
    const std::string where = "rank " + std::to_string(r) + " (" + describe(step) + ") from rank " +
                              std::to_string(peer) + " (" + describe(send) + ")";
    if (send.src.bytes != step.dst.bytes) return where + ": sizes differ";
    const double* src = at(sender, send.src);
    double* dst = at(rank, step.dst);
    if (src == nullptr || dst == nullptr || step.dst.buffer == Buffer::Send) return where + ": out of bounds";
    const size_t count = step.dst.bytes / kElement;
    std::vector<double> message(src, src + count);
    if (step.kind == StepKind::Recv) {
      std::copy(message.begin(), message.end(), dst);
    } else {
      const double* local = at(rank, step.src);
      if (local == nullptr) return where + ": local operand out of bounds";
      const double scale = std::ldexp(1.0, -averageShiftOf(shape_.nranks));
      for (size_t i = 0; i < count; ++i) {
        if (!shape_.average || step.partialLocal) {
          dst[i] = local[i] + message[i];
        } else {
          dst[i] = local[i] * scale + (step.rawIncoming ? message[i] * scale : message[i]);
        }
      }
    }
    sender.done[static_cast<size_t>(sendIndex)] = 1;
    rank.done[static_cast<size_t>(index)] = 1;
    return "";
  }

  CollectiveShape shape_;
  std::vector<NumericRank> ranks_;
};

}  // namespace

NumericOutcome simulateNumerically(const CollectiveShape& shape, bool inPlace, uint32_t seed) {
  NumericSimulation simulation(shape, inPlace);
  NumericOutcome outcome;
  outcome.runProblem = simulation.run(seed);
  if (outcome.runProblem.empty()) outcome.verifyProblem = simulation.verify(inPlace);
  return outcome;
}

}  // namespace loom::algo::numeric_sim
