// SPDX-License-Identifier: Apache-2.0
// NCCL_* aliases in a process that honours them, as Loom's libnccl.so.2 does
// (loomHonourNcclVariables): read only after the call, by the registry's rules, named in
// messages; LOOM_* wins; the NCCL_* variables not taken are reported; and loomResetDebugInit.
// Its own executable: the switch is process-wide and sticky, and the other tests run as a
// libloom-only program (tests/unit/test_net_knobs.cc checks that side).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "base/config.h"
#include "base/error.h"
#include "base/log.h"
#include "base/net/socket.h"
#include "core/settings.h"
#include "loom.h"
#include "tests/support/config_messages.h"
#include "tests/support/test_env.h"

namespace loom::test {
namespace {

using config::Entry;
using config::Knob;

void honour() { ASSERT_EQ(loomHonourNcclVariables(), loomSuccess); }

// Logging as the test's environment sets it again once the test's variables are gone.
struct RestoreLogging {
  ~RestoreLogging() { loomResetDebugInit(); }
};

// First in this file: the aliases are read from the call on, not before (when the tests run
// in another order, the switch may be on already and only the second half applies).
TEST(NcclAliases, ReadOnlyAfterHonour) {
  ScopedEnv env(EnvList{{"LOOM_SOCKET_IFNAME", ""}, {"NCCL_SOCKET_IFNAME", "eth9"}});
  if (!config::ncclAliasesHonoured()) {
    EXPECT_EQ(config::text(Knob::SocketIfname), "");
    EXPECT_FALSE(config::isSet(Knob::SocketIfname));
  }
  honour();
  EXPECT_TRUE(config::ncclAliasesHonoured());
  EXPECT_TRUE(config::isSet(Knob::SocketIfname));
  EXPECT_EQ(config::text(Knob::SocketIfname), "eth9");
  EXPECT_STREQ(config::sourceName(Knob::SocketIfname), "NCCL_SOCKET_IFNAME");
  EXPECT_EQ(loomHonourNcclVariables(), loomSuccess) << "a second call changes nothing";
}

TEST(NcclAliases, EveryAliasIsReadAndLoomWins) {
  honour();
  int aliases = 0;
  for (const Entry& entry : config::entries()) {
    if (entry.ncclAlias == nullptr) continue;
    ++aliases;
    SCOPED_TRACE(entry.ncclAlias);
    {
      ScopedEnv env(EnvList{{entry.name, ""}, {entry.ncclAlias, "from-nccl"}});
      EXPECT_EQ(config::rawValue(entry.knob), "from-nccl");
      EXPECT_STREQ(config::sourceName(entry.knob), entry.ncclAlias);
    }
    ScopedEnv env(EnvList{{entry.name, "from-loom"}, {entry.ncclAlias, "from-nccl"}});
    EXPECT_EQ(config::rawValue(entry.knob), "from-loom");
    EXPECT_STREQ(config::sourceName(entry.knob), entry.name);
  }
  EXPECT_EQ(aliases, 8) << "NCCL_DEBUG, _DEBUG_SUBSYS, _SOCKET_IFNAME, _SOCKET_FAMILY, _NET, "
                           "_SHM_DISABLE, _P2P_LEVEL, _COMM_ID (docs/nccl.md)";
}

TEST(NcclAliases, TheReadersTakeTheAliasByTheSameRules) {
  honour();
  {
    ScopedEnv env(EnvList{{"LOOM_SHM_DISABLE", ""}, {"NCCL_SHM_DISABLE", "1"}, {"LOOM_P2P_LEVEL", ""},
                          {"NCCL_P2P_LEVEL", "pxb"}, {"LOOM_NET", ""}, {"NCCL_NET", "Socket"}});
    EXPECT_TRUE(config::flag(Knob::ShmDisable));
    EXPECT_EQ(config::choice(Knob::P2pLevel), "PXB");
    const CommSettings settings = resolveSettings(nullptr);
    EXPECT_TRUE(settings.shmDisabled);
    EXPECT_EQ(settings.netTransport, "socket");
  }
  ScopedEnv loomWins(EnvList{{"LOOM_SHM_DISABLE", "0"}, {"NCCL_SHM_DISABLE", "1"}});
  EXPECT_FALSE(config::flag(Knob::ShmDisable));
  EXPECT_FALSE(resolveSettings(nullptr).shmDisabled);
}

TEST(NcclAliases, BadValuesNameTheNcclVariable) {
  honour();
  {
    ScopedEnv env(EnvList{{"LOOM_SHM_DISABLE", ""}, {"NCCL_SHM_DISABLE", "maybe"}});
    EXPECT_EQ(errorOf([] { config::flag(Knob::ShmDisable); }), "NCCL_SHM_DISABLE=\"maybe\": not 0 or 1");
    EXPECT_EQ(errorOf([] { resolveSettings(nullptr); }), "NCCL_SHM_DISABLE=\"maybe\": not 0 or 1");
  }
  {
    ScopedEnv env(EnvList{{"LOOM_DEBUG", ""}, {"NCCL_DEBUG", "LOUD"}});
    const config::Reading reading = config::read(Knob::Debug, config::rawValue(Knob::Debug));
    EXPECT_EQ(config::message(Knob::Debug, "LOUD", reading.problem),
              "NCCL_DEBUG=\"LOUD\": not one of WARN, INFO, TRACE, VERSION or NONE (did you mean NONE?)");
  }
  {
    ScopedEnv env(EnvList{{"LOOM_COMM_ID", ""}, {"NCCL_COMM_ID", "no-port-here"}});
    loomUniqueId id{};
    EXPECT_EQ(loomGetUniqueId(&id), loomInvalidArgument);
    EXPECT_EQ(fromVariable(loomGetLastError(nullptr), "NCCL_COMM_ID"),
              "NCCL_COMM_ID=\"no-port-here\": expected host:port or [IPv6]:port");
  }
  ScopedEnv env(EnvList{{"LOOM_SOCKET_IFNAME", ""}, {"NCCL_SOCKET_IFNAME", "no_such_interface"}});
  const std::string error = errorOf([] { net::chooseLocalAddress(nullptr); });
  EXPECT_TRUE(error.starts_with("NCCL_SOCKET_IFNAME=\"no_such_interface\": matches no interface")) << error;
}

TEST(NcclAliases, NcclNetChoosesTheNetworkTransport) {
  honour();
  ScopedEnv env(EnvList{{"LOOM_NET", ""}, {"NCCL_NET", "IB"}});
  EXPECT_EQ(errorOf([] { resolveSettings(nullptr); }), "NCCL_NET=\"IB\": unknown network transport; known: socket");
  loomComm_t comm = nullptr;
  EXPECT_EQ(loomCommInitAll(&comm, 1, nullptr), loomInvalidArgument);
  EXPECT_EQ(fromVariable(loomGetLastError(nullptr), "NCCL_NET"),
            "NCCL_NET=\"IB\": unknown network transport; known: socket");
  ScopedEnv loomWins("LOOM_NET", "socket");
  ASSERT_EQ(loomCommInitAll(&comm, 1, nullptr), loomSuccess) << loomGetLastError(nullptr);
  EXPECT_EQ(loomCommDestroy(comm), loomSuccess);
}

TEST(NcclAliases, SocketFamilyFromNccl) {
  honour();
  ScopedEnv env(EnvList{{"LOOM_SOCKET_IFNAME", ""}, {"NCCL_SOCKET_IFNAME", ""}, {"LOOM_SOCKET_FAMILY", ""},
                        {"NCCL_SOCKET_FAMILY", "AF_INET6"}});
  EXPECT_EQ(addressToString(net::chooseLocalAddress(nullptr)), "[::1]:0");
}

TEST(NcclAliases, UnhonouredVariablesAreListed) {
  honour();
  ScopedEnv env(EnvList{{"NCCL_FOO", "1"}, {"NCCL_ALGO", "Ring"}, {"NCCL_EMPTY", ""}, {"LOOM_DEBUG_SUBSYS", ""},
                        {"NCCL_DEBUG_SUBSYS", "INIT"}, {"LOOM_SHM_DISABLE", "0"}, {"NCCL_SHM_DISABLE", "1"}});
  const std::vector<std::string> lines = config::unhonouredNcclVariables();
  auto listed = [&](const std::string& line) {
    return std::find(lines.begin(), lines.end(), line) != lines.end();
  };
  EXPECT_TRUE(listed("NCCL_FOO: not honoured by Loom (docs/nccl.md lists the NCCL_* variables it reads)"));
  EXPECT_TRUE(listed("NCCL_ALGO: not honoured by Loom (docs/nccl.md lists the NCCL_* variables it reads)"));
  EXPECT_TRUE(listed("NCCL_SHM_DISABLE: not read, LOOM_SHM_DISABLE is set and wins"));
  for (const std::string& line : lines) {
    EXPECT_FALSE(line.starts_with("NCCL_EMPTY")) << "empty is unset";
    EXPECT_FALSE(line.starts_with("NCCL_DEBUG_SUBSYS")) << "honoured";
  }
  for (const std::string& warning : config::unknownVariables()) {
    EXPECT_EQ(warning.find("NCCL_"), std::string::npos) << "not an unknown LOOM_* variable: " << warning;
  }
}

// LOOM_DEBUG=INFO prints them, once per process, as INFO lines of subsystem ENV. In a fresh
// process (a threadsafe death test runs the binary again): any communicator made earlier in
// this one, once the library reports at its first init, has had the one report.
void reportTwiceAndExit() {
  setenv("NCCL_FOO", "1", 1);
  setenv("LOOM_DEBUG", "INFO", 1);
  setenv("LOOM_DEBUG_SUBSYS", "ENV", 1);
  if (loomHonourNcclVariables() != loomSuccess || loomResetDebugInit() != loomSuccess) std::_Exit(2);
  testing::internal::CaptureStderr();
  config::reportNcclVariablesOnce();
  config::reportNcclVariablesOnce();
  const std::string printed = testing::internal::GetCapturedStderr();
  const std::string line = "LOOM INFO ENV NCCL_FOO: not honoured by Loom";
  const bool once = printed.find(line) != std::string::npos && printed.find(line) == printed.rfind(line);
  std::fprintf(stderr, "%s%s", once ? "reported once\n" : "not reported exactly once:\n", printed.c_str());
  std::_Exit(once ? 0 : 1);
}

TEST(NcclAliasesDeathTest, ReportedOnceAtInfo) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(reportTwiceAndExit(), testing::ExitedWithCode(0), "reported once");
}

// ---- Logging ----------------------------------------------------------------------------------------

TEST(ResetDebugInit, RereadsLoomDebugAndSubsys) {
  RestoreLogging restore;
  {
    ScopedEnv env(EnvList{{"LOOM_DEBUG", "WARN"}, {"LOOM_DEBUG_SUBSYS", ""}});
    ASSERT_EQ(loomResetDebugInit(), loomSuccess);
    EXPECT_TRUE(log::enabled(log::Level::Warn, log::INIT));
    EXPECT_FALSE(log::enabled(log::Level::Info, log::INIT));
    setenv("LOOM_DEBUG", "INFO", 1);
    EXPECT_FALSE(log::enabled(log::Level::Info, log::INIT)) << "read once, until reset";
    ASSERT_EQ(loomResetDebugInit(), loomSuccess);
    EXPECT_TRUE(log::enabled(log::Level::Info, log::INIT));
    setenv("LOOM_DEBUG_SUBSYS", "GRAPH", 1);
    ASSERT_EQ(loomResetDebugInit(), loomSuccess);
    EXPECT_FALSE(log::enabled(log::Level::Info, log::INIT));
    EXPECT_TRUE(log::enabled(log::Level::Info, log::GRAPH));
  }
  ASSERT_EQ(loomResetDebugInit(), loomSuccess);
}

TEST(ResetDebugInit, NcclLevelsAndSubsystems) {
  honour();
  RestoreLogging restore;
  ScopedEnv env(EnvList{{"LOOM_DEBUG", ""}, {"NCCL_DEBUG", "VERSION"}, {"LOOM_DEBUG_SUBSYS", ""},
                        {"NCCL_DEBUG_SUBSYS", ""}});
  ASSERT_EQ(loomResetDebugInit(), loomSuccess);
  EXPECT_TRUE(log::versionLineEnabled()) << "VERSION: the version line";
  EXPECT_FALSE(log::enabled(log::Level::Warn, log::INIT)) << "and nothing else";
  testing::internal::CaptureStderr();
  LOOM_VERSION_LINE("Loom version %s", "9.9.9");
  LOOM_INFO(INIT, "not at VERSION");
  const std::string version = testing::internal::GetCapturedStderr();
  EXPECT_NE(version.find("LOOM INFO INIT Loom version 9.9.9\n"), std::string::npos) << version;
  EXPECT_EQ(version.find("not at VERSION"), std::string::npos) << version;
  setenv("NCCL_DEBUG", "NONE", 1);
  ASSERT_EQ(loomResetDebugInit(), loomSuccess);
  EXPECT_FALSE(log::versionLineEnabled());
  EXPECT_FALSE(log::enabled(log::Level::Warn, log::INIT));
  setenv("NCCL_DEBUG", "info", 1);
  setenv("NCCL_DEBUG_SUBSYS", "INIT,TUNING,BOOTSTRAP", 1);  // NCCL's names: no warning
  testing::internal::CaptureStderr();
  ASSERT_EQ(loomResetDebugInit(), loomSuccess);
  const std::string printed = testing::internal::GetCapturedStderr();
  EXPECT_EQ(printed.find("unknown subsystem"), std::string::npos) << printed;
  EXPECT_TRUE(log::versionLineEnabled());
  EXPECT_TRUE(log::enabled(log::Level::Info, log::INIT));
  EXPECT_TRUE(log::enabled(log::Level::Info, log::NET)) << "BOOTSTRAP is NET";
  EXPECT_FALSE(log::enabled(log::Level::Info, log::COLL));
}

}  // namespace
}  // namespace loom::test
