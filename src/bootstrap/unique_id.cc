// SPDX-License-Identifier: Apache-2.0
// The 128-byte loomUniqueId. Layout (little-endian integers):
//   0  magic "LMID" u32      4  version u16      6  flags u16 (kFlagRootMayStartLate,
//                                                              kFlagRankZeroStartsRoot)
//   8  root address (24-byte wire encoding: family, port, scope id, IP)
//   32 secret[16]            48 commUid u64      56 check u64
//   64 generation u32 (with kFlagRootMayStartLate only; else 0)        68..127 zero
// `check` is SipHash of bytes 0..55 under a fixed public key: not a security measure (the
// secret is), but it turns a truncated, mangled or mixed-up id into a clear error instead of a
// connection that hangs or fails authentication. The generation (rendezvous_wire.h) lies
// outside it: only ids of loomCommInitFromEnv carry one, and those never leave their process.
#include <cstring>

#include "base/error.h"
#include "base/net/auth.h"
#include "base/net/socket.h"
#include "bootstrap/socket_bootstrap.h"

namespace loom {

namespace {

constexpr uint32_t kIdMagic = 0x44494d4cu;  // "LMID"
constexpr uint16_t kIdVersion = 1;
constexpr size_t kAddressOffset = 8;
constexpr size_t kSecretOffset = 32;
constexpr size_t kCommUidOffset = 48;
constexpr size_t kCheckOffset = 56;
constexpr size_t kGenerationOffset = 64;
constexpr size_t kUsedBytes = 68;
constexpr size_t kFlagsOffset = 6;
// Ids from loomGetUniqueId carry no flag (as ids did when the field was reserved), so every
// release reads the others' ids alike.
constexpr uint16_t kFlagRootMayStartLate = 1;
constexpr uint16_t kFlagRankZeroStartsRoot = 2;  // only with kFlagRootMayStartLate
static_assert(kAddressOffset + net::kWireAddressBytes == kSecretOffset);
static_assert(kUsedBytes <= LOOM_UNIQUE_ID_BYTES);

uint64_t checkValue(const uint8_t* bytes) {
  static const Secret kCheckKey = {'l', 'o', 'o', 'm', '-', 'u', 'n', 'i',
                                   'q', 'u', 'e', '-', 'i', 'd', '-', '1'};
  return auth::sipHash24(kCheckKey, bytes, kCheckOffset);
}

[[noreturn]] void invalid(const std::string& why) {
  throwArgument("invalid loomUniqueId: " + why +
                " (pass every rank the exact bytes loomGetUniqueId returned)");
}

}  // namespace

loomUniqueId encodeUniqueId(const UniqueIdContents& contents) {
  const auto family = contents.rootAddress.ss_family;
  if (family != AF_INET && family != AF_INET6) {
    throwArgument("encodeUniqueId: the root address must be IPv4 or IPv6");
  }
  if (net::portOf(contents.rootAddress) == 0) throwArgument("encodeUniqueId: root port is 0");
  if (contents.commUid == 0) throwArgument("encodeUniqueId: commUid is 0");
  if (contents.generation != 0 && !contents.rootMayStartLate) {
    throwArgument("encodeUniqueId: a generation without rootMayStartLate");
  }
  loomUniqueId id{};
  auto* bytes = reinterpret_cast<uint8_t*>(id.internal);
  net::putU32(bytes, kIdMagic);
  net::putU16(bytes + 4, kIdVersion);
  if (contents.rankZeroStartsRoot && !contents.rootMayStartLate) {
    throwArgument("encodeUniqueId: rankZeroStartsRoot without rootMayStartLate");
  }
  net::putU16(bytes + kFlagsOffset, static_cast<uint16_t>((contents.rootMayStartLate ? kFlagRootMayStartLate : 0) |
                                                          (contents.rankZeroStartsRoot ? kFlagRankZeroStartsRoot : 0)));
  net::encodeWireAddress(contents.rootAddress, bytes + kAddressOffset);
  std::memcpy(bytes + kSecretOffset, contents.secret.data(), contents.secret.size());
  net::putU64(bytes + kCommUidOffset, contents.commUid);
  net::putU64(bytes + kCheckOffset, checkValue(bytes));
  net::putU32(bytes + kGenerationOffset, contents.generation);
  return id;
}

UniqueIdContents decodeUniqueId(const loomUniqueId& id) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(id.internal);
  if (net::getU32(bytes) != kIdMagic) invalid("bad magic (not an id, or uninitialised)");
  if (net::getU16(bytes + 4) != kIdVersion) {
    invalid("version " + std::to_string(net::getU16(bytes + 4)) + ", this library reads version " +
            std::to_string(kIdVersion));
  }
  const uint16_t flags = net::getU16(bytes + kFlagsOffset);
  if ((flags & ~(kFlagRootMayStartLate | kFlagRankZeroStartsRoot)) != 0) invalid("unknown flags " + std::to_string(flags));
  const bool rootMayStartLate = (flags & kFlagRootMayStartLate) != 0;
  if ((flags & kFlagRankZeroStartsRoot) != 0 && !rootMayStartLate) invalid("flags " + std::to_string(flags) + " do not go together");
  for (size_t i = rootMayStartLate ? kUsedBytes : kGenerationOffset; i < LOOM_UNIQUE_ID_BYTES; ++i) {
    if (bytes[i] != 0) invalid("trailing bytes are not zero");
  }
  if (net::getU64(bytes + kCheckOffset) != checkValue(bytes)) {
    invalid("check value mismatch (the id was corrupted or truncated)");
  }
  UniqueIdContents contents;
  try {
    contents.rootAddress = net::decodeWireAddress(bytes + kAddressOffset, "root address");
  } catch (const Error& error) {
    invalid(error.what());
  }
  if (contents.rootAddress.ss_family != AF_INET && contents.rootAddress.ss_family != AF_INET6) {
    invalid("no root address");
  }
  if (net::portOf(contents.rootAddress) == 0) invalid("root port is 0");
  std::memcpy(contents.secret.data(), bytes + kSecretOffset, contents.secret.size());
  contents.commUid = net::getU64(bytes + kCommUidOffset);
  if (contents.commUid == 0) invalid("commUid is 0");
  contents.rootMayStartLate = rootMayStartLate;
  contents.rankZeroStartsRoot = (flags & kFlagRankZeroStartsRoot) != 0;
  contents.generation = net::getU32(bytes + kGenerationOffset);
  return contents;
}

Secret randomSecret() {
  Secret secret{};
  auth::randomBytes(secret.data(), secret.size());
  return secret;
}

}  // namespace loom
