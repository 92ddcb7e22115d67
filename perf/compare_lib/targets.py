# SPDX-License-Identifier: Apache-2.0
"""The performance targets, each checked against this run's medians.

A target over a size range holds only if it holds at every measured size in the range; the
printed figure is the worst size's. "OpenMPI" is, per size, the better of its two runs (as
installed, and with GLIBC_TUNABLES keeping freed memory mapped).
"""

from dataclasses import dataclass

from .plan import KIB, MIB, MPI_BEST, size_text

LOOM = "loom-shm"


@dataclass
class Verdict:
    label: str
    measured: str  # the worst case, with the numbers it came from
    needed: str
    met: object  # True, False, or None when not measured
    value: object = None  # the worst case's ratio, for picking the worst of several checks

    def mark(self):
        return {True: "met", False: "MISSED", None: "n/a"}[self.met]


def _in_range(results, collective, ranks, low, high):
    return [s for s in results.sizes(collective, ranks) if low <= s <= high]


def _time(entry):
    us = entry["time_us"]
    return f"{us:.0f} us" if us >= 100 else f"{us:.3g} us"


def _busbw(entry):
    return f"{entry['busbw_gbps']:.3g} GB/s"


def _speed_ratio(results, label, collective, ranks, low, high, peer, minimum, mine_name=LOOM):
    """Loom's busbw over the peer's at every size in [low, high] must reach `minimum`."""
    worst = None
    for size in _in_range(results, collective, ranks, low, high):
        mine, theirs = (results.median(mine_name, collective, ranks, size),
                        results.median(peer, collective, ranks, size))
        if mine is None or theirs is None:
            continue
        ratio = theirs["time_us"] / mine["time_us"]
        if worst is None or ratio < worst[0]:
            worst = (ratio, size, mine, theirs)
    needed = f">= {minimum:.2f}x"
    if worst is None:
        return Verdict(label, "not measured", needed, None)
    ratio, size, mine, theirs = worst
    measured = (f"{ratio:.2f}x at {size_text(size)} ({mine_name} {_busbw(mine)}, "
                f"{theirs['which']} {_busbw(theirs)})")
    return Verdict(label, measured, needed, ratio >= minimum, ratio)


def _latency(results, label, ranks, low, high):
    """Loom's time must not exceed OpenMPI's at any size in [low, high]."""
    worst = None
    for size in _in_range(results, "all_reduce", ranks, low, high):
        mine, theirs = (results.median(LOOM, "all_reduce", ranks, size),
                        results.median(MPI_BEST, "all_reduce", ranks, size))
        if mine is None or theirs is None:
            continue
        ratio = mine["time_us"] / theirs["time_us"]
        if worst is None or ratio > worst[0]:
            worst = (ratio, size, mine, theirs)
    if worst is None:
        return Verdict(label, "not measured", "<= 1.00x", None)
    ratio, size, mine, theirs = worst
    measured = (f"time {ratio:.2f}x OpenMPI's at {size_text(size)} (loom {_time(mine)}, "
                f"{theirs['which']} {_time(theirs)})")
    return Verdict(label, measured, "<= 1.00x", ratio <= 1.0, ratio)


def _fraction_of(results, label, contender, low, high, reference, reference_text, minimum):
    """A contender's 2-rank all-reduce busbw at every size in [low, high] over a machine limit."""
    needed = f">= {100 * minimum:.0f}%"
    if reference is None:
        return Verdict(label, f"{reference_text} not measured", needed, None)
    worst = None
    for size in _in_range(results, "all_reduce", 2, low, high):
        mine = results.median(contender, "all_reduce", 2, size)
        if mine is not None and (worst is None or mine["busbw_gbps"] < worst[1]["busbw_gbps"]):
            worst = (size, mine)
    if worst is None:
        return Verdict(label, "not measured", needed, None)
    size, mine = worst
    fraction = mine["busbw_gbps"] / reference
    measured = (f"{100 * fraction:.0f}% at {size_text(size)} ({_busbw(mine)} of "
                f"{reference_text} {reference:.2f} GB/s)")
    return Verdict(label, measured, needed, fraction >= minimum, fraction)


def _no_collapse(results, ranks):
    label = f"all-reduce {ranks} ranks on 2 cores, 1 MiB: time <= 3x the 2-rank time"
    crowded, pair = (results.median(LOOM, "all_reduce", ranks, MIB),
                     results.median(LOOM, "all_reduce", 2, MIB))
    if crowded is None or pair is None:
        return Verdict(label, "not measured", "<= 3.00x", None)
    ratio = crowded["time_us"] / pair["time_us"]
    measured = f"{ratio:.2f}x ({ranks} ranks {_time(crowded)}, 2 ranks {_time(pair)})"
    return Verdict(label, measured, "<= 3.00x", ratio <= 3.0, ratio)


def _not_worse_than_mpi(results, ranks):
    label = f"all-reduce {ranks} ranks on 2 cores, 1 MiB: time <= OpenMPI's"
    mine, theirs = (results.median(LOOM, "all_reduce", ranks, MIB),
                    results.median(MPI_BEST, "all_reduce", ranks, MIB))
    if mine is None or theirs is None:
        return Verdict(label, "not measured", "<= 1.00x", None)
    ratio = mine["time_us"] / theirs["time_us"]
    measured = (f"time {ratio:.2f}x OpenMPI's (loom {_time(mine)}, "
                f"{theirs['which']} {_time(theirs)})")
    return Verdict(label, measured, "<= 1.00x", ratio <= 1.0, ratio)


def _kernel(results, type_name, minimum):
    label = f"kernel {type_name} sum, one core, DRAM size: bandwidth vs triad"
    ratio = results.bound("kernel_bandwidth", f"{type_name}_sum_of_triad")
    rate = results.bound("kernel_bandwidth", f"{type_name}_sum_gbps")
    triad = results.bound("kernel_bandwidth", "triad_gbps")
    needed = f">= {100 * minimum:.0f}%"
    if ratio is None:
        return Verdict(label, "not measured", needed, None)
    measured = f"{100 * ratio:.0f}% ({rate:.2f} GB/s; triad {triad:.2f} GB/s)"
    return Verdict(label, measured, needed, ratio >= minimum, ratio)


def evaluate(results):
    """Every target, in the order they are listed."""
    bound = results.bound("mem_bandwidth", "allreduce2_single_copy_bound_gbps")
    stream = results.bound("tcp_stream", "one_stream_gbps")
    verdicts = [
        _latency(results, "all-reduce 2 ranks, 8 B-1 KiB: time <= OpenMPI's", 2, 8, KIB),
        _speed_ratio(results, "all-reduce 2 ranks, 64 KiB-8 MiB: busbw vs OpenMPI",
                     "all_reduce", 2, 64 * KIB, 8 * MIB, MPI_BEST, 1.2),
        _speed_ratio(results, "all-reduce 2 ranks, 64-256 MiB: busbw vs OpenMPI",
                     "all_reduce", 2, 64 * MIB, 256 * MIB, MPI_BEST, 1.5),
        _fraction_of(results, "all-reduce 2 ranks, 64-256 MiB: busbw vs single-copy bound",
                     LOOM, 64 * MIB, 256 * MIB, bound, "bound", 0.7),
    ]
    for collective, name in (("all_gather", "all-gather"), ("reduce_scatter", "reduce-scatter")):
        label = f"{name} 2 ranks, 1 MiB and 64 MiB: busbw vs OpenMPI"
        verdict = Verdict(label, "not measured", ">= 1.20x", None)
        for size in (MIB, 64 * MIB):  # only these two sizes count, not the one between
            one = _speed_ratio(results, label, collective, 2, size, size, MPI_BEST, 1.2)
            if one.met is not None and (verdict.met is None or one.value < verdict.value):
                verdict = one
        verdicts.append(verdict)
    for ranks in (4, 8):
        verdicts.append(_no_collapse(results, ranks))
        verdicts.append(_not_worse_than_mpi(results, ranks))
    verdicts.append(_speed_ratio(results, "TCP all-reduce 2 ranks, >= 8 MiB: busbw vs Gloo",
                                 "all_reduce", 2, 8 * MIB, 1 << 40, "gloo", 2.0, "loom-tcp"))
    verdicts.append(_fraction_of(results, "TCP all-reduce 2 ranks, >= 8 MiB: busbw vs one stream",
                                 "loom-tcp", 8 * MIB, 1 << 40, stream, "one stream", 0.5))
    verdicts.append(_kernel(results, "float32", 0.9))
    verdicts.append(_kernel(results, "float16", 0.7))
    verdicts.append(_kernel(results, "bfloat16", 0.7))
    return verdicts

