# SPDX-License-Identifier: Apache-2.0
"""A data-parallel training script that knows nothing of Loom but its backend's name.

    python3 -m torch.distributed.run --nproc_per_node 4 examples/torch_ddp/train.py --backend loom

An MLP learns to classify points of a generated spiral (3 classes, 2 features, made from the
seed, so every run sees the same data). Each rank trains on its shard with
DistributedDataParallel; --zero shards the optimizer state (ZeroRedundancyOptimizer),
--accumulate K skips gradient synchronisation on K-1 of every K steps (no_sync), and
--bf16-hook compresses gradients to bfloat16 on the wire (a DDP comm hook). Rank 0 prints the
loss and accuracy; --dump FILE writes every rank's final parameters (FILE.rank<r>) so a test
can compare ranks and backends.
"""
import argparse
import math
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.nn.parallel import DistributedDataParallel

try:
    import loom_torch  # noqa: F401  registers backend "loom"
except ImportError:
    loom_torch = None


def spiral(points_per_class, seed):
    generator = torch.Generator().manual_seed(seed)
    features, labels = [], []
    for label in range(3):
        radius = torch.linspace(0.05, 1.0, points_per_class)
        angle = torch.linspace(label * 4.0, (label + 1) * 4.0, points_per_class)
        angle = angle + 0.2 * torch.randn(points_per_class, generator=generator)
        features.append(torch.stack([radius * torch.sin(angle), radius * torch.cos(angle)], dim=1))
        labels.append(torch.full((points_per_class,), label, dtype=torch.int64))
    order = torch.randperm(3 * points_per_class, generator=generator)
    return torch.cat(features)[order], torch.cat(labels)[order]


def bfloat16_compression(process_group, bucket):
    """A DDP comm hook: the bucket travels as bfloat16 (half the bytes), pre-divided by the
    world size, and is written back as float32. torch 1.13's own bf16_compress_hook refuses
    anything but NCCL, so the script carries this one."""
    group = process_group if process_group is not None else dist.group.WORLD
    compressed = bucket.buffer().to(torch.bfloat16).div_(dist.get_world_size(group))
    future = dist.all_reduce(compressed, group=group, async_op=True).get_future()

    def decompress(done):
        buffer = bucket.buffer()
        buffer.copy_(done.value()[0])
        return buffer

    return future.then(decompress)


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", default="loom", choices=["loom", "gloo"])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch", type=int, default=64, help="per rank")
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--zero", action="store_true", help="ZeroRedundancyOptimizer")
    parser.add_argument("--accumulate", type=int, default=1, help="synchronise every K steps (no_sync)")
    parser.add_argument("--bf16-hook", action="store_true", help="bfloat16 gradient compression hook")
    parser.add_argument("--dump", default="", help="write final parameters to DUMP.rank<r>")
    parser.add_argument("--time-steps", action="store_true",
                        help="print the mean step time after 20 warm-up steps (rank 0)")
    return parser.parse_args()


def main():
    args = parse_args()
    if args.backend == "loom" and loom_torch is None:
        raise SystemExit("loom_torch is not importable: build Loom and put <build>/python on PYTHONPATH")
    dist.init_process_group(args.backend)  # env:// (torchrun sets RANK, WORLD_SIZE, MASTER_*)
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(args.seed)  # the same initial weights everywhere (DDP also broadcasts them)
    model = nn.Sequential(nn.Linear(2, args.hidden), nn.ReLU(), nn.Linear(args.hidden, args.hidden), nn.ReLU(),
                          nn.Linear(args.hidden, 3))
    ddp = DistributedDataParallel(model)
    if args.bf16_hook:
        ddp.register_comm_hook(None, bfloat16_compression)
    if args.zero:
        optimizer = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=torch.optim.SGD, lr=0.1, momentum=0.9)
    else:
        optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    features, labels = spiral(2000, args.seed)
    shard = slice(rank, None, world)
    x, y = features[shard], labels[shard]
    loss_fn = nn.CrossEntropyLoss()
    batches = math.ceil(len(x) / args.batch)
    timed_from = None
    for step in range(args.steps):
        if step == min(20, args.steps - 1):
            dist.barrier()
            timed_from = time.perf_counter()
        first = (step % batches) * args.batch
        xb, yb = x[first:first + args.batch], y[first:first + args.batch]
        synchronise = (step + 1) % args.accumulate == 0
        if synchronise:
            loss = loss_fn(ddp(xb), yb) / args.accumulate
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        else:
            with ddp.no_sync():
                (loss_fn(ddp(xb), yb) / args.accumulate).backward()
        if rank == 0 and (step + 1) % 100 == 0:
            print(f"step {step + 1}: loss {loss.item() * args.accumulate:.4f}", flush=True)
    if args.time_steps:
        dist.barrier()
        if rank == 0:
            print(f"step time {(time.perf_counter() - timed_from) * 1e3 / (args.steps - min(20, args.steps - 1)):.3f} ms",
                  flush=True)
    with torch.no_grad():
        accuracy = (model(features).argmax(dim=1) == labels).float().mean().item()
    if rank == 0:
        print(f"{args.backend}: {world} ranks, accuracy {accuracy:.4f}", flush=True)
    if args.dump:
        torch.save([p.detach().clone() for p in model.parameters()], f"{args.dump}.rank{rank}")
    dist.barrier()  # rank 0 hosts the store: nobody leaves before everyone is done with it
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
