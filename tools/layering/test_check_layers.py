#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The layering check's own test, and the build's enforcement of it:
  1. check_layers.py passes on the tree as it is;
  2. a planted back-edge (base including core) fails it, naming file, line and edge; so does an
     include spelled with "../"; a table that allows a cycle between folders is refused;
  3. the same back-edge fails to compile against base's include view, while an include of
     base's own header compiles (the view is what meson gives the base library).

  test_check_layers.py --root DIR --views DIR --cxx COMPILER...
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = os.path.join(HERE, 'check_layers.py')
COPIED = ('include', 'src', 'tools', 'perf', 'examples', 'python', 'tests')


def run_check(root):
    return subprocess.run([sys.executable, CHECK, '--root', root], capture_output=True, text=True)


def plant(root, path, line):
    """Adds `line` as the first include of `path`; returns the line number it landed on."""
    full = os.path.join(root, path)
    with open(full) as source:
        lines = source.readlines()
    at = next(i for i, text in enumerate(lines) if text.startswith('#include'))
    lines.insert(at, line + '\n')
    with open(full, 'w') as source:
        source.writelines(lines)
    return at + 1


def compiles(cxx, views, root, text):
    with tempfile.TemporaryDirectory() as scratch:
        source = os.path.join(scratch, 'planted.cc')
        with open(source, 'w') as out:
            out.write(text)
        result = subprocess.run(cxx + ['-std=c++20', '-fsyntax-only', '-I', os.path.join(views, 'base'),
                                       '-I', os.path.join(root, 'include'), source],
                                capture_output=True, text=True)
        return result.returncode == 0, result.stderr


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--root', required=True)
    parser.add_argument('--views', required=True)
    parser.add_argument('--cxx', nargs='+', required=True)
    args = parser.parse_args()
    failures = []

    clean = run_check(args.root)
    if clean.returncode != 0:
        failures.append('check_layers fails on the tree itself:\n' + clean.stdout)

    with tempfile.TemporaryDirectory() as copy:
        for folder in COPIED:
            shutil.copytree(os.path.join(args.root, folder), os.path.join(copy, folder),
                            ignore=shutil.ignore_patterns('corpus', 'regressions', 'data'))
        # Each planted include must be reported with its file, line and reason.
        plants = [('a planted back-edge', 'src/base/log.cc', 'core/comm.h', 'base may not include core'),
                  ('a "../" include', 'src/transport/call_tag.cc', '../base/error.h', '"../" in an include')]
        for what, path, spelled, reason in plants:
            line = plant(copy, path, f'#include "{spelled}"')
            result = run_check(copy)
            expected = f'{path}:{line}: #include "{spelled}": {reason}'
            if result.returncode != 1 or expected not in result.stdout:
                failures.append(f'{what} was not reported as "{expected}":\n{result.stdout}')
            else:
                print(f'{what} reported: {expected}')

    # A table that lets two folders include each other is refused before any include is read.
    with tempfile.TemporaryDirectory() as scratch:
        table = os.path.join(scratch, 'layers.txt')
        with open(os.path.join(HERE, 'layers.txt')) as source, open(table, 'w') as out:
            for line in source:
                out.write(line.rstrip('\n') + (' core' if line.startswith('base ') else '') + '\n')
        cyclic = subprocess.run([sys.executable, CHECK, '--root', args.root, '--table', table],
                                capture_output=True, text=True)
        if cyclic.returncode != 2 or 'cycle' not in cyclic.stderr:
            failures.append('a table with a cycle was accepted:\n' + cyclic.stdout + cyclic.stderr)
        else:
            print('cyclic table refused:', cyclic.stderr.strip())

    ok, errors = compiles(args.cxx, args.views, args.root, '#include "core/comm.h"\n')
    if ok or 'core/comm.h' not in errors:
        failures.append('an include of core/comm.h compiled against base\'s include view:\n' + errors)
    else:
        print('upward include fails to compile in base:', errors.strip().splitlines()[0])
    ok, errors = compiles(args.cxx, args.views, args.root, '#include "base/error.h"\nint main() { return 0; }\n')
    if not ok:
        failures.append('base\'s own header does not compile against its include view:\n' + errors)

    for failure in failures:
        print('FAIL:', failure)
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
