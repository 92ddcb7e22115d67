#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs the ordinary NCCL programs (nccl_program.c, nccl_group_init.c) on Loom's libnccl.so.2.

The programs are built against NVIDIA's nccl.h and linked with -lnccl from the CUDA toolkit;
at run time LD_LIBRARY_PATH puts Loom's library folder (<builddir>/src/nccl, which holds
libnccl.so.2 -> libnccl-loom.so) first, so the dynamic loader picks Loom's. Each rank is its
own process; each run has a fresh directory for the unique-id files and a timeout. A run passes
when every process exits 0 and every process printed (from /proc/self/maps) exactly one libnccl,
under Loom's folder.

Runs: 4 ranks over shared memory (the default transport), 4 ranks over TCP
(LOOM_TRANSPORT=socket), 3 ranks; the NCCL_COMM_ID mode (every rank calls ncclGetUniqueId
itself); group init of ranks 0 and 1 from one thread (blocking, then non-blocking configs);
bad inputs. Prints PASS/FAIL per run with its time, and each failed process's output; exits 0
when all pass, 1 otherwise, 77 (skipped, with the reason) when there is nothing to run.

  run_nccl_program.py --program P --group-program G --loom-dir <builddir>/src/nccl
                      [--only NAME[,NAME]] [--timeout S] [--verbose]
  run_nccl_program.py --skip "reason"
"""
import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

SKIP = 77
CUDA_LIB = "/usr/local/cuda/lib64"


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def base_env(loom_dir):
    env = dict(os.environ)
    # An NCCL_* setting of the caller's must not change what the program does, except the ones
    # a run sets itself.
    for key in [k for k in env if k.startswith("NCCL_")]:
        del env[key]
    for key in ("LOOM_TRANSPORT", "LOOM_SHM_DISABLE", "LOOM_COMM_ID"):
        env.pop(key, None)
    rest = env.get("LD_LIBRARY_PATH", "")
    env["LD_LIBRARY_PATH"] = loom_dir + ":" + CUDA_LIB + (":" + rest if rest else "")
    env.setdefault("LOOM_SOCKET_IFNAME", "lo")
    env["LOOM_TIMEOUT_MS"] = "20000"
    return env


def runs(args):
    """(name, [argv per process], extra env, timeout) for each configuration."""
    prog, group = args.program, args.group_program
    every = []

    def ranks(mode, n):
        return [[prog, mode, str(r), str(n), "{dir}"] for r in range(n)]

    every.append(("4 ranks shm", ranks("all", 4), {}, args.timeout))
    every.append(("4 ranks tcp", ranks("all", 4), {"LOOM_TRANSPORT": "socket"}, args.timeout))
    every.append(("3 ranks", ranks("all", 3), {}, args.timeout))
    every.append(("NCCL_COMM_ID 3 ranks", ranks("commid", 3),
                  {"NCCL_COMM_ID": "127.0.0.1:%d" % free_port()}, args.timeout))
    for mode in ("blocking", "nonblocking"):
        every.append(("group init %s" % mode,
                      [[group, "pair", mode, "{dir}"], [group, "rest", mode, "{dir}"]], {}, args.timeout))
    # Short timeouts: a stale id must fail within a few seconds, not after the default 10 min.
    every.append(("bad input", ranks("badinput", 2), {"LOOM_TIMEOUT_MS": "3000"}, args.timeout))
    every.append(("extras", ranks("extras", 1), {"LOOM_TIMEOUT_MS": "3000"}, args.timeout))
    if args.only:
        wanted = [w.strip() for w in args.only.split(",")]
        every = [r for r in every if any(w in r[0] for w in wanted)]
    return every


def kill_all(procs):
    for p in procs:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def check_libnccl(output, loom_dir):
    """The problem with the libnccl lines of one process's output, or None."""
    loom_real = os.path.realpath(loom_dir)
    paths = set()
    for line in output.splitlines():
        head, sep, path = line.partition(": libnccl: ")
        if sep:
            paths.add(path.strip())
    if not paths:
        return "printed no libnccl line"
    if "none mapped" in paths:
        return "no libnccl was mapped"
    foreign = [p for p in paths if not os.path.realpath(p).startswith(loom_real + os.sep)]
    if foreign:
        return "loaded a libnccl outside %s: %s" % (loom_real, ", ".join(sorted(foreign)))
    if len(paths) != 1:
        return "loaded %d libnccl files: %s" % (len(paths), ", ".join(sorted(paths)))
    return None


def run_one(name, argvs, extra_env, timeout, env0, loom_dir, verbose):
    env = dict(env0)
    env.update(extra_env)
    env["NCCL_PROGRAM_TIMEOUT_S"] = str(max(5, int(timeout) - 5))  # the program's own watchdog first
    with tempfile.TemporaryDirectory(prefix="nccl-program-") as work:
        procs, logs = [], []
        start = time.monotonic()
        try:
            for i, argv in enumerate(argvs):
                log = open(os.path.join(work, "out.%d" % i), "w+")
                logs.append(log)
                procs.append(subprocess.Popen([a.replace("{dir}", work) for a in argv], env=env, stdout=log,
                                              stderr=subprocess.STDOUT, start_new_session=True))
            deadline = start + timeout
            while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
                time.sleep(0.02)
            timed_out = any(p.poll() is None for p in procs)
        finally:
            kill_all(procs)
            for p in procs:
                p.wait()
        took = time.monotonic() - start
        problems, outputs = [], []
        for i, (p, log) in enumerate(zip(procs, logs)):
            log.seek(0)
            out = log.read()
            log.close()
            outputs.append(out)
            if p.returncode != 0:
                problems.append("process %d exited %s" % (i, p.returncode if p.returncode >= 0
                                                           else "by signal %d" % -p.returncode))
            lib = check_libnccl(out, loom_dir)
            if lib:
                problems.append("process %d %s" % (i, lib))
        if timed_out:
            problems.insert(0, "timed out after %.0f s" % timeout)
    ok = not problems
    print("%s %s (%d processes, %.2f s)%s" % ("PASS" if ok else "FAIL", name, len(argvs), took,
                                              "" if ok else ": " + "; ".join(problems)), flush=True)
    if not ok or verbose:
        for i, out in enumerate(outputs):
            print("---- %s: process %d (%s) ----" % (name, i, " ".join(argvs[i][1:-1])))
            print(out.rstrip())
        print("----", flush=True)
    return ok


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--program")
    parser.add_argument("--group-program")
    parser.add_argument("--loom-dir", help="the folder holding Loom's libnccl.so.2 (<builddir>/src/nccl)")
    parser.add_argument("--skip", help="skip with this reason (the programs or the library were not built)")
    parser.add_argument("--only", help="run only the configurations whose names contain one of these")
    parser.add_argument("--timeout", type=float, default=60, help="seconds per run (default 60)")
    parser.add_argument("--verbose", action="store_true", help="print every process's output")
    args = parser.parse_args()
    if args.skip:
        print("SKIP: " + args.skip)
        return SKIP
    if not (args.program and args.group_program and args.loom_dir):
        parser.error("--program, --group-program and --loom-dir are needed (or --skip)")
    for path in (args.program, args.group_program):
        if not os.access(path, os.X_OK):
            print("SKIP: %s is not built" % path)
            return SKIP
    if not os.path.exists(os.path.join(args.loom_dir, "libnccl.so.2")):
        print("SKIP: no libnccl.so.2 in %s (Loom's NCCL library is not built)" % args.loom_dir)
        return SKIP
    env0 = base_env(args.loom_dir)
    start = time.monotonic()
    results = [run_one(*r, env0=env0, loom_dir=args.loom_dir, verbose=args.verbose) for r in runs(args)]
    failed = results.count(False)
    print("%d of %d runs passed in %.1f s" % (len(results) - failed, len(results), time.monotonic() - start))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
