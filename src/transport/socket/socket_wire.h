// SPDX-License-Identifier: Apache-2.0
// The frame every socket message travels in. Lane 0 carries, before its share of each message,
// a fixed 64-byte header:
//   magic u32 | kind u8 | collective u8 | type u8 | op u8 | root i32 | code i32 |
//   count u64 | call sequence u64 | message bytes u64 | 24 zero bytes    (little-endian)
// 64 bytes, not 40: the payload keeps its cache-line alignment in the byte stream, and the
// kernel's copies in and out of socket buffers run measurably slower misaligned (a 40-byte
// header cost 25-30% at 128 KiB messages on loopback).
// A Data frame's payload is the message, striped over the lanes as before. A Failure frame
// replaces the next message when its sender's call has failed: `code` is the loomResult_t and
// the payload (on lane 0, at most kMaxFailureReasonBytes) says why, so the peer fails with
// the same code and reason instead of a bare EOF. Ranks that disagree on a call see it in the
// header before any payload byte is used.
#pragma once

#include <cstddef>
#include <cstdint>

#include "transport/transport.h"

namespace loom::transport {

constexpr uint32_t kWireMagic = 0x474d4d4cu;  // "LMMG"
constexpr size_t kWireHeaderBytes = 64;
constexpr size_t kMaxFailureReasonBytes = 2048;

enum class FrameKind : uint8_t { Data = 1, Failure = 2 };

struct WireHeader {
  FrameKind kind = FrameKind::Data;
  uint64_t sequence = 0;  // CallTag::sequence
  CallDescriptor call{};
  int32_t code = 0;       // Failure: the loomResult_t
  uint64_t bytes = 0;     // Data: message bytes; Failure: reason bytes
};

void encodeWireHeader(const WireHeader& header, uint8_t* out);
// Throws loom::Error(loomRemoteError) naming `peer` for anything but a well-formed header: bad
// magic, unknown kind, a failure code outside loomResult_t or an oversized reason.
WireHeader decodeWireHeader(const uint8_t* in, int peer);

}  // namespace loom::transport
