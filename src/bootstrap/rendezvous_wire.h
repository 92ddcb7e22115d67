// SPDX-License-Identifier: Apache-2.0
// The records of the rendezvous protocol (rendezvous.h): a rank's hello and the root's reply,
// encoded and decoded in one place for the rank side, the root's server, its tombstone and the
// fuzz target (tests/fuzz/bootstrap_wire_target.cc).
//
//   hello  magic "LMRH" u32 | version u16 | 0 u16 | nranks u32 | rank u32 |
//          listener address (24, net::encodeWireAddress) | waitMs u32 | generation u32 (48 bytes)
//   reply  magic "LMRR" u32 | version u16 | status u16 | nranks u32 | payload bytes u32,
//          then the payload: the table of listener addresses (status ok) or a message
//
// waitMs (version 2) is how long the rank waits for the reply from when it sent the hello: the
// root gives up on missing ranks just before the first member would, so that every member
// learns who had arrived and who had not, instead of a bare read timeout.
//
// generation (version 3) tells apart the communicators that one launcher's environment makes
// in a row at one address with one secret (loomCommInitFromEnv: its n-th call in the process,
// counted alike on every rank; 0 for a unique id's ranks). A rank that reaches the next init
// first meets the last one's root or tombstone there, which answers kStatusRetry instead of
// counting it in or turning it away: the rank comes back until the next root has the port.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/net/socket.h"

namespace loom::rendezvous {

constexpr uint32_t kHelloMagic = 0x48524d4cu;  // "LMRH"
constexpr uint32_t kReplyMagic = 0x52524d4cu;  // "LMRR"
constexpr uint16_t kProtocolVersion = 3;       // 2: how long the rank waits; 3: its generation
constexpr size_t kRankHelloBytes = 24 + net::kWireAddressBytes;
constexpr size_t kReplyHeaderBytes = 16;
constexpr uint16_t kStatusOk = 0;
constexpr uint16_t kStatusError = 1;     // the ranks disagree, or this rank came late (usage error)
constexpr uint16_t kStatusTimedOut = 2;  // not every rank joined in time (system error)
constexpr uint16_t kStatusRetry = 3;     // this root serves another generation: come back
constexpr size_t kMaxErrorBytes = 4096;

struct RankHello {
  int nranks = 0;
  int rank = 0;
  sockaddr_storage listener{};
  uint32_t waitMs = 0;  // 0: not said (the root then keeps to its own timeout)
  uint32_t generation = 0;
};

void encodeRankHello(const RankHello& hello, uint8_t* out);
// Empty, with what is wrong in *why, for a bad magic, version, reserved field or address.
std::optional<RankHello> decodeRankHello(const uint8_t* in, std::string* why);

struct ReplyHeader {
  uint16_t status = kStatusOk;
  uint32_t nranks = 0;
  uint32_t payloadBytes = 0;
};

void encodeReplyHeader(const ReplyHeader& header, uint8_t* out);
// Empty for a bad magic, version or status.
std::optional<ReplyHeader> decodeReplyHeader(const uint8_t* in);

// The reply's header and payload in one buffer; a message payload is cut at kMaxErrorBytes.
std::vector<uint8_t> encodeReply(uint16_t status, int nranks, const std::vector<uint8_t>& payload);
std::vector<uint8_t> encodeReply(uint16_t status, int nranks, const std::string& message);

}  // namespace loom::rendezvous
