# SPDX-License-Identifier: Apache-2.0
"""The printed/markdown tables and the CSV files of a comparison run."""

import csv
import os

from .plan import CONTENDER_NAMES, MPI_BEST, size_text
from .results import METRICS

# Ratio columns: (heading, numerator, denominator). Each is a speed ratio, busbw over busbw
# (= time over time inverted): above 1 the first is faster.
RATIOS = (
    ("shm/mpi*", "loom-shm", MPI_BEST),
    ("shm/gloo", "loom-shm", "gloo"),
    ("tcp/gloo", "loom-tcp", "gloo"),
    ("tcp/mpi*", "loom-tcp", MPI_BEST),
)
# Column names: short, so a table with every contender fits in about 130 characters.
SHORT = {"loom-shm": "shm", "loom-tcp": "tcp", "mpi": "mpi", "mpi-tuned": "mpi-t", "gloo": "gloo"}
COLLECTIVE_TEXT = {"all_reduce": "all-reduce", "all_gather": "all-gather",
                   "reduce_scatter": "reduce-scatter"}


def _number(value):
    if value is None:
        return "-"
    if value == 0:
        return "0"
    return f"{value:.3g}" if abs(value) < 100 else f"{value:.0f}"


def table_rows(results, collective, ranks):
    """(headings, rows) of one configuration's table; contenders without data are left out."""
    present = [name for name in CONTENDER_NAMES
               if any(results.median(name, collective, ranks, size) is not None
                      for size in results.sizes(collective, ranks))]
    ratios = [r for r in RATIOS if any(
        results.ratio(r[1], r[2], collective, ranks, size) is not None
        for size in results.sizes(collective, ranks))]
    headings = ["size"]
    for name in present:
        headings += [f"{SHORT[name]} us", f"{SHORT[name]} GB/s"]
    headings += [heading for heading, _, _ in ratios]
    rows = []
    for size in results.sizes(collective, ranks):
        row = [size_text(size)]
        for name in present:
            entry = results.median(name, collective, ranks, size)
            row += [_number(entry and entry["time_us"]), _number(entry and entry["busbw_gbps"])]
        for _, top, bottom in ratios:
            ratio = results.ratio(top, bottom, collective, ranks, size)
            text = "-" if ratio is None else f"{ratio:.2f}" if ratio >= 0.1 else f"{ratio:.1e}"
            if bottom == MPI_BEST and ratio is not None:
                best = results.median(MPI_BEST, collective, ranks, size)
                text += "t" if best["which"] == "mpi-tuned" else " "
            row.append(text)
        rows.append(row)
    return headings, rows


def caption(results, collective, ranks, rounds):
    place = results.place.replace("_", "-")
    what = "float32 sum" if collective != "all_gather" else "float32"
    return (f"{COLLECTIVE_TEXT.get(collective, collective)}, {ranks} ranks ({what}, {place}, "
            f"median of {rounds} rounds; time in us, busbw in GB/s)")


LEGEND = ("shm = loom-shm (Loom over shared memory), tcp = loom-tcp (Loom, LOOM_SHM_DISABLE=1), "
          "mpi = OpenMPI as installed,\nmpi-t = mpi-tuned (OpenMPI with GLIBC_TUNABLES="
          "glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=68719476736).\n"
          "Ratios are speed ratios (time of the second / time of the first = busbw / busbw): "
          "above 1.00 the first is faster.\nmpi* = the better of mpi and mpi-t at that size; "
          "'t' marks mpi-t.")


def format_text(headings, rows):
    widths = [max(len(headings[i]), *(len(row[i]) for row in rows)) for i in range(len(headings))]
    lines = ["  ".join(h.rjust(w) for h, w in zip(headings, widths))]
    lines += ["  ".join(cell.rjust(w) for cell, w in zip(row, widths)) for row in rows]
    return "\n".join(lines)


def format_markdown(headings, rows):
    lines = ["| " + " | ".join(headings) + " |",
             "|" + "|".join("---:" for _ in headings) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def bounds_lines(results):
    get = results.bound_text
    return [
        "memory, one core (GB/s): read {} write {} copy {} triad {}".format(
            *(get("mem_bandwidth", f"{k}_1core_gbps") for k in ("read", "write", "copy", "triad"))),
        "memory, two cores at once (GB/s, together): read {} write {} copy {} triad {}".format(
            *(get("mem_bandwidth", f"{k}_all_gbps") for k in ("read", "write", "copy", "triad"))),
        "2-rank all-reduce single-copy bound = 1 / (3 / triad_2 + 2 / copy_2): {} GB/s".format(
            get("mem_bandwidth", "allreduce2_single_copy_bound_gbps")),
        "TCP loopback: one stream {} GB/s; two opposite streams {} GB/s each".format(
            get("tcp_stream", "one_stream_gbps"), get("tcp_stream", "two_way_per_direction_gbps")),
        "kernels, one core (GB/s): triad {}, float32 sum {}, float16 sum {}, bfloat16 sum {}".format(
            get("kernel_bandwidth", "triad_gbps"), get("kernel_bandwidth", "float32_sum_gbps"),
            get("kernel_bandwidth", "float16_sum_gbps"),
            get("kernel_bandwidth", "bfloat16_sum_gbps")),
    ]


def target_lines(verdicts):
    width = max(len(v.label) for v in verdicts)
    return [f"[{v.mark():>6}] {v.label.ljust(width)}  {v.measured}; need {v.needed}"
            for v in verdicts]


def write_csvs(results, out_dir):
    """runs.csv: every measurement of every round; results.csv: medians per contender (and
    mpi-best); ratios.csv: the table's speed ratios."""
    with open(os.path.join(out_dir, "runs.csv"), "w", newline="") as handle:
        fields = ["round", "contender", "collective", "ranks", "size", "place", *METRICS, "wrong"]
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        writer.writerows(results.records)
    with open(os.path.join(out_dir, "results.csv"), "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["collective", "ranks", "size", "contender", "place", "rounds",
                         *METRICS, "busbw_min", "busbw_max", "source"])
        for collective, ranks in results.configurations():
            for size in results.sizes(collective, ranks):
                for name in (*CONTENDER_NAMES, MPI_BEST):
                    entry = results.median(name, collective, ranks, size)
                    if entry is not None:
                        writer.writerow([collective, ranks, size, name, results.place,
                                         entry["rounds"], *(f"{entry[m]:.6g}" for m in METRICS),
                                         f"{entry['busbw_min']:.6g}", f"{entry['busbw_max']:.6g}",
                                         entry["which"]])
    with open(os.path.join(out_dir, "ratios.csv"), "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["collective", "ranks", "size", *(f"{t}_vs_{b}" for _, t, b in RATIOS)])
        for collective, ranks in results.configurations():
            for size in results.sizes(collective, ranks):
                ratios = [results.ratio(t, b, collective, ranks, size) for _, t, b in RATIOS]
                writer.writerow([collective, ranks, size,
                                 *("" if r is None else f"{r:.4g}" for r in ratios)])
