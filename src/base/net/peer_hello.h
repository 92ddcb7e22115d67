// SPDX-License-Identifier: Apache-2.0
// What a rank sends right after a connection has authenticated (auth.h): what the connection is
// for and which two ranks of which communicator it joins. One record for every kind of peer
// connection (the bootstrap ring, the socket transport's lanes), so there is one encoder and
// one decoder, and one size for the acceptor to read.
//
//   magic u32 | version u16 | index u16 | from u32 | to u32 | count u32 | 0 u32 | size u64 |
//   commUid u64                                                       (40 bytes, little-endian)
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

namespace loom::net {

struct PeerHello {
  uint32_t magic = 0;    // the kind of connection, e.g. "LMRG" for the bootstrap ring
  uint16_t version = 0;  // of that kind's protocol
  uint16_t index = 0;    // which of several sockets to one peer
  int from = -1;
  int to = -1;
  uint32_t count = 0;    // the kind's own (socket transport: sockets per peer)
  uint64_t size = 0;     // the kind's own (socket transport: stripe bytes)
  uint64_t commUid = 0;  // the communicator the connection belongs to
};

constexpr size_t kPeerHelloBytes = 40;

void encodePeerHello(const PeerHello& hello, uint8_t* out);
// Empty when the record is not a hello of this magic and version, or its reserved word is set.
std::optional<PeerHello> decodePeerHello(const uint8_t* in, uint32_t magic, uint16_t version);

}  // namespace loom::net
