#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every source file of the repository carries Loom's SPDX license line.

A source file is code: C, C++ and CUDA (by extension), Python, shell and meson files, and any
tracked file that starts with a shebang. Data (topology XML, fuzz corpora, test lists) and
documents carry no line. The line must be among a file's first three lines (a shebang, an
encoding line or a blank may come first).

    check_spdx.py [--root DIR] [--fix]

Without --fix, lists every file that lacks the line and exits 1. With --fix, adds the line at
the top (after a shebang) in the file's comment syntax. Files come from `git ls-files` when DIR
is a git work tree, else from a walk that skips build folders.
"""
import argparse
import os
import subprocess
import sys

LICENSE = "Apache-2.0"
TAG = "SPDX-License-Identifier: " + LICENSE
SLASH_COMMENT = {".c", ".cc", ".cpp", ".h", ".hpp", ".cu", ".cuh"}
HASH_COMMENT = {".py", ".sh"}
HASH_COMMENT_NAMES = {"meson.build", "meson_options.txt", "meson.options"}
SKIPPED_DIRS = {".git", "__pycache__", ".cache"}
HEAD_LINES = 3


def comment_prefix(path, first_line):
    """The comment leader a source file uses, or None when the file is not source."""
    name = os.path.basename(path)
    extension = os.path.splitext(name)[1]
    if extension in SLASH_COMMENT:
        return "//"
    if extension in HASH_COMMENT or name in HASH_COMMENT_NAMES or first_line.startswith("#!"):
        return "#"
    return None


def tracked_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"], check=True, capture_output=True).stdout
        return [p for p in out.decode().split("\0") if p]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for directory, subdirs, names in os.walk(root):
            subdirs[:] = [d for d in subdirs if d not in SKIPPED_DIRS and not d.startswith("build")]
            files += [os.path.relpath(os.path.join(directory, n), root) for n in names]
        return files


def read_head(path):
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return None
    if b"\0" in head:
        return None  # binary
    return head.decode("utf-8", errors="replace")


def add_line(path, prefix):
    with open(path, encoding="utf-8") as f:
        lines = f.readlines()
    line = prefix + " " + TAG + "\n"
    at = 1 if lines and lines[0].startswith("#!") else 0
    lines.insert(at, line)
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    parser.add_argument("--fix", action="store_true", help="add the line where it is missing")
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    missing, checked = [], 0
    for relative in sorted(tracked_files(root)):
        path = os.path.join(root, relative)
        if not os.path.isfile(path) or os.path.islink(path):
            continue
        head = read_head(path)
        if head is None:
            continue
        lines = head.splitlines()
        prefix = comment_prefix(relative, lines[0] if lines else "")
        if prefix is None:
            continue
        checked += 1
        if any(TAG in line for line in lines[:HEAD_LINES]):
            continue
        if args.fix:
            add_line(path, prefix)
            print("added: " + relative)
        else:
            missing.append(relative)
    for relative in missing:
        print(f"{relative}: no '{TAG}' line in its first {HEAD_LINES} lines", file=sys.stderr)
    print(f"check_spdx: {checked} source files, {len(missing)} without the license line")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
