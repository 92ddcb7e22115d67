# SPDX-License-Identifier: Apache-2.0
"""What perf/compare runs: the contenders, and the jobs (collective x rank count x size band).

Every contender runs the same nccl-tests-compatible driver (perf_common) with the same flags, so
only the library differs. Iteration counts are chosen per size band and rank count, never per
contender: a band's sizes are one tool invocation (-b/-e/-f), with its own -n/-w.
"""

from dataclasses import dataclass, field

KIB = 1 << 10
MIB = 1 << 20

# The environment that keeps glibc from returning big freed blocks to the kernel, so OpenMPI's
# per-call temporaries above the mmap threshold are not mapped (and page-faulted) afresh on
# every call: on this VM a fresh 4 KiB page costs 11-17 us.
GLIBC_KEEP_MEMORY = "glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=68719476736"


@dataclass(frozen=True)
class Contender:
    name: str
    library: str  # loom, mpi or gloo: which tool family
    launcher: str  # loomrun or mpirun
    prefix: str  # tool file name prefix: "" (build/perf/X_perf) or "mpi_"/"gloo_" (perf/peers/)
    env: tuple = ()  # extra (name, value) pairs
    description: str = ""

    def tool_path(self, build, collective):
        folder = "perf" if not self.prefix else "perf/peers"
        return f"{build}/{folder}/{self.prefix}{collective}_perf"


CONTENDERS = (
    Contender("loom-shm", "loom", "loomrun", "", (), "Loom, shared memory"),
    Contender("loom-tcp", "loom", "loomrun", "", (("LOOM_SHM_DISABLE", "1"),),
              "Loom, TCP sockets (LOOM_SHM_DISABLE=1)"),
    Contender("mpi", "mpi", "mpirun", "mpi_", (), "OpenMPI as installed"),
    Contender("mpi-tuned", "mpi", "mpirun", "mpi_", (("GLIBC_TUNABLES", GLIBC_KEEP_MEMORY),),
              "OpenMPI, GLIBC_TUNABLES=" + GLIBC_KEEP_MEMORY),
    Contender("gloo", "gloo", "loomrun", "gloo_", (), "Gloo (TCP)"),
)
CONTENDER_NAMES = tuple(c.name for c in CONTENDERS)
# The better of the two OpenMPI runs, per size: what Loom is held against.
MPI_BEST = "mpi-best"
MPI_RUNS = ("mpi", "mpi-tuned")


@dataclass(frozen=True)
class Band:
    """One tool invocation's sizes: min_bytes, min*factor, ... <= max_bytes."""
    min_bytes: int
    max_bytes: int
    factor: int
    iters: int
    warmup: int

    def sizes(self):
        sizes, size = [], self.min_bytes
        while size <= self.max_bytes:
            sizes.append(size)
            size *= self.factor
        return sizes


@dataclass(frozen=True)
class Job:
    collective: str  # all_reduce, all_gather, reduce_scatter
    ranks: int
    band: Band
    contenders: tuple = field(default=CONTENDER_NAMES)

    def label(self):
        return (f"{self.collective} {self.ranks} ranks "
                f"{size_text(self.band.min_bytes)}..{size_text(self.band.max_bytes)}")


def size_text(size):
    for unit, scale in (("GiB", 1 << 30), ("MiB", MIB), ("KiB", KIB)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} B"


# All-reduce on 2 ranks: 8 B .. 8 MiB and 32 .. 256 MiB, doubling, which holds the x4 grid from
# 8 B and every size a target names (1 KiB, 64 KiB, 1 MiB, 8 MiB, 64 MiB, 256 MiB).
# Small sizes take many iterations (microsecond latencies must rise above timer and scheduler
# noise), big ones few (a 256 MiB call takes tens of milliseconds; OpenMPI as installed, up to
# a second).
ALL_REDUCE_BANDS = (
    Band(8, 4 * KIB, 2, 1000, 100),
    Band(8 * KIB, 512 * KIB, 2, 200, 20),
    Band(1 * MIB, 8 * MIB, 2, 20, 3),
    Band(32 * MIB, 256 * MIB, 2, 3, 1),
)
# All-reduce on more ranks than cores: every step waits for ranks to be scheduled (Gloo takes
# 5-25 ms per call at 8 ranks here), so x4 steps and fewer iterations; the targets are at 1 MiB.
OVERSUBSCRIBED_BANDS = (
    Band(8, 2 * KIB, 4, 50, 5),
    Band(8 * KIB, 512 * KIB, 4, 40, 4),
    Band(1 * MIB, 64 * MIB, 4, 8, 2),
)
# All-gather and reduce-scatter at the targets' sizes (1 MiB and 64 MiB) and one between.
GATHER_BANDS = (
    Band(1 * MIB, 8 * MIB, 8, 20, 3),
    Band(64 * MIB, 64 * MIB, 2, 4, 1),
)
QUICK_ALL_REDUCE_BANDS = (
    Band(8, 1 * KIB, 4, 200, 20),
    Band(64 * KIB, 1 * MIB, 16, 20, 2),
)
QUICK_GATHER_BANDS = (Band(1 * MIB, 1 * MIB, 2, 10, 2),)


def build_plan(ranks_list, quick=False, oversubscribed_max=16 * MIB, contenders=CONTENDER_NAMES):
    """The jobs of one round, in the order they run. Rank counts above 2 (oversubscribed on this
    2-core machine) stop at oversubscribed_max: 8 ranks x 2 buffers x 256 MiB would spend most of
    the run in first-touch page faults, and the targets there are at 1 MiB."""
    jobs = []
    for ranks in ranks_list:
        bands = (QUICK_ALL_REDUCE_BANDS if quick else
                 ALL_REDUCE_BANDS if ranks <= 2 else OVERSUBSCRIBED_BANDS)
        for band in bands:
            if ranks > 2 and band.max_bytes > oversubscribed_max:
                band = Band(band.min_bytes, oversubscribed_max, band.factor, band.iters,
                            band.warmup)
            if band.sizes():
                jobs.append(Job("all_reduce", ranks, band, tuple(contenders)))
    if 2 in ranks_list:
        for collective in ("all_gather", "reduce_scatter"):
            for band in QUICK_GATHER_BANDS if quick else GATHER_BANDS:
                jobs.append(Job(collective, 2, band, tuple(contenders)))
    return jobs
