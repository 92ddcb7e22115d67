# SPDX-License-Identifier: Apache-2.0
"""Prints the folder to install a package in for this Python: `default` (Meson's choice) when
this Python searches it, else the first of its site-packages under `prefix`, else `default`.

    site_dir.py <default> <prefix>
"""
import os
import site
import sys


def under(path, folder):
    return os.path.commonpath([path, folder]) == folder


default, prefix = os.path.normpath(sys.argv[1]), os.path.normpath(sys.argv[2])
searched = [os.path.normpath(d) for d in site.getsitepackages()]
print(default if default in searched else next((d for d in searched if under(d, prefix)), default))
