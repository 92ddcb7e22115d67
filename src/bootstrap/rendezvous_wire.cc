// SPDX-License-Identifier: Apache-2.0
#include "bootstrap/rendezvous_wire.h"

#include <algorithm>
#include <cstring>

#include "base/error.h"

namespace loom::rendezvous {

void encodeRankHello(const RankHello& hello, uint8_t* out) {
  std::memset(out, 0, kRankHelloBytes);
  net::putU32(out, kHelloMagic);
  net::putU16(out + 4, kProtocolVersion);
  net::putU32(out + 8, static_cast<uint32_t>(hello.nranks));
  net::putU32(out + 12, static_cast<uint32_t>(hello.rank));
  net::encodeWireAddress(hello.listener, out + 16);
  net::putU32(out + 16 + net::kWireAddressBytes, hello.waitMs);
  net::putU32(out + 20 + net::kWireAddressBytes, hello.generation);
}

std::optional<RankHello> decodeRankHello(const uint8_t* in, std::string* why) {
  if (net::getU32(in) != kHelloMagic || net::getU16(in + 4) != kProtocolVersion) {
    *why = "rendezvous protocol mismatch (magic/version): ranks and root must run the same Loom release";
    return std::nullopt;
  }
  if (net::getU16(in + 6) != 0) {
    *why = "malformed rendezvous hello (reserved field set)";
    return std::nullopt;
  }
  RankHello hello;
  hello.nranks = static_cast<int>(net::getU32(in + 8));
  hello.rank = static_cast<int>(net::getU32(in + 12));
  try {
    hello.listener = net::decodeWireAddress(in + 16, "listener address");
  } catch (const Error& error) {
    *why = error.what();
    return std::nullopt;
  }
  hello.waitMs = net::getU32(in + 16 + net::kWireAddressBytes);
  hello.generation = net::getU32(in + 20 + net::kWireAddressBytes);
  return hello;
}

void encodeReplyHeader(const ReplyHeader& header, uint8_t* out) {
  net::putU32(out, kReplyMagic);
  net::putU16(out + 4, kProtocolVersion);
  net::putU16(out + 6, header.status);
  net::putU32(out + 8, header.nranks);
  net::putU32(out + 12, header.payloadBytes);
}

std::optional<ReplyHeader> decodeReplyHeader(const uint8_t* in) {
  ReplyHeader header;
  header.status = net::getU16(in + 6);
  header.nranks = net::getU32(in + 8);
  header.payloadBytes = net::getU32(in + 12);
  if (net::getU32(in) != kReplyMagic || net::getU16(in + 4) != kProtocolVersion ||
      (header.status != kStatusOk && header.status != kStatusError && header.status != kStatusTimedOut &&
       header.status != kStatusRetry)) {
    return std::nullopt;
  }
  return header;
}

std::vector<uint8_t> encodeReply(uint16_t status, int nranks, const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> reply(kReplyHeaderBytes + payload.size());
  encodeReplyHeader(ReplyHeader{status, static_cast<uint32_t>(nranks), static_cast<uint32_t>(payload.size())},
                    reply.data());
  std::copy(payload.begin(), payload.end(), reply.begin() + kReplyHeaderBytes);
  return reply;
}

std::vector<uint8_t> encodeReply(uint16_t status, int nranks, const std::string& message) {
  return encodeReply(status, nranks,
                     std::vector<uint8_t>(message.begin(), message.begin() + std::min(message.size(), kMaxErrorBytes)));
}

}  // namespace loom::rendezvous
