// SPDX-License-Identifier: Apache-2.0
// What a run reports at its end: printed by rank 0, and written as JSON with --json.
#pragma once

#include <cstdint>
#include <string>

namespace policy_gradient {

struct Summary {
  int ranks = 1;
  int hiddenWidth = 0;
  int episodesPerUpdate = 0;
  unsigned long long seed = 0;
  bool fixedEpisodes = false;  // --fixed-episodes: ran to a count, not to the target
  long episodes = 0;
  long updates = 0;
  double steps = 0;             // environment steps of all ranks together
  double wallSeconds = 0;       // training, from the first update to the last
  double allReduceSeconds = 0;  // of it, rank 0's time in all-reduces (waits included)
  double movingAverage = 0;     // of the last 100 training episodes
  double target = 0;
  long solvedAtEpisode = -1;  // first time the moving average reached the target; -1: never
  double solvedAtSeconds = -1;
  bool evalGreedy = true;  // greedy actions, or drawn from the policy
  double evalAverage = 0;  // of 100 fresh episodes
  int evalEpisodes = 0;
  double evalSeconds = 0;
  bool parametersIdentical = false;  // every rank ended with the same parameter bits
  uint64_t parameterHash = 0;        // of the final parameters: equal runs give equal hashes

  bool solved() const { return solvedAtEpisode >= 0 && evalAverage >= target; }
};

void printSummary(const Summary& summary);
// Returns false (and says why on stderr) when the file cannot be written.
bool writeSummaryJson(const Summary& summary, const std::string& path);

}  // namespace policy_gradient
