# SPDX-License-Identifier: Apache-2.0
"""compare.png: busbw and time against size, one row per (collective, rank count)."""

from .plan import CONTENDER_NAMES, size_text
from .report import COLLECTIVE_TEXT

STYLES = {"loom-shm": ("tab:blue", "o"), "loom-tcp": ("tab:cyan", "s"),
          "mpi": ("tab:red", "v"), "mpi-tuned": ("tab:orange", "^"), "gloo": ("tab:green", "D")}


def write_png(results, path):
    """Returns None, or why no plot was written (matplotlib missing)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import FuncFormatter, LogLocator
    except ImportError as problem:
        return f"no plot: {problem} (apt-get install python3-matplotlib; run with /usr/bin/python3)"
    configurations = results.configurations()
    if not configurations:
        return "no plot: nothing was measured"
    figure, axes = plt.subplots(len(configurations), 2, figsize=(13, 3.6 * len(configurations)),
                                squeeze=False)  # height: keep in step with tight_layout below
    sizes_axis = FuncFormatter(lambda value, _: size_text(int(value)) if value >= 1 else "")
    bound = results.bound("mem_bandwidth", "allreduce2_single_copy_bound_gbps")
    stream = results.bound("tcp_stream", "one_stream_gbps")
    for row, (collective, ranks) in enumerate(configurations):
        busbw_axis, time_axis = axes[row]
        for name in CONTENDER_NAMES:
            points = [(size, results.median(name, collective, ranks, size))
                      for size in results.sizes(collective, ranks)]
            points = [(size, entry) for size, entry in points if entry is not None]
            if not points:
                continue
            color, marker = STYLES.get(name, ("black", "."))
            sizes = [size for size, _ in points]
            busbw_axis.plot(sizes, [e["busbw_gbps"] for _, e in points], marker=marker,
                            color=color, label=name, markersize=4)
            busbw_axis.fill_between(sizes, [e["busbw_min"] for _, e in points],
                                    [e["busbw_max"] for _, e in points], color=color, alpha=0.15)
            time_axis.plot(sizes, [e["time_us"] for _, e in points], marker=marker, color=color,
                           label=name, markersize=4)
        if collective == "all_reduce" and ranks == 2:
            if bound:
                busbw_axis.axhline(bound, color="black", linestyle="--", linewidth=1,
                                   label=f"single-copy bound {bound:.1f}")
            if stream:
                busbw_axis.axhline(stream, color="gray", linestyle=":", linewidth=1,
                                   label=f"one TCP stream {stream:.1f}")
        title = f"{COLLECTIVE_TEXT.get(collective, collective)}, {ranks} ranks"
        busbw_axis.set_title(f"{title}: busbw (GB/s, higher is better)")
        time_axis.set_title(f"{title}: time per call (us, lower is better)")
        for axis in (busbw_axis, time_axis):
            axis.set_xscale("log", base=2)
            axis.xaxis.set_major_locator(LogLocator(base=4))
            axis.xaxis.set_major_formatter(sizes_axis)
            axis.grid(True, which="major", alpha=0.3)
            axis.set_xlabel("size")
        busbw_axis.set_yscale("log")
        time_axis.set_yscale("log")
        busbw_axis.legend(fontsize=7, loc="best")
    figure.suptitle(f"Loom vs OpenMPI vs Gloo ({results.place.replace('_', '-')}, medians; "
                    "shaded: min..max over rounds)")
    height = 3.6 * len(configurations)
    figure.tight_layout(rect=(0, 0, 1, 1 - 0.45 / height))  # room for the title
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return None
