// SPDX-License-Identifier: Apache-2.0
#include "transport/socket/socket_wire.h"

#include <cstring>
#include <string>

#include "base/error.h"
#include "base/net/socket.h"
#include "loom.h"

namespace loom::transport {

void encodeWireHeader(const WireHeader& header, uint8_t* out) {
  std::memset(out, 0, kWireHeaderBytes);
  net::putU32(out, kWireMagic);
  out[4] = static_cast<uint8_t>(header.kind);
  out[5] = header.call.collective;
  out[6] = header.call.type;
  out[7] = header.call.op;
  net::putU32(out + 8, static_cast<uint32_t>(header.call.root));
  net::putU32(out + 12, static_cast<uint32_t>(header.code));
  net::putU64(out + 16, header.call.count);
  net::putU64(out + 24, header.sequence);
  net::putU64(out + 32, header.bytes);
}

WireHeader decodeWireHeader(const uint8_t* in, int peer) {
  const std::string from = "peer rank " + std::to_string(peer) + " (socket)";
  if (net::getU32(in) != kWireMagic) {
    char magic[16];
    std::snprintf(magic, sizeof(magic), "0x%08x", net::getU32(in));
    throw Error(loomRemoteError, from + " sent a corrupt message header (magic " + magic + ")");
  }
  WireHeader header;
  const uint8_t kind = in[4];
  if (kind != static_cast<uint8_t>(FrameKind::Data) && kind != static_cast<uint8_t>(FrameKind::Failure)) {
    throw Error(loomRemoteError, from + " sent a message header of unknown kind " + std::to_string(kind));
  }
  header.kind = static_cast<FrameKind>(kind);
  header.call.collective = in[5];
  header.call.type = in[6];
  header.call.op = in[7];
  header.call.flags = 0;
  header.call.root = static_cast<int32_t>(net::getU32(in + 8));
  header.code = static_cast<int32_t>(net::getU32(in + 12));
  header.call.count = net::getU64(in + 16);
  header.sequence = net::getU64(in + 24);
  header.bytes = net::getU64(in + 32);
  for (size_t i = 40; i < kWireHeaderBytes; ++i) {
    if (in[i] != 0) throw Error(loomRemoteError, from + " sent a message header with nonzero reserved bytes");
  }
  if (header.kind == FrameKind::Failure) {
    if (header.code <= loomSuccess || header.code > loomInProgress) {
      throw Error(loomRemoteError, from + " reported a failure with an invalid code " + std::to_string(header.code));
    }
    if (header.bytes > kMaxFailureReasonBytes) {
      throw Error(loomRemoteError, from + " reported a failure with a " + std::to_string(header.bytes) +
                                       "-byte reason (at most " + std::to_string(kMaxFailureReasonBytes) + ")");
    }
  } else if (header.bytes == 0) {
    throw Error(loomRemoteError, from + " sent an empty message header");
  }
  return header;
}

}  // namespace loom::transport
