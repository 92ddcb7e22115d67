#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Issue 14, finding 4: no kill timing may leave a shared-memory segment behind, and a restart
at the same MASTER_ADDR:PORT (torchrun-style, no LOOM_COMM_SECRET) must work.

  shm_leaks.py ALLREDUCE_LOOP [--jobs N] [--seed S]

Runs N short jobs of 2-4 ranks of tests/support/allreduce_loop, launched the way torchrun
does (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT; no LOOM_COMM_SECRET, so every name the job
makes derives from the address). Each job, picked by a seeded generator (the seed is printed;
pass it back with --seed to replay):
  - init-kill:   SIGKILL one rank, or every rank at once, at a random instant of init;
  - call-kill:   SIGKILL one rank, or every rank, at a random instant while they all-reduce;
  - init-exit:   one rank _exits (no cleanup) at a random instant of init.
Whatever is still running a short while later is SIGKILLed too (a launcher tearing the job
down). Once every process of the job is gone, /dev/shm must hold nothing the job made: a new
loom* name whose header names one of the job's pids, or that has no header yet. Then every job
that leaked, and the last job, is restarted at its address with the same number of ranks and
must run its all-reduces to the end on every rank.
"""
import argparse
import os
import random
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

FAILURES = []


def report(ok, what):
    print(("PASS " if ok else "FAIL ") + what, flush=True)
    if not ok:
        FAILURES.append(what)


def loom_shm_entries():
    try:
        return {name for name in os.listdir("/dev/shm") if name.startswith("loom")}
    except FileNotFoundError:
        return set()


def creator_pid(name):
    """The pid in the segment's header (ShmSegmentHeader: magic, version, creatorPid), 0 when
    the header was never written (the creator died first), None when the name is gone."""
    try:
        with open(os.path.join("/dev/shm", name), "rb") as segment:
            header = segment.read(16)
    except (FileNotFoundError, PermissionError):
        return None
    if len(header) < 16:
        return 0
    return struct.unpack_from("<i", header, 12)[0]


def free_port_pair():
    """MASTER_PORT such that MASTER_PORT + 1 (Loom's root listener under torchrun) is free."""
    for _ in range(100):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        if port > 1024:
            return port - 1
    raise RuntimeError("no free port")


def base_env():
    env = dict(os.environ)
    for name in list(env):
        if name.startswith(("LOOM_", "TORCHELASTIC_")) or name in (
                "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
            del env[name]
    env["LOOM_SOCKET_IFNAME"] = "lo"
    return env


class Job:
    """The ranks of one job; a thread per rank drains its stderr and notes when the rank first
    traces a segment it created (LOOM_DEBUG=TRACE, subsystem SHM): init-kills aim there."""

    def __init__(self, procs):
        self.procs = procs
        self.first_segment = threading.Event()
        self.tails = [[] for _ in procs]
        self.readers = [threading.Thread(target=self._drain, args=(i,), daemon=True) for i in range(len(procs))]
        for reader in self.readers:
            reader.start()

    def _drain(self, index):
        for line in self.procs[index].stderr:
            text = line.decode(errors="replace").rstrip()
            if " created " in text:
                self.first_segment.set()
            elif "TRACE" not in text:
                self.tails[index] = (self.tails[index] + [text])[-5:]

    def finish(self):
        for reader in self.readers:
            reader.join()
        for proc in self.procs:
            proc.stderr.close()


def launch(exe, nranks, port, args, extra_env=None):
    env = base_env()
    env.update({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "WORLD_SIZE": str(nranks),
                "LOCAL_WORLD_SIZE": str(nranks)})
    env.update(extra_env or {})
    procs = []
    for rank in range(nranks):
        rank_env = dict(env, RANK=str(rank), LOCAL_RANK=str(rank))
        rank_args = args(rank) if callable(args) else args
        procs.append(subprocess.Popen([exe] + rank_args, env=rank_env, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE))
    return Job(procs)


def reap(procs, grace):
    """Waits up to `grace` seconds for the job to end by itself, then SIGKILLs what is left."""
    until = time.monotonic() + grace
    for proc in procs:
        try:
            proc.wait(timeout=max(0.0, until - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def leaked_by(pids, before):
    """New loom* names in /dev/shm made by `pids` (or never stamped). Names of concurrent jobs
    in other builds come and go: a name is only counted if it is still there a moment later."""
    suspects = set()
    for _ in range(3):
        suspects = set()
        for name in loom_shm_entries() - before:
            pid = creator_pid(name)
            if pid is not None and (pid == 0 or pid in pids):
                suspects.add(name)
        if not suspects:
            return []
        time.sleep(0.05)
    return sorted(suspects)


def run_job(exe, index, rng, before):
    nranks = rng.randint(2, 4)
    kind = rng.choice(["init-kill", "init-kill", "call-kill", "init-exit"])
    everyone = kind != "init-exit" and rng.random() < 0.4
    victims = list(range(nranks)) if everyone else [rng.randrange(nranks)]
    port = free_port_pair()
    count = rng.choice([1024, 65536])
    # Init of a few ranks (process start included) takes tens of milliseconds here: random
    # instants over 0-150 ms cover it from exec to the first call. Init-kills count from the
    # moment the first rank has created a segment (0-4 ms later), where names exist.
    at_us = rng.randint(0, 150000) if kind != "init-kill" else rng.randint(0, 4000)
    # Survivors of an init death wait at most this long; the trace shows created segments.
    extra = {"LOOM_TIMEOUT_MS": "3000", "LOOM_DEBUG": "TRACE", "LOOM_DEBUG_SUBSYS": "SHM"}
    if kind == "init-exit":
        victim = victims[0]
        job = launch(exe, nranks, port,
                     lambda rank: [str(count), "0", str(at_us if rank == victim else 0)], extra)
    else:
        job = launch(exe, nranks, port, [str(count), "0"], extra)
        if kind == "call-kill":
            at_us = 200000 + rng.randint(0, 100000)  # after init: ranks are all-reducing
        else:
            job.first_segment.wait(timeout=5)
        time.sleep(at_us / 1e6)
        for victim in victims:
            job.procs[victim].send_signal(signal.SIGKILL)
    procs = job.procs
    reap(procs, grace=0.6 if kind != "call-kill" else 2.0)
    job.finish()
    pids = {proc.pid for proc in procs}
    leaked = leaked_by(pids, before)
    before.update(leaked)  # a later job is judged on its own names only
    what = "all ranks" if everyone else "rank %d" % victims[0]
    report(not leaked, "job %d (%s, %d ranks, %s at %.1f ms, port %d): %d segments left%s" %
           (index, kind, nranks, what, at_us / 1000.0, port, len(leaked),
            (": " + ", ".join(leaked[:4])) if leaked else ""))
    return nranks, port, leaked


def restart(exe, nranks, port):
    """A torchrun-style relaunch at the same address: every rank must finish its calls."""
    job = launch(exe, nranks, port, ["1024", "20"])
    procs = job.procs
    ok = True
    errors = []
    for index, proc in enumerate(procs):
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    job.finish()
    for index, proc in enumerate(procs):
        ok = ok and proc.returncode == 0
        if proc.returncode != 0:
            errors.append("rc %s: %s" % (proc.returncode, " / ".join(job.tails[index])[-300:]))
    report(ok, "restart of %d ranks at 127.0.0.1:%d (no LOOM_COMM_SECRET)%s" %
           (nranks, port, "" if ok else ": " + " | ".join(errors[:2])))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("exe", help="the allreduce_loop executable")
    parser.add_argument("--jobs", type=int, default=50)
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 32)
    print("seed %d (replay: --seed %d)" % (seed, seed), flush=True)
    rng = random.Random(seed)
    exe = os.path.abspath(args.exe)
    before = loom_shm_entries()
    jobs = [run_job(exe, index, rng, before) for index in range(args.jobs)]
    leaky = [job for job in jobs if job[2]]
    print("%d of %d jobs left segments behind (%d segments)" %
          (len(leaky), len(jobs), sum(len(job[2]) for job in leaky)), flush=True)
    for nranks, port, _ in (leaky[:4] + [jobs[-1]]):
        restart(exe, nranks, port)
    # Leave /dev/shm as it was, whatever happened.
    for _, _, leaked in leaky:
        for name in leaked:
            try:
                os.unlink(os.path.join("/dev/shm", name))
            except FileNotFoundError:
                pass
    print("%d failures (seed %d)" % (len(FAILURES), seed), flush=True)
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
