// SPDX-License-Identifier: Apache-2.0
// Command-line flags of the policy-gradient sample.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace policy_gradient {

struct Options {
  int episodesPerUpdate = 32;  // global: split evenly across ranks
  long maxEpisodes = 20000;    // global cap when training to a target
  long fixedEpisodes = 0;      // > 0: run exactly this many episodes, no early stop
  uint64_t seed = 1;
  double learningRate = 0.005;
  int hiddenWidth = 128;
  double gamma = 0.995;
  double target = 195;
  int logEvery = 5;            // updates between progress lines
  bool evaluateGreedy = true;  // --eval greedy|sample
  std::string jsonPath;
};

// Parses argv. On -h prints usage to stdout and exits 0; on a bad flag prints the reason and
// usage to stderr and exits 2. Checks that need the rank count are in checkForRanks.
Options parseOptions(int argc, char** argv);

// The error message when the options cannot run on `ranks` ranks (episodes per update not
// divisible by it), or nothing when they can.
std::optional<std::string> checkForRanks(const Options& options, int ranks);

}  // namespace policy_gradient
