#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Loom across two hosts with large messages, on the K-host harness (tests/hosts/loomhosts.py).

Two hosts (network and PID namespaces on a bridge) x 2 ranks run allreduce_loop, a program on
loom.h alone joining through loomrun's environment: 60 all-reduces of 1 MiB with element-wise
distinct values, each checked, shm inside a host and TCP between them. With `tc netem` available
host 1's link gets delay with jitter, 1% loss and reordering; where the kernel lacks netem this
says so and runs on the plain link. (tests/hosts/multihost_test.py covers every collective, the
other layouts and the host failures.) Needs root and namespaces; otherwise prints why and exits
77 (meson's "skipped").

  netns_tcp.py path/to/allreduce_loop
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "hosts"))
import loomhosts  # noqa: E402

SKIP = 77


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    loop = os.path.abspath(sys.argv[1])
    why = loomhosts.skip_reason()
    if why:
        print("SKIP: the multi-host harness cannot run here: " + why)
        return SKIP
    failures = 0
    with loomhosts.Cluster(2, prefix="netns") as cluster:
        why = cluster.add_netem(1)
        if why:
            print("netem unavailable (%s): the link runs without delay, loss or reordering" % why, flush=True)
        else:
            print("netem: 2 ms +- 1 ms delay, 1% loss, 10% reordering on host 1's link", flush=True)
        job = cluster.launch(loomhosts.Layout.parse("2x2"), [loop, str(1 << 18), "60"], style="loomrun",
                             env={"LOOM_TIMEOUT_MS": 60000})
        for rank, code, out, err in job.wait(timeout=240):
            ok = code == 0
            failures += not ok
            print("%s rank %d finished 60 checked all-reduces of 1 MiB (exit %s)%s" %
                  ("PASS" if ok else "FAIL", rank, code, "" if ok else ": " + err.strip()[-600:]), flush=True)
    print("%d failed" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
