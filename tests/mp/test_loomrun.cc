// SPDX-License-Identifier: Apache-2.0
// loomrun, driven as a user would: /bin/sh scripts as ranks, files in a temporary folder as
// the ranks' reports, and the launcher's exit status, stdout and stderr checked exactly.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/process_state.h"

extern char** environ;

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

std::string launcherPath() {
  const char* path = std::getenv("LOOMRUN");
  return path != nullptr ? path : "";
}

std::string readFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> linesOf(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "loomrun-test-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  const fs::path& path() const { return path_; }
  std::string str() const { return path_.string(); }

 private:
  fs::path path_;
};

// The ranks run `sh -c SCRIPT sh DIR`, so scripts find the report folder in "$1".
std::vector<std::string> shellRanks(const std::string& script, const TempDir& dir) {
  return {"/bin/sh", "-c", script, "sh", dir.str()};
}

std::vector<std::string> operator+(std::vector<std::string> options,
                                   const std::vector<std::string>& command) {
  options.insert(options.end(), command.begin(), command.end());
  return options;
}

struct LaunchResult {
  bool exited = false;
  int exitCode = -1;
  std::string out;
  std::string err;
  Clock::duration elapsed{};
};

// One loomrun process, its stdout/stderr going to files in the temp folder.
class Launch {
 public:
  Launch(const std::vector<std::string>& args, const TempDir& dir,
         const std::vector<std::string>& extraEnv = {}, const std::string& stdinPath = "/dev/null")
      : outPath_(dir.path() / "launcher.out"), errPath_(dir.path() / "launcher.err") {
    std::vector<std::string> argv = {launcherPath()};
    argv.insert(argv.end(), args.begin(), args.end());
    // The test's own environment must not pin the rendezvous unless a test asks for it.
    std::vector<std::string> env;
    for (char** entry = environ; *entry != nullptr; ++entry) {
      std::string text = *entry;
      if (text.rfind("LOOM_COMM_ID=", 0) != 0 && text.rfind("LOOM_COMM_SECRET=", 0) != 0) {
        env.push_back(text);
      }
    }
    env.insert(env.end(), extraEnv.begin(), extraEnv.end());

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, stdinPath.c_str(), O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, outPath_.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    posix_spawn_file_actions_addopen(&actions, 2, errPath_.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    std::vector<char*> argp, envp;
    for (auto& s : argv) argp.push_back(s.data());
    argp.push_back(nullptr);
    for (auto& s : env) envp.push_back(s.data());
    envp.push_back(nullptr);
    // A test run in the background of a shell inherits SIGINT ignored; loomrun would then
    // (rightly) ignore it too. Start it with default dispositions and nothing blocked.
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    sigset_t signals;
    sigemptyset(&signals);
    posix_spawnattr_setsigmask(&attributes, &signals);
    for (int signo : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGCHLD}) sigaddset(&signals, signo);
    posix_spawnattr_setsigdefault(&attributes, &signals);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    started_ = Clock::now();
    int rc = posix_spawn(&pid_, argp[0], &actions, &attributes, argp.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    if (rc != 0) throw std::runtime_error("posix_spawn loomrun: " + std::string(strerror(rc)));
    pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0));
  }
  ~Launch() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (pidfd_ >= 0) ::close(pidfd_);
  }
  Launch(const Launch&) = delete;
  Launch& operator=(const Launch&) = delete;

  pid_t pid() const { return pid_; }

  // Blocks (in poll on a pidfd, no spinning) until loomrun ends or `limit` passes.
  std::optional<LaunchResult> wait(Clock::duration limit = 30s) {
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(limit).count();
    pollfd fd{pidfd_, POLLIN, 0};
    if (::poll(&fd, 1, static_cast<int>(ms)) <= 0) return std::nullopt;
    int status = 0;
    if (::waitpid(pid_, &status, 0) != pid_) return std::nullopt;
    pid_ = -1;
    LaunchResult result;
    result.elapsed = Clock::now() - started_;
    result.exited = WIFEXITED(status);
    result.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    result.out = readFile(outPath_);
    result.err = readFile(errPath_);
    return result;
  }

 private:
  fs::path outPath_, errPath_;
  pid_t pid_ = -1;
  int pidfd_ = -1;
  Clock::time_point started_;
};

std::optional<LaunchResult> runLauncher(const std::vector<std::string>& args, const TempDir& dir,
                                        const std::vector<std::string>& extraEnv = {}) {
  Launch launch(args, dir, extraEnv);
  return launch.wait();
}

// A pid a rank wrote as "PID\n"; waits (sleeping, bounded) until the line is complete.
std::optional<pid_t> awaitPidFile(const fs::path& path, Clock::duration limit = 10s) {
  auto deadline = Clock::now() + limit;
  while (true) {
    std::string text = readFile(path);
    if (!text.empty() && text.back() == '\n') return static_cast<pid_t>(std::stol(text));
    if (Clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(20ms);
  }
}

// Gone = no such process, or only zombies waiting for init to reap them (they run no more).
bool awaitGone(pid_t pid, Clock::duration limit = 3s) {
  auto deadline = Clock::now() + limit;
  while (!loom::test::processGone(pid)) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

std::string cpusAllowedLine(const std::string& statusText) {
  for (const std::string& line : linesOf(statusText)) {
    if (line.rfind("Cpus_allowed_list:", 0) == 0) return line;
  }
  return "";
}

class LoomrunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(launcherPath().empty()) << "set LOOMRUN to the built loomrun";
    ASSERT_EQ(::access(launcherPath().c_str(), X_OK), 0) << launcherPath();
  }
  TempDir dir_;
};

TEST_F(LoomrunTest, BadArgumentsPrintUsageAndExit2) {
  const std::vector<std::vector<std::string>> badCommands = {
      {},
      {"-n", "0", "true"},
      {"-n", "abc", "true"},
      {"-n", "2"},
      {"true"},
      {"-n", "2", "--bind", "socket", "true"},
      {"-n", "2", "--timeout", "-1", "true"},
      {"-n", "2", "--frobnicate", "true"},
  };
  for (const auto& args : badCommands) {
    auto result = runLauncher(args, dir_);
    ASSERT_TRUE(result);
    EXPECT_EQ(result->exitCode, 2) << result->err;
    EXPECT_NE(result->err.find("usage: loomrun -n N"), std::string::npos) << result->err;
  }
  auto help = runLauncher({"--help"}, dir_);
  ASSERT_TRUE(help);
  EXPECT_EQ(help->exitCode, 0);
  EXPECT_EQ(help->out.rfind("usage: loomrun -n N", 0), 0u) << help->out;
}

TEST_F(LoomrunTest, EachRankGetsItsOwnRankAndTheSharedRendezvous) {
  auto result = runLauncher(
      {"-n", "4", "--", "/bin/sh", "-c",
       "echo \"$LOOM_RANK $LOOM_LOCAL_RANK $LOOM_WORLD_SIZE $LOOM_LOCAL_SIZE $LOOM_COMM_ID "
       "$LOOM_COMM_SECRET\" > \"$1/rank.$LOOM_RANK\"",
       "sh", dir_.str()},
      dir_, {"LOOM_RANK=7", "LOOM_WORLD_SIZE=99"});  // stale values must be replaced
  ASSERT_TRUE(result);
  ASSERT_EQ(result->exitCode, 0) << result->err;
  EXPECT_EQ(result->err, "");
  std::set<std::string> commIds, secrets;
  for (int rank = 0; rank < 4; ++rank) {
    std::istringstream fields(readFile(dir_.path() / ("rank." + std::to_string(rank))));
    int seenRank = -1, localRank = -1, worldSize = -1, localSize = -1;
    std::string commId, secret;
    fields >> seenRank >> localRank >> worldSize >> localSize >> commId >> secret;
    EXPECT_EQ(seenRank, rank);
    EXPECT_EQ(localRank, rank);
    EXPECT_EQ(worldSize, 4);
    EXPECT_EQ(localSize, 4);
    std::smatch match;
    ASSERT_TRUE(std::regex_match(commId, match, std::regex(R"(127\.0\.0\.1:(\d+))"))) << commId;
    int port = std::stoi(match[1]);
    EXPECT_GT(port, 0);
    EXPECT_LT(port, 65536);
    EXPECT_TRUE(std::regex_match(secret, std::regex("[0-9a-f]{32}"))) << secret;
    commIds.insert(commId);
    secrets.insert(secret);
  }
  EXPECT_EQ(commIds.size(), 1u);
  EXPECT_EQ(secrets.size(), 1u);

  // A second launch draws a fresh secret.
  ASSERT_TRUE(runLauncher(
      {"-np", "1", "/bin/sh", "-c", "echo \"$LOOM_COMM_SECRET\" > \"$1/s\"", "sh", dir_.str()},
      dir_));
  EXPECT_NE(readFile(dir_.path() / "s"), *secrets.begin() + "\n");
}

TEST_F(LoomrunTest, PresetCommIdAndSecretArePassedThrough) {
  auto result = runLauncher(
      std::vector<std::string>{"-n", "2"} +
          shellRanks("echo \"$LOOM_COMM_ID $LOOM_COMM_SECRET\" > \"$1/r.$LOOM_RANK\"", dir_),
      dir_, {"LOOM_COMM_ID=127.0.0.1:29999", "LOOM_COMM_SECRET=00112233445566778899aabbccddeeff"});
  ASSERT_TRUE(result);
  ASSERT_EQ(result->exitCode, 0) << result->err;
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(readFile(dir_.path() / ("r." + std::to_string(rank))),
              "127.0.0.1:29999 00112233445566778899aabbccddeeff\n");
  }
}

TEST_F(LoomrunTest, FailingRankStopsTheOthersQuickly) {
  // Rank 2 fails only once the others are up and asleep, so their pids can be checked after.
  const std::string script =
      "echo $$ > \"$1/pid.$LOOM_RANK\"\n"
      "if [ \"$LOOM_RANK\" = 2 ]; then\n"
      "  while [ ! -s \"$1/pid.0\" ] || [ ! -s \"$1/pid.1\" ] || [ ! -s \"$1/pid.3\" ]; do\n"
      "    sleep 0.02\n"
      "  done\n"
      "  exit 3\n"
      "fi\n"
      "exec sleep 60\n";
  auto result = runLauncher(std::vector<std::string>{"-n", "4"} + shellRanks(script, dir_), dir_);
  ASSERT_TRUE(result);
  EXPECT_EQ(result->exitCode, 3);
  EXPECT_LT(result->elapsed, 5s);
  EXPECT_TRUE(std::regex_search(result->err,
                                std::regex(R"(^loomrun: rank 2 \(pid \d+\) exited with status 3; )"
                                           R"(stopping the other 3 ranks\n$)")))
      << result->err;
  for (int rank : {0, 1, 3}) {
    auto pid = awaitPidFile(dir_.path() / ("pid." + std::to_string(rank)), 0s);
    ASSERT_TRUE(pid) << rank;
    EXPECT_TRUE(awaitGone(*pid)) << "rank " << rank << " pid " << *pid << " survived";
  }
}

TEST_F(LoomrunTest, LateFailureAfterOthersFinishedIsStillReported) {
  auto result =
      runLauncher(std::vector<std::string>{"-n", "2"} +
                      shellRanks("[ \"$LOOM_RANK\" = 0 ] && exit 0; sleep 0.2; exit 5", dir_),
                  dir_);
  ASSERT_TRUE(result);
  EXPECT_EQ(result->exitCode, 5);
  EXPECT_TRUE(std::regex_match(result->err,
                               std::regex(R"(loomrun: rank 1 \(pid \d+\) exited with status 5\n)")))
      << result->err;
}

TEST_F(LoomrunTest, RankKilledBySignalIsReportedAs128PlusSignal) {
  auto result =
      runLauncher(std::vector<std::string>{"-n", "3"} +
                      shellRanks("[ \"$LOOM_RANK\" = 1 ] && kill -9 $$; exec sleep 60", dir_),
                  dir_);
  ASSERT_TRUE(result);
  EXPECT_EQ(result->exitCode, 128 + 9);
  EXPECT_LT(result->elapsed, 5s);
  EXPECT_TRUE(std::regex_search(
      result->err, std::regex(R"(^loomrun: rank 1 \(pid \d+\) was killed by signal 9 \(Killed\))")))
      << result->err;
}

TEST_F(LoomrunTest, TagOutputPrefixesEveryLineWithTheRank) {
  auto result = runLauncher(
      std::vector<std::string>{"-n", "2", "--tag-output"} +
          shellRanks("echo \"hello $LOOM_RANK\"; echo \"oops $LOOM_RANK\" >&2; echo second; "
                     "printf \"unfinished $LOOM_RANK\"",
                     dir_),
      dir_);
  ASSERT_TRUE(result);
  ASSERT_EQ(result->exitCode, 0) << result->err;
  std::vector<std::string> rank0, rank1;
  for (const std::string& line : linesOf(result->out)) {
    if (line.rfind("[0] ", 0) == 0) {
      rank0.push_back(line);
    } else if (line.rfind("[1] ", 0) == 0) {
      rank1.push_back(line);
    } else {
      ADD_FAILURE() << "untagged line: " << line;
    }
  }
  // Each rank's lines keep their order; the partial last line is flushed with a newline.
  EXPECT_EQ(rank0, (std::vector<std::string>{"[0] hello 0", "[0] second", "[0] unfinished 0"}));
  EXPECT_EQ(rank1, (std::vector<std::string>{"[1] hello 1", "[1] second", "[1] unfinished 1"}));
  std::vector<std::string> errLines = linesOf(result->err);
  EXPECT_EQ(std::set<std::string>(errLines.begin(), errLines.end()),
            (std::set<std::string>{"[0] oops 0", "[1] oops 1"}));
}

TEST_F(LoomrunTest, WithoutTagOutputRanksWriteStraightThrough) {
  auto result = runLauncher(
      std::vector<std::string>{"-n", "2"} + shellRanks("echo \"plain $LOOM_RANK\"", dir_), dir_);
  ASSERT_TRUE(result);
  ASSERT_EQ(result->exitCode, 0);
  std::vector<std::string> lines = linesOf(result->out);
  EXPECT_EQ(std::set<std::string>(lines.begin(), lines.end()),
            (std::set<std::string>{"plain 0", "plain 1"}));
}

TEST_F(LoomrunTest, OnlyRankZeroReadsStdin) {
  std::ofstream(dir_.path() / "input") << "to rank zero\n";
  Launch launch(
      std::vector<std::string>{"-n", "2"} + shellRanks("cat > \"$1/in.$LOOM_RANK\"", dir_), dir_,
      {}, (dir_.path() / "input").string());
  auto result = launch.wait();
  ASSERT_TRUE(result);
  ASSERT_EQ(result->exitCode, 0) << result->err;
  EXPECT_EQ(readFile(dir_.path() / "in.0"), "to rank zero\n");
  EXPECT_EQ(readFile(dir_.path() / "in.1"), "");
}

TEST_F(LoomrunTest, MissingProgramExits127) {
  for (std::string program : {"/nonexistent/loom-no-such-program", "loom-no-such-program-xyz"}) {
    auto result = runLauncher({"-n", "3", program, "arg"}, dir_);
    ASSERT_TRUE(result);
    EXPECT_EQ(result->exitCode, 127);
    EXPECT_EQ(result->err,
              "loomrun: cannot execute '" + program + "': No such file or directory\n");
  }
}

TEST_F(LoomrunTest, SigtermStopsEveryRankAndWhatTheyStarted) {
  // Each rank is a shell waiting on a background sleep: both must go.
  const std::string script =
      "sleep 60 & echo $! > \"$1/child.$LOOM_RANK\"; echo $$ > \"$1/pid.$LOOM_RANK\"; wait";
  Launch launch(std::vector<std::string>{"-n", "3"} + shellRanks(script, dir_), dir_);
  std::vector<pid_t> pids;
  for (int rank = 0; rank < 3; ++rank) {
    for (const char* kind : {"pid.", "child."}) {
      auto pid = awaitPidFile(dir_.path() / (kind + std::to_string(rank)));
      ASSERT_TRUE(pid) << kind << rank;
      pids.push_back(*pid);
    }
  }
  ASSERT_EQ(::kill(launch.pid(), SIGTERM), 0);
  auto result = launch.wait(10s);
  ASSERT_TRUE(result);
  EXPECT_EQ(result->exitCode, 128 + SIGTERM);
  EXPECT_EQ(result->err, "loomrun: received signal 15 (Terminated); stopping 3 ranks\n");
  for (pid_t pid : pids) EXPECT_TRUE(awaitGone(pid)) << "pid " << pid << " survived";
}

TEST_F(LoomrunTest, SigintIsForwardedAsSigint) {
  const std::string script =
      "trap 'echo INT > \"$1/got.$LOOM_RANK\"; exit 0' INT\n"
      "echo $$ > \"$1/pid.$LOOM_RANK\"\n"
      "while :; do sleep 0.05; done\n";
  Launch launch(std::vector<std::string>{"-n", "2"} + shellRanks(script, dir_), dir_);
  for (int rank = 0; rank < 2; ++rank) {
    ASSERT_TRUE(awaitPidFile(dir_.path() / ("pid." + std::to_string(rank))));
  }
  ASSERT_EQ(::kill(launch.pid(), SIGINT), 0);
  auto result = launch.wait(10s);
  ASSERT_TRUE(result);
  EXPECT_EQ(result->exitCode, 128 + SIGINT);
  EXPECT_EQ(readFile(dir_.path() / "got.0"), "INT\n");
  EXPECT_EQ(readFile(dir_.path() / "got.1"), "INT\n");
}

TEST_F(LoomrunTest, TimeoutStopsEverythingWith124) {
  auto result = runLauncher({"--timeout", "0.5", "-n", "2", "sleep", "60"}, dir_);
  ASSERT_TRUE(result);
  EXPECT_EQ(result->exitCode, 124);
  EXPECT_GE(result->elapsed, 500ms);
  EXPECT_LT(result->elapsed, 5s);
  EXPECT_EQ(result->err, "loomrun: timed out after 0.5 s; stopping 2 ranks\n");
}

TEST_F(LoomrunTest, RankIgnoringSigtermIsKilledAfterTheGracePeriod) {
  auto result = runLauncher(std::vector<std::string>{"--timeout", "0.3", "-n", "2"} +
                                shellRanks("trap '' TERM; exec sleep 60", dir_),
                            dir_);
  ASSERT_TRUE(result);
  EXPECT_EQ(result->exitCode, 124);
  EXPECT_GE(result->elapsed, 3s);
  EXPECT_LT(result->elapsed, 8s);
  EXPECT_NE(result->err.find("loomrun: 2 ranks still running 3 s after SIGTERM; sending SIGKILL"),
            std::string::npos)
      << result->err;
}

TEST_F(LoomrunTest, RanksDieWithTheLauncher) {
  Launch launch(std::vector<std::string>{"-n", "2"} +
                    shellRanks("echo $$ > \"$1/pid.$LOOM_RANK\"; exec sleep 60", dir_),
                dir_);
  std::vector<pid_t> pids;
  for (int rank = 0; rank < 2; ++rank) {
    auto pid = awaitPidFile(dir_.path() / ("pid." + std::to_string(rank)));
    ASSERT_TRUE(pid);
    pids.push_back(*pid);
  }
  ASSERT_EQ(::kill(launch.pid(), SIGKILL), 0);
  ASSERT_TRUE(launch.wait(5s));
  for (pid_t pid : pids) EXPECT_TRUE(awaitGone(pid)) << "pid " << pid << " outlived loomrun";
}

TEST_F(LoomrunTest, BindCorePinsRankIToTheIthAllowedCpu) {
  cpu_set_t set;
  ASSERT_EQ(::sched_getaffinity(0, sizeof(set), &set), 0);
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  const int nranks = static_cast<int>(cpus.size()) + 1;  // wraps around to the first CPU
  auto result =
      runLauncher(std::vector<std::string>{"-n", std::to_string(nranks), "--bind", "core"} +
                      shellRanks("cat /proc/self/status > \"$1/status.$LOOM_RANK\"", dir_),
                  dir_);
  ASSERT_TRUE(result);
  ASSERT_EQ(result->exitCode, 0) << result->err;
  for (int rank = 0; rank < nranks; ++rank) {
    EXPECT_EQ(cpusAllowedLine(readFile(dir_.path() / ("status." + std::to_string(rank)))),
              "Cpus_allowed_list:\t" + std::to_string(cpus[rank % cpus.size()]))
        << "rank " << rank;
  }
}

TEST_F(LoomrunTest, BindNoneLeavesAffinityAlone) {
  auto result =
      runLauncher(std::vector<std::string>{"-n", "2", "--bind=none"} +
                      shellRanks("cat /proc/self/status > \"$1/status.$LOOM_RANK\"", dir_),
                  dir_);
  ASSERT_TRUE(result);
  ASSERT_EQ(result->exitCode, 0) << result->err;
  const std::string mine = cpusAllowedLine(readFile("/proc/self/status"));
  ASSERT_FALSE(mine.empty());
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(cpusAllowedLine(readFile(dir_.path() / ("status." + std::to_string(rank)))), mine);
  }
}

}  // namespace
