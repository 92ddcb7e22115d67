#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs a program as a multi-host job on one machine: K hosts of the harness (loomhosts.py),
network and PID namespaces on a bridge, with one process per rank on its host and the
launcher environment loomCommInitFromEnv reads. Needs root.

  run_on_hosts.py [--layout 2x2] [--style torchrun|mpirun|loomrun] [--timeout S] -- PROGRAM [ARGS...]

Layouts: KxR (ranks 0..R-1 on host 0, ...), KxR/cyclic (rank r on host r mod K, as
`srun --distribution=cyclic`), A+B+... (A ranks on host 0, B on host 1, ...). Each rank's
output is printed with a "[rank R hostH]" prefix; the exit status is the first failing rank's.
On real machines the same program runs with `mpirun --host a,b`, `srun -N 2` or
`torchrun --nnodes 2` (README, "Run across hosts").
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import loomhosts  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--layout", default="2x2")
    parser.add_argument("--style", default="torchrun", choices=("torchrun", "mpirun", "loomrun"))
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("program", nargs=argparse.REMAINDER)
    options = parser.parse_args()
    program = options.program[1:] if options.program[:1] == ["--"] else options.program
    if not program:
        parser.error("no program given")
    why = loomhosts.skip_reason()
    if why:
        print("run_on_hosts: cannot make hosts here: " + why, file=sys.stderr)
        return 77
    layout = loomhosts.Layout.parse(options.layout)
    program[0] = os.path.abspath(program[0]) if os.path.exists(program[0]) else program[0]
    status = 0
    with loomhosts.Cluster(len(layout.hosts)) as cluster:
        job = cluster.launch(layout, program, style=options.style)
        for rank, code, out, err in job.wait(options.timeout):
            prefix = "[rank %d %s] " % (rank, cluster.hosts[layout.host_of[rank]].name)
            for line in (out + err).splitlines():
                print(prefix + line)
            if code != 0 and status == 0:
                print(prefix + ("still running at the timeout: killed" if code is None else "exit %d" % code))
                status = code if code else 1
    return status


if __name__ == "__main__":
    sys.exit(main())
