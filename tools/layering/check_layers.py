#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The layering check: reads every #include "..." of Loom's C/C++ files and fails on an edge
that layers.txt does not allow, naming file and line. Also refused: includes spelled with
"../", and includes that resolve to no file of the tree (a typo, or a path that only works
by accident of the include path).

  check_layers.py [--root DIR]      exit 0: clean; 1: violations (listed); 2: bad table
"""
import argparse
import os
import re
import sys

from layers import Table

CODE = ('.h', '.hh', '.hpp', '.c', '.cc', '.cpp', '.cu', '.cuh')
FOLDERS = ('include', 'src', 'tools', 'perf', 'examples', 'python', 'tests')
GENERATED = {'loom_config.h'}  # written by meson into the build folder
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def code_files(root):
    for folder in FOLDERS:
        for directory, subdirs, files in os.walk(os.path.join(root, folder)):
            subdirs[:] = sorted(d for d in subdirs if not d.startswith('.'))
            for name in sorted(files):
                if name.endswith(CODE):
                    yield os.path.relpath(os.path.join(directory, name), root)


def resolve(root, path, spelled):
    """Where an include lands: next to the includer, in src/, at the root, in include/."""
    for candidate in (os.path.join(os.path.dirname(path), spelled), os.path.join('src', spelled),
                      spelled, os.path.join('include', spelled)):
        candidate = os.path.normpath(candidate)
        if os.path.isfile(os.path.join(root, candidate)):
            return candidate
    return None


def check(root, table):
    problems = []
    for path in code_files(root):
        unit = table.unit_of(path)
        if unit is None:
            problems.append(f'{path}: in no unit of layers.txt (add its folder)')
            continue
        with open(os.path.join(root, path), errors='replace') as source:
            for number, line in enumerate(source, 1):
                match = INCLUDE.match(line)
                if not match:
                    continue
                spelled = match.group(1)
                where = f'{path}:{number}: #include "{spelled}"'
                if '..' in spelled.split('/'):
                    problems.append(f'{where}: "../" in an include; spell it from src/ or the root')
                    continue
                if spelled in GENERATED:
                    continue
                target = resolve(root, path, spelled)
                if target is None:
                    problems.append(f'{where}: no such file in the tree')
                    continue
                other = table.unit_of(target)
                if other is None:
                    problems.append(f'{where}: {target} is in no unit of layers.txt')
                elif not table.may_include(unit, other):
                    problems.append(f'{where}: {unit} may not include {other} ({target})')
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    parser.add_argument('--root', default=os.path.normpath(os.path.join(here, '..', '..')))
    parser.add_argument('--table', default=None, help='layers.txt to use (default: the one beside this script)')
    args = parser.parse_args()
    try:
        table = Table(args.table) if args.table else Table()
    except (OSError, ValueError) as error:
        print(f'check_layers: {error}', file=sys.stderr)
        return 2
    problems = check(args.root, table)
    for problem in problems:
        print(problem)
    files = sum(1 for _ in code_files(args.root))
    print(f'check_layers: {files} files, {len(problems)} forbidden or broken includes')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
