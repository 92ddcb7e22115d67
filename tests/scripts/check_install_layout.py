#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`meson install` lays Loom out as a package would, and the staged install works on its own.

Installs the build with --destdir into a temporary folder, then checks the staged tree:
  <bindir>              exactly loomrun, loom-topo and loom-env: no example, and no perf tool
                        (their names are nccl-tests', which an installed Loom must not shadow)
  <libexecdir>/loom     the perf tools: the nine Loom ones, their MPI and Gloo peers when
                        built, the perf/bounds tools
  <libdir>              libloom.so (and its soname link), libloom.a, pkgconfig/loom.pc
  <libdir>/loom/nccl    libnccl-loom.so and its libnccl.so.2 link (and it loads on its own)
  <includedir>          loom.h
  <datadir>/doc/loom    LICENSE, README.md
Then README's C program is built against the staged install (pkg-config with the prefix
variable set to the staged prefix, so loom.pc's rpath points into the staged libdir; pkgconf's
--define-prefix guesses the prefix from the .pc file's folder and gets a multiarch libdir such
as lib/x86_64-linux-gnu wrong) and run on 4 ranks with the staged loomrun, in a clean
environment (no LD_LIBRARY_PATH); and a staged perf tool starts (its rpath is relative to it)
and prints its version. For a /usr prefix loom.pc must carry no rpath (/usr's libdir is a
standard path, which distributions reject in an RPATH): there the program finds the staged
libloom through LD_LIBRARY_PATH instead.

    check_install_layout.py BUILD_DIR README.md [--meson MESON...] [--cc CC...] [--cflag FLAG]...
                            [--run-env NAME=VALUE]...
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import readme_program  # noqa: E402

BIN_TOOLS = {"loomrun", "loom-topo", "loom-env"}
LOOM_PERF = {c + "_perf" for c in ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce",
                                   "sendrecv", "alltoall", "gather", "scatter")}
BOUNDS = {"mem_bandwidth", "tcp_stream", "line_latency", "ring_floor", "alltoall_copies", "kernel_bandwidth"}
EXAMPLES = {"loom_demo", "hello_allreduce", "ddp_trainer", "policy_gradient", "allreduce_loop"}
FAILURES = []


def check(ok, what):
    print(("PASS " if ok else "FAIL ") + what, flush=True)
    if not ok:
        FAILURES.append(what)


def meson_json(meson, *args):
    return json.loads(subprocess.run([*meson, "introspect", *args], check=True, capture_output=True,
                                     text=True).stdout)


def listing(folder):
    return set(os.listdir(folder)) if os.path.isdir(folder) else set()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("build")
    parser.add_argument("readme")
    parser.add_argument("--meson", nargs="+", default=["meson"])
    parser.add_argument("--cc", nargs="+", default=["cc"])
    parser.add_argument("--run-env", action="append", default=[], metavar="NAME=VALUE",
                        help="set this for the program's ranks (a sanitizer build's options)")
    parser.add_argument("--cflag", action="append", default=[])
    args = parser.parse_args()
    build = os.path.abspath(args.build)
    options = {o["name"]: o["value"] for o in meson_json(args.meson, "--buildoptions", build)}
    prefix = os.path.normpath(options["prefix"])
    where = {name: os.path.join(prefix, options[name]) for name in ("bindir", "libdir", "libexecdir",
                                                                     "includedir", "datadir")}
    installed = meson_json(args.meson, "--installed", build).values()
    peers = {os.path.basename(p) for p in installed if os.path.basename(p).startswith(("mpi_", "gloo_"))}

    with tempfile.TemporaryDirectory(prefix="loom-install-") as destdir:
        done = subprocess.run([*args.meson, "install", "-C", build, "--no-rebuild", "--quiet", "--destdir", destdir],
                              capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"FAIL: meson install exited {done.returncode}:\n{done.stdout}{done.stderr}")
        staged = {name: destdir + path for name, path in where.items()}
        staged_prefix = destdir + prefix

        bin_files = listing(staged["bindir"])
        check(bin_files == BIN_TOOLS, f"bindir holds exactly {sorted(BIN_TOOLS)} (has {sorted(bin_files)})")
        libexec = listing(os.path.join(staged["libexecdir"], "loom"))
        check(LOOM_PERF <= libexec, f"libexec/loom holds the Loom perf tools (missing {sorted(LOOM_PERF - libexec)})")
        check(BOUNDS <= libexec, f"libexec/loom holds the bounds tools (missing {sorted(BOUNDS - libexec)})")
        check(peers <= libexec, f"libexec/loom holds the peer tools {sorted(peers)}")
        everywhere = {name for _, _, names in os.walk(destdir) for name in names}
        check(not (EXAMPLES & everywhere), f"no example is installed (found {sorted(EXAMPLES & everywhere)})")
        check(not any(n.startswith("test_") for n in everywhere), "no test program is installed")
        lib_files = listing(staged["libdir"])
        check({"libloom.so", "libloom.so.0", "libloom.a"} <= lib_files,
              f"libdir holds libloom.so, its soname link libloom.so.0 and libloom.a (has {sorted(lib_files)})")
        check(os.path.isfile(os.path.join(staged["libdir"], "pkgconfig", "loom.pc")), "libdir/pkgconfig/loom.pc")
        # Loom's NCCL library: in a folder of its own, never beside the system's libraries, and
        # it finds the staged libloom by itself (its rpath), so a program needs only that folder.
        nccl_dir = os.path.join(staged["libdir"], "loom", "nccl")
        nccl_files = listing(nccl_dir)
        check(nccl_files == {"libnccl-loom.so", "libnccl.so.2"}
              and os.readlink(os.path.join(nccl_dir, "libnccl.so.2")) == "libnccl-loom.so",
              f"libdir/loom/nccl holds libnccl-loom.so and the libnccl.so.2 link to it (has {sorted(nccl_files)})")
        check(not any(n.startswith("libnccl") for n in lib_files), "no libnccl beside the system's libraries")
        sanitized = options.get("b_sanitize", "none") not in ("none", "", [])
        if sanitized:
            # python3 has no sanitizer runtime, which an instrumented library needs loaded first.
            print(f"SKIP the staged libnccl.so.2's load probe: a {options['b_sanitize']} build's library "
                  "needs its sanitizer runtime loaded first (the release stage runs this probe)")
        elif "libnccl.so.2" in nccl_files:
            probe = ("import ctypes, sys; lib = ctypes.CDLL(sys.argv[1]); v = ctypes.c_int(); "
                     "lib.ncclGetVersion(ctypes.byref(v)); print(v.value)")
            done = subprocess.run([sys.executable, "-c", probe, os.path.join(nccl_dir, "libnccl.so.2")],
                                  env=readme_program.clean_env(), capture_output=True, text=True)
            check(done.returncode == 0 and done.stdout.strip() == "22809",
                  f"the staged libnccl.so.2 loads on its own and says ncclGetVersion 22809 "
                  f"({done.stdout.strip() or done.stderr.strip()[-300:]})")
        check(os.path.isfile(os.path.join(staged["includedir"], "loom.h")), "includedir/loom.h")
        doc = listing(os.path.join(staged["datadir"], "doc", "loom"))
        check({"LICENSE", "README.md"} <= doc, f"datadir/doc/loom holds LICENSE and README.md (has {sorted(doc)})")
        if FAILURES:
            sys.exit(f"FAIL: {len(FAILURES)} layout checks failed")

        with tempfile.TemporaryDirectory(prefix="loom-installed-prog-") as workdir:
            env = readme_program.clean_env(PKG_CONFIG_PATH=os.path.join(staged["libdir"], "pkgconfig"))
            flags = readme_program.pkg_config([f"--define-variable=prefix={staged_prefix}"], env, workdir)
            system_prefix = prefix == "/usr"
            rpaths = [f for f in flags if "-rpath" in f]
            want = "no rpath for a /usr prefix" if system_prefix else "an rpath"
            check(not rpaths if system_prefix else bool(rpaths), f"loom.pc carries {want} (flags {flags})")
            run_env = readme_program.name_values(args.run_env)
            if system_prefix:
                run_env["LD_LIBRARY_PATH"] = staged["libdir"]
            program = readme_program.build(args.readme, workdir, args.cc, args.cflag + flags)
            picked = readme_program.libloom_of(program, readme_program.clean_env(**run_env), workdir)
            how = "through LD_LIBRARY_PATH" if system_prefix else "through loom.pc's rpath"
            check(picked is not None and picked.startswith(os.path.realpath(staged["libdir"]) + os.sep),
                  f"README's program loads the staged libloom {how} ({picked})")
            readme_program.run_ranks(os.path.join(staged["bindir"], "loomrun"), program, 4, workdir, run_env)

        perf = os.path.join(staged["libexecdir"], "loom", "all_reduce_perf")
        picked = readme_program.libloom_of(perf, readme_program.clean_env(), destdir)
        check(picked is not None and picked.startswith(os.path.realpath(staged["libdir"]) + os.sep),
              f"the staged all_reduce_perf loads the staged libloom through its relative rpath ({picked})")
        done = readme_program.run([perf, "--version"], readme_program.clean_env(), destdir)
        check(done.returncode == 0 and done.stdout.startswith("all_reduce_perf (Loom) "),
              "the staged all_reduce_perf prints its version")
    if FAILURES:
        sys.exit(f"FAIL: {len(FAILURES)} checks failed")
    print("PASS")


if __name__ == "__main__":
    main()
