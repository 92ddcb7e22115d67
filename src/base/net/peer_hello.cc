// SPDX-License-Identifier: Apache-2.0
#include "base/net/peer_hello.h"

#include <algorithm>

#include "base/net/socket.h"

namespace loom::net {

void encodePeerHello(const PeerHello& hello, uint8_t* out) {
  std::fill(out, out + kPeerHelloBytes, 0);
  putU32(out, hello.magic);
  putU16(out + 4, hello.version);
  putU16(out + 6, hello.index);
  putU32(out + 8, static_cast<uint32_t>(hello.from));
  putU32(out + 12, static_cast<uint32_t>(hello.to));
  putU32(out + 16, hello.count);
  putU64(out + 24, hello.size);
  putU64(out + 32, hello.commUid);
}

std::optional<PeerHello> decodePeerHello(const uint8_t* in, uint32_t magic, uint16_t version) {
  if (getU32(in) != magic || getU16(in + 4) != version || getU32(in + 20) != 0) return std::nullopt;
  PeerHello hello;
  hello.magic = magic;
  hello.version = version;
  hello.index = getU16(in + 6);
  hello.from = static_cast<int>(getU32(in + 8));
  hello.to = static_cast<int>(getU32(in + 12));
  hello.count = getU32(in + 16);
  hello.size = getU64(in + 24);
  hello.commUid = getU64(in + 32);
  return hello;
}

}  // namespace loom::net
