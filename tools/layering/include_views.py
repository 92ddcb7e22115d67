#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Builds one include folder per library of layers.txt: symbolic links to that library's own
top folder and to those of every library it may reach, and nothing else. Meson gives each
library its view as its only project include path, so an include of a floor above fails to
compile ("core/comm.h: No such file or directory" in base).

  include_views.py SOURCE_ROOT OUT_DIR
"""
import os
import shutil
import sys

from layers import Table


def top_folder(unit):
    return unit.split('/')[0]


def main():
    source_root, out = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    table = Table()
    libraries = {}
    for unit, library in table.library.items():
        if library != '-':
            libraries.setdefault(library, []).append(unit)
    if os.path.isdir(out):
        shutil.rmtree(out)
    for library, units in sorted(libraries.items()):
        view = os.path.join(out, library)
        os.makedirs(view)
        for top in sorted({top_folder(u) for u in table.closure(units)} - {'include'}):
            target = os.path.join(source_root, Table.source_folder(top))
            os.symlink(target, os.path.join(view, top))
    return 0


if __name__ == '__main__':
    sys.exit(main())
