#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""One version everywhere: libloom's loomGetVersionString() starts with meson's project version
(with "+g<12 hex>" and maybe ".dirty" when the source is a git checkout), and every tool's
--version prints "<tool> (Loom) <that string>", exit 0, before looking at anything else; each
tool's --help lists --version. The perf scripts print the version of their source tree (the
same, but for a ".dirty" that may differ when the tree changed since the build). With --python,
`import loom_torch; loom_torch.__version__` is that string too. With --info, LOOM_DEBUG=INFO
prints "Loom version <string>" once per process: once per rank of a 2-rank loomrun job, and
once for the two communicators of `all_reduce_perf -t 2`.

    check_version.py --meson-version V --libloom LIB [--tool PATH]... [--script PATH]...
                     [--python PY] [--info LOOMRUN ALL_REDUCE_PERF]
"""
import argparse
import os
import re
import subprocess
import sys

FAILURES = []


def check(ok, what, detail=""):
    """Prints PASS/FAIL what; detail (what was seen) only on a failure."""
    print(("PASS " if ok else "FAIL ") + what + ("" if ok or not detail else f": {detail}"), flush=True)
    if not ok:
        FAILURES.append(what)


def run(cmd, env=None, timeout=120):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           env={**os.environ, **(env or {})})


def library_version(path):
    """loomGetVersionString() of the library at `path`, read by a child Python through ctypes.
    In a child, because a sanitizer build's libloom brings its runtime, which must come first in
    a process; a Python that loads it later is allowed to go on (verify_asan_link_order=0), and
    leaks of the uninstrumented interpreter are not the library's (detect_leaks=0)."""
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = ":".join(filter(None, [env.get("ASAN_OPTIONS", ""), "verify_asan_link_order=0",
                                                 "detect_leaks=0"]))
    code = ("import ctypes, sys\n"
            "lib = ctypes.CDLL(sys.argv[1])\n"
            "lib.loomGetVersionString.restype = ctypes.c_char_p\n"
            "print(lib.loomGetVersionString().decode())\n")
    result = subprocess.run([sys.executable, "-c", code, path], env=env, capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        raise SystemExit(f"could not read loomGetVersionString() from {path}: {result.stderr.strip()}")
    return result.stdout.strip()


def in_git_checkout(source_root):
    try:
        top = run(["git", "-C", source_root, "rev-parse", "--show-toplevel"]).stdout.strip()
    except OSError:
        return False
    return bool(top) and os.path.realpath(top) == os.path.realpath(source_root)


def check_tool(path, version):
    name = os.path.basename(path)
    done = run([path, "--version"])
    check(done.returncode == 0 and done.stdout == f"{name} (Loom) {version}\n" and done.stderr == "",
          f"{name} --version prints '{name} (Loom) {version}'",
          f"exit {done.returncode}, stdout {done.stdout!r}, stderr {done.stderr[-300:]!r}")
    # Bad options around --version are not looked at.
    bad = {"loomrun": ["-n", "nonsense", "--version"], "loom-env": ["--markdown", "extra", "--version"]}
    done = run([path, *bad.get(name, ["--no-such-option", "--version"])])
    check(done.returncode == 0 and done.stdout == f"{name} (Loom) {version}\n",
          f"{name}: --version wins over a bad option before it",
          f"exit {done.returncode}, stdout {done.stdout!r}, stderr {done.stderr[-300:]!r}")
    done = run([path, "--help"])
    check(done.returncode == 0 and "--version" in done.stdout, f"{name} --help lists --version")


def check_script(path, version):
    name = os.path.basename(path)
    done = run([sys.executable, path, "--version"])
    printed = done.stdout.strip()
    same = re.sub(r"\.dirty$", "", printed) == re.sub(r"\.dirty$", "", f"{name} (Loom) {version}")
    check(done.returncode == 0 and same, f"{name} --version prints '{name} (Loom) {version}' (.dirty aside)",
          f"exit {done.returncode}, stdout {printed!r}, stderr {done.stderr[-300:]!r}")
    done = run([sys.executable, path, "--help"])
    check(done.returncode == 0 and "--version" in done.stdout, f"{name} --help lists --version")


def version_lines(stderr, version):
    return [line for line in stderr.splitlines() if line.endswith(f"Loom version {version}")]


def check_info(loomrun, perf, version):
    env = {"LOOM_DEBUG": "INFO", "LOOM_DEBUG_SUBSYS": "INIT", "LOOM_SOCKET_IFNAME": "lo"}
    small = ["-b", "8", "-e", "8", "-n", "1", "-w", "0"]
    done = run([loomrun, "-n", "2", "--timeout", "100", perf, *small], env)
    lines = version_lines(done.stderr, version)
    pids = {line.split()[0].split(":")[1] for line in lines if line.count(":") >= 2}
    check(done.returncode == 0 and len(lines) == 2 and len(pids) == 2,
          "LOOM_DEBUG=INFO: one 'Loom version' line per rank of a 2-rank job",
          f"exit {done.returncode}, lines {lines}, stderr tail {done.stderr[-600:]!r}")
    done = run([perf, "-t", "2", *small], env)
    lines = version_lines(done.stderr, version)
    check(done.returncode == 0 and len(lines) == 1,
          "LOOM_DEBUG=INFO: one 'Loom version' line for a process with two communicators (-t 2)",
          f"exit {done.returncode}, lines {lines}, stderr tail {done.stderr[-600:]!r}")
    done = run([perf, "-b", "nonsense", "--version"], env)
    check(done.returncode == 0 and not version_lines(done.stderr, version),
          "all_reduce_perf -b nonsense --version starts no communicator (no init log line)",
          f"exit {done.returncode}, stderr {done.stderr[-300:]!r}")
    done = run([loomrun, "-n", "1", os.path.join(os.path.dirname(loomrun), "loom-env"), "--version"])
    check(done.returncode == 0 and done.stdout == f"loom-env (Loom) {version}\n",
          "loomrun -n 1 PROG --version: the program's --version is the program's")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--meson-version", required=True)
    parser.add_argument("--source-root", default=os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))))
    parser.add_argument("--libloom", required=True)
    parser.add_argument("--tool", action="append", default=[], help="a program with --version and --help")
    parser.add_argument("--script", action="append", default=[], help="a perf script (argparse)")
    parser.add_argument("--python", help="a Python that imports loom_torch (PYTHONPATH set by the caller)")
    parser.add_argument("--info", nargs=2, metavar=("LOOMRUN", "ALL_REDUCE_PERF"))
    args = parser.parse_args()
    # meson test hands over paths relative to the build folder; the checks run from elsewhere.
    args.tool = [os.path.abspath(tool) for tool in args.tool]
    args.info = [os.path.abspath(path) for path in args.info] if args.info else None

    version = library_version(os.path.abspath(args.libloom))
    print(f"loomGetVersionString() = {version!r}")
    form = re.escape(args.meson_version) + r"(\+g[0-9a-f]{12}(\.dirty)?)?"
    check(re.fullmatch(form, version) is not None, f"the version has the form {form}")
    if in_git_checkout(args.source_root):
        check("+g" in version, "built from a git checkout: the version names the commit")
    for tool in args.tool:
        check_tool(tool, version)
    for script in args.script:
        check_script(script, version)
    if args.python:
        done = run([args.python, "-c", "import loom_torch; print(loom_torch.__version__)"])
        check(done.returncode == 0 and done.stdout == version + "\n", f"loom_torch.__version__ is {version!r}",
              f"exit {done.returncode}, stdout {done.stdout!r}, stderr {done.stderr[-300:]!r}")
    if args.info:
        check_info(*args.info, version)
    if FAILURES:
        sys.exit(f"FAIL: {len(FAILURES)} checks failed")
    print("PASS")


if __name__ == "__main__":
    main()
