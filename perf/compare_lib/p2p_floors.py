# SPDX-License-Identifier: Apache-2.0
"""The floors under the all-to-all and sendrecv rows, measured in the same rounds as Loom and
OpenMPI.

- sendrecv 8 B on n ranks: perf/bounds/ring_floor, n processes that each write one cache line
  and wait for their neighbour's, yielding the CPU when they outnumber the CPUs (as both
  libraries' waits do), unbound as the ranks are: the least a call can take with that many
  processes placed by the kernel.
- all-to-all on 2 ranks: perf/bounds/alltoall_copies, the same exchange with the least code,
  once through a FIFO of slots in shared memory (two copies, Loom's design) and once with
  process_vm_readv (one copy by the kernel, OpenMPI's shared-memory default).

A library's time over a floor is its own overhead there; where both libraries sit near one
floor, their ratio is decided by the noise of that floor, not by either library.
"""

import os
import statistics

from .p2p import SENDRECV_SIZE
from .plan import size_text

RING = "ring_floor"
COPIES = "alltoall_copies"


def floor_runs(ranks_list, sizes, quick=False):
    """[(collective, ranks, size, tool, args)]: one bounds-tool run per row that has a floor."""
    runs = []
    for ranks in ranks_list:
        if ranks < 2:
            continue
        if quick:
            ring_args = ["--ranks", str(ranks), "--iters", "20000", "--reps", "1"]
        else:
            # About 0.1 s a repetition: 0.25 us a call with a CPU each (waits spin), ~6 us with 4
            # ranks on 2 CPUs (waits yield).
            spins = ranks <= (os.cpu_count() or 1)
            ring_args = ["--ranks", str(ranks), "--iters", "400000" if spins else "20000", "--reps", "3"]
        runs.append(("sendrecv", ranks, SENDRECV_SIZE, RING, ring_args))
    if 2 in ranks_list:
        for size in sizes:
            copy_args = ["--bytes", str(size)] + (["--iters", "500", "--reps", "1"] if quick else ["--reps", "3"])
            runs.append(("alltoall", 2, size, COPIES, copy_args))
    return runs


class Floors:
    """Each floor's value per round; medians over the rounds."""

    def __init__(self):
        self._values = {}  # (collective, ranks, size, name) -> [us per call, one per round]

    def add(self, collective, ranks, size, record):
        if record.get("tool") == RING:
            self._put((collective, ranks, size, "ring"), record.get("per_call_us"))
        else:
            self._put((collective, ranks, size, "fifo"), record.get("fifo_us"))
            self._put((collective, ranks, size, "cma"), record.get("cma_us"))

    def _put(self, key, value):
        if value is not None and value > 0:
            self._values.setdefault(key, []).append(value)

    def median(self, collective, ranks, size, name):
        values = self._values.get((collective, ranks, size, name))
        return statistics.median(values) if values else None

    def empty(self):
        return not self._values


def run_round(runs, run_tool, floors, failures):
    """Runs every floor once; run_tool(name, args) -> (record, error)."""
    for collective, ranks, size, tool, args in runs:
        record, error = run_tool(tool, args)
        if error:
            failures.append(f"floor {tool} ({collective} {ranks} ranks {size_text(size)}): {error}")
        else:
            floors.add(collective, ranks, size, record)


def _us(value):
    if value is None:
        return "-"
    return f"{value:.2f}" if value < 100 else f"{value:.1f}" if value < 10000 else f"{value:.0f}"


def _times(value, floor):
    return f"{value / floor:.2f}x" if value and floor else "-"


def markdown_table(floors, table_lines):
    """One row per table line that has a floor: the floor(s), both libraries' medians, and each
    as a multiple of the floor of its own design (Loom: ring or fifo; OpenMPI: ring or cma)."""
    headings = ["op", "ranks", "size", "floor (µs)", "Loom median (µs)", "Loom / floor",
                "MPI median (µs)", "MPI / floor"]
    rows = []
    for line in table_lines:
        loom, mpi = line.loom["time_us"], line.mpi["time_us"]
        if line.collective == "sendrecv":
            ring = floors.median("sendrecv", line.ranks, line.size, "ring")
            if ring is None:
                continue
            rows.append([line.collective, str(line.ranks), size_text(line.size), f"ring {_us(ring)}",
                         _us(loom), _times(loom, ring), _us(mpi), _times(mpi, ring)])
        else:
            fifo = floors.median("alltoall", line.ranks, line.size, "fifo")
            cma = floors.median("alltoall", line.ranks, line.size, "cma")
            if fifo is None:
                continue
            rows.append([line.collective, str(line.ranks), size_text(line.size),
                         f"fifo {_us(fifo)}, cma {_us(cma)}", _us(loom), _times(loom, fifo) + " fifo",
                         _us(mpi), (_times(mpi, cma) + " cma") if cma else "-"])
    if not rows:
        return ""
    text = ["| " + " | ".join(headings) + " |",
            "| " + " | ".join("---" if i < 1 else "---:" for i in range(len(headings))) + " |"]
    text += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(text)
