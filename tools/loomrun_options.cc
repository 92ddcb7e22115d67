// SPDX-License-Identifier: Apache-2.0
#include "tools/loomrun_options.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string_view>

#include "base/error.h"

namespace loom::launcher {
namespace {

// Far above any single host's core count; keeps fd and pid use sane on a typo like -n 100000.
constexpr long kMaxRanks = 4096;
constexpr double kMaxTimeoutSeconds = 365.0 * 24 * 3600;

int parseRankCount(const std::string& text) {
  char* end = nullptr;
  errno = 0;
  long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || value < 1 || value > kMaxRanks) {
    throwUsage("bad process count '" + text + "' (expected an integer from 1 to " +
               std::to_string(kMaxRanks) + ")");
  }
  return static_cast<int>(value);
}

double parseTimeout(const std::string& text) {
  char* end = nullptr;
  errno = 0;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno != 0 || !std::isfinite(value) || value <= 0 ||
      value > kMaxTimeoutSeconds) {
    throwUsage("bad timeout '" + text + "' (expected a positive number of seconds)");
  }
  return value;
}

BindPolicy parseBind(const std::string& text) {
  if (text == "none") return BindPolicy::kNone;
  if (text == "core") return BindPolicy::kCore;
  throwUsage("bad --bind value '" + text + "' (expected none or core)");
}

// Walks argv; options end at "--" or at the first word that is not an option, so the
// program's own flags (sh -c ...) are never taken for loomrun's.
class ArgumentCursor {
 public:
  ArgumentCursor(int argc, char** argv) : argc_(argc), argv_(argv) {}
  bool done() const { return index_ >= argc_; }
  std::string_view peek() const { return argv_[index_]; }
  std::string take() { return argv_[index_++]; }
  // The value of `option`: the rest of "--opt=value", or the next word.
  std::string valueOf(const std::string& option, std::string_view inlineValue, bool hasInline) {
    if (hasInline) return std::string(inlineValue);
    if (done()) throwUsage("option " + option + " needs a value");
    return take();
  }

 private:
  int argc_;
  char** argv_;
  int index_ = 1;
};

}  // namespace

LaunchOptions parseOptions(int argc, char** argv) {
  LaunchOptions options;
  ArgumentCursor cursor(argc, argv);
  bool sawCount = false;
  // A bad option before --help or --version is reported only if neither comes: they answer
  // whatever else the command line holds, as in any tool.
  std::optional<Error> firstError;
  while (!cursor.done()) {
    std::string_view word = cursor.peek();
    if (word == "--") {
      cursor.take();
      break;
    }
    if (word.size() < 2 || word[0] != '-') break;  // the program starts here
    std::string argument = cursor.take();
    std::string name = argument;
    std::string_view inlineValue;
    bool hasInline = false;
    if (size_t eq = argument.find('='); argument.rfind("--", 0) == 0 && eq != std::string::npos) {
      name = argument.substr(0, eq);
      inlineValue = std::string_view(argument).substr(eq + 1);
      hasInline = true;
    }
    if (name == "-h" || name == "--help") {
      options.help = true;
      return options;
    }
    if (name == "--version" && !hasInline) {
      options.version = true;
      return options;
    }
    try {
      if (name == "-n" || name == "-np" || name == "--np") {
        options.nranks = parseRankCount(cursor.valueOf(name, inlineValue, hasInline));
        sawCount = true;
      } else if (name == "--bind") {
        options.bind = parseBind(cursor.valueOf(name, inlineValue, hasInline));
      } else if (name == "--tag-output" && !hasInline) {
        options.tagOutput = true;
      } else if (name == "--timeout") {
        options.timeoutSeconds = parseTimeout(cursor.valueOf(name, inlineValue, hasInline));
      } else {
        throwUsage("unknown option '" + argument + "'");
      }
    } catch (const Error& error) {
      if (!firstError) firstError = error;
    }
  }
  if (firstError) throw *firstError;
  if (!sawCount) throwUsage("missing -n N (the number of processes)");
  while (!cursor.done()) options.command.push_back(cursor.take());
  if (options.command.empty()) throwUsage("missing the program to run");
  return options;
}

std::string usageText() {
  return "usage: loomrun -n N [--bind none|core] [--tag-output] [--timeout SECONDS] [--] prog "
         "[args...]\n"
         "       loomrun --help | --version\n"
         "\n"
         "Starts N local processes of prog, each with LOOM_RANK, LOOM_LOCAL_RANK,\n"
         "LOOM_WORLD_SIZE, LOOM_LOCAL_SIZE, LOOM_COMM_ID (127.0.0.1:<free port>) and\n"
         "LOOM_COMM_SECRET set, so that loomCommInitFromEnv() finds its peers. LOOM_COMM_ID and\n"
         "LOOM_COMM_SECRET already set in the environment are passed through unchanged.\n"
         "\n"
         "  -n N, -np N         number of processes (ranks)\n"
         "  --bind none|core    none (default): no pinning; core: pin rank i to CPU (i mod n)\n"
         "  --tag-output        prefix every line of each rank's stdout/stderr with [rank]\n"
         "  --timeout SECONDS   stop every rank after SECONDS and exit with status 124\n"
         "  -h, --help          show this help\n"
         "  --version           print loomrun's version (Loom's) and exit\n"
         "\n"
         "Rank 0 reads loomrun's stdin unless it is a terminal; the other ranks read /dev/null.\n"
         "When a rank fails, the others are stopped (SIGTERM, then SIGKILL after 3 s) and loomrun\n"
         "exits with that rank's status (128+signal if it was killed). SIGINT/SIGTERM/SIGHUP are\n"
         "forwarded to all ranks. A program that cannot be started gives status 127 (126 if it is\n"
         "found but not executable).\n";
}

}  // namespace loom::launcher
