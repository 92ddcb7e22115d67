#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The CUDA kernels' fatbin (src/device/cuda_kernels.cu, built by nvcc -fatbin) holds code for
every GPU generation Loom supports, and libloom carries it: machine code (ELF) for sm_80 (A100),
sm_90 (H100, H200) and sm_100 (B200), and PTX for compute_100 that newer GPUs compile at load time;
and the library file contains the fatbin's bytes unchanged (src/device/embed_fatbin.py).

    check_cuda_fatbin.py FATBIN LIBLOOM

The entries are read by this script from the fatbin's headers, so the check runs where the
toolkit has no cuobjdump (as CUDA 13's minimal installs); where cuobjdump exists, its listing
must agree. Exit 0 when everything is there, 1 otherwise.
"""
import shutil
import struct
import subprocess
import sys

MAGIC = 0xBA55ED50  # a fatbin container's first word
KINDS = {1: 'ptx', 2: 'elf'}
WANTED = {('elf', 80), ('elf', 90), ('elf', 100), ('ptx', 100)}


def entries(data):
    """(kind, arch) of every entry of every container in `data`. A container is a 16-byte header
    (magic, version, header size, size of what follows); each entry starts with its own header:
    kind (u16; 1 PTX, 2 ELF), version (u16), header size (u32), payload size (u64), ..., and the
    architecture (u32, 80 for sm_80) at byte 28."""
    found, offset = [], 0
    while offset + 16 <= len(data):
        magic, _, header, size = struct.unpack_from('<IHHQ', data, offset)
        if magic != MAGIC:
            raise ValueError('no fatbin container at byte %d (magic %#x)' % (offset, magic))
        entry, end = offset + header, offset + header + size
        while entry < end:
            kind, _, entry_header, payload = struct.unpack_from('<HHIQ', data, entry)
            arch, = struct.unpack_from('<I', data, entry + 28)
            found.append((KINDS.get(kind, 'kind %d' % kind), arch))
            entry += entry_header + payload
        offset = end
    return found


def main():
    if len(sys.argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    fatbin_path, library_path = sys.argv[1], sys.argv[2]
    with open(fatbin_path, 'rb') as f:
        fatbin = f.read()
    failed = False
    listed = entries(fatbin)
    print('%s: %d bytes, entries: %s' % (fatbin_path, len(fatbin), ', '.join(
        '%s %s_%d' % (kind, 'compute' if kind == 'ptx' else 'sm', arch) for kind, arch in listed)))
    for kind, arch in sorted(WANTED):
        ok = (kind, arch) in listed
        failed |= not ok
        print(('PASS ' if ok else 'FAIL ') + '%s for %s_%d' % (kind, 'compute' if kind == 'ptx' else 'sm', arch))

    with open(library_path, 'rb') as f:
        embedded = fatbin in f.read()
    failed |= not embedded
    print(('PASS ' if embedded else 'FAIL ') + library_path + ' contains the fatbin byte for byte')

    cuobjdump = shutil.which('cuobjdump')
    if cuobjdump is None:
        print('cuobjdump not found: its listing is not compared (the entries above are read from the '
              'fatbin headers by this script)')
    else:
        listing = subprocess.run([cuobjdump, '--list-elf', '--list-ptx', fatbin_path], capture_output=True,
                                 text=True).stdout
        print(listing.rstrip())
        for name in ('sm_80', 'sm_90', 'sm_100', 'compute_100'):
            ok = name in listing
            failed |= not ok
            print(('PASS ' if ok else 'FAIL ') + 'cuobjdump lists ' + name)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
