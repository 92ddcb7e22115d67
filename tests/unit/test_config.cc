// SPDX-License-Identifier: Apache-2.0
// The configuration registry (src/base/config): every entry well-formed, one message per bad
// value whichever part of Loom reads the variable, warnings for unknown variables and choice
// values, and docs/configuration.md's tables equal to what the registry makes of itself.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "bootstrap/socket_bootstrap.h"
#include "base/config.h"
#include "base/error.h"
#include "base/net/socket.h"
#include "core/settings.h"
#include "loom.h"
#include "tests/support/config_messages.h"
#include "tests/support/test_env.h"
#include "topology/paths.h"
#include "transport/socket/fault_injection.h"

namespace loom::test {
namespace {

using config::Entry;
using config::Knob;
using config::Type;

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// ---- The table ----------------------------------------------------------------------------------

TEST(ConfigTable, EveryEntryIsWellFormed) {
  std::set<std::string> names;
  for (const Entry& entry : config::entries()) {
    const std::string name = entry.name;
    SCOPED_TRACE(name);
    EXPECT_EQ(&config::entry(entry.knob), &entry) << "the table is out of Knob order";
    EXPECT_EQ(config::find(name), &entry);
    EXPECT_TRUE(names.insert(name).second) << "named twice";
    EXPECT_TRUE(name.starts_with("LOOM_") || entry.scope == config::Scope::Launcher)
        << "only launchers' variables may go without the LOOM_ prefix";
    EXPECT_NE(entry.doc, nullptr);
    EXPECT_GT(std::string(entry.doc).size(), 3u);
    EXPECT_EQ(std::string(entry.doc).find('\n'), std::string::npos) << "docs are one line";
    if (entry.ncclAlias != nullptr) {
      // Aliases are read only where honoured (tests/unit/test_nccl_variables.cc tests them).
      EXPECT_TRUE(std::string(entry.ncclAlias).starts_with("NCCL_")) << entry.ncclAlias;
      EXPECT_EQ(config::find(entry.ncclAlias), nullptr) << "an alias is no entry's name";
      EXPECT_TRUE(names.insert(entry.ncclAlias).second) << entry.ncclAlias << " named twice";
    }
    switch (entry.type) {
      case Type::Integer:
        EXPECT_LE(entry.min, entry.max);
        break;
      case Type::Choice:
        EXPECT_FALSE(entry.values.empty());
        break;
      case Type::Text:
        EXPECT_NE(entry.format, nullptr);
        break;
      case Type::Flag:
        break;
    }
    // The default obeys the entry's own rules ("" is "none": a Text, a Choice decided at run
    // time, or an Integer that must be set).
    if (*entry.defaultValue != '\0') {
      const config::Reading reading = config::read(entry.knob, entry.defaultValue);
      EXPECT_EQ(reading.problem, "") << "default " << entry.defaultValue;
      EXPECT_EQ(reading.value, entry.defaultValue) << "a default is written canonically";
    } else {
      EXPECT_NE(entry.type, Type::Flag) << "a flag has a default";
    }
  }
}

TEST(ConfigTable, CommSettingsDefaultsAreTheRegistrysDefaults) {
  EnvList unset;
  for (const Entry& entry : config::entries()) {
    if (entry.scope == config::Scope::Library) unset.emplace_back(entry.name, "");  // "" reads as unset
  }
  ScopedEnv env(unset);
  const CommSettings read = resolveSettings(nullptr);
  const CommSettings built;
  EXPECT_EQ(read.timeoutMs, built.timeoutMs);
  EXPECT_EQ(read.transport, built.transport);
  EXPECT_EQ(read.netTransport, built.netTransport);
  EXPECT_EQ(read.shmDisabled, built.shmDisabled);
  EXPECT_EQ(read.socketsPerPeer, built.socketsPerPeer);
  EXPECT_EQ(read.pieceBytes, built.pieceBytes);
  EXPECT_EQ(read.shmSlotBytes, built.shmSlotBytes);
  EXPECT_EQ(read.shmSlots, built.shmSlots);
  EXPECT_EQ(read.spreadRanks, built.spreadRanks);
  EXPECT_EQ(read.directDisabled, built.directDisabled);
  EXPECT_EQ(read.algorithm, built.algorithm);
  EXPECT_EQ(read.directEagerBytes, built.directEagerBytes);
  EXPECT_EQ(read.directChunkBytes, built.directChunkBytes);
  EXPECT_EQ(read.crossMemoryEnabled, built.crossMemoryEnabled);
  EXPECT_EQ(read.streamCopyBytes, built.streamCopyBytes);
  EXPECT_EQ(read.streamReduceBytes, built.streamReduceBytes);
  EXPECT_EQ(read.checkLevel, built.checkLevel);
}

// ---- Bad values: one message per type --------------------------------------------------------

TEST(ConfigValues, EveryIntegerRejectsMalformedAndOutOfRangeValues) {
  for (const Entry& entry : config::entries()) {
    if (entry.type != Type::Integer) continue;
    const std::string name = entry.name;
    const std::string range =
        "an integer in [" + std::to_string(entry.min) + ", " + std::to_string(entry.max) + "]";
    const std::string expected = entry.zeroAllowed ? "not 0 or " + range : "not " + range;
    std::vector<std::string> bad = {"abc", "12x", "1.5", "0x10", "99999999999999999999999"};
    if (entry.min > INT64_MIN && !(entry.zeroAllowed && entry.min - 1 == 0)) {
      bad.push_back(std::to_string(entry.min - 1));
    }
    if (entry.max < INT64_MAX) bad.push_back(std::to_string(entry.max + 1));
    for (const std::string& value : bad) {
      ScopedEnv env(entry.name, value.c_str());
      EXPECT_EQ(errorOf([&] { config::integer(entry.knob); }),
                name + "=\"" + value + "\": " + expected);
    }
    ScopedEnv good(entry.name, std::to_string(entry.max).c_str());
    EXPECT_EQ(config::integer(entry.knob), entry.max);
  }
}

TEST(ConfigValues, FlagsAreZeroOrOne) {
  for (const Entry& entry : config::entries()) {
    if (entry.type != Type::Flag) continue;
    const std::string name = entry.name;
    for (const char* value : {"yes", "true", "2", "-1", "on"}) {
      ScopedEnv env(entry.name, value);
      EXPECT_EQ(errorOf([&] { config::flag(entry.knob); }), name + "=\"" + value + "\": not 0 or 1");
    }
    {
      ScopedEnv env(entry.name, "1");
      EXPECT_TRUE(config::flag(entry.knob));
    }
    ScopedEnv env(entry.name, "0");
    EXPECT_FALSE(config::flag(entry.knob));
  }
}

TEST(ConfigValues, ZeroMeansAutomaticWhereAllowed) {
  {
    ScopedEnv env("LOOM_PIECE_BYTES", "0");
    EXPECT_EQ(config::integer(Knob::PieceBytes), 0);
  }
  ScopedEnv env("LOOM_PIECE_BYTES", "32");
  EXPECT_EQ(errorOf([] { config::integer(Knob::PieceBytes); }),
            "LOOM_PIECE_BYTES=\"32\": not 0 or an integer in [64, 67108864]");
}

TEST(ConfigValues, UnsetAndEmptyReadAsTheDefault) {
  ScopedEnv env(EnvList{{"LOOM_TIMEOUT_MS", ""}, {"LOOM_TRANSPORT", ""}, {"LOOM_CMA", ""}});
  EXPECT_EQ(config::integer(Knob::TimeoutMs), 600000);
  EXPECT_EQ(config::choice(Knob::Transport), "auto");
  EXPECT_FALSE(config::flag(Knob::Cma));
  EXPECT_FALSE(config::isSet(Knob::TimeoutMs));
  unsetenv("LOOM_TIMEOUT_MS");
  EXPECT_EQ(config::integer(Knob::TimeoutMs), 600000);
}

TEST(ConfigValues, IntegersWithoutDefaultMustBeSet) {
  ScopedEnv env("LOOM_RANK", "");
  EXPECT_EQ(errorOf([] { config::integer(Knob::LoomRank); }), "LOOM_RANK is not set");
}

TEST(ConfigValues, ReadingAsTheWrongTypeIsABug) {
  try {
    config::flag(Knob::TimeoutMs);
    ADD_FAILURE() << "expected an internal error";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), loomInternalError);
  }
}

TEST(ConfigValues, ASecretIsNeverRepeated) {
  const std::string almost = "0123456789abcdef0123456789abcdeg";
  const std::string message = config::message(Knob::CommSecret, almost, "must be exactly 32 hex digits");
  EXPECT_EQ(message, "LOOM_COMM_SECRET=<32 characters, not shown>: must be exactly 32 hex digits");
}

// ---- Choices: case-insensitive; an unknown value warns and the default is used --------------

struct ChoiceCase {
  const char* name;
  const char* value;
  const char* read;     // what choice() returns
  const char* warning;  // "" when none
};

TEST(ConfigChoices, UnknownValuesWarnWithTheClosestAndUseTheDefault) {
  const ChoiceCase cases[] = {
      {"LOOM_TRANSPORT", "Socket", "socket", ""},
      {"LOOM_TRANSPORT", "TCP", "tcp", ""},
      {"LOOM_TRANSPORT", "socekt", "auto",
       "LOOM_TRANSPORT=\"socekt\": not one of auto, shm, socket or tcp (did you mean socket?); "
       "using the default, auto"},
      {"LOOM_ALGO", "RING", "ring", ""},
      {"LOOM_ALGO", "Hierarchical", "hierarchical", ""},
      {"LOOM_ALGO", "rign", "auto",
       "LOOM_ALGO=\"rign\": not one of auto, ring or hierarchical (did you mean ring?); using the default, auto"},
      {"LOOM_HOST_ISA", "AVX2", "avx2", ""},
      {"LOOM_HOST_ISA", "avx521", "",
       "LOOM_HOST_ISA=\"avx521\": not one of generic, avx2 or avx512 (did you mean avx512?); "
       "using the default, best available"},
      {"LOOM_DEBUG", "INFOO", "",
       "LOOM_DEBUG=\"INFOO\": not one of WARN, INFO, TRACE, VERSION or NONE (did you mean INFO?); "
       "using the default, off"},
      {"LOOM_P2P_LEVEL", "pxb", "PXB", ""},
      {"LOOM_P2P_LEVEL", "PXBB", "",
       "LOOM_P2P_LEVEL=\"PXBB\": not one of LOC, NVL, NVB, C2C, PIX, PXB, PXN, PHB, SYS, 0, 1, 2, 3 "
       "or 4 (did you mean PXB?); using the default, NCCL's: `PXB` on Intel/ARM, `SYS` elsewhere"},
      {"LOOM_NET_GDR_LEVEL", "9", "",
       "LOOM_NET_GDR_LEVEL=\"9\": not one of LOC, NVL, NVB, C2C, PIX, PXB, PXN, PHB, SYS, 0, 1, 2, "
       "3 or 4 (did you mean 0?); using the default, `PXB`"},
  };
  for (const ChoiceCase& c : cases) {
    SCOPED_TRACE(std::string(c.name) + "=" + c.value);
    ScopedEnv env(c.name, c.value);
    testing::internal::CaptureStderr();
    const std::string read = config::choice(config::find(c.name)->knob);
    const std::string printed = testing::internal::GetCapturedStderr();
    EXPECT_EQ(read, c.read);
    if (*c.warning == '\0') {
      EXPECT_EQ(printed.find(c.name), std::string::npos) << printed;
    } else {
      // Printed although LOOM_DEBUG is off, in the log's format.
      EXPECT_NE(printed.find(" LOOM WARN ENV " + std::string(c.warning) + "\n"), std::string::npos)
          << printed;
    }
  }
}

TEST(ConfigChoices, TheOwnersActOnTheDefault) {
  ScopedEnv env(EnvList{{"LOOM_TRANSPORT", "carrier-pigeon"}, {"LOOM_ALGO", "fast"},
                        {"LOOM_P2P_LEVEL", "sideways"}, {"LOOM_NET_GDR_LEVEL", "far"}});
  testing::internal::CaptureStderr();
  const CommSettings settings = resolveSettings(nullptr);
  const topology::PathPolicy policy = topology::PathPolicy::fromEnvironment();
  const std::string printed = testing::internal::GetCapturedStderr();
  EXPECT_EQ(settings.transport, "");
  EXPECT_FALSE(settings.directDisabled);
  EXPECT_EQ(settings.algorithm, algo::AlgorithmSetting::Auto);
  EXPECT_FALSE(policy.p2pLevel.has_value());
  EXPECT_FALSE(policy.netGdrLevel.has_value());
  for (const char* name : {"LOOM_TRANSPORT=", "LOOM_ALGO=", "LOOM_P2P_LEVEL=", "LOOM_NET_GDR_LEVEL="}) {
    EXPECT_NE(printed.find(name), std::string::npos) << name << " not warned about: " << printed;
  }
}

// LOOM_ALGO: `ring` also turns the direct engine off; `hierarchical` asks for the hierarchical
// schedules across hosts (algo::chooseHierarchy) and leaves the direct engine on.
TEST(ConfigChoices, AlgoChoosesTheSchedules) {
  const struct {
    const char* value;
    algo::AlgorithmSetting algorithm;
    bool directDisabled;
  } cases[] = {{"auto", algo::AlgorithmSetting::Auto, false},
               {"ring", algo::AlgorithmSetting::Ring, true},
               {"hierarchical", algo::AlgorithmSetting::Hierarchical, false},
               {"HIERARCHICAL", algo::AlgorithmSetting::Hierarchical, false}};
  for (const auto& c : cases) {
    ScopedEnv env(EnvList{{"LOOM_ALGO", c.value}});
    const CommSettings settings = resolveSettings(nullptr);
    EXPECT_EQ(settings.algorithm, c.algorithm) << c.value;
    EXPECT_EQ(settings.directDisabled, c.directDisabled) << c.value;
  }
}

// ---- Unknown variables ---------------------------------------------------------------------------

TEST(ConfigUnknown, NamesTheClosestKnownVariable) {
  ScopedEnv env(EnvList{{"LOOM_TIMEOUT", "5"}, {"LOOM_SOKCET_IFNAME", "lo"}, {"NCCL_DEBUG", "INFO"},
                        {"LOOMRUN_X", "1"}});
  const std::vector<std::string> warnings = config::unknownVariables();
  auto has = [&](const std::string& text) {
    return std::find(warnings.begin(), warnings.end(), text) != warnings.end();
  };
  EXPECT_TRUE(has("LOOM_TIMEOUT: unknown variable; did you mean LOOM_TIMEOUT_MS?"));
  EXPECT_TRUE(has("LOOM_SOKCET_IFNAME: unknown variable; did you mean LOOM_SOCKET_IFNAME?"));
  for (const std::string& warning : warnings) {
    EXPECT_TRUE(warning.starts_with("LOOM_")) << warning;  // neither NCCL_* nor LOOMRUN*
  }
}

TEST(ConfigUnknown, TheTestSuitesOwnVariablesAreKnown) {
  // tests/meson.build sets these for every test: none may be warned about.
  ScopedEnv env(EnvList{{"LOOM_TEST_DATA", "x"}, {"LOOM_PERF_DIR", "x"}, {"LOOM_TOPO_EXE", "x"},
                        {"LOOM_HELLO_EXE", "x"}, {"LOOM_ENV_EXE", "x"}, {"LOOM_SOAK_SEED", "1"},
                        {"LOOM_SOAK_ITERATIONS", "1"}, {"LOOM_PERF_INJECT_FAULT", "1"},
                        {"LOOM_GLOO_STORE_DIR", "x"}, {"LOOM_LOCAL_RANK", "0"}, {"LOOM_LOCAL_SIZE", "1"}});
  for (const std::string& warning : config::unknownVariables()) ADD_FAILURE() << warning;
}

TEST(ConfigUnknown, ClosestBreaksTiesByOrder) {
  EXPECT_EQ(config::closest("PXC", {"PXB", "PXN"}), "PXB");
  EXPECT_EQ(config::closest("anything", {}), std::nullopt);
  EXPECT_EQ(config::closest("avx512", {"generic", "AVX512"}), "AVX512");  // case-insensitive
}

// The first library call of a process prints the unknown-variable warnings once. These run in
// a fresh process (FreshProcess below starts them) so nothing read a knob before.
TEST(ConfigFirstCall, DISABLED_GetUniqueId) {
  loomUniqueId id;
  EXPECT_NE(loomGetUniqueId(&id), loomSuccess);  // LOOM_COMM_ID is malformed
  EXPECT_NE(loomGetUniqueId(&id), loomSuccess);
}

TEST(ConfigFirstCall, DISABLED_CommInitRank) {
  loomComm_t comm = nullptr;
  loomUniqueId id{};
  EXPECT_NE(loomCommInitRank(&comm, 1, id, 0), loomSuccess);  // LOOM_TIMEOUT_MS is malformed
}

TEST(ConfigFirstCall, DISABLED_CommInitFromEnv) {
  loomComm_t comm = nullptr;
  EXPECT_NE(loomCommInitFromEnv(&comm), loomSuccess);  // no launcher variables
}

// Runs one DISABLED_ test of this program in a new process with `variables` set; its stderr.
std::string runFresh(const std::string& test, const EnvList& variables) {
  char errPath[] = "/tmp/loom-test-config-XXXXXX";
  const int errFd = mkstemp(errPath);
  if (errFd < 0) return "mkstemp failed";
  const pid_t child = fork();
  if (child == 0) {
    for (const auto& [name, value] : variables) setenv(name, value, 1);
    dup2(errFd, STDERR_FILENO);
    const int devNull = open("/dev/null", O_WRONLY);
    dup2(devNull, STDOUT_FILENO);
    const std::string filter = "--gtest_filter=ConfigFirstCall.DISABLED_" + test;
    execl("/proc/self/exe", "test_config", "--gtest_also_run_disabled_tests", filter.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  waitpid(child, &status, 0);
  close(errFd);
  std::string printed = readFile(errPath);
  unlink(errPath);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << test << " failed:\n" << printed;
  return printed;
}

TEST(ConfigFirstCall, WarnsAboutUnknownVariablesOnceAtTheFirstLibraryCall) {
  const std::string warning = "LOOM WARN ENV LOOM_TIMEOUT: unknown variable; did you mean LOOM_TIMEOUT_MS?";
  const std::pair<std::string, EnvList> runs[] = {
      {"GetUniqueId", {{"LOOM_TIMEOUT", "1"}, {"LOOM_COMM_ID", "no-port-here"}}},
      {"CommInitRank", {{"LOOM_TIMEOUT", "1"}, {"LOOM_TIMEOUT_MS", "abc"}}},
      {"CommInitFromEnv", {{"LOOM_TIMEOUT", "1"}, {"LOOM_RANK", ""}, {"RANK", ""},
                           {"OMPI_COMM_WORLD_RANK", ""}, {"SLURM_PROCID", ""}}},
  };
  for (const auto& [test, variables] : runs) {
    const std::string printed = runFresh(test, variables);
    const size_t first = printed.find(warning);
    EXPECT_NE(first, std::string::npos) << test << ":\n" << printed;
    EXPECT_EQ(printed.find(warning, first + 1), std::string::npos) << test << " warned twice:\n" << printed;
  }
}

// ---- The same message whichever part reads the variable --------------------------------------

TEST(ConfigSameMessage, TimeoutFromTheRootServerAndFromEveryInit) {
  ScopedEnv env(EnvList{{"LOOM_TIMEOUT_MS", "abc"}, {"LOOM_COMM_ID", ""}});
  const std::string expected = "LOOM_TIMEOUT_MS=\"abc\": not an integer in [1, 2147483647]";
  EXPECT_EQ(errorOf([] { resolveSettings(nullptr); }), expected);
  EXPECT_EQ(errorOf([] { startRootServer(nullptr, nullptr); }), expected);

  loomUniqueId id{};
  EXPECT_EQ(loomGetUniqueId(&id), loomInvalidArgument);  // its root server reads it
  EXPECT_EQ(fromVariable(loomGetLastError(nullptr), "LOOM_TIMEOUT_MS"), expected);
  loomComm_t comm = nullptr;
  EXPECT_EQ(loomCommInitRank(&comm, 1, id, 0), loomInvalidArgument);
  EXPECT_EQ(fromVariable(loomGetLastError(nullptr), "LOOM_TIMEOUT_MS"), expected);
  loomConfig_t settings = LOOM_CONFIG_INITIALIZER;
  settings.timeoutMs = 1000;  // the variable is still checked
  EXPECT_EQ(loomCommInitRankConfig(&comm, 1, id, 0, &settings), loomInvalidArgument);
  EXPECT_EQ(fromVariable(loomGetLastError(nullptr), "LOOM_TIMEOUT_MS"), expected);
  EXPECT_EQ(loomCommInitAll(&comm, 1, nullptr), loomInvalidArgument);
  EXPECT_EQ(fromVariable(loomGetLastError(nullptr), "LOOM_TIMEOUT_MS"), expected);
}

TEST(ConfigSameMessage, SocketIfnameFromTheRootServerAndTheRanks) {
  ScopedEnv env(EnvList{{"LOOM_SOCKET_IFNAME", "lo"}, {"LOOM_COMM_ID", ""}, {"LOOM_TIMEOUT_MS", "5000"}});
  loomUniqueId id{};
  ASSERT_EQ(loomGetUniqueId(&id), loomSuccess) << loomGetLastError(nullptr);
  setenv("LOOM_SOCKET_IFNAME", "no_such_interface", 1);
  const std::string direct = errorOf([] { net::chooseLocalAddress(nullptr); });
  EXPECT_TRUE(direct.starts_with("LOOM_SOCKET_IFNAME=\"no_such_interface\": matches no interface"))
      << direct;
  loomUniqueId other{};
  EXPECT_EQ(loomGetUniqueId(&other), loomInvalidArgument);
  EXPECT_EQ(fromVariable(loomGetLastError(nullptr), "LOOM_SOCKET_IFNAME"), direct);
  loomComm_t comm = nullptr;
  EXPECT_EQ(loomCommInitRank(&comm, 1, id, 0), loomInvalidArgument);
  EXPECT_EQ(fromVariable(loomGetLastError(nullptr), "LOOM_SOCKET_IFNAME"), direct);
}

TEST(ConfigSameMessage, CommIdFromGetUniqueIdAndInitFromEnv) {
  const std::string expected = "LOOM_COMM_ID=\"no-port-here\": expected host:port or [IPv6]:port";
  ScopedEnv env(EnvList{{"LOOM_COMM_ID", "no-port-here"}, {"LOOM_RANK", "0"}, {"LOOM_WORLD_SIZE", "1"},
                        {"LOOM_COMM_SECRET", "0123456789abcdef0123456789abcdef"}});
  loomUniqueId id{};
  EXPECT_EQ(loomGetUniqueId(&id), loomInvalidArgument);
  EXPECT_EQ(fromVariable(loomGetLastError(nullptr), "LOOM_COMM_ID"), expected);
  loomComm_t comm = nullptr;
  EXPECT_EQ(loomCommInitFromEnv(&comm), loomInvalidArgument);
  EXPECT_EQ(fromVariable(loomGetLastError(nullptr), "LOOM_COMM_ID"), expected);

  setenv("LOOM_COMM_ID", "127.0.0.1:99999", 1);
  const std::string port = "LOOM_COMM_ID=\"127.0.0.1:99999\": port must be a number in 1-65535";
  EXPECT_EQ(loomGetUniqueId(&id), loomInvalidArgument);
  EXPECT_EQ(fromVariable(loomGetLastError(nullptr), "LOOM_COMM_ID"), port);
  EXPECT_EQ(loomCommInitFromEnv(&comm), loomInvalidArgument);
  EXPECT_EQ(fromVariable(loomGetLastError(nullptr), "LOOM_COMM_ID"), port);
}

TEST(ConfigSameMessage, LaunchersVariablesAndTheSecret) {
  ScopedEnv env(EnvList{{"LOOM_COMM_ID", "127.0.0.1:1"}, {"LOOM_RANK", "one"}, {"LOOM_WORLD_SIZE", "2"},
                        {"LOOM_COMM_SECRET", "0123456789abcdef0123456789abcdeg"}});
  loomComm_t comm = nullptr;
  EXPECT_EQ(loomCommInitFromEnv(&comm), loomInvalidArgument);
  EXPECT_EQ(fromVariable(loomGetLastError(nullptr), "LOOM_RANK"),
            "LOOM_RANK=\"one\": not an integer in [0, 2147483647]");
  setenv("LOOM_RANK", "1", 1);
  EXPECT_EQ(loomCommInitFromEnv(&comm), loomInvalidArgument);
  const std::string message = loomGetLastError(nullptr);
  EXPECT_EQ(fromVariable(message, "LOOM_COMM_SECRET"),
            "LOOM_COMM_SECRET=<32 characters, not shown>: must be exactly 32 hex digits (found 'g')");
  EXPECT_EQ(message.find("0123456789abcdef"), std::string::npos) << message;
}

TEST(ConfigSameMessage, FaultListsReportTheWholeVariable) {
  EXPECT_EQ(errorOf([] { transport::FaultPlan::parse("delay_ms=5,explode=1", 0); }),
            "LOOM_FAULT=\"delay_ms=5,explode=1\": unknown fault 'explode' (known: close_after, delay_ms, "
            "short_io, corrupt_header)");
  EXPECT_EQ(errorOf([] { transport::FaultPlan::parse("short_io=0", 0); }),
            "LOOM_FAULT=\"short_io=0\": 'short_io=0' needs an integer >= 1");
  ScopedEnv env("LOOM_FAULT", "close_after");
  EXPECT_EQ(errorOf([] { transport::FaultPlan::fromEnvironment(0); }),
            "LOOM_FAULT=\"close_after\": 'close_after' is not name=value[@rank]");
}

// ---- loom-env and docs/configuration.md ----------------------------------------------------------

struct ToolRun {
  int exitCode = -1;
  std::string out;
};

ToolRun runLoomEnv(const std::string& arguments, const std::string& variables = "") {
  const char* exe = std::getenv("LOOM_ENV_EXE");
  ToolRun run;
  if (exe == nullptr) return run;
  // env -i: only the variables given, so the test's own environment cannot leak in.
  const std::string command = "env -i " + variables + " '" + exe + "' " + arguments + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return run;
  char buffer[4096];
  size_t got;
  while ((got = fread(buffer, 1, sizeof(buffer), pipe)) > 0) run.out.append(buffer, got);
  const int status = pclose(pipe);
  run.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

TEST(LoomEnv, ChecksTheVariablesSetNow) {
  ASSERT_NE(std::getenv("LOOM_ENV_EXE"), nullptr) << "tests/meson.build sets LOOM_ENV_EXE";
  ToolRun clean = runLoomEnv("", "LOOM_TIMEOUT_MS=3000 LOOM_TRANSPORT=TCP");
  EXPECT_EQ(clean.exitCode, 0) << clean.out;
  EXPECT_NE(clean.out.find("LOOM_TIMEOUT_MS=3000"), std::string::npos) << clean.out;
  EXPECT_NE(clean.out.find("LOOM_TRANSPORT=tcp"), std::string::npos) << clean.out;

  ToolRun bad = runLoomEnv("", "LOOM_TIMEOUT_MS=abc LOOM_TIMEOUT=1 LOOM_HOST_ISA=quantum");
  EXPECT_EQ(bad.exitCode, 1) << bad.out;
  for (const char* line : {"error:   LOOM_TIMEOUT_MS=\"abc\": not an integer in [1, 2147483647]",
                           "warning: LOOM_TIMEOUT: unknown variable; did you mean LOOM_TIMEOUT_MS?",
                           "warning: LOOM_HOST_ISA=\"quantum\": not one of generic, avx2 or avx512"}) {
    EXPECT_NE(bad.out.find(line), std::string::npos) << line << "\n" << bad.out;
  }
}

// --nccl reads as Loom's libnccl.so.2 does; without it NCCL_* variables count for nothing.
TEST(LoomEnv, NcclReadsTheAliases) {
  ASSERT_NE(std::getenv("LOOM_ENV_EXE"), nullptr) << "tests/meson.build sets LOOM_ENV_EXE";
  const std::string variables = "NCCL_SHM_DISABLE=1 NCCL_FOO=x NCCL_NET=ib";
  ToolRun plain = runLoomEnv("", variables);
  EXPECT_EQ(plain.exitCode, 0) << plain.out;
  EXPECT_NE(plain.out.find("no Loom variable is set"), std::string::npos) << plain.out;
  ToolRun nccl = runLoomEnv("--nccl", variables);
  EXPECT_EQ(nccl.exitCode, 0) << "LOOM_NET's owner checks it, at init" << nccl.out;
  for (const char* line : {"ok:      NCCL_SHM_DISABLE=1", "ok:      NCCL_NET=\"ib\"", "note:    NCCL_FOO: not honoured"}) {
    EXPECT_NE(nccl.out.find(line), std::string::npos) << line << "\n" << nccl.out;
  }
}

// The part of docs/`file` between the markers of `option`'s output equals that output.
void expectGeneratedPart(const std::string& file, const std::string& option) {
  const char* data = std::getenv("LOOM_TEST_DATA");  // tests/data
  ASSERT_NE(data, nullptr);
  const std::string docPath = std::string(data) + "/../../docs/" + file;
  const std::string doc = readFile(docPath);
  ASSERT_FALSE(doc.empty()) << "cannot read " << docPath;
  const std::string begin = "<!-- made by `loom-env " + option + "`";
  const std::string end = "<!-- end of `loom-env " + option + "` -->";
  const size_t beginLine = doc.find(begin);
  ASSERT_NE(beginLine, std::string::npos) << "docs/" << file << " lacks the marker " << begin;
  const size_t from = doc.find('\n', beginLine) + 1;
  const size_t to = doc.find(end, from);
  ASSERT_NE(to, std::string::npos) << "docs/" << file << " lacks the marker " << end;
  const ToolRun generated = runLoomEnv(option);
  ASSERT_EQ(generated.exitCode, 0) << generated.out;
  EXPECT_TRUE(doc.substr(from, to - from) == generated.out)
      << "docs/" << file << "'s tables differ from the registry (src/base/config_knobs.cc); "
      << "regenerate them with\n  build/tools/loom-env --update-docs docs/" << file << "\n"
      << "--- loom-env " << option << " ---\n"
      << generated.out;
}

TEST(LoomEnv, ConfigurationDocHoldsTheGeneratedTables) { expectGeneratedPart("configuration.md", "--markdown"); }

TEST(LoomEnv, NcclDocHoldsTheGeneratedTable) { expectGeneratedPart("nccl.md", "--nccl-markdown"); }

}  // namespace
}  // namespace loom::test
