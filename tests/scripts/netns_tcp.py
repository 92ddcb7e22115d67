#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Loom across two "hosts": two network namespaces joined by a veth pair (issue 5).

Each namespace plays one host (LOOM_HOSTID differs), so ranks in the same namespace talk over
shared memory and ranks in different namespaces over TCP across the veth link.
  1. exact: 4 ranks (2 per namespace) run all-reduces of 1 MiB with element-wise distinct
     values; every result is checked by allreduce_loop. With `tc netem` available the link
     gets delay with jitter, 1% loss and reordering; where the kernel lacks netem this says so
     and runs on the plain link.
  2. link down: 2 ranks (one per namespace) all-reduce in a loop; the veth link is set down
     mid-run; both sides must fail (exit 3, a failed call) within LOOM_TIMEOUT_MS plus a margin.
Needs root and `ip netns`; otherwise prints why and exits 77 (meson's "skipped").

  netns_tcp.py path/to/allreduce_loop
"""
import os
import secrets
import subprocess
import sys
import time

SKIP = 77
TIMEOUT_MS = 3000
NAMES = ("loomA%d" % os.getpid(), "loomB%d" % os.getpid())
VETH = ("vlA%d" % (os.getpid() % 100000), "vlB%d" % (os.getpid() % 100000))
ADDRESSES = ("10.77.0.1", "10.77.0.2")
FAILURES = []


def run(*args, check=True):
    return subprocess.run(list(args), check=check, capture_output=True, text=True, timeout=30)


def report(ok, what):
    print(("PASS " if ok else "FAIL ") + what, flush=True)
    if not ok:
        FAILURES.append(what)


def set_up():
    for name in NAMES:
        run("ip", "netns", "add", name)
    run("ip", "link", "add", VETH[0], "type", "veth", "peer", "name", VETH[1])
    for side in (0, 1):
        run("ip", "link", "set", VETH[side], "netns", NAMES[side])
        run("ip", "-n", NAMES[side], "addr", "add", ADDRESSES[side] + "/24", "dev", VETH[side])
        run("ip", "-n", NAMES[side], "link", "set", VETH[side], "up")
        run("ip", "-n", NAMES[side], "link", "set", "lo", "up")


def tear_down():
    for name in NAMES:
        run("ip", "netns", "del", name, check=False)


def add_netem():
    """Delay with jitter, loss and reordering on both ends; returns why not, or None."""
    for side in (0, 1):
        result = run("ip", "netns", "exec", NAMES[side], "tc", "qdisc", "add", "dev", VETH[side], "root",
                     "netem", "delay", "2ms", "1ms", "loss", "1%", "reorder", "10%", "50%", check=False)
        if result.returncode != 0:
            return (result.stderr or result.stdout).strip()
    return None


def start_ranks(loop, nranks, count, iterations, port):
    secret = secrets.token_hex(16)
    processes = []
    for rank in range(nranks):
        side = rank * 2 // nranks  # first half in namespace A (with the root), second in B
        env = dict(os.environ)
        env.update({
            "LOOM_RANK": str(rank), "LOOM_WORLD_SIZE": str(nranks),
            "LOOM_COMM_ID": "%s:%d" % (ADDRESSES[0], port), "LOOM_COMM_SECRET": secret,
            "LOOM_SOCKET_IFNAME": "=" + VETH[side], "LOOM_HOSTID": "netns-host-%d" % side,
            "LOOM_TIMEOUT_MS": str(TIMEOUT_MS),
        })
        processes.append(subprocess.Popen(
            ["ip", "netns", "exec", NAMES[side], loop, str(count), str(iterations)],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    return processes


def finish(processes, limit):
    outcomes = []
    for process in processes:
        try:
            out, err = process.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
            outcomes.append((None, out, err))
            continue
        outcomes.append((process.returncode, out, err))
    return outcomes


def exact_across_namespaces(loop):
    why = add_netem()
    if why:
        print("netem unavailable (%s): the link runs without delay, loss or reordering" % why, flush=True)
    else:
        print("netem: 2 ms +- 1 ms delay, 1% loss, 10% reordering on both ends", flush=True)
    processes = start_ranks(loop, 4, 1 << 18, 60, 29500 + os.getpid() % 1000)
    for rank, (code, out, err) in enumerate(finish(processes, 240)):
        report(code == 0, "exact: rank %d finished 60 checked all-reduces (exit %s)%s" %
               (rank, code, "" if code == 0 else ": " + err.strip()[-600:]))


def link_down(loop):
    processes = start_ranks(loop, 2, 1 << 18, 0, 30500 + os.getpid() % 1000)
    # Wait until both ranks have completed calls, then pull the link.
    deadline = time.time() + 60
    seen = 0
    while seen < 2 and time.time() < deadline:
        seen = 0
        for process in processes:
            line = process.stdout.readline()
            if "iteration" in line:
                seen += 1
    run("ip", "-n", NAMES[0], "link", "set", VETH[0], "down")
    downed = time.time()
    for rank, (code, out, err) in enumerate(finish(processes, TIMEOUT_MS / 1000 + 20)):
        took = time.time() - downed
        report(code == 3, "link down: rank %d failed with a call error (exit %s, %.1f s after the link "
               "went down, timeout %d ms): %s" % (rank, code, took, TIMEOUT_MS,
                                                   [l for l in err.splitlines() if "loom error" in l][-1:]))


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    loop = os.path.abspath(sys.argv[1])
    if os.geteuid() != 0:
        print("SKIP: needs root to create network namespaces")
        return SKIP
    try:
        set_up()
    except (subprocess.CalledProcessError, FileNotFoundError) as error:
        tear_down()
        detail = getattr(error, "stderr", "") or str(error)
        print("SKIP: cannot create network namespaces and a veth pair here: %s" % detail.strip())
        return SKIP
    try:
        exact_across_namespaces(loop)
        link_down(loop)
    finally:
        tear_down()
    print("%d failed" % len(FAILURES))
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
