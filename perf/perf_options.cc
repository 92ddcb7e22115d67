// SPDX-License-Identifier: Apache-2.0
#include "perf/perf_options.h"

#include <getopt.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "base/version.h"
#include "perf/perf_data.h"

namespace loom::perf {
namespace {

void printHelp(std::FILE* out, const char* tool) {
  std::fprintf(out,
               "USAGE: %s\n"
               "  [-t,--nthreads <num>]        ranks as threads of this process (default 1;\n"
               "                               -t 1 without a launcher (no LOOM_RANK, RANK,\n"
               "                               OMPI_COMM_WORLD_RANK, SLURM_PROCID): one rank)\n"
               "  [-g,--ngpus <1>]             one rank per thread (the only value)\n"
               "  [-b,--minbytes <min size>]   K/M/G suffixes, powers of 1024 (default 32M)\n"
               "  [-e,--maxbytes <max size>]   (default 32M)\n"
               "  [-i,--stepbytes <increment>] (default 1M)\n"
               "  [-f,--stepfactor <factor>]   multiply sizes by this; overrides -i (default off)\n"
               "  [-n,--iters <count>]         timed iterations per row (default 20)\n"
               "  [-m,--agg_iters <count>]     calls per timed iteration, issued as one group\n"
               "                               (default 1)\n"
               "  [-w,--warmup_iters <count>]  untimed calls per size of the warm-up sweep, which\n"
               "                               doubles from -b to -e (default 1)\n"
               "  [-N,--run_cycles <count>]    repeat the sizes of each type/op/root; 0 = forever\n"
               "                               (default 1)\n"
               "  [-p,--parallel_init <0/1>]   accepted; init is as parallel as the launcher\n"
               "  [-c,--check <count>]         checked runs per row, every element exact\n"
               "                               (default 1; 0 = no check)\n"
               "  [-o,--op <sum/prod/min/max/avg/all>] (default sum)\n"
               "  [-d,--datatype <int8/uint8/int32/uint32/int64/uint64/half/float/double/"
               "bfloat16/all>] (default float)\n"
               "  [-r,--root <root|all|-1>]    root of broadcast/reduce/gather/scatter; all or\n"
               "                               -1: every rank in turn (default 0)\n"
               "  [-z,--blocking <0/1>]        1: barrier after every call, timed (default 0)\n"
               "  [-y,--stream_null <0/1>]     accepted; calls always use the NULL stream\n"
               "  [-T,--timeout <seconds>]     bound on any wait (Loom: LOOM_TIMEOUT_MS; Gloo:\n"
               "                               its context timeout; MPI: none)\n"
               "  [-G,--cudagraph <0>]         no CUDA graphs on host buffers\n"
               "  [-C,--report_cputime <0/1>]  accepted; calls are blocking, so CPU time is the\n"
               "                               reported time\n"
               "  [-S,--report_timestamps <0/1>] 1: end each row with the time it finished\n"
               "  [-J,--output_file <file>]    also write the results as JSON\n"
               "  [-a,--average <0/1/2/3>]     time of a row: 0 rank 0, 1 mean, 2 min, 3 max over\n"
               "                               ranks (default 1)\n"
               "  [-R,--local_register <0/1/2>] accepted; host buffers need no registration\n"
               "  [-h,--help]\n"
               "  [--version]                  print the version (Loom's) and exit\n",
               tool);
}

[[noreturn]] void usageError(const char* tool, const std::string& message) {
  std::fprintf(stderr, "%s: %s\n", tool, message.c_str());
  printHelp(stderr, tool);
  std::exit(2);
}

// A whole non-negative decimal integer within [low, high].
bool parseInt(const char* text, long low, long high, long* value) {
  errno = 0;
  char* end = nullptr;
  const long parsed = std::strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || parsed < low || parsed > high) return false;
  *value = parsed;
  return true;
}

}  // namespace

bool parseSize(const std::string& text, size_t* bytes) {
  if (text.empty() || text[0] < '0' || text[0] > '9') return false;
  errno = 0;
  char* end = nullptr;
  const unsigned long long number = std::strtoull(text.c_str(), &end, 10);
  if (errno != 0) return false;
  const std::string_view suffix(end);
  unsigned shift = 0;
  if (suffix == "K" || suffix == "k")
    shift = 10;
  else if (suffix == "M" || suffix == "m")
    shift = 20;
  else if (suffix == "G" || suffix == "g")
    shift = 30;
  else if (!suffix.empty())
    return false;
  if (number > (~0ull >> shift)) return false;
  *bytes = static_cast<size_t>(number << shift);
  return true;
}

Options parseOptions(int argc, char** argv, const char* tool) {
  static const option kLong[] = {{"nthreads", required_argument, nullptr, 't'},
                                 {"ngpus", required_argument, nullptr, 'g'},
                                 {"minbytes", required_argument, nullptr, 'b'},
                                 {"maxbytes", required_argument, nullptr, 'e'},
                                 {"stepbytes", required_argument, nullptr, 'i'},
                                 {"stepfactor", required_argument, nullptr, 'f'},
                                 {"iters", required_argument, nullptr, 'n'},
                                 {"agg_iters", required_argument, nullptr, 'm'},
                                 {"warmup_iters", required_argument, nullptr, 'w'},
                                 {"run_cycles", required_argument, nullptr, 'N'},
                                 {"cycles", required_argument, nullptr, 'N'},
                                 {"parallel_init", required_argument, nullptr, 'p'},
                                 {"check", required_argument, nullptr, 'c'},
                                 {"op", required_argument, nullptr, 'o'},
                                 {"datatype", required_argument, nullptr, 'd'},
                                 {"root", required_argument, nullptr, 'r'},
                                 {"blocking", required_argument, nullptr, 'z'},
                                 {"stream_null", required_argument, nullptr, 'y'},
                                 {"timeout", required_argument, nullptr, 'T'},
                                 {"cudagraph", required_argument, nullptr, 'G'},
                                 {"report_cputime", required_argument, nullptr, 'C'},
                                 {"report_timestamps", required_argument, nullptr, 'S'},
                                 {"output_file", required_argument, nullptr, 'J'},
                                 {"average", required_argument, nullptr, 'a'},
                                 {"local_register", required_argument, nullptr, 'R'},
                                 {"help", no_argument, nullptr, 'h'},
                                 {"version", no_argument, nullptr, 'V'},
                                 {nullptr, 0, nullptr, 0}};
  // Before any other option is checked, and so before a backend starts: --version answers
  // whatever else the command line holds (getopt below takes its abbreviations too).
  exitOnVersionFlag(argc, argv, tool);
  Options options;
  long value = 0;
  optind = 1;
  for (;;) {
    const int c = getopt_long(argc, argv, "t:g:b:e:i:f:n:m:w:N:p:c:o:d:r:z:y:T:G:C:S:J:a:R:h",
                              kLong, nullptr);
    if (c == -1) break;
    const std::string arg = optarg != nullptr ? optarg : "";
    const std::string bad = std::string("invalid value '") + arg + "' for -" + char(c);
    switch (c) {
      case 't':
        if (!parseInt(optarg, 1, 1024, &value)) usageError(tool, bad);
        options.threads = static_cast<int>(value);
        break;
      case 'g':  // one rank per thread is all a host build has
        if (!parseInt(optarg, 1, 1, &value)) usageError(tool, "-g: only 1 is supported");
        break;
      case 'm':
        if (!parseInt(optarg, 1, 1 << 20, &value)) usageError(tool, bad);
        options.aggIters = static_cast<int>(value);
        break;
      case 'G':  // no CUDA graphs on host buffers
        if (!parseInt(optarg, 0, 0, &value)) usageError(tool, "-G: only 0 is supported");
        break;
      case 'p':
        if (!parseInt(optarg, 0, 1, &value)) usageError(tool, bad);
        options.parallelInit = static_cast<int>(value);
        break;
      case 'y':  // every call already uses the NULL stream
        if (!parseInt(optarg, 0, 1, &value)) usageError(tool, bad);
        break;
      case 'R':  // host buffers are used as they are; there is nothing to register
        if (!parseInt(optarg, 0, 2, &value)) usageError(tool, bad);
        break;
      case 'C':
        if (!parseInt(optarg, 0, 1, &value)) usageError(tool, bad);
        options.reportCpuTime = static_cast<int>(value);
        break;
      case 'S':
        if (!parseInt(optarg, 0, 1, &value)) usageError(tool, bad);
        options.reportTimestamps = static_cast<int>(value);
        break;
      case 'b':
        if (!parseSize(arg, &options.minBytes)) usageError(tool, bad);
        break;
      case 'e':
        if (!parseSize(arg, &options.maxBytes)) usageError(tool, bad);
        break;
      case 'i':
        if (!parseSize(arg, &options.stepBytes) || options.stepBytes == 0) usageError(tool, bad);
        break;
      case 'f':
        if (!parseInt(optarg, 1, 1 << 20, &value)) usageError(tool, bad);
        options.stepFactor = static_cast<size_t>(value);
        break;
      case 'n':
        if (!parseInt(optarg, 1, 1 << 30, &value)) usageError(tool, bad);
        options.iters = static_cast<int>(value);
        break;
      case 'w':
        if (!parseInt(optarg, 0, 1 << 30, &value)) usageError(tool, bad);
        options.warmupIters = static_cast<int>(value);
        break;
      case 'c':
        if (!parseInt(optarg, 0, 1 << 20, &value)) usageError(tool, bad);
        options.check = static_cast<int>(value);
        break;
      case 'o':
        if (!parseOpList(arg, &options.ops)) usageError(tool, bad);
        break;
      case 'd':
        if (!parseTypeList(arg, &options.types)) usageError(tool, bad);
        options.allTypes = arg == "all";
        break;
      case 'r':
        if (arg == "all" || arg == "-1") {
          options.allRoots = true;
        } else {
          if (!parseInt(optarg, 0, 1 << 30, &value)) usageError(tool, bad);
          options.allRoots = false;
          options.root = static_cast<int>(value);
        }
        break;
      case 'z':
        if (!parseInt(optarg, 0, 1, &value)) usageError(tool, bad);
        options.blocking = static_cast<int>(value);
        break;
      case 'a':
        if (!parseInt(optarg, 0, 3, &value)) usageError(tool, bad);
        options.average = static_cast<TimeAverage>(value);
        break;
      case 'N':
        if (!parseInt(optarg, 0, 1 << 30, &value)) usageError(tool, bad);
        options.cycles = static_cast<int>(value);
        break;
      case 'T':
        if (!parseInt(optarg, 0, 1 << 20, &value)) usageError(tool, bad);
        options.timeoutSeconds = static_cast<int>(value);
        break;
      case 'J':
        if (arg.empty()) usageError(tool, bad);
        options.jsonPath = arg;
        break;
      case 'h':
        printHelp(stdout, tool);
        std::exit(0);
      case 'V':
        exitWithVersion(tool);
      default:
        usageError(tool, "unknown option");
    }
  }
  if (optind < argc) usageError(tool, std::string("unexpected argument '") + argv[optind] + "'");
  if (options.minBytes > options.maxBytes) {
    usageError(tool, "minbytes (-b) is larger than maxbytes (-e)");
  }
  // As in nccl-tests, a factor > 1 wins over -i whichever came first (see sweepSizes).
  return options;
}

std::vector<size_t> sweepSizes(const Options& options) {
  std::vector<size_t> sizes;
  for (size_t size = options.minBytes; size <= options.maxBytes;) {
    sizes.push_back(size);
    const size_t next =
        options.stepFactor > 1 ? size * options.stepFactor : size + options.stepBytes;
    // Stop on no growth (minBytes 0 with a factor) or on wrap-around.
    if (next <= size) break;
    size = next;
  }
  return sizes;
}

}  // namespace loom::perf
