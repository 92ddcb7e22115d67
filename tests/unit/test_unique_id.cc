// SPDX-License-Identifier: Apache-2.0
// The 128-byte unique id (encode/decode and its rejection of damaged ids), address parsing and
// formatting, and the secret generator.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <cstring>
#include <string>

#include "base/error.h"
#include "base/net/socket.h"
#include "bootstrap/socket_bootstrap.h"

namespace loom {
namespace {

sockaddr_storage ipv4(const char* ip, uint16_t port) {
  sockaddr_storage address{};
  auto* in = reinterpret_cast<sockaddr_in*>(&address);
  in->sin_family = AF_INET;
  in->sin_port = htons(port);
  inet_pton(AF_INET, ip, &in->sin_addr);
  return address;
}

sockaddr_storage ipv6(const char* ip, uint16_t port, uint32_t scope = 0) {
  sockaddr_storage address{};
  auto* in6 = reinterpret_cast<sockaddr_in6*>(&address);
  in6->sin6_family = AF_INET6;
  in6->sin6_port = htons(port);
  in6->sin6_scope_id = scope;
  inet_pton(AF_INET6, ip, &in6->sin6_addr);
  return address;
}

UniqueIdContents sampleContents(const sockaddr_storage& root) {
  UniqueIdContents contents;
  contents.rootAddress = root;
  for (size_t i = 0; i < contents.secret.size(); ++i) contents.secret[i] = uint8_t(0xa0 + i);
  contents.commUid = 0x0123456789abcdefull;
  return contents;
}

// Runs `body`, expecting loom::Error with `code` whose message contains `needle`.
template <typename Body>
void expectError(Body&& body, loomResult_t code, const std::string& needle) {
  try {
    body();
    ADD_FAILURE() << "expected an error containing \"" << needle << "\"";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), code) << error.what();
    EXPECT_NE(std::string(error.what()).find(needle), std::string::npos) << error.what();
  }
}

TEST(UniqueId, RoundTripsIpv4) {
  UniqueIdContents in = sampleContents(ipv4("10.1.2.3", 4567));
  loomUniqueId id = encodeUniqueId(in);
  UniqueIdContents out = decodeUniqueId(id);
  EXPECT_EQ(out.rootAddress.ss_family, AF_INET);
  EXPECT_EQ(addressToString(out.rootAddress), "10.1.2.3:4567");
  EXPECT_EQ(out.secret, in.secret);
  EXPECT_EQ(out.commUid, in.commUid);
}

TEST(UniqueId, RoundTripsIpv6WithScope) {
  UniqueIdContents in = sampleContents(ipv6("fe80::1:2", 65535, 3));
  UniqueIdContents out = decodeUniqueId(encodeUniqueId(in));
  ASSERT_EQ(out.rootAddress.ss_family, AF_INET6);
  EXPECT_EQ(addressToString(out.rootAddress), "[fe80::1:2%3]:65535");
  EXPECT_EQ(reinterpret_cast<sockaddr_in6*>(&out.rootAddress)->sin6_scope_id, 3u);
  EXPECT_EQ(out.secret, in.secret);
  EXPECT_EQ(out.commUid, in.commUid);
}

TEST(UniqueId, EncodingIsDeterministic) {
  UniqueIdContents in = sampleContents(ipv4("127.0.0.1", 1));
  loomUniqueId a = encodeUniqueId(in);
  loomUniqueId b = encodeUniqueId(in);
  EXPECT_EQ(std::memcmp(a.internal, b.internal, LOOM_UNIQUE_ID_BYTES), 0);
}

TEST(UniqueId, RejectsAnAllZeroId) {
  loomUniqueId id{};
  expectError([&] { decodeUniqueId(id); }, loomInvalidArgument, "bad magic");
}

TEST(UniqueId, RejectsEverySingleBitFlip) {
  const loomUniqueId good = encodeUniqueId(sampleContents(ipv4("192.168.7.9", 29500)));
  for (int byte = 0; byte < LOOM_UNIQUE_ID_BYTES; ++byte) {
    for (int bit = 0; bit < 8; bit += 3) {
      loomUniqueId bad = good;
      bad.internal[byte] = static_cast<char>(bad.internal[byte] ^ (1 << bit));
      try {
        decodeUniqueId(bad);
        ADD_FAILURE() << "flip of byte " << byte << " bit " << bit << " was accepted";
      } catch (const Error& error) {
        EXPECT_EQ(error.code(), loomInvalidArgument);
        EXPECT_NE(std::string(error.what()).find("invalid loomUniqueId"), std::string::npos);
      }
    }
  }
}

TEST(UniqueId, NamesTheProblem) {
  const loomUniqueId good = encodeUniqueId(sampleContents(ipv4("127.0.0.1", 80)));
  loomUniqueId bad = good;
  bad.internal[100] = 1;
  expectError([&] { decodeUniqueId(bad); }, loomInvalidArgument, "trailing bytes");
  bad = good;
  bad.internal[40] ^= 0x40;  // inside the secret
  expectError([&] { decodeUniqueId(bad); }, loomInvalidArgument, "corrupted");
  bad = good;
  bad.internal[4] = 9;  // version
  expectError([&] { decodeUniqueId(bad); }, loomInvalidArgument, "version 9");
}

TEST(UniqueId, EncodeRejectsUnusableContents) {
  UniqueIdContents contents = sampleContents(ipv4("127.0.0.1", 0));
  expectError([&] { encodeUniqueId(contents); }, loomInvalidArgument, "port");
  contents = sampleContents(ipv4("127.0.0.1", 5));
  contents.commUid = 0;
  expectError([&] { encodeUniqueId(contents); }, loomInvalidArgument, "commUid");
  contents = sampleContents(ipv4("127.0.0.1", 5));
  contents.rootAddress.ss_family = AF_UNIX;
  expectError([&] { encodeUniqueId(contents); }, loomInvalidArgument, "IPv4 or IPv6");
}

// An id of loomCommInitFromEnv carries its generation (which of the process's env inits it is);
// no other id may.
TEST(UniqueId, AnEnvIdCarriesItsGeneration) {
  UniqueIdContents in = sampleContents(ipv4("127.0.0.1", 29500));
  in.rootMayStartLate = true;
  in.generation = 3;
  const loomUniqueId id = encodeUniqueId(in);
  const UniqueIdContents out = decodeUniqueId(id);
  EXPECT_TRUE(out.rootMayStartLate);
  EXPECT_EQ(out.generation, 3u);
  EXPECT_EQ(decodeUniqueId(encodeUniqueId(sampleContents(ipv4("127.0.0.1", 1)))).generation, 0u);
  loomUniqueId bad = encodeUniqueId(sampleContents(ipv4("127.0.0.1", 29500)));
  bad.internal[64] = 3;  // a generation in an id whose root was up
  expectError([&] { decodeUniqueId(bad); }, loomInvalidArgument, "trailing bytes");
  in.rootMayStartLate = false;
  expectError([&] { encodeUniqueId(in); }, loomInvalidArgument, "generation");
}

TEST(Address, ParsesHostPortForms) {
  EXPECT_EQ(addressToString(parseHostPort("127.0.0.1:29500")), "127.0.0.1:29500");
  EXPECT_EQ(addressToString(parseHostPort("10.0.0.255:1")), "10.0.0.255:1");
  EXPECT_EQ(addressToString(parseHostPort("[::1]:80")), "[::1]:80");
  EXPECT_EQ(addressToString(parseHostPort("[fd00::2]:65535")), "[fd00::2]:65535");
  sockaddr_storage local = parseHostPort("localhost:1234");
  EXPECT_TRUE(net::isLoopback(local));
  EXPECT_EQ(net::portOf(local), 1234);
}

TEST(Address, RejectsMalformedText) {
  for (const char* text :
       {"", "127.0.0.1", "127.0.0.1:", ":80", "127.0.0.1:0", "127.0.0.1:65536", "127.0.0.1:12a",
        "::1:80", "[::1]80", "[::1]:", "[]:80", "127.0.0.1:-5", "127.0.0.1:123456"}) {
    expectError([&] { parseHostPort(text); }, loomInvalidArgument, "bad address");
  }
}

TEST(Address, WireEncodingRoundTrips) {
  uint8_t wire[net::kWireAddressBytes];
  for (const sockaddr_storage& address :
       {ipv4("1.2.3.4", 5), ipv6("2001:db8::7", 999, 0), ipv6("fe80::9", 1, 4)}) {
    net::encodeWireAddress(address, wire);
    sockaddr_storage back = net::decodeWireAddress(wire, "test");
    EXPECT_EQ(addressToString(back), addressToString(address));
  }
  net::encodeWireAddress(ipv4("1.2.3.4", 5), wire);
  wire[0] = 5;  // unknown family code
  expectError([&] { net::decodeWireAddress(wire, "test"); }, loomInvalidArgument, "family");
}

TEST(Secret, RandomSecretsDiffer) {
  Secret a = randomSecret();
  Secret b = randomSecret();
  EXPECT_NE(a, b);
  EXPECT_NE(a, Secret{});
}

}  // namespace
}  // namespace loom
