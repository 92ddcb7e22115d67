#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Loom's version string: meson's project version, with the git revision when the source tree
is a git checkout, in PEP 440 form:

    0.1.0                      not a git checkout (a release tarball)
    0.1.0+g0123456789ab        HEAD's first 12 hex digits
    0.1.0+g0123456789ab.dirty  ... and a tracked file differs from HEAD

The build runs this on every ninja (vcs_tag in src/base/meson.build) and compiles the line into
loom::versionString(), so a new commit shows without a reconfigure. The perf scripts import
version_string() for their --version, so they print what a build of the same tree prints.

    loom_version.py [--base VERSION] [SOURCE_ROOT]

--base is meson's project version (the build passes it); without it, meson.build's is read.
"""
import argparse
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_ROOT = os.path.dirname(os.path.dirname(HERE))


def meson_version(source_root=DEFAULT_ROOT):
    """The version in project(...) of source_root/meson.build."""
    with open(os.path.join(source_root, "meson.build"), encoding="utf-8") as f:
        match = re.search(r"^project\(.*?\bversion\s*:\s*'([^']+)'", f.read(), re.M | re.S)
    if not match:
        raise RuntimeError(f"no version : '...' in project() of {source_root}/meson.build")
    return match.group(1)


def _git(source_root, *args):
    # --no-optional-locks: status would otherwise refresh the index under index.lock, and a
    # build must not make a `git add` running beside it fail.
    return subprocess.run(["git", "--no-optional-locks", "-C", source_root, *args], check=True,
                          capture_output=True, text=True).stdout.strip()


def git_suffix(source_root=DEFAULT_ROOT):
    """'+g<12 hex>' and '.dirty' when source_root is the top of a git work tree, else ''.

    A tarball unpacked inside some other repository is not a checkout of Loom: only a work tree
    whose top is source_root counts."""
    try:
        top = _git(source_root, "rev-parse", "--show-toplevel")
        if os.path.realpath(top) != os.path.realpath(source_root):
            return ""
        revision = _git(source_root, "rev-parse", "--verify", "HEAD")[:12]
        changed = _git(source_root, "status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        return ""  # no git, or not a checkout, or a checkout without a commit yet
    if not re.fullmatch(r"[0-9a-f]{12}", revision):
        return ""
    return "+g" + revision + (".dirty" if changed else "")


def version_string(source_root=DEFAULT_ROOT, base=None):
    return (base or meson_version(source_root)) + git_suffix(source_root)


class _PrintVersion(argparse.Action):
    """--version of a script: "<prog> (Loom) <version>", as Loom's programs print it. The
    version is worked out only when asked for (it runs git)."""

    def __init__(self, option_strings, dest, **kwargs):
        kwargs.update(nargs=0, default=argparse.SUPPRESS)
        kwargs.setdefault("help", "print the version (of this source tree) and exit")
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"{os.path.basename(parser.prog)} (Loom) {version_string()}")
        parser.exit(0)


def add_version_argument(parser):
    """Adds --version to an argparse parser."""
    parser.add_argument("--version", action=_PrintVersion)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", help="meson's project version (default: read from meson.build)")
    parser.add_argument("source_root", nargs="?", default=DEFAULT_ROOT)
    args = parser.parse_args()
    print(version_string(os.path.abspath(args.source_root), args.base))
    return 0


if __name__ == "__main__":
    sys.exit(main())
