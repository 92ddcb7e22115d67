# SPDX-License-Identifier: Apache-2.0
"""The ranks of the torch suite: `python3 workers.py CASE RANK WORLD INIT_FILE BACKEND` runs
one case on one rank and exits 0 when every check held, 1 with the failures on stderr.
Data is integer-valued, so every result is exact and compared with ==."""
import os
import sys
import time
import traceback
import warnings

import torch
import torch.distributed as dist

import loom_torch  # noqa: F401  registers "loom"

warnings.filterwarnings("ignore")  # torch 1.13 warns that _all_gather_base and others are private

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.uint8,
          torch.int32, torch.int64]
SIZES = [0, 1, 7, 4099, 1 << 18]  # 1 << 18 float32 elements: 1 MiB


def leave(checks):
    """Exits without destroying the group (it has failed, or this rank plays dead): 0 when
    every check held, else 1 with the failures on stderr."""
    if checks.failures:
        sys.stderr.write("\n".join(checks.failures) + "\n")
        sys.stderr.flush()
    os._exit(1 if checks.failures else 0)


class Checks:
    def __init__(self, rank):
        self.rank = rank
        self.failures = []

    def equal(self, got, want, what):
        if got.dtype != want.dtype or got.shape != want.shape or not torch.equal(got, want):
            self.failures.append(f"rank {self.rank}: {what}: got {got.flatten()[:8].tolist()} "
                                 f"({got.dtype}, {tuple(got.shape)}), want {want.flatten()[:8].tolist()} "
                                 f"({want.dtype}, {tuple(want.shape)})")

    def raises(self, call, mention, what):
        try:
            call()
        except (RuntimeError, ValueError) as error:
            if mention not in str(error):
                self.failures.append(f"rank {self.rank}: {what}: message lacks {mention!r}: {error}")
            return str(error)
        self.failures.append(f"rank {self.rank}: {what}: no error")
        return None


def values(rank, count, dtype, salt=0):
    """Small integers that every dtype holds exactly, different per rank and element."""
    base = torch.arange(count, dtype=torch.int64)
    data = (base * 3 + rank * 5 + salt) % 7 + 1
    return data.to(dtype)


def reference_sum(world, count, dtype, salt=0):
    total = sum(values(r, count, torch.int64, salt) for r in range(world))
    return total.to(dtype)


def case_ops(checks, rank, world):
    """Every operation in every dtype and size, against a Python reference."""
    for dtype in DTYPES:
        for count in SIZES:
            if dtype in (torch.int8, torch.uint8) and count > 4099:
                continue  # sums of 7 * world stay exact, but keep the int8 grid small
            label = f"{dtype} x {count}"
            t = values(rank, count, dtype)
            dist.all_reduce(t)
            checks.equal(t, reference_sum(world, count, dtype), f"all_reduce sum {label}")
            for op, fold in ((dist.ReduceOp.MAX, torch.maximum), (dist.ReduceOp.MIN, torch.minimum)):
                t = values(rank, count, dtype)
                dist.all_reduce(t, op=op)
                want = values(0, count, dtype)
                for r in range(1, world):
                    want = fold(want, values(r, count, dtype))
                checks.equal(t, want, f"all_reduce {op} {label}")
            t = values(rank, count, dtype)
            dist.broadcast(t, src=world - 1)
            checks.equal(t, values(world - 1, count, dtype), f"broadcast {label}")
            t = values(rank, count, dtype)
            dist.reduce(t, dst=0)
            if rank == 0:
                checks.equal(t, reference_sum(world, count, dtype), f"reduce {label}")
            outs = [torch.empty(count, dtype=dtype) for _ in range(world)]
            dist.all_gather(outs, values(rank, count, dtype))
            for r in range(world):
                checks.equal(outs[r], values(r, count, dtype), f"all_gather[{r}] {label}")
            flat = torch.empty(count * world, dtype=dtype)
            dist._all_gather_base(flat, values(rank, count, dtype))
            checks.equal(flat, torch.cat([values(r, count, dtype) for r in range(world)]), f"_all_gather_base {label}")
            out = torch.empty(count, dtype=dtype)
            dist.reduce_scatter(out, [values(rank, count, dtype, salt=j) for j in range(world)])
            checks.equal(out, reference_sum(world, count, dtype, salt=rank), f"reduce_scatter {label}")
            out = torch.empty(count, dtype=dtype)
            dist._reduce_scatter_base(out, torch.cat([values(rank, count, dtype, salt=j) for j in range(world)]))
            checks.equal(out, reference_sum(world, count, dtype, salt=rank), f"_reduce_scatter_base {label}")
            out = torch.empty(count * world, dtype=dtype)
            dist.all_to_all_single(out, torch.cat([values(rank, count, dtype, salt=j) for j in range(world)]))
            checks.equal(out, torch.cat([values(r, count, dtype, salt=rank) for r in range(world)]),
                         f"all_to_all_single {label}")
            gathered = [torch.empty(count, dtype=dtype) for _ in range(world)] if rank == 0 else None
            dist.gather(values(rank, count, dtype), gather_list=gathered, dst=0)
            if rank == 0:
                for r in range(world):
                    checks.equal(gathered[r], values(r, count, dtype), f"gather[{r}] {label}")
            out = torch.empty(count, dtype=dtype)
            scatter_list = [values(0, count, dtype, salt=j) for j in range(world)] if rank == 0 else None
            dist.scatter(out, scatter_list=scatter_list, src=0)
            checks.equal(out, values(0, count, dtype, salt=rank), f"scatter {label}")
    # Uneven all-to-all: rank r sends r + j + 1 rows to rank j.
    send_splits = [rank + j + 1 for j in range(world)]
    recv_splits = [r + rank + 1 for r in range(world)]
    source = torch.cat([torch.full((s, 2), float(100 * rank + j)) for j, s in enumerate(send_splits)])
    out = torch.empty(sum(recv_splits), 2)
    dist.all_to_all_single(out, source, output_split_sizes=recv_splits, input_split_sizes=send_splits)
    want = torch.cat([torch.full((s, 2), float(100 * r + rank)) for r, s in enumerate(recv_splits)])
    checks.equal(out, want, "all_to_all_single uneven")
    outs = [torch.empty(r + rank + 1) for r in range(world)]
    dist.all_to_all(outs, [torch.full((rank + j + 1,), float(10 * rank + j)) for j in range(world)])
    for r in range(world):
        checks.equal(outs[r], torch.full((r + rank + 1,), float(10 * r + rank)), f"all_to_all[{r}]")
    # Coalesced, async with futures, AVG, PRODUCT, bool, non-contiguous, send/recv, barrier.
    tensors = [values(rank, 5, torch.int64), values(rank, 3, torch.int64, salt=1)]
    work = dist.all_reduce_coalesced(tensors, async_op=True)
    work.wait()
    checks.equal(tensors[0], reference_sum(world, 5, torch.int64), "all_reduce_coalesced[0]")
    checks.equal(tensors[1], reference_sum(world, 3, torch.int64, salt=1), "all_reduce_coalesced[1]")
    t = values(rank, 6, torch.float64)
    work = dist.all_reduce(t, async_op=True)
    result = work.get_future().wait()
    checks.equal(result[0], reference_sum(world, 6, torch.float64), "future of all_reduce")
    t = torch.full((4,), float(2 * (rank + 1)))
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    checks.equal(t, torch.full((4,), float(world + 1)), "all_reduce avg")
    t = torch.full((3,), 2, dtype=torch.int64)
    dist.all_reduce(t, op=dist.ReduceOp.PRODUCT)
    checks.equal(t, torch.full((3,), 2 ** world, dtype=torch.int64), "all_reduce product")
    flags = torch.tensor([rank == 0, False, True])
    dist.all_reduce(flags)
    checks.equal(flags, torch.tensor([True, False, True]), "all_reduce bool (or)")
    grid = values(rank, 24, torch.float32).view(4, 6)
    column = grid[:, 1]  # a strided view: written back after the call
    dist.all_reduce(column)
    checks.equal(grid[:, 1], reference_sum(world, 24, torch.float32).view(4, 6)[:, 1], "non-contiguous all_reduce")
    peer_to = (rank + 1) % world
    peer_from = (rank - 1) % world
    if world > 1:
        request = dist.isend(values(rank, 9, torch.int32), peer_to)
        got = torch.empty(9, dtype=torch.int32)
        dist.recv(got, peer_from)
        request.wait()
        checks.equal(got, values(peer_from, 9, torch.int32), "send/recv ring")
    dist.barrier()


def case_errors(checks, rank, world):
    """Bad arguments raise a clear error on the caller and leave the group usable."""
    checks.raises(lambda: dist.all_gather([torch.empty(3)] * (world + 1), torch.ones(3)), "output_tensor_list",
                  "all_gather with a wrong list length")
    checks.raises(lambda: dist.all_gather([torch.empty(4)] * world, torch.ones(3)), "elements",
                  "all_gather with a wrong output size")
    checks.raises(lambda: dist.all_reduce(torch.ones(2, dtype=torch.int16)), "dtype", "int16 all_reduce")
    z = torch.full((3,), complex(1, 2), dtype=torch.complex64)  # torch hands it over as float pairs
    dist.all_reduce(z)
    checks.equal(z, torch.full((3,), complex(world, 2 * world), dtype=torch.complex64), "complex all_reduce")
    checks.raises(lambda: dist.all_reduce(torch.ones(2), op=dist.ReduceOp.BAND), "bitwise", "BAND")
    sparse = torch.sparse_coo_tensor(torch.tensor([[0, 2]]), torch.tensor([1.0, 2.0]), (4,))
    checks.raises(lambda: dist.all_reduce(sparse), "dense (strided)", "sparse all_reduce")
    checks.raises(lambda: dist.send(torch.ones(1), (rank + 1) % world, tag=3), "tag 3", "tagged send")
    checks.raises(lambda: dist.recv(torch.ones(1)), "any source", "recv from any source")
    checks.raises(lambda: dist.all_to_all_single(torch.empty(world + 1), torch.ones(world + 1)), "divisible",
                  "all_to_all_single of an odd size")
    t = torch.ones(5)
    dist.all_reduce(t)  # still usable
    checks.equal(t, torch.full((5,), float(world)), "all_reduce after the errors")


def case_mismatch(checks, rank, world):
    """Ranks that disagree on a collective's size all raise (Gloo hangs or mixes data here)."""
    message = checks.raises(lambda: dist.all_reduce(torch.ones(10 + rank)), "", "all_reduce of different sizes")
    if message is not None and "ranks disagree" not in message:
        checks.failures.append(f"rank {rank}: the mismatch message does not say what differs: {message}")
    leave(checks)


def case_killed(checks, rank, world):
    """The last rank dies mid-training; every survivor's next collective raises within the timeout."""
    t = torch.ones(1000)
    dist.all_reduce(t)
    if rank == world - 1:
        os._exit(0)  # no destroy: as if killed
    start = time.monotonic()
    message = checks.raises(lambda: [dist.all_reduce(torch.ones(1000)) for _ in range(3)], f"rank {world - 1}",
                            "all_reduce after a death")
    if os.environ.get("TORCH_SUITE_VERBOSE"):
        sys.stderr.write(f"rank {rank}: {message}\n")
    if time.monotonic() - start > 20:
        checks.failures.append(f"rank {rank}: the error took {time.monotonic() - start:.1f} s")
    leave(checks)


def no_c_api_words(checks, rank, message, what):
    """A message a PyTorch user reads names what they did, not Loom's C calls."""
    if message is not None and ("loomComm" in message or "communicator" in message):
        checks.failures.append(f"rank {rank}: {what}: the message speaks of the C API: {message}")


def await_file(path, seconds=30):
    give_up = time.monotonic() + seconds
    while not os.path.exists(path) and time.monotonic() < give_up:
        time.sleep(0.01)


def case_departed(checks, rank, world):
    """The last rank destroys its process group (and lives on, or exits) while the others run a
    collective: their error names it, and what it did, in torch.distributed's words."""
    dist.all_reduce(torch.ones(1000))  # everyone is connected
    leaver = world - 1
    marker = os.environ["TORCH_SUITE_MARKER"]

    def await_survivors():
        for survivor in range(leaver):
            await_file(f"{marker}.rank{survivor}")

    if rank == leaver:
        dist.destroy_process_group()
        if os.environ.get("TORCH_SUITE_LEAVER_EXITS"):
            sys.exit(0)  # a normal exit, right after the destroy
        await_survivors()  # lives on until every survivor has its error
        os._exit(0)
    message = checks.raises(lambda: dist.all_reduce(torch.ones(1000)),
                            f"rank {leaver} (pid ", "all_reduce after a peer left")
    if message is not None and "exited or destroyed its process group" not in message:
        checks.failures.append(f"rank {rank}: the error does not say what rank {leaver} did: {message}")
    no_c_api_words(checks, rank, message, "all_reduce after a peer left")
    if os.environ.get("TORCH_SUITE_VERBOSE"):
        sys.stderr.write(f"rank {rank}: {message}\n")
    with open(f"{marker}.rank{rank}", "w"):
        pass
    # A survivor that exits before the others have their error would be a death they report.
    await_survivors()
    leave(checks)


def case_unusable(checks, rank, world):
    """After a collective the ranks disagree on, the next one says that the group is unusable
    since that call and must be made anew, in torch.distributed's words."""
    checks.raises(lambda: dist.all_reduce(torch.ones(10 + rank)), "ranks disagree", "all_reduce of different sizes")
    message = checks.raises(lambda: dist.all_reduce(torch.ones(10)), "the process group is unusable since its all_reduce #",
                            "the all_reduce after it")
    for phrase in ["destroy it and create a new one (destroy_process_group() then init_process_group(), or a new "
                   "new_group())", "The failure of all_reduce #"]:
        if message is not None and phrase not in message:
            checks.failures.append(f"rank {rank}: the message lacks {phrase!r}: {message}")
    no_c_api_words(checks, rank, message, "the all_reduce after a failed one")
    if os.environ.get("TORCH_SUITE_VERBOSE"):
        sys.stderr.write(f"rank {rank}: {message}\n")
    leave(checks)


def case_async(checks, rank, world):
    """Operations run on the group's Loom stream: many in flight, completed in issue order,
    not complete before the peers join; futures, wait(timeout) and errors through wait()."""
    import datetime
    # The last rank joins 1.5 s late: before that, rank 0's work cannot be complete, and a
    # wait with a short timeout raises; later the same work completes.
    if rank == world - 1:
        time.sleep(1.5)
    chain = torch.ones(4099, dtype=torch.int64)
    works = [dist.all_reduce(chain, async_op=True) for _ in range(6)]  # each sums the previous result
    parts = [values(rank, 1000 + i, torch.float32) for i in range(8)]
    works += [dist.all_reduce(part, async_op=True) for part in parts]
    gathered = [torch.empty(7) for _ in range(world)]
    works.append(dist.all_gather(gathered, torch.full((7,), float(rank)), async_op=True))
    if rank == 0 and world > 1:
        if works[-1].is_completed():
            checks.failures.append("rank 0: a collective completed before the last rank joined")
        try:
            works[-1].wait(timeout=datetime.timedelta(milliseconds=200))
            checks.failures.append("rank 0: wait(200 ms) returned before the last rank joined")
        except RuntimeError as error:
            if "timed out" not in str(error).lower():
                checks.failures.append(f"rank 0: wait(200 ms) raised something else: {error}")
    future = works[-1].get_future().then(lambda fut: [t * 2 for t in fut.value()])
    for work in works:
        work.wait()
        if not work.is_completed() or not work.is_success():
            checks.failures.append(f"rank {rank}: a waited work is not complete and successful")
    checks.equal(chain, torch.full((4099,), world ** 6, dtype=torch.int64), "six chained in-place all_reduce")
    for i, part in enumerate(parts):
        checks.equal(part, reference_sum(world, 1000 + i, torch.float32), f"in-flight all_reduce {i}")
    for peer in range(world):
        checks.equal(gathered[peer], torch.full((7,), float(peer)), f"all_gather block {peer}")
        checks.equal(future.wait()[peer], torch.full((7,), 2.0 * peer), f"future callback on block {peer}")
    # A future's callback that waits for another collective (PowerSGD's hook does) must not
    # wait for work queued behind itself: callbacks run off the stream's thread.
    def nested(fut):
        inner = torch.ones(3)
        dist.all_reduce(inner, async_op=True).get_future().wait()
        return [fut.value()[0] + inner[0]]
    chained = dist.all_reduce(torch.ones(5), async_op=True).get_future().then(nested)
    checks.equal(chained.wait()[0], torch.full((5,), 2.0 * world), "a callback waiting on a nested all_reduce")
    # PowerSGD end to end: DDP with its hook, which waits inside its callbacks.
    from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as powerSGD
    from torch.nn.parallel import DistributedDataParallel
    torch.manual_seed(0)
    model = DistributedDataParallel(torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Linear(32, 4)))
    state = powerSGD.PowerSGDState(process_group=None, matrix_approximation_rank=1, start_powerSGD_iter=2,
                                   use_error_feedback=True, warm_start=True)
    model.register_comm_hook(state, powerSGD.powerSGD_hook)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    torch.manual_seed(1 + rank)
    for _ in range(5):
        optimizer.zero_grad()
        model(torch.randn(8, 16)).square().sum().backward()
        optimizer.step()
    fingerprint = torch.cat([p.detach().flatten() for p in model.parameters()])
    everyone = [torch.empty_like(fingerprint) for _ in range(world)]
    dist.all_gather(everyone, fingerprint)
    for peer in range(world):
        checks.equal(everyone[peer], fingerprint, f"PowerSGD parameters of rank {peer} against this rank's")
    # A group destroyed inside its own future's callback: its last reference goes on the
    # completion thread that runs the callback, which must not wait for itself. A large
    # all_gather queued first (8 MiB from each rank into a fresh output: tens of ms) usually keeps
    # the future pending when then() is called, so the callback runs on that thread. Usually: a
    # rank descheduled for that long (CI's machine under load) finds the future complete, and
    # then() rightly runs the callback inline. That attempt says nothing about the completion
    # thread, so the ranks agree (a MAX all_reduce) to try again with a new group.
    import threading
    caller = threading.get_ident()
    for attempt in range(8):
        holder = {"group": dist.new_group(list(range(world)))}
        ran_on = []
        def destroy_group(fut, holder=holder, ran_on=ran_on):
            ran_on.append(threading.get_ident())
            group = holder.pop("group")
            dist.destroy_process_group(group)
            del group
            return fut.value()
        big = torch.ones((2 << 20) // world * world)
        dist.all_gather_into_tensor(torch.empty(big.numel() * world), big, group=holder["group"], async_op=True)
        small = dist.all_reduce(torch.ones(6), group=holder["group"], async_op=True)
        dropped = small.get_future().then(destroy_group)
        ran_inline = caller in ran_on  # the future was complete before then(): no completion thread
        checks.equal(dropped.wait()[0], torch.full((6,), float(world)), "a group destroyed in its own callback")
        if len(ran_on) != 1:
            checks.failures.append(f"rank {rank}: the callback ran {len(ran_on)} times, not once")
        retry = torch.tensor([1.0 if ran_inline else 0.0])
        dist.all_reduce(retry, op=dist.ReduceOp.MAX)
        if retry.item() == 0.0:
            if caller in ran_on:
                checks.failures.append(f"rank {rank}: the callback ran on the caller's thread, not a completion thread")
            break
    else:
        checks.failures.append(f"rank {rank}: in 8 attempts the future was never pending when then() was called")
    # An error of the calls themselves (ranks disagree) is raised by wait(), not by the call.
    if world > 1:
        work = dist.all_reduce(torch.ones(10 + rank), async_op=True)
        message = checks.raises(work.wait, "ranks disagree", "wait() on a mismatched all_reduce")
        if message is not None and work.is_success():
            checks.failures.append(f"rank {rank}: a failed work says it succeeded")
        leave(checks)


def case_batch(checks, rank, world):
    """batch_isend_irecv: every rank posts its receives from all others before its sends (Gloo's
    own test's order), then a ring exchange: deadlock-free because torch's coalescing window is
    one Loom group."""
    for dtype in (torch.float32, torch.int64):
        recvs = {peer: torch.full((4099,), -1, dtype=dtype) for peer in range(world) if peer != rank}
        ops = [dist.P2POp(dist.irecv, recvs[peer], peer) for peer in recvs]
        ops += [dist.P2POp(dist.isend, torch.full((4099,), rank + 1, dtype=dtype), peer) for peer in recvs]
        for work in dist.batch_isend_irecv(ops) if ops else []:
            work.wait()
        for peer, got in recvs.items():
            checks.equal(got, torch.full((4099,), peer + 1, dtype=dtype), f"batch {dtype} from rank {peer}")
    if world > 1:
        right, left = (rank + 1) % world, (rank - 1) % world
        got = torch.zeros(7)
        works = dist.batch_isend_irecv([dist.P2POp(dist.isend, torch.full((7,), float(rank)), right),
                                        dist.P2POp(dist.irecv, got, left)])
        for work in works:
            work.wait()
        checks.equal(got, torch.full((7,), float(left)), "ring exchange")


# Gloo 1.13 divides by zero (SIGFPE, the process dies) on zero-element tensors in these.
GLOO_DIES_ON_EMPTY = {"all_gather"}


def case_results(checks, rank, world):
    """Every operation Gloo has, in every dtype and size, run here on this backend; the results
    (or the error, where the backend refuses the case) go to $TORCH_RESULTS_DUMP.<backend>.rank<r>
    for the test to compare loom's against gloo's."""
    backend = dist.get_backend()
    results = {}

    def record(key, call):
        op = key.split(" ")[0]
        if backend == "gloo" and key.endswith(" x 0") and op in GLOO_DIES_ON_EMPTY:
            results[key] = f"not run: gloo 1.13 dies of SIGFPE on an empty {op}"
            return
        if backend == "gloo" and "torch.bfloat16" in key:
            # Gloo 1.13 refuses bfloat16, and the refusal resurfaces in its next barrier.
            results[key] = "not run: gloo 1.13 has no bfloat16"
            return
        try:
            results[key] = call()
        except (RuntimeError, ValueError) as error:
            results[key] = f"refused: {str(error).splitlines()[0]}"

    def all_reduce(t, op):
        dist.all_reduce(t, op=op)
        return t

    def gathered(t):
        outs = [torch.empty_like(t) for _ in range(world)]
        dist.all_gather(outs, t)
        return torch.cat(outs)

    def gather_to_last(t):
        outs = [torch.empty_like(t) for _ in range(world)] if rank == world - 1 else None
        dist.gather(t, gather_list=outs, dst=world - 1)
        return torch.cat(outs) if outs is not None else None  # a non-root gets nothing

    def scatter_from_last(count, dtype):
        out = torch.empty(count, dtype=dtype)
        chunks = [values(rank, count, dtype, salt=j) for j in range(world)] if rank == world - 1 else None
        dist.scatter(out, scatter_list=chunks, src=world - 1)
        return out

    def reduce_to_last(t):
        dist.reduce(t, dst=world - 1)
        return t if rank == world - 1 else None  # elsewhere the buffer is unspecified (Gloo leaves partial sums)

    def broadcast_from_last(t):
        dist.broadcast(t, src=world - 1)
        return t

    def all_to_all(count, dtype):
        out = torch.empty(count * world, dtype=dtype)
        dist.all_to_all_single(out, torch.cat([values(rank, count, dtype, salt=j) for j in range(world)]))
        return out

    def coalesced(count, dtype):
        tensors = [values(rank, count, dtype), values(rank, count + 2, dtype, salt=1)]
        dist.all_reduce_coalesced(tensors)
        return torch.cat(tensors)

    ops = {"sum": dist.ReduceOp.SUM, "max": dist.ReduceOp.MAX, "min": dist.ReduceOp.MIN,
           "product": dist.ReduceOp.PRODUCT}
    for dtype in DTYPES:
        for count in SIZES:
            label = f"{dtype} x {count}"
            for name, op in ops.items():
                if name == "product" and dtype in (torch.int8, torch.uint8):
                    continue  # 7 ** world overflows 8 bits
                record(f"all_reduce {name} {label}", lambda: all_reduce(values(rank, count, dtype), op))
            record(f"broadcast {label}", lambda: broadcast_from_last(values(rank, count, dtype)))
            record(f"reduce {label}", lambda: reduce_to_last(values(rank, count, dtype)))
            record(f"all_gather {label}", lambda: gathered(values(rank, count, dtype)))
            record(f"gather {label}", lambda: gather_to_last(values(rank, count, dtype)))
            record(f"scatter {label}", lambda: scatter_from_last(count, dtype))
            record(f"all_to_all_single {label}", lambda: all_to_all(count, dtype))
            record(f"all_reduce_coalesced {label}", lambda: coalesced(count, dtype))
            dist.barrier()  # a refusal on one rank only must not leave a peer's call unmatched
    torch.save(results, f"{os.environ['TORCH_RESULTS_DUMP']}.{backend}.rank{rank}")


CASES = {"results": case_results, "ops": case_ops, "batch": case_batch, "errors": case_errors,
         "mismatch": case_mismatch, "killed": case_killed,
         "async": case_async, "departed": case_departed, "unusable": case_unusable}


def main():
    case, rank, world, init_file, backend = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
    timeout = float(os.environ.get("TORCH_SUITE_TIMEOUT_S", "60"))
    import datetime
    dist.init_process_group(backend, init_method="file://" + init_file, rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=timeout))
    checks = Checks(rank)
    try:
        CASES[case](checks, rank, world)
    except Exception:  # noqa: BLE001 - reported as a failure of this rank
        checks.failures.append(f"rank {rank}: {traceback.format_exc()}")
    if checks.failures:
        leave(checks)  # the group may be broken: no orderly destroy
    dist.barrier()  # rank 0 hosts the store: nobody leaves before everyone is done with it
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
