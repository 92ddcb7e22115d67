#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""torch's ProcessGroupNCCL on Loom's libnccl.so.2, two processes on one GPU (cuda:0).

tests/gpu/run.sh starts it with LD_PRELOAD=<build>/src/nccl/libnccl.so.2 (and that folder first
on LD_LIBRARY_PATH): the loader then answers libtorch_cuda's NEEDED libnccl.so.2 with Loom's
library, already loaded, and torch's own copy of NCCL is never mapped. This process (the
launcher) starts itself twice as the workers, rank 0 and rank 1 of a job found through
MASTER_ADDR/MASTER_PORT (torch's env:// rendezvous), waits for both with a time limit and
checks what they printed.

Each worker: torch.cuda.set_device(0); dist.init_process_group("nccl"); all-reduce (sum) of a
float32 and an int32 CUDA tensor of 1<<20 elements and a max of an int32 one, broadcast, and
all_gather_into_tensor, every result an exact integer checked against its construction; then
/proc/self/maps must hold exactly one libnccl, Loom's (under --loom-dir), and the worker prints
what torch reports as NCCL's version. The launcher also wants Loom's "Loom version" line
(LOOM_DEBUG=INFO, LOOM_DEBUG_SUBSYS=INIT) from each worker: the proof that Loom's library made
the communicator (a torch that carries NCCL statically would map Loom's library but never call
it).

Exit status: 0 passed; 1 failed (each worker's output is printed); 2 usage; 77 skipped, the
reason printed (no torch, no CUDA in torch, torch without NCCL).

  LD_PRELOAD=<build>/src/nccl/libnccl.so.2 torch_nccl_on_loom.py --loom-dir <build>/src/nccl [--timeout S]
"""
import argparse
import importlib.util
import os
import socket
import subprocess
import sys
import tempfile
import time

SKIP = 77
WORLD = 2
COUNT = 1 << 20


def libnccl_mapped():
    """The distinct mapped files whose basename starts with libnccl, in map order."""
    seen = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            at = line.find("/")
            if at < 0:
                continue
            path = line[at:].rstrip("\n")
            if os.path.basename(path).startswith("libnccl") and path not in seen:
                seen.append(path)
    return seen


def worker(loom_dir):
    rank = int(os.environ["RANK"])
    who = "rank %d/%d" % (rank, WORLD)

    def say(text):
        print("%s: %s" % (who, text), flush=True)

    try:
        import torch
        import torch.distributed as dist
    except Exception as error:  # an ImportError, or a missing symbol in libtorch_cuda
        say("cannot import torch: %s: %s" % (type(error).__name__, error))
        return SKIP if isinstance(error, ModuleNotFoundError) else 1
    if not torch.cuda.is_available():
        say("skipped: torch %s has no usable CUDA (torch.version.cuda %s, %d devices)"
            % (torch.__version__, torch.version.cuda, torch.cuda.device_count()))
        return SKIP
    if not dist.is_available() or not dist.is_nccl_available():
        say("skipped: torch %s was built without NCCL" % torch.__version__)
        return SKIP

    from datetime import timedelta
    torch.cuda.set_device(0)
    device = torch.device("cuda", 0)
    say("torch %s (CUDA %s) on %s" % (torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0)))
    started = time.monotonic()
    dist.init_process_group("nccl", rank=rank, world_size=WORLD, timeout=timedelta(seconds=60))
    wrong = []

    def expect(name, got, want):
        got = got.cpu()
        if not torch.equal(got, want):
            bad = (got != want).nonzero()
            first = int(bad[0][0]) if len(bad) else -1
            wrong.append(name)
            say("WRONG %s: %d elements differ; the first, [%d], holds %s, expected %s"
                % (name, len(bad), first, got.flatten()[first].item(), want.flatten()[first].item()))
        else:
            say("%s: ok" % name)

    index = torch.arange(COUNT, dtype=torch.int64)
    # rank r holds (i % 251) - 125 + 1000 r: every sum and max exact in float32 and int32
    mine = [(index % 251) - 125 + 1000 * r for r in range(WORLD)]

    for dtype in (torch.float32, torch.int32):
        x = mine[rank].to(dtype).to(device)
        dist.all_reduce(x)
        expect("all_reduce sum %s x %d" % (dtype, COUNT), x, sum(mine).to(dtype))
    x = mine[rank].to(torch.int32).to(device)
    dist.all_reduce(x, op=dist.ReduceOp.MAX)
    expect("all_reduce max int32 x %d" % COUNT, x, torch.stack(mine).max(dim=0).values.to(torch.int32))

    x = mine[rank].to(torch.float32).to(device)
    dist.broadcast(x, src=WORLD - 1)
    expect("broadcast from rank %d float32 x %d" % (WORLD - 1, COUNT), x, mine[WORLD - 1].to(torch.float32))

    out = torch.empty(WORLD * 1001, dtype=torch.int32, device=device)
    dist.all_gather_into_tensor(out, mine[rank][:1001].to(torch.int32).to(device))
    expect("all_gather_into_tensor int32 x 1001", out, torch.cat([m[:1001] for m in mine]).to(torch.int32))

    torch.cuda.synchronize()
    say("collectives done in %.2f s after init_process_group started" % (time.monotonic() - started))
    try:
        version = torch.cuda.nccl.version()
    except Exception as error:
        version = "unknown (%s)" % error
    say("torch.cuda.nccl.version(): %s" % (version,))

    mapped = libnccl_mapped()
    for path in mapped:
        say("libnccl: %s" % path)
    loom_real = os.path.realpath(loom_dir)
    ours = [p for p in mapped if os.path.dirname(os.path.realpath(p)) == loom_real]
    if len(mapped) != 1 or len(ours) != 1:
        say("WRONG: expected exactly one libnccl mapped, Loom's (under %s); mapped: %s"
            % (loom_real, ", ".join(mapped) or "none"))
        wrong.append("maps")
    dist.destroy_process_group()
    if wrong:
        say("FAILED: %s" % ", ".join(wrong))
        return 1
    say("passed")
    return 0


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launcher(args):
    if importlib.util.find_spec("torch") is None:
        print("skipped: no torch for %s" % sys.executable)
        return SKIP
    loom_lib = os.path.realpath(os.path.join(args.loom_dir, "libnccl.so.2"))
    preloaded = [os.path.realpath(p) for p in os.environ.get("LD_PRELOAD", "").replace(":", " ").split()]
    if loom_lib not in preloaded:
        print("usage: LD_PRELOAD must name %s (it is %r)" % (loom_lib, os.environ.get("LD_PRELOAD", "")))
        return 2
    env = dict(os.environ)
    for key in [k for k in env if k.startswith("NCCL_")]:  # the machine's NCCL settings stay out
        del env[key]
    env.update({
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(free_port()),
        "WORLD_SIZE": str(WORLD),
        "LOOM_DEBUG": "INFO",
        "LOOM_DEBUG_SUBSYS": "INIT",
        "LOOM_DEVICE": env.get("LOOM_DEVICE", "cuda"),
        "LOOM_SOCKET_IFNAME": env.get("LOOM_SOCKET_IFNAME", "lo"),
        "LOOM_TIMEOUT_MS": "30000",
        "PYTHONUNBUFFERED": "1",
    })
    print("LD_PRELOAD=%s, MASTER_PORT=%s, %d workers on cuda:0" % (env["LD_PRELOAD"], env["MASTER_PORT"], WORLD),
          flush=True)
    procs, outs = [], []
    with tempfile.TemporaryDirectory(prefix="torch-nccl-loom-") as tmp:
        for rank in range(WORLD):
            out = open(os.path.join(tmp, "rank%d.txt" % rank), "w+")
            env_rank = dict(env, RANK=str(rank), LOCAL_RANK=str(rank))
            procs.append(subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker",
                                           "--loom-dir", args.loom_dir],
                                          stdout=out, stderr=subprocess.STDOUT, env=env_rank))
            outs.append(out)
        deadline = time.monotonic() + args.timeout
        timed_out = False
        while any(p.poll() is None for p in procs):
            if time.monotonic() > deadline:
                timed_out = True
                for p in procs:
                    if p.poll() is None:
                        p.kill()
                for p in procs:
                    p.wait()
                break
            time.sleep(0.1)
        texts = []
        for out in outs:
            out.seek(0)
            texts.append(out.read())
            out.close()
    codes = [p.returncode for p in procs]
    for rank, text in enumerate(texts):
        print("----- rank %d (exit %s) -----" % (rank, codes[rank]))
        print(text.rstrip("\n"))
    print("-----")
    if timed_out:
        print("FAILED: the workers ran past %d s and were killed" % args.timeout)
        return 1
    if all(c == SKIP for c in codes):
        print("skipped (the reason is in the workers' output above)")
        return SKIP
    failed = [r for r, c in enumerate(codes) if c != 0]
    if failed:
        print("FAILED: rank(s) %s exited %s" % (failed, [codes[r] for r in failed]))
        return 1
    no_loom = [r for r, text in enumerate(texts) if "Loom version" not in text]
    if no_loom:
        print("FAILED: no 'Loom version' line from rank(s) %s: Loom's library did not make their "
              "communicator (does this torch carry NCCL statically?)" % no_loom)
        return 1
    print("passed: torch ProcessGroupNCCL ran on Loom's libnccl.so.2, %d processes on cuda:0" % WORLD)
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--loom-dir", required=True, help="<build>/src/nccl")
    parser.add_argument("--timeout", type=float, default=100, help="seconds for the workers (default 100)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args.loom_dir)
    return launcher(args)


if __name__ == "__main__":
    sys.exit(main())
