// SPDX-License-Identifier: Apache-2.0
// The nccl-tests compatible perf tools (perf/), run as a user runs them: under loomrun with 4
// processes and as 2 threads of one process (-t 2), every datatype and op, every result checked
// exactly by the tool. Asserts the exit status, the table (row count, columns, #wrong) and the
// footer; a fault injected into rank 0's input must be reported with the exact count.
// Needs LOOMRUN (the launcher) and LOOM_PERF_DIR (the folder holding the tools).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/mp/tool_runs.h"

namespace loom::test::tools {
namespace {

namespace fs = std::filesystem;

std::string toolPath(const std::string& tool) {
  return (fs::path(env("LOOM_PERF_DIR")) / tool).string();
}

struct ToolCase {
  const char* tool;
  bool hasOp;
  bool hasRoot;
  bool hasInPlace;  // false: sendrecv and alltoall, whose in-place columns print N/A
};

// Every row: 13 columns, size == count * sizeof(type), both #wrong columns "0" (in place: all
// four columns "N/A" for a call without an in-place form).
void expectCleanTable(const ToolRun& run, const ToolCase& tool, size_t expectedRows) {
  EXPECT_EQ(run.exitCode, 0) << run.out;
  EXPECT_NE(run.out.find("# Out of bounds values : 0 OK\n"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("# Avg bus bandwidth    : "), std::string::npos) << run.out;
  const auto rows = tableRows(run.out);
  EXPECT_EQ(rows.size(), expectedRows) << run.out;
  for (const auto& row : rows) {
    ASSERT_EQ(row.size(), 13u) << run.out;
    EXPECT_EQ(std::stoull(row[0]), std::stoull(row[1]) * typeSizeOf(row[2])) << run.out;
    if (!tool.hasOp) {
      EXPECT_EQ(row[3], "none");
    }
    EXPECT_EQ(row[4], tool.hasRoot ? "0" : "-1");
    EXPECT_EQ(row[8], "0") << "out-of-place #wrong";
    if (tool.hasInPlace) {
      EXPECT_EQ(row[12], "0") << "in-place #wrong";
    } else {
      for (size_t column = 9; column < 13; ++column) EXPECT_EQ(row[column], "N/A") << run.out;
    }
  }
  if (!tool.hasInPlace) {
    EXPECT_NE(run.out.find("# in-place columns N/A: "), std::string::npos) << run.out;
  }
}

// -b 8 -e 1M -f 4: 8, 32, ..., 512K = 9 sizes; -d all: 10 types; -o all: 5 ops.
constexpr size_t kSizes = 9;
constexpr size_t kTypes = 10;
constexpr size_t kOps = 5;
const std::string kSweep = " -b 8 -e 1M -f 4 -d all -o all -c 1 -n 2 -w 1";

class PerfTool : public ::testing::TestWithParam<ToolCase> {
 protected:
  void SetUp() override {
    if (env("LOOMRUN").empty() || env("LOOM_PERF_DIR").empty()) {
      GTEST_SKIP() << "LOOMRUN and LOOM_PERF_DIR must name the launcher and the perf tools";
    }
    setenv("LOOM_SOCKET_IFNAME", "lo", 0);
    setenv("LOOM_TIMEOUT_MS", "60000", 0);  // a hang becomes a failure, not a stuck test
  }
  size_t expectedRows() const { return kSizes * kTypes * (GetParam().hasOp ? kOps : 1); }
};

TEST_P(PerfTool, FourProcessesEveryTypeAndOpExact) {
  const ToolRun run = runCommand(quoted(env("LOOMRUN")) + " -n 4 --timeout 120 " +
                                 quoted(toolPath(GetParam().tool)) + kSweep);
  expectCleanTable(run, GetParam(), expectedRows());
  EXPECT_NE(run.out.find("# Collective test starting: " + std::string(GetParam().tool)),
            std::string::npos);
  EXPECT_NE(run.out.find("4 ranks"), std::string::npos) << run.out;
}

TEST_P(PerfTool, TwoThreadsEveryTypeAndOpExact) {
  const ToolRun run = runCommand(quoted(toolPath(GetParam().tool)) + " -t 2" + kSweep);
  expectCleanTable(run, GetParam(), expectedRows());
  EXPECT_NE(run.out.find("# nThread 2 "), std::string::npos) << run.out;
}

// Rank 0's input is one larger everywhere: every element of every rank's output is wrong,
// except where the collective does not read rank 0's data (root 0 where there is one).
TEST_P(PerfTool, InjectedFaultIsCountedExactly) {
  const std::string tool = GetParam().tool;
  const ToolRun run =
      runCommand("LOOM_PERF_INJECT_FAULT=1 " + quoted(env("LOOMRUN")) + " -n 3 --timeout 120 " +
                 quoted(toolPath(tool)) + " -b 1K -e 1K -d int32 -o sum -n 1 -w 0");
  EXPECT_EQ(run.exitCode, 1) << run.out;
  // 1 KiB of int32 = 256 elements; all-gather / reduce-scatter round to 255 (85 per rank).
  uint64_t perPlace = 0;
  if (tool == "all_reduce_perf" || tool == "broadcast_perf") perPlace = 3 * 256;  // every rank
  if (tool == "reduce_perf") perPlace = 256;                                      // the root only
  if (tool == "all_gather_perf") perPlace = 3 * 85;      // rank 0's block, on every rank
  if (tool == "reduce_scatter_perf") perPlace = 3 * 85;  // every rank's share
  if (tool == "sendrecv_perf") perPlace = 256;           // what rank 1 receives from rank 0
  if (tool == "alltoall_perf") perPlace = 3 * 85;        // rank 0's block, on every rank
  if (tool == "gather_perf") perPlace = 85;              // rank 0's block, on the root
  if (tool == "scatter_perf") perPlace = 3 * 85;         // every rank's block, from the root
  const uint64_t places = GetParam().hasInPlace ? 2 : 1;
  EXPECT_NE(
      run.out.find("# Out of bounds values : " + std::to_string(places * perPlace) + " FAILED\n"),
      std::string::npos)
      << run.out;
}

INSTANTIATE_TEST_SUITE_P(Tools, PerfTool,
                         ::testing::Values(ToolCase{"all_reduce_perf", true, false, true},
                                           ToolCase{"all_gather_perf", false, false, true},
                                           ToolCase{"reduce_scatter_perf", true, false, true},
                                           ToolCase{"broadcast_perf", false, true, true},
                                           ToolCase{"reduce_perf", true, true, true},
                                           ToolCase{"sendrecv_perf", false, false, false},
                                           ToolCase{"alltoall_perf", false, false, false},
                                           ToolCase{"gather_perf", false, true, true},
                                           ToolCase{"scatter_perf", false, true, true}),
                         [](const auto& info) { return std::string(info.param.tool); });

class PerfOptions : public ::testing::Test {
 protected:
  void SetUp() override {
    if (env("LOOM_PERF_DIR").empty()) GTEST_SKIP() << "LOOM_PERF_DIR names the perf tools";
  }
};

TEST_F(PerfOptions, JsonFileHoldsEveryRow) {
  char pattern[] = "/tmp/loom-perf-json-XXXXXX";
  const int fd = ::mkstemp(pattern);
  ASSERT_GE(fd, 0);
  ::close(fd);
  const ToolRun run = runCommand(quoted(toolPath("broadcast_perf")) +
                                 " -t 3 -b 1K -e 4K -f 2 -r all -n 2 -J " + quoted(pattern));
  EXPECT_EQ(run.exitCode, 0) << run.out;
  // 3 sizes x 3 roots, each row in the table and in the file.
  EXPECT_EQ(tableRows(run.out).size(), 9u) << run.out;
  std::ifstream in(pattern);
  std::stringstream json;
  json << in.rdbuf();
  ::unlink(pattern);
  const std::string text = json.str();
  EXPECT_NE(text.find("\"tool\": \"broadcast_perf\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"nranks\": 3"), std::string::npos) << text;
  EXPECT_NE(text.find("\"out_of_bounds\": 0"), std::string::npos) << text;
  size_t rows = 0;
  for (size_t at = 0; (at = text.find("\"out_of_place\"", at)) != std::string::npos; ++at) ++rows;
  EXPECT_EQ(rows, 9u) << text;
}

TEST_F(PerfOptions, StepBytesCyclesAndNoCheck) {
  // -i 1K from 1K to 3K: 3 sizes, twice (-N 2); -c 0 prints N/A for #wrong.
  const ToolRun run = runCommand(quoted(toolPath("all_reduce_perf")) +
                                 " -b 1K -e 3K -i 1K -N 2 -c 0 -n 2 -d double -o max");
  EXPECT_EQ(run.exitCode, 0) << run.out;
  const auto rows = tableRows(run.out);
  ASSERT_EQ(rows.size(), 6u) << run.out;
  const char* sizes[] = {"1024", "2048", "3072", "1024", "2048", "3072"};
  for (size_t i = 0; i < rows.size(); ++i) {
    ASSERT_EQ(rows[i].size(), 13u);
    EXPECT_EQ(rows[i][0], sizes[i]);
    EXPECT_EQ(rows[i][2], "double");
    EXPECT_EQ(rows[i][3], "max");
    EXPECT_EQ(rows[i][8], "N/A");
  }
}

// Issue 15's calls on 3 ranks (threads) at odd counts (7 B to 70 KB, x10), every datatype,
// gather and scatter from every root: every row exact.
TEST_F(PerfOptions, NewCallsThreeRanksOddCountsEveryRoot) {
  for (const char* tool : {"sendrecv_perf", "alltoall_perf", "gather_perf", "scatter_perf"}) {
    const bool rooted = std::string(tool) == "gather_perf" || std::string(tool) == "scatter_perf";
    const ToolRun run = runCommand(quoted(toolPath(tool)) +
                                   " -t 3 -b 7 -e 70000 -f 10 -d all -r all -n 2 -w 1 -c 1");
    EXPECT_EQ(run.exitCode, 0) << tool << "\n" << run.out;
    const auto rows = tableRows(run.out);
    EXPECT_EQ(rows.size(), 5 * kTypes * (rooted ? 3 : 1)) << run.out;
    for (const auto& row : rows) {
      ASSERT_EQ(row.size(), 13u) << run.out;
      EXPECT_EQ(row[8], "0") << run.out;
      if (rooted) {
        EXPECT_EQ(row[12], "0") << run.out;
      }
    }
  }
}

TEST_F(PerfOptions, BadOptionsExitTwo) {
  for (const char* args : {" -d fp99", " -o mean", " -b 1X", " -b 2M -e 1M", " -x 1", " -a 4"}) {
    const ToolRun run = runCommand(quoted(toolPath("all_reduce_perf")) + args + " 2>/dev/null");
    EXPECT_EQ(run.exitCode, 2) << args;
    EXPECT_EQ(tableRows(run.out).size(), 0u) << args;
  }
  const ToolRun help = runCommand(quoted(toolPath("all_reduce_perf")) + " -h");
  EXPECT_EQ(help.exitCode, 0);
  EXPECT_NE(help.out.find("USAGE: all_reduce_perf"), std::string::npos);
}

}  // namespace
}  // namespace loom::test::tools
