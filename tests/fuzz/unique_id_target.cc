// SPDX-License-Identifier: Apache-2.0
// Fuzz target: the 128-byte loomUniqueId decoder (src/bootstrap/unique_id.cc) and the 24-byte wire
// address encoding inside it (src/base/net/socket.cc), which every rank decodes from bytes a
// user passed around (MPI_Bcast, a file, an environment variable).
//
// First input byte, low two bits:
//   0: the next 128 bytes are the id as is (almost always refused by the check value);
//   1: bytes 0..55 come from the input and the check value is made right, so the fuzzer gets
//      past the checksum into the address, port and commUid checks;
//   2: the next 24 bytes are one wire address for decodeWireAddress.
// Whatever decodes must encode back to the very same bytes: the decoders accept only the
// canonical encoding, so two different ids can never name the same communicator.
#include <cstring>

#include "base/error.h"
#include "base/net/auth.h"
#include "base/net/socket.h"
#include "bootstrap/socket_bootstrap.h"
#include "fuzz_targets.h"

namespace loom::fuzz {

namespace {

// The public key of the id's check value, as src/bootstrap/unique_id.cc documents it (layout comment at
// the top of that file). If the two ever differ, mode 1 only finds refusals: harmless.
constexpr size_t kCheckOffset = 56;
const Secret kIdCheckKey = {'l', 'o', 'o', 'm', '-', 'u', 'n', 'i',
                            'q', 'u', 'e', '-', 'i', 'd', '-', '1'};

void decodeAndCompare(const loomUniqueId& id) {
  UniqueIdContents contents;
  try {
    contents = decodeUniqueId(id);
  } catch (const Error& error) {
    check(error.code() == loomInvalidArgument,
          std::string("decodeUniqueId threw a non-argument error: ") + error.what());
    return;
  }
  const loomUniqueId again = encodeUniqueId(contents);
  check(std::memcmp(again.internal, id.internal, sizeof(id.internal)) == 0,
        "decodeUniqueId accepted an id that does not encode back to the same bytes");
}

void wireAddressRoundTrip(InputReader& input) {
  uint8_t wire[net::kWireAddressBytes] = {};
  auto bytes = input.bytes(sizeof(wire));
  std::memcpy(wire, bytes.data(), bytes.size());
  sockaddr_storage address{};
  try {
    address = net::decodeWireAddress(wire, "fuzz");
  } catch (const Error& error) {
    check(error.code() == loomInvalidArgument, "decodeWireAddress threw a non-argument error");
    return;
  }
  uint8_t again[net::kWireAddressBytes];
  net::encodeWireAddress(address, again);
  check(std::memcmp(wire, again, sizeof(wire)) == 0,
        "decodeWireAddress accepted a non-canonical encoding");
  (void)addressToString(address);
}

}  // namespace

void uniqueIdOneInput(const uint8_t* data, size_t size) {
  InputReader input(data, size);
  const int mode = input.byte() & 3;
  if (mode == 2) {
    wireAddressRoundTrip(input);
    return;
  }
  loomUniqueId id{};
  auto bytes = input.bytes(sizeof(id.internal));
  std::memcpy(id.internal, bytes.data(), bytes.size());
  if (mode == 1) {
    auto* raw = reinterpret_cast<uint8_t*>(id.internal);
    net::putU64(raw + kCheckOffset, auth::sipHash24(kIdCheckKey, raw, kCheckOffset));
  }
  decodeAndCompare(id);
}

}  // namespace loom::fuzz
