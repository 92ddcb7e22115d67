// SPDX-License-Identifier: Apache-2.0
// Distributed policy gradient on CartPole-v0 with Loom: REINFORCE, data-parallel over ranks.
//   loomrun -n 4 build/examples/policy_gradient/policy_gradient [--seed S] [--json FILE] ...
// Every rank plays its share of each update's episodes with its own seed, the gradients are
// all-reduced, and every rank takes the same optimizer step. Training stops when the last 100
// episodes (of all ranks) average at least the target; 100 fresh greedy episodes then decide
// the exit status. See README.md.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <vector>

#include "communicator.h"
#include "episodes.h"
#include "options.h"
#include "policy_network.h"
#include "random.h"
#include "reinforce.h"
#include "summary.h"

namespace policy_gradient {
namespace {

// Streams of deriveSeed(seed, stream), apart from training's seed + rank.
constexpr uint64_t kInitialisationStream = 1;
constexpr uint64_t kEvaluationStream = 2;  // + episode index
constexpr int kMovingAverageWindow = 100;
constexpr int kEvaluationEpisodes = 100;

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double averageOfLast(const std::vector<double>& values, size_t window) {
  const size_t count = std::min(window, values.size());
  if (count == 0) return 0;
  return std::accumulate(values.end() - static_cast<std::ptrdiff_t>(count), values.end(), 0.0) /
         count;
}

// The average return of fresh episodes, split over the ranks: rank r plays episodes r,
// r + ranks, ... Episode i starts from its own seed, so the starts are the same whatever the
// rank count, and none of them was seen in training.
double evaluate(const PolicyNetwork& policy, Communicator& communicator, uint64_t seed,
                int episodes, ActionChoice choice) {
  PolicyNetwork::Workspace workspace = policy.makeWorkspace();
  double sums[2] = {0, 0};  // returns, episodes
  for (int i = communicator.rank(); i < episodes; i += communicator.size()) {
    Random random(deriveSeed(seed, kEvaluationStream + static_cast<uint64_t>(i)));
    sums[0] += playEpisode(policy, workspace, random, choice, 1.0, nullptr);
    sums[1] += 1;
  }
  communicator.allReduce(sums, 2, loomSum);
  return sums[0] / sums[1];
}

// FNV-1a over the parameters' bits: equal hashes on two runs mean bitwise-equal parameters.
uint64_t parameterHash(const PolicyNetwork& policy) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (float value : policy.parameters()) {
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    hash = (hash ^ bits) * 0x100000001b3ull;
  }
  return hash;
}

// True when every rank holds the same parameter hash: each 32-bit half is exact in a double,
// and max(h) == min(h) over the ranks.
bool sameOnEveryRank(uint64_t hash, Communicator& communicator) {
  const double high = static_cast<double>(hash >> 32),
               low = static_cast<double>(hash & 0xffffffffu);
  double extremes[4] = {high, low, -high, -low};  // max of -h is -min of h: one call
  communicator.allReduce(extremes, 4, loomMax);
  return extremes[0] == -extremes[2] && extremes[1] == -extremes[3];
}

int run(int argc, char** argv) {
  const Options options = parseOptions(argc, argv);
  Communicator communicator;
  const int rank = communicator.rank(), ranks = communicator.size();
  if (const auto problem = checkForRanks(options, ranks)) {
    if (rank == 0) std::fprintf(stderr, "policy_gradient: %s\n", problem->c_str());
    communicator.barrier();  // so the launcher cannot stop rank 0 before it has said why
    return 2;
  }

  PolicyNetwork policy(options.hiddenWidth);
  Random initialisation(deriveSeed(options.seed, kInitialisationStream));
  policy.initialize(initialisation);
  // Every rank initialised from the same seed already; rank 0's copy makes it certain.
  communicator.broadcast(policy.parameters().data(), policy.parameterCount(), 0);

  Reinforce reinforce(policy, communicator, options.episodesPerUpdate, options.learningRate);
  Random random(options.seed + static_cast<uint64_t>(rank));
  PolicyNetwork::Workspace workspace = policy.makeWorkspace();
  Rollouts rollouts;
  const int localEpisodes = options.episodesPerUpdate / ranks;
  const bool fixed = options.fixedEpisodes > 0;
  const long episodeLimit = fixed ? options.fixedEpisodes : options.maxEpisodes;

  Summary summary;
  summary.ranks = ranks;
  summary.hiddenWidth = options.hiddenWidth;
  summary.episodesPerUpdate = options.episodesPerUpdate;
  summary.seed = options.seed;
  summary.fixedEpisodes = fixed;
  summary.target = options.target;
  if (rank == 0) {
    std::printf(
        "REINFORCE on CartPole-v0: %d rank%s, %d episodes per update (%d per rank), hidden %d, "
        "%zu parameters, lr %g, seed %llu\n",
        ranks, ranks == 1 ? "" : "s", options.episodesPerUpdate, localEpisodes, options.hiddenWidth,
        policy.parameterCount(), options.learningRate,
        static_cast<unsigned long long>(options.seed));
  }

  std::vector<double> history;  // every global episode's return, in order
  communicator.barrier();       // time from a common start
  const Clock::time_point start = Clock::now();
  while (summary.episodes + options.episodesPerUpdate <= episodeLimit) {
    rollouts.clear();
    for (int e = 0; e < localEpisodes; ++e) {
      playEpisode(policy, workspace, random, ActionChoice::kSample, options.gamma, &rollouts);
    }
    const std::vector<double> returns = reinforce.update(rollouts);
    history.insert(history.end(), returns.begin(), returns.end());
    summary.episodes += options.episodesPerUpdate;
    summary.updates += 1;
    summary.steps += reinforce.lastGlobalSteps();
    summary.movingAverage = averageOfLast(history, kMovingAverageWindow);
    // Every rank holds the same history, so every rank takes the same decision here.
    const bool reached =
        history.size() >= kMovingAverageWindow && summary.movingAverage >= options.target;
    if (reached && summary.solvedAtEpisode < 0) {
      summary.solvedAtEpisode = summary.episodes;
      summary.solvedAtSeconds = secondsSince(start);
    }
    if (rank == 0 && (summary.updates % options.logEvery == 0 || (reached && !fixed))) {
      std::printf("episodes %6ld  moving average %6.1f  wall %7.2f s\n", summary.episodes,
                  summary.movingAverage, secondsSince(start));
      std::fflush(stdout);
    }
    if (reached && !fixed) break;
  }
  summary.wallSeconds = secondsSince(start);
  summary.allReduceSeconds = reinforce.allReduceSeconds();

  const Clock::time_point evaluationStart = Clock::now();
  summary.evalEpisodes = kEvaluationEpisodes;
  summary.evalGreedy = options.evaluateGreedy;
  summary.evalAverage =
      evaluate(policy, communicator, options.seed, kEvaluationEpisodes,
               options.evaluateGreedy ? ActionChoice::kGreedy : ActionChoice::kSample);
  summary.evalSeconds = secondsSince(evaluationStart);
  summary.parameterHash = parameterHash(policy);
  summary.parametersIdentical = sameOnEveryRank(summary.parameterHash, communicator);

  bool ok = summary.parametersIdentical && (fixed || summary.solved());
  if (rank == 0) {
    printSummary(summary);
    if (!options.jsonPath.empty() && !writeSummaryJson(summary, options.jsonPath)) ok = false;
  }
  // Rank 0 alone knows whether the JSON was written: share its verdict so all exit alike.
  double failed = ok ? 0 : 1;
  communicator.allReduce(&failed, 1, loomMax);
  return failed == 0 ? 0 : 1;
}

}  // namespace
}  // namespace policy_gradient

int main(int argc, char** argv) { return policy_gradient::run(argc, argv); }
