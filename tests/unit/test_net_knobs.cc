// SPDX-License-Identifier: Apache-2.0
// The network knobs in a process that does not honour NCCL_* aliases (a program linked to
// libloom alone): LOOM_NET and loomConfig_t.netName (the network transport between hosts),
// LOOM_SOCKET_FAMILY, and NCCL_* variables that change nothing here. The process that honours
// aliases is tests/unit/test_nccl_variables.cc: the switch is process-wide and sticky.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <string>
#include <vector>

#include "base/config.h"
#include "base/error.h"
#include "base/net/socket.h"
#include "core/settings.h"
#include "loom.h"
#include "tests/support/config_messages.h"
#include "tests/support/test_env.h"
#include "transport/registry/registry.h"

namespace loom::test {
namespace {

using config::Knob;

// ---- NCCL_* variables without loomHonourNcclVariables -----------------------------------------

TEST(NcclVariablesIgnored, NoAliasIsReadWithoutHonour) {
  ASSERT_FALSE(config::ncclAliasesHonoured()) << "nothing in this executable turns aliases on";
  ScopedEnv env(EnvList{{"LOOM_SOCKET_IFNAME", ""}, {"NCCL_SOCKET_IFNAME", "eth9"},
                        {"NCCL_SHM_DISABLE", "1"}, {"NCCL_DEBUG", "TRACE"}, {"NCCL_NET", "IB"},
                        {"NCCL_SOCKET_FAMILY", "AF_INET6"}, {"NCCL_P2P_LEVEL", "SYS"},
                        {"NCCL_COMM_ID", "10.0.0.1:1234"}, {"NCCL_DEBUG_SUBSYS", "GRAPH"}});
  EXPECT_FALSE(config::isSet(Knob::SocketIfname));
  EXPECT_EQ(config::text(Knob::SocketIfname), "");
  EXPECT_FALSE(config::flag(Knob::ShmDisable));
  EXPECT_EQ(config::choice(Knob::Debug), "");
  EXPECT_EQ(config::text(Knob::DebugSubsys), "ALL");
  EXPECT_EQ(config::choice(Knob::SocketFamily), "");
  EXPECT_EQ(config::choice(Knob::P2pLevel), "");
  EXPECT_FALSE(config::isSet(Knob::CommId));
  EXPECT_STREQ(config::sourceName(Knob::SocketIfname), "LOOM_SOCKET_IFNAME");
  const CommSettings settings = resolveSettings(nullptr);  // NCCL_NET=IB is no error here
  EXPECT_EQ(settings.netTransport, "");
  EXPECT_FALSE(settings.shmDisabled);
  EXPECT_EQ(addressToString(net::chooseLocalAddress(nullptr)), "127.0.0.1:0");  // not AF_INET6
}

TEST(NcclVariablesIgnored, BadNcclValuesAreNoErrorWithoutHonour) {
  ScopedEnv env(EnvList{{"NCCL_SHM_DISABLE", "maybe"}, {"NCCL_COMM_ID", "nonsense"}});
  EXPECT_EQ(errorOf([] { resolveSettings(nullptr); }), "");
  EXPECT_EQ(errorOf([] { config::flag(Knob::ShmDisable); }), "");
}

TEST(NcclVariablesIgnored, NeitherUnknownNorReported) {
  ScopedEnv env(EnvList{{"NCCL_FOO", "1"}, {"NCCL_DEBUG", "INFO"}, {"NCCL_ALGO", "Ring"}});
  for (const std::string& warning : config::unknownVariables()) {
    EXPECT_EQ(warning.find("NCCL_"), std::string::npos) << warning;
  }
  EXPECT_TRUE(config::unhonouredNcclVariables().empty()) << "a libloom-only process says nothing";
}

// ---- LOOM_NET and loomConfig_t.netName ------------------------------------------------------------

TEST(LoomNet, UnknownNamesFailWithTheKnownOnes) {
  {
    ScopedEnv env("LOOM_NET", "ib");
    EXPECT_EQ(errorOf([] { resolveSettings(nullptr); }),
              "LOOM_NET=\"ib\": unknown network transport; known: socket");
  }
  {
    ScopedEnv env("LOOM_NET", "shm");  // a transport, but not one between hosts
    EXPECT_EQ(errorOf([] { resolveSettings(nullptr); }),
              "LOOM_NET=\"shm\": unknown network transport; known: socket");
  }
}

TEST(LoomNet, NamesAreCaseInsensitive) {
  for (const char* name : {"Socket", "socket", "SOCKET"}) {
    ScopedEnv env("LOOM_NET", name);
    EXPECT_EQ(resolveSettings(nullptr).netTransport, "socket") << name;
  }
  ScopedEnv unset("LOOM_NET", "");
  EXPECT_EQ(resolveSettings(nullptr).netTransport, "") << "unset: the registry's first";
}

TEST(LoomNet, InitFailsWithInvalidArgumentAndSocketWorks) {
  loomComm_t comm = nullptr;
  {
    ScopedEnv env("LOOM_NET", "IB");
    EXPECT_EQ(loomCommInitAll(&comm, 1, nullptr), loomInvalidArgument);
    const std::string message = loomGetLastError(nullptr);
    EXPECT_NE(message.find("LOOM_NET=\"IB\": unknown network transport; known: socket"), std::string::npos)
        << message;
  }
  ScopedEnv env("LOOM_NET", "Socket");
  ASSERT_EQ(loomCommInitAll(&comm, 1, nullptr), loomSuccess) << loomGetLastError(nullptr);
  EXPECT_EQ(loomCommDestroy(comm), loomSuccess);
}

TEST(LoomNet, NetNameMeansTheSameAndTransportStillForces) {
  loomConfig_t config = LOOM_CONFIG_INITIALIZER;
  config.netName = "Socket";
  const CommSettings socket = resolveSettings(&config);
  EXPECT_EQ(socket.netTransport, "socket");
  EXPECT_EQ(socket.transport, "") << "netName no longer forces a transport for every peer";
  config.netName = "shm";
  EXPECT_EQ(errorOf([&] { resolveSettings(&config); }),
            "config.netName=\"shm\": unknown network transport; known: socket");
  config.netName = "carrier-pigeon";
  EXPECT_EQ(errorOf([&] { resolveSettings(&config); }),
            "config.netName=\"carrier-pigeon\": unknown network transport; known: socket");
  ScopedEnv env("LOOM_TRANSPORT", "shm");
  EXPECT_EQ(resolveSettings(nullptr).transport, "shm");
}

TEST(LoomNet, TheRegistryKnowsItsNetworkTransports) {
  const transport::TransportRegistry registry = transport::registeredTransports();
  EXPECT_EQ(registry.networkTransports(), std::vector<std::string>{"socket"});
  const int shm = registry.index("shm");
  const int socket = registry.index("socket");
  ASSERT_GE(shm, 0);
  ASSERT_GE(socket, 0);
  const transport::TransportPolicy policy = registry.policy("", false, "socket");
  EXPECT_NE(policy.allowed & (uint64_t{1} << shm), 0u) << "shm stays within a host";
  EXPECT_NE(policy.allowed & (uint64_t{1} << socket), 0u);
  EXPECT_EQ(policy.required, -1);
  EXPECT_EQ(errorOf([&] { registry.policy("", false, "shm"); }), "no network transport called 'shm'");
  EXPECT_EQ(errorOf([&] { registry.policy("", false, "ib"); }), "no network transport called 'ib'");
}

// ---- LOOM_SOCKET_FAMILY ----------------------------------------------------------------------------

// Whether this host can listen on ::1 (a container may have no IPv6).
bool haveIpv6Loopback() {
  try {
    net::openListener(net::loopbackAddress(AF_INET6));
    return true;
  } catch (const Error&) {
    return false;
  }
}

TEST(SocketFamily, ChoosesTheLoopbackWithoutARoot) {
  ScopedEnv noInterface("LOOM_SOCKET_IFNAME", "");
  {
    ScopedEnv env("LOOM_SOCKET_FAMILY", "AF_INET6");
    EXPECT_EQ(addressToString(net::chooseLocalAddress(nullptr)), "[::1]:0");
  }
  {
    ScopedEnv env("LOOM_SOCKET_FAMILY", "af_inet");  // choices are case-insensitive
    EXPECT_EQ(addressToString(net::chooseLocalAddress(nullptr)), "127.0.0.1:0");
  }
  // A root's address decides for itself: the ranks must reach each other as they reach it.
  ScopedEnv env("LOOM_SOCKET_FAMILY", "AF_INET6");
  const sockaddr_storage v4root = net::loopbackAddress(AF_INET);
  EXPECT_EQ(addressToString(net::chooseLocalAddress(&v4root)), "127.0.0.1:0");
}

TEST(SocketFamily, RestrictsTheInterfacesOfSocketIfname) {
  {
    ScopedEnv env(EnvList{{"LOOM_SOCKET_IFNAME", "=lo"}, {"LOOM_SOCKET_FAMILY", "AF_INET"}});
    const sockaddr_storage v6root = net::loopbackAddress(AF_INET6);
    EXPECT_EQ(net::chooseLocalAddress(&v6root).ss_family, AF_INET) << "the family wins over the preference";
  }
  ScopedEnv env(EnvList{{"LOOM_SOCKET_IFNAME", "=lo"}, {"LOOM_SOCKET_FAMILY", "AF_INET6"}});
  const std::string error = errorOf([] {
    EXPECT_EQ(addressToString(net::chooseLocalAddress(nullptr)), "[::1]:0");
  });
  if (!error.empty()) {  // lo without IPv6
    EXPECT_EQ(error.find("LOOM_SOCKET_IFNAME=\"=lo\": matches no interface that is up with an IPv6 address "
                         "(LOOM_SOCKET_FAMILY=AF_INET6)"),
              0u)
        << error;
  }
}

TEST(SocketFamily, AnUnknownFamilyWarnsAndMeansEither) {
  ScopedEnv env(EnvList{{"LOOM_SOCKET_IFNAME", ""}, {"LOOM_SOCKET_FAMILY", "AF_UNIX"}});
  EXPECT_EQ(config::read(Knob::SocketFamily, "AF_UNIX").problem,
            "not one of AF_INET or AF_INET6 (did you mean AF_INET?)");
  EXPECT_EQ(config::choice(Knob::SocketFamily), "");
  EXPECT_EQ(addressToString(net::chooseLocalAddress(nullptr)), "127.0.0.1:0");
}

// A whole communicator over IPv6: the root listens on ::1 and the rank reaches it there.
TEST(SocketFamily, ACommunicatorOverIpv6Loopback) {
  if (!haveIpv6Loopback()) GTEST_SKIP() << "no IPv6 loopback here";
  ScopedEnv env(EnvList{{"LOOM_SOCKET_IFNAME", ""}, {"LOOM_COMM_ID", ""}, {"LOOM_SOCKET_FAMILY", "AF_INET6"}});
  loomUniqueId id;
  ASSERT_EQ(loomGetUniqueId(&id), loomSuccess) << loomGetLastError(nullptr);
  loomComm_t comm = nullptr;
  ASSERT_EQ(loomCommInitRank(&comm, 1, id, 0), loomSuccess) << loomGetLastError(nullptr);
  float value = 2.0f;
  EXPECT_EQ(loomAllReduce(&value, &value, 1, loomFloat32, loomSum, comm, nullptr), loomSuccess)
      << loomGetLastError(comm);
  EXPECT_EQ(value, 2.0f);
  EXPECT_EQ(loomCommDestroy(comm), loomSuccess);
}

}  // namespace
}  // namespace loom::test
