#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Loom's libnccl.so.2 exports every function the toolkit's nccl.h declares, with NCCL's
binding: pnccl<X> strong (T), nccl<X> weak (W), as NVIDIA's library does so that a profiler can
interpose; it exports nothing else, and its soname is libnccl.so.2.

  check_exports.py --nccl-h /usr/local/cuda/include/nccl.h --library BUILD/src/nccl/libnccl-loom.so
  check_exports.py --skip "why"     (exits 77: meson's skip)
"""
import argparse
import re
import subprocess
import sys


def declared_functions(header):
    """Names of the functions nccl.h declares (ncclX; each has its pncclX twin)."""
    text = open(header).read()
    text = re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)
    text = re.sub(r'//[^\n]*', ' ', text)
    # A declaration: a return type, the name, '(' ... ');'. Macros and typedefs are not functions.
    names = set(re.findall(r'^\s*(?:const\s+)?\w+\s*\*?\s+(nccl\w+)\s*\(', text, flags=re.M))
    return sorted(n for n in names if not n.startswith('nccl_') and not n.endswith('_t'))


def exported(library):
    output = subprocess.run(['nm', '-D', '--defined-only', library], check=True, stdout=subprocess.PIPE,
                            text=True).stdout
    symbols = {}
    for line in output.splitlines():
        parts = line.split()
        if len(parts) == 3:
            symbols[parts[2]] = parts[1]
    return symbols


def soname(library):
    output = subprocess.run(['readelf', '-d', library], check=True, stdout=subprocess.PIPE, text=True).stdout
    match = re.search(r'\(SONAME\)\s+Library soname: \[([^\]]+)\]', output)
    return match.group(1) if match else None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--nccl-h')
    parser.add_argument('--library')
    parser.add_argument('--skip', help='print this reason and exit 77 (meson: skipped)')
    args = parser.parse_args()
    if args.skip:
        print(f'SKIP: {args.skip}')
        return 77
    functions = declared_functions(args.nccl_h)
    symbols = exported(args.library)
    problems = []
    if len(functions) < 30:
        problems.append(f'only {len(functions)} functions found in {args.nccl_h}: the parser is wrong')
    for name in functions:
        for symbol, binding in ((name, 'W'), ('p' + name, 'T')):
            if symbols.get(symbol) != binding:
                problems.append(f'{symbol}: {symbols.get(symbol, "not exported")}, expected {binding}')
    expected = set(functions) | {'p' + n for n in functions}
    for symbol in sorted(set(symbols) - expected):
        problems.append(f'{symbol}: exported, but nccl.h declares no such function')
    name = soname(args.library)
    if name != 'libnccl.so.2':
        problems.append(f'soname {name}, expected libnccl.so.2')
    print(f'{len(functions)} functions of {args.nccl_h}; {len(symbols)} symbols exported by {args.library}')
    for problem in problems:
        print('FAIL: ' + problem)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
