// SPDX-License-Identifier: Apache-2.0
#include "summary.h"

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

namespace policy_gradient {

void printSummary(const Summary& s) {
  std::printf(
      "trained %ld episodes (%.0f steps) in %ld updates on %d rank%s: %.2f s, %.0f steps/s\n",
      s.episodes, s.steps, s.updates, s.ranks, s.ranks == 1 ? "" : "s", s.wallSeconds,
      s.wallSeconds > 0 ? s.steps / s.wallSeconds : 0.0);
  std::printf("time in all-reduces (rank 0, waiting for other ranks included): %.3f s\n",
              s.allReduceSeconds);
  std::printf("moving average of the last 100 episodes: %.2f (target %.0f)\n", s.movingAverage,
              s.target);
  if (s.solvedAtEpisode >= 0) {
    std::printf("target first reached after %ld episodes, %.2f s\n", s.solvedAtEpisode,
                s.solvedAtSeconds);
  } else {
    std::printf("target not reached\n");
  }
  std::printf("evaluation: %d fresh episodes, %s actions: average return %.2f (%.2f s)\n",
              s.evalEpisodes, s.evalGreedy ? "greedy" : "sampled", s.evalAverage, s.evalSeconds);
  std::printf("parameters identical on every rank: %s (hash %016" PRIx64 ")\n",
              s.parametersIdentical ? "yes" : "NO", s.parameterHash);
  if (!s.fixedEpisodes) std::printf("%s\n", s.solved() ? "SOLVED" : "NOT SOLVED");
}

bool writeSummaryJson(const Summary& s, const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "w");
  if (file == nullptr) {
    std::fprintf(stderr, "policy_gradient: cannot write %s: %s\n", path.c_str(),
                 std::strerror(errno));
    return false;
  }
  std::fprintf(file,
               "{\n"
               "  \"ranks\": %d,\n"
               "  \"hidden\": %d,\n"
               "  \"episodes_per_update\": %d,\n"
               "  \"seed\": %llu,\n"
               "  \"mode\": \"%s\",\n"
               "  \"episodes\": %ld,\n"
               "  \"updates\": %ld,\n"
               "  \"steps\": %.0f,\n"
               "  \"wall_seconds\": %.4f,\n"
               "  \"allreduce_seconds\": %.4f,\n"
               "  \"moving_average\": %.4f,\n"
               "  \"target\": %.4f,\n"
               "  \"solved_at_episode\": %ld,\n"
               "  \"solved_at_seconds\": %.4f,\n"
               "  \"eval_policy\": \"%s\",\n"
               "  \"eval_episodes\": %d,\n"
               "  \"eval_average\": %.4f,\n"
               "  \"eval_seconds\": %.4f,\n"
               "  \"parameters_identical\": %s,\n"
               "  \"parameter_hash\": \"%016" PRIx64
               "\",\n"
               "  \"solved\": %s\n"
               "}\n",
               s.ranks, s.hiddenWidth, s.episodesPerUpdate, s.seed,
               s.fixedEpisodes ? "fixed-episodes" : "to-target", s.episodes, s.updates, s.steps,
               s.wallSeconds, s.allReduceSeconds, s.movingAverage, s.target, s.solvedAtEpisode,
               s.solvedAtSeconds, s.evalGreedy ? "greedy" : "sample", s.evalEpisodes, s.evalAverage,
               s.evalSeconds, s.parametersIdentical ? "true" : "false", s.parameterHash,
               s.solved() ? "true" : "false");
  const bool written = std::ferror(file) == 0;
  const bool ok = std::fclose(file) == 0 && written;
  if (!ok)
    std::fprintf(stderr, "policy_gradient: cannot write %s: %s\n", path.c_str(),
                 std::strerror(errno));
  return ok;
}

}  // namespace policy_gradient
