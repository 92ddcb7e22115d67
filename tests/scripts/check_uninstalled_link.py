#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A build folder is enough to build and run a Loom program: README's C program compiles with
`cc prog.c $(pkg-config --cflags --libs loom)` given only PKG_CONFIG_PATH=<build>/meson-uninstalled
(loom-uninstalled.pc names loom.h's folder and an rpath to the libloom built there), and
`<build>/tools/loomrun -n 4 ./a.out` runs it with no LD_LIBRARY_PATH or other variable.

    check_uninstalled_link.py BUILD_DIR README.md LOOMRUN [--cc CC...] [--cflag FLAG]... [--run-env N=V]...
"""
import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import readme_program  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("build")
    parser.add_argument("readme")
    parser.add_argument("loomrun")
    parser.add_argument("--cc", nargs="+", default=["cc"], help="the C compiler command (default: cc)")
    parser.add_argument("--run-env", action="append", default=[], metavar="NAME=VALUE",
                        help="set this for the program's ranks (a sanitizer build's options)")
    parser.add_argument("--cflag", action="append", default=[],
                        help="also pass this flag (a sanitizer build's -fsanitize=...)")
    args = parser.parse_args()
    build = os.path.abspath(args.build)
    loomrun = os.path.abspath(args.loomrun)  # meson test hands it over relative to the build
    with tempfile.TemporaryDirectory(prefix="loom-uninstalled-") as workdir:
        env = readme_program.clean_env(PKG_CONFIG_PATH=os.path.join(build, "meson-uninstalled"))
        flags = readme_program.pkg_config([], env, workdir)
        program = readme_program.build(args.readme, workdir, args.cc, args.cflag + flags)
        picked = readme_program.libloom_of(program, readme_program.clean_env(), workdir)
        built = os.path.realpath(os.path.join(build, "src", "libloom.so"))
        if picked != built:
            sys.exit(f"FAIL: the program loads libloom from {picked}, not the build's {built}")
        readme_program.run_ranks(loomrun, program, 4, workdir, readme_program.name_values(args.run_env))
    print("PASS")


if __name__ == "__main__":
    main()
