#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""torch.distributed through backend "loom" against "gloo": all_reduce, all_gather,
reduce_scatter and all_to_all on float32 tensors, and the DDP step of examples/torch_ddp, on 2
and 4 local processes. Every configuration runs once per backend per round, the two backends
back to back in an order that alternates between rounds; the table holds medians over rounds.
Loom's own all_reduce_perf runs at the same sizes in the same rounds, so the binding's
overhead shows too (torch time / all_reduce_perf time).

  perf/torch/bench.py [--build build] [--ranks 2,4] [--rounds 3] [--sizes 4K,1M,16M,64M]
                      [--ops all_reduce,all_gather,reduce_scatter,all_to_all] [--no-ddp]

Prints a markdown table. Run it on a quiet machine.
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TRAIN = os.path.join(ROOT, "examples", "torch_ddp", "train.py")
PYTHON = "/usr/bin/python3"

sys.path.insert(0, os.path.join(ROOT, "tools", "version"))
from loom_version import add_version_argument  # noqa: E402 (--version: this source tree's)


def size_bytes(text):
    text = text.strip().upper().rstrip("B").rstrip("I")
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
    return int(text[:-1] if scale > 1 else text) * scale


def size_text(bytes_):
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if bytes_ >= scale:
            return f"{bytes_ // scale} {unit}"
    return f"{bytes_} B"


def iterations(bytes_):
    # Enough calls that a run lasts tens of milliseconds at least: one slow scheduling slice on
    # the 2-core VM must not decide a median.
    return (400, 40) if bytes_ <= 64 << 10 else (150, 15) if bytes_ <= 4 << 20 else (20, 3)


def worker(args):
    """One rank: times each op at each size, prints {op: {size: seconds per call}} on rank 0."""
    import torch
    import torch.distributed as dist
    if args.backend == "loom":
        import loom_torch  # noqa: F401
    dist.init_process_group(args.backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    results = {}
    for op in args.ops.split(","):
        results[op] = {}
        for bytes_ in [size_bytes(s) for s in args.sizes.split(",")]:
            count = max(world, bytes_ // 4 // world * world)
            data = torch.ones(count)
            out = torch.empty(count)
            if op == "all_reduce":
                call = lambda: dist.all_reduce(data)  # noqa: E731
            elif op == "all_gather":
                if args.backend == "loom":
                    part = torch.ones(count // world)
                    call = lambda: dist.all_gather_into_tensor(out, part)  # noqa: E731
                else:  # gloo 1.13 has only the list form
                    part = torch.ones(count // world)
                    outs = list(out.chunk(world))
                    call = lambda: dist.all_gather(outs, part)  # noqa: E731
            elif op == "reduce_scatter":
                if args.backend != "loom":
                    results[op][bytes_] = None  # gloo 1.13 has no reduce_scatter
                    continue
                part = torch.empty(count // world)
                call = lambda: dist.reduce_scatter_tensor(part, data)  # noqa: E731
            elif op == "all_to_all":
                call = lambda: dist.all_to_all_single(out, data)  # noqa: E731
            else:
                raise SystemExit(f"unknown op {op}")
            iters, warmup = iterations(bytes_)
            for _ in range(warmup):
                call()
            dist.barrier()
            start = time.perf_counter()
            for _ in range(iters):
                call()
            dist.barrier()
            results[op][bytes_] = (time.perf_counter() - start) / iters
    if rank == 0:
        print(json.dumps(results), flush=True)
    dist.barrier()
    dist.destroy_process_group()


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def launch(command, world, env_extra):
    port = str(free_port())
    children = []
    for rank in range(world):
        env = {**os.environ, **env_extra, "RANK": str(rank), "WORLD_SIZE": str(world), "LOCAL_RANK": str(rank),
               "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port, "OMP_NUM_THREADS": "1"}
        children.append(subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outputs = []
    for rank, child in enumerate(children):
        out, err = child.communicate(timeout=900)
        if child.returncode != 0:
            raise SystemExit(f"{' '.join(command)}: rank {rank} exited {child.returncode}:\n{err}")
        outputs.append(out)
    return outputs[0]


def loom_perf(build, world, bytes_):
    """all_reduce_perf's in-place time (seconds) at one size, from its JSON report."""
    report = f"/tmp/loom-torch-bench-{os.getpid()}.json"
    iters, warmup = iterations(bytes_)
    subprocess.run([os.path.join(build, "tools", "loomrun"), "-n", str(world), os.path.join(build, "perf",
                    "all_reduce_perf"), "-b", str(bytes_), "-e", str(bytes_), "-n", str(iters), "-w", str(warmup),
                    "-c", "0", "-d", "float", "-J", report], check=True, capture_output=True)
    with open(report) as file:
        data = json.load(file)
    os.unlink(report)
    row = data["results"][0]
    return row["in_place"]["time_us"] * 1e-6  # torch's all_reduce is in place


def ddp_step(backend, world, env_extra, steps=120):
    out = launch([PYTHON, TRAIN, "--backend", backend, "--steps", str(steps), "--time-steps"], world, env_extra)
    for line in out.splitlines():
        if line.startswith("step time"):
            return float(line.split()[2]) * 1e-3
    raise SystemExit(f"train.py printed no step time:\n{out}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_version_argument(parser)
    parser.add_argument("--build", default="build")
    parser.add_argument("--ranks", default="2,4")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sizes", default="4K,1M,16M,64M")
    parser.add_argument("--ops", default="all_reduce,all_gather,reduce_scatter,all_to_all")
    parser.add_argument("--no-ddp", action="store_true")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--backend", default="loom", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    build = os.path.abspath(args.build)
    env_extra = {"PYTHONPATH": os.path.join(build, "python")}
    sizes = [size_bytes(s) for s in args.sizes.split(",")]
    samples = {}  # (world, op, bytes or "step", contender) -> [seconds]
    for round_ in range(args.rounds):
        for world in [int(r) for r in args.ranks.split(",")]:
            order = ["loom", "gloo"] if round_ % 2 == 0 else ["gloo", "loom"]
            for backend in order:
                out = launch([PYTHON, os.path.abspath(__file__), "--worker", "--backend", backend, "--sizes",
                              args.sizes, "--ops", args.ops], world, env_extra)
                for op, by_size in json.loads(out.strip().splitlines()[-1]).items():
                    for bytes_, seconds in by_size.items():
                        if seconds is not None:
                            samples.setdefault((world, op, int(bytes_), backend), []).append(seconds)
                if not args.no_ddp:
                    samples.setdefault((world, "ddp step", 0, backend), []).append(ddp_step(backend, world, env_extra))
            if "all_reduce" in args.ops:
                for bytes_ in sizes:
                    samples.setdefault((world, "all_reduce", bytes_, "perf"), []).append(loom_perf(build, world, bytes_))
    print(f"| ranks | op | size | loom | gloo | gloo/loom time | loom / all_reduce_perf |")
    print("| ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    keys = sorted({(w, op, b) for (w, op, b, _) in samples})
    for world, op, bytes_ in keys:
        loom = samples.get((world, op, bytes_, "loom"))
        gloo = samples.get((world, op, bytes_, "gloo"))
        perf = samples.get((world, op, bytes_, "perf"))
        med = lambda xs: statistics.median(xs) if xs else None  # noqa: E731
        l, g, p = med(loom), med(gloo), med(perf)
        show = lambda s: "n/a" if s is None else f"{s * 1e3:.3f} ms"  # noqa: E731
        print(f"| {world} | {op} | {size_text(bytes_) if op != 'ddp step' else '-'} | {show(l)} | {show(g)} | "
              f"{'n/a' if l is None or g is None else f'{g / l:.2f}x'} | "
              f"{'' if l is None or p is None else f'{l / p:.2f}'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
