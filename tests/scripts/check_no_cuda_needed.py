#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""libloom opens the CUDA driver itself, at first use (src/device/cuda_driver.h), so that it loads
on machines without one: no CUDA or NVIDIA library may appear among its NEEDED entries.

    check_no_cuda_needed.py LIBRARY...

Exit 0 when none does, 1 when one does, 77 (skipped) without readelf.
"""
import re
import shutil
import subprocess
import sys

# The driver, the runtime API, NVIDIA's other user-space libraries and CUDA's maths and compiler
# libraries: anything that would make the library fail to load where they are not installed.
FORBIDDEN = re.compile(r'^lib(cuda|cudart|nvidia|nvrtc|nvJitLink|cublas|cufft|curand|cusparse|cusolver|nccl)',
                       re.IGNORECASE)
NEEDED = re.compile(r'\(NEEDED\)\s+Shared library: \[([^\]]+)\]')


def main():
    if len(sys.argv) < 2:
        sys.stderr.write(__doc__)
        return 2
    readelf = shutil.which('readelf')
    if readelf is None:
        print('SKIP: readelf not found (binutils)')
        return 77
    failed = False
    for library in sys.argv[1:]:
        dynamic = subprocess.run([readelf, '-d', library], capture_output=True, text=True, check=True).stdout
        needed = NEEDED.findall(dynamic)
        bad = [name for name in needed if FORBIDDEN.match(name)]
        print(('FAIL ' if bad else 'PASS ') + library + ' NEEDED: ' + ', '.join(needed))
        if bad:
            print('  links ' + ', '.join(bad) + ': the CUDA runtime must open libcuda.so.1 with dlopen instead')
            failed = True
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
