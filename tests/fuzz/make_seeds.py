#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the binary seed inputs of corpus/{unique_id,bootstrap_wire,transport_wire}/.

Each seed starts with the mode byte its target reads first (see the comment at the top of
each *_target.cc) followed by a well-formed record, so the fuzzer starts from inputs Loom
accepts. The topology_xml seeds are copies of files in tests/data/topo/.
"""
import struct
from pathlib import Path

HERE = Path(__file__).resolve().parent
MASK = (1 << 64) - 1


def rotl(x, b):
    return ((x << b) | (x >> (64 - b))) & MASK


def siphash24(key: bytes, data: bytes) -> int:
    """SipHash-2-4, 64-bit output (the id's check value)."""
    k0, k1 = struct.unpack("<QQ", key)
    v = [k0 ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D, k0 ^ 0x6C7967656E657261,
         k1 ^ 0x7465646279746573]

    def rnd():
        v[0] = (v[0] + v[1]) & MASK; v[1] = rotl(v[1], 13); v[1] ^= v[0]; v[0] = rotl(v[0], 32)
        v[2] = (v[2] + v[3]) & MASK; v[3] = rotl(v[3], 16); v[3] ^= v[2]
        v[0] = (v[0] + v[3]) & MASK; v[3] = rotl(v[3], 21); v[3] ^= v[0]
        v[2] = (v[2] + v[1]) & MASK; v[1] = rotl(v[1], 17); v[1] ^= v[2]; v[2] = rotl(v[2], 32)

    whole = len(data) & ~7
    for i in range(0, whole, 8):
        m = struct.unpack_from("<Q", data, i)[0]
        v[3] ^= m; rnd(); rnd(); v[0] ^= m
    last = (len(data) & 0xFF) << 56
    for i, b in enumerate(data[whole:]):
        last |= b << (8 * i)
    v[3] ^= last; rnd(); rnd(); v[0] ^= last
    v[2] ^= 0xFF
    for _ in range(4):
        rnd()
    return v[0] ^ v[1] ^ v[2] ^ v[3]


def wire_v4(ip, port):
    return struct.pack("<H", 4) + struct.pack(">H", port) + bytes(4) + bytes(ip) + bytes(12)


def wire_v6(ip16, port, scope=0):
    return struct.pack("<H", 6) + struct.pack(">H", port) + struct.pack("<I", scope) + bytes(ip16)


def unique_id(address, flags=0, generation=0):
    """generation: only with flag 1 (an id of loomCommInitFromEnv), at byte 64, outside the check."""
    head = struct.pack("<IHH", 0x44494D4C, 1, flags) + address + bytes(range(16)) + struct.pack("<Q", 77)
    check = siphash24(b"loom-unique-id-1", head)
    return head + struct.pack("<QI", check, generation) + bytes(60)


def auth_hello(purpose, role, nonce=bytes(range(16))):
    return struct.pack("<IHBB", 0x55414D4C, 1, purpose, role) + bytes(8) + nonce


def write(target, name, data):
    folder = HERE / "corpus" / target
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data)


loop6 = bytes(15) + b"\x01"
write("unique_id", "id-ipv4", b"\x00" + unique_id(wire_v4([127, 0, 0, 1], 29500)))
write("unique_id", "id-ipv6", b"\x00" + unique_id(wire_v6(loop6, 29500, 2)))
write("unique_id", "id-env-generation", b"\x00" + unique_id(wire_v4([127, 0, 0, 1], 29500), 1, 2))
write("unique_id", "id-fixed-check", b"\x01" + unique_id(wire_v4([10, 1, 2, 3], 1))[:56])
write("unique_id", "address-ipv4", b"\x02" + wire_v4([192, 168, 0, 1], 80))
write("unique_id", "address-ipv6", b"\x02" + wire_v6(loop6, 443, 7))
write("unique_id", "address-none", b"\x02" + bytes(24))

write("bootstrap_wire", "hello-client", b"\x00\x00\x00" + auth_hello(1, 1))
# A ring peer hello, then a rank's rendezvous hello (version 3: rank 1 of 3, waits 60 s, the
# second communicator of its launcher environment).
peer_hello = struct.pack("<IHHIIII", 0x47524D4C, 1, 0, 0, 1, 3, 0) + struct.pack("<QQ", 0, 0x1234)
rank_hello = (struct.pack("<IHHII", 0x48524D4C, 3, 0, 3, 1) + wire_v4([127, 0, 0, 1], 4000)
              + struct.pack("<II", 60000, 2))
write("bootstrap_wire", "rank-hello", b"\x00\x00\x00" + auth_hello(1, 1) + peer_hello + rank_hello)
write("bootstrap_wire", "handshake-honest", b"\x01\x01\x01" + auth_hello(2, 1))
write("bootstrap_wire", "handshake-wrong-proof", b"\x01\x00\x02" + auth_hello(3, 1) + bytes(16))
write("bootstrap_wire", "client-server-hello", b"\x02\x00" + auth_hello(1, 2) + bytes(16))
table = wire_v4([127, 0, 0, 1], 4000) + wire_v6(loop6, 4001)
write("bootstrap_wire", "root-reply-ok", b"\x03\x07\x01\x00" + table)
write("bootstrap_wire", "root-reply-error", b"\x03\x03\x00\x01" + struct.pack("<I", 5) + b"oops!")
write("bootstrap_wire", "root-reply-retry", b"\x03\x03\x00\x03" + struct.pack("<I", 10) + b"come back!")
raw_reply = struct.pack("<IHHII", 0x52524D4C, 3, 0, 1, 24) + wire_v4([127, 0, 0, 1], 5)
write("bootstrap_wire", "root-reply-raw", b"\x03\x00\x00" + raw_reply)

write("transport_wire", "striped-3-lanes", b"\x00\x02\x01" + struct.pack("<I", 1000) + b"\x00"
      + bytes([0, 17, 1, 40, 2, 63, 0, 5, 1, 16]))
write("transport_wire", "in-place-close", b"\x00\x01\x00" + struct.pack("<I", 300) + b"\x01"
      + bytes([0, 30, 0xC1, 1]))
hello = (struct.pack("<IHHIIII", 0x53544D4C, 1, 0, 0, 1, 2, 0) + struct.pack("<QQ", 512, 0x1234))
write("transport_wire", "accept-stranger-and-hello", b"\x01\x01" + bytes([1 | (1 << 2)])
      + b"\x05hello" + b"\x00" + hello)
