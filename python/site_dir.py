"""Prints the folder to install a package in for this Python: `default` (Meson's choice) when
this Python searches it, else the first of its site-packages under `prefix`, else `default`.

    site_dir.py <default> <prefix>
"""
import site
import sys

default, prefix = sys.argv[1], sys.argv[2].rstrip("/") + "/"
searched = site.getsitepackages()
print(default if default in searched else next((d for d in searched if d.startswith(prefix)), default))
