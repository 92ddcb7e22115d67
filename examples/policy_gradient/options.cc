// SPDX-License-Identifier: Apache-2.0
#include "options.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace policy_gradient {
namespace {

constexpr const char* kUsage =
    "usage: loomrun -n N policy_gradient [flags]\n"
    "\n"
    "Trains a policy for CartPole-v0 with REINFORCE on N ranks: each update, the ranks\n"
    "collect the global batch of episodes between them, all-reduce one flat gradient buffer\n"
    "and take the same Adam step. Stops when the last 100 episodes average at least the\n"
    "target, then evaluates 100 fresh episodes greedily; exits 0 when that average reaches\n"
    "the target too.\n"
    "\n"
    "  --episodes-per-update N  global episodes per update, divisible by N ranks (32)\n"
    "  --max-episodes N         give up after N global episodes (20000)\n"
    "  --fixed-episodes N       run exactly N global episodes, no early stop, exit 0 (timing);\n"
    "                           N must be a multiple of --episodes-per-update\n"
    "  --seed S                 rank r collects episodes with seed S + r (1)\n"
    "  --lr X                   Adam learning rate (0.005)\n"
    "  --hidden W               width of both hidden layers (128)\n"
    "  --gamma X                discount factor (0.995)\n"
    "  --target X               moving-average return that counts as solved (195)\n"
    "  --log-every N            updates between progress lines (5)\n"
    "  --eval greedy|sample     evaluation actions: the most probable one, or drawn (greedy)\n"
    "  --json FILE              write a summary of the run to FILE (rank 0)\n"
    "  -h, --help               show this help\n";

[[noreturn]] void usageError(const std::string& message) {
  std::fprintf(stderr, "policy_gradient: %s\n\n%s", message.c_str(), kUsage);
  std::exit(2);
}

long parseInteger(std::string_view flag, const std::string& text, long minimum) {
  errno = 0;
  char* end = nullptr;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || value < minimum) {
    usageError(std::string(flag) + " needs an integer >= " + std::to_string(minimum) + ", not '" +
               text + "'");
  }
  return value;
}

uint64_t parseSeed(std::string_view flag, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || text[0] == '-' || *end != '\0' || errno != 0) {
    usageError(std::string(flag) + " needs a non-negative integer, not '" + text + "'");
  }
  return value;
}

double parsePositive(std::string_view flag, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno != 0 || !std::isfinite(value) || value <= 0) {
    usageError(std::string(flag) + " needs a positive number, not '" + text + "'");
  }
  return value;
}

}  // namespace

Options parseOptions(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "-h" || flag == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    // Both "--flag value" and "--flag=value".
    std::string value;
    const size_t equals = flag.find('=');
    if (flag.rfind("--", 0) == 0 && equals != std::string::npos) {
      value = flag.substr(equals + 1);
      flag.resize(equals);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      usageError(flag.rfind("--", 0) == 0 ? flag + " needs a value"
                                          : "unknown argument '" + flag + "'");
    }

    if (flag == "--episodes-per-update")
      options.episodesPerUpdate = static_cast<int>(parseInteger(flag, value, 1));
    else if (flag == "--max-episodes")
      options.maxEpisodes = parseInteger(flag, value, 1);
    else if (flag == "--fixed-episodes")
      options.fixedEpisodes = parseInteger(flag, value, 1);
    else if (flag == "--seed")
      options.seed = parseSeed(flag, value);
    else if (flag == "--lr")
      options.learningRate = parsePositive(flag, value);
    else if (flag == "--hidden")
      options.hiddenWidth = static_cast<int>(parseInteger(flag, value, 1));
    else if (flag == "--gamma")
      options.gamma = parsePositive(flag, value);
    else if (flag == "--target")
      options.target = parsePositive(flag, value);
    else if (flag == "--log-every")
      options.logEvery = static_cast<int>(parseInteger(flag, value, 1));
    else if (flag == "--json")
      options.jsonPath = value;
    else if (flag == "--eval" && (value == "greedy" || value == "sample"))
      options.evaluateGreedy = value == "greedy";
    else if (flag == "--eval")
      usageError("--eval takes greedy or sample, not '" + value + "'");
    else
      usageError("unknown flag '" + flag + "'");
  }
  if (options.gamma > 1) usageError("--gamma must be at most 1");
  if (options.episodesPerUpdate > 1000000 || options.hiddenWidth > 4096) {
    usageError("--episodes-per-update is at most 1000000 and --hidden at most 4096");
  }
  if (options.fixedEpisodes % options.episodesPerUpdate != 0) {
    usageError("--fixed-episodes " + std::to_string(options.fixedEpisodes) +
               " is not a multiple of " + "--episodes-per-update " +
               std::to_string(options.episodesPerUpdate));
  }
  return options;
}

std::optional<std::string> checkForRanks(const Options& options, int ranks) {
  if (options.episodesPerUpdate % ranks != 0) {
    return "--episodes-per-update " + std::to_string(options.episodesPerUpdate) +
           " is not divisible by the " + std::to_string(ranks) +
           " ranks: each rank collects the same number of episodes per update";
  }
  return std::nullopt;
}

}  // namespace policy_gradient
