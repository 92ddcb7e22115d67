# SPDX-License-Identifier: Apache-2.0
"""The all-to-all and sendrecv benchmark's plan and verdicts, Loom against OpenMPI.

The acceptance criteria: on 2 and 4 ranks over shared memory, all-to-all at 1 KiB, 64 KiB,
1 MiB, 16 MiB and 64 MiB reaches at least OpenMPI's bandwidth at each size, and sendrecv's 8 B
latency is at most OpenMPI's; medians over at least 5 alternating pairs of runs.

Sizes are nccl-tests': for alltoall_perf -b/-e is the whole buffer of one rank (count per peer =
size / type size / ranks), for sendrecv_perf the one message each rank sends.
"""

from dataclasses import dataclass

from .plan import KIB, MIB, MPI_BEST, MPI_RUNS, Band, Job, size_text

LOOM = "loom-shm"
CONTENDERS = (LOOM, *MPI_RUNS)  # the ones this comparison may run
DEFAULT_SIZES = (KIB, 64 * KIB, MIB, 16 * MIB, 64 * MIB)
SENDRECV_SIZE = 8


def iterations(size, quick=False):
    """(timed iterations, warm-up calls) for one size: enough iterations that a row takes
    0.1-1 s (microsecond calls must rise above timer and scheduler noise; a 64 MiB all-to-all on
    4 ranks and 2 cores takes tens of milliseconds)."""
    if quick:
        return (200, 20) if size <= 64 * KIB else (10, 2)
    # A 2-rank exchange takes about 0.5 us, so tiny sizes need 10^5 calls to last 0.1 s (5000
    # took 3 ms, where one scheduler tick moves the median by 10%).
    if size <= 64:
        return 200000, 20000
    if size <= 4 * KIB:
        return 50000, 5000
    # Larger sizes: at least 0.1 s on 2 ranks too (64 KiB ~4.5 us, 1 MiB ~50 us, 16 MiB ~1.5
    # ms, 64 MiB ~8 ms a call). Rows of 2-40 ms, as these were before, moved by whole tens of
    # percent between the two runs of one pair (16 MiB: 1279-2140 us over 7 pairs).
    if size <= 256 * KIB:
        return 20000, 2000
    if size <= 4 * MIB:
        return 2000, 200
    if size <= 16 * MIB:
        return 60, 6
    return 15, 3


def build_jobs(ranks_list, sizes, contenders, quick=False):
    """One tool invocation per (collective, ranks, size): each is its own alternating pair."""
    jobs = []
    for ranks in ranks_list:
        for size in sizes:
            iters, warmup = iterations(size, quick)
            jobs.append(Job("alltoall", ranks, Band(size, size, 2, iters, warmup),
                            tuple(contenders)))
        iters, warmup = iterations(SENDRECV_SIZE, quick)
        jobs.append(Job("sendrecv", ranks, Band(SENDRECV_SIZE, SENDRECV_SIZE, 2, iters, warmup),
                        tuple(contenders)))
    return jobs


@dataclass
class Line:
    """One row of the table: medians over pairs, and how many pairs Loom won."""
    collective: str
    ranks: int
    size: int
    loom: dict
    mpi: dict
    ratio: float  # MPI's time / Loom's time: above 1 Loom is faster
    wins: int  # rounds in which Loom's time was below OpenMPI's (the better MPI run's)
    rounds: int

    def target(self):
        return "busbw >= OpenMPI's" if self.collective == "alltoall" else "time <= OpenMPI's"

    def met(self):
        return self.ratio >= 1.0


def _round_time(results, contender, job_key, round_index):
    collective, ranks, size = job_key
    times = [r["time_us"] for r in results.records
             if r["round"] == round_index and r["contender"] == contender
             and r["collective"] == collective and r["ranks"] == ranks and r["size"] == size
             and r["place"] == results.place and r["time_us"] is not None]
    return times[0] if times else None


def lines(results, rounds):
    """The table's rows, alltoall first then sendrecv, by rank count and size; a configuration
    with no Loom or no MPI median is left out (the runs that failed are listed separately)."""
    out = []
    order = {"alltoall": 0, "sendrecv": 1}
    for collective, ranks in sorted(results.configurations(),
                                    key=lambda pair: (order.get(pair[0], 9), pair[1])):
        for size in results.sizes(collective, ranks):
            loom = results.median(LOOM, collective, ranks, size)
            mpi = results.median(MPI_BEST, collective, ranks, size)
            if loom is None or mpi is None or loom["time_us"] <= 0:
                continue
            wins = counted = 0
            for round_index in range(rounds):
                mine = _round_time(results, LOOM, (collective, ranks, size), round_index)
                theirs = [t for t in (_round_time(results, name, (collective, ranks, size),
                                                  round_index) for name in MPI_RUNS)
                          if t is not None]
                if mine is None or not theirs:
                    continue
                counted += 1
                wins += mine < min(theirs)
            out.append(Line(collective, ranks, size, loom, mpi,
                            mpi["time_us"] / loom["time_us"], wins, counted))
    return out


def _time(us):
    return f"{us:.2f}" if us < 100 else f"{us:.1f}" if us < 10000 else f"{us:.0f}"


def _spread(results, contender, line):
    """min..max of the time over rounds, for one contender (MPI: the one the median came from)."""
    name = line.mpi["which"] if contender == MPI_BEST else contender
    times = sorted(r["time_us"] for r in results.records
                   if r["contender"] == name and r["collective"] == line.collective
                   and r["ranks"] == line.ranks and r["size"] == line.size
                   and r["place"] == results.place and r["time_us"] is not None)
    return f"{_time(times[0])}..{_time(times[-1])}" if len(times) > 1 else "-"


def markdown_table(results, table_lines):
    headings = ["op", "ranks", "size", "Loom median (µs)", "Loom (GB/s)", "MPI median (µs)",
                "MPI (GB/s)", "Loom/MPI speed", "target", "pairs Loom won",
                "Loom range (µs)", "MPI range (µs)"]
    rows = []
    for line in table_lines:
        mpi_name = "" if line.mpi["which"] == "mpi" else " (t)"
        rows.append([
            line.collective, str(line.ranks), size_text(line.size),
            _time(line.loom["time_us"]), f"{line.loom['busbw_gbps']:.2f}",
            _time(line.mpi["time_us"]) + mpi_name, f"{line.mpi['busbw_gbps']:.2f}",
            f"{line.ratio:.2f}", f"{line.target()}: {'met' if line.met() else 'MISSED'}",
            f"{line.wins}/{line.rounds}", _spread(results, LOOM, line),
            _spread(results, MPI_BEST, line)])
    text = ["| " + " | ".join(headings) + " |",
            "| " + " | ".join("---" if i < 1 else "---:" for i in range(len(headings))) + " |"]
    text += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(text)


def summary(table_lines):
    met = sum(line.met() for line in table_lines)
    worst = min(table_lines, key=lambda line: line.ratio, default=None)
    text = f"{met} of {len(table_lines)} met"
    if worst is not None:
        text += (f"; lowest Loom/MPI speed {worst.ratio:.2f} ({worst.collective} {worst.ranks} "
                 f"ranks {size_text(worst.size)})")
    return text
