#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Issue 5's acceptance check: kill one rank of a running job, the others must notice.

Starts RANKS processes of allreduce_loop (tests/support/allreduce_loop.c) as separate processes
joined through the environment (LOOM_RANK, LOOM_WORLD_SIZE, LOOM_COMM_ID on a free loopback
port, a fresh LOOM_COMM_SECRET) — not through loomrun, which would stop the survivors itself.
Once every rank has completed some all-reduces, one rank is killed with SIGKILL, and:
  - every survivor exits within 5 s of the kill, with code 3 (a call failed: non-zero, and not
    a crash), and its error (the "loom error:" line on stderr) names the dead rank;
  - /dev/shm holds nothing of Loom's afterwards: no name of the communicator (its names all
    start "loom-<commUid>", as test_dead_peer checks; the uid is derived from the secret as
    Loom derives it) and no other "loom*" entry that appeared during the round.
Rounds: kill rank 2, then rank 0 (the bootstrap root), over the default transport (shared
memory) and over TCP (LOOM_SHM_DISABLE=1). Prints PASS/FAIL per check; exits 1 on any failure.

  kill_one_rank.py path/to/allreduce_loop [--ranks 4] [--victims 2,0] [--transports shm,tcp]
                   [--count N] [--limit 5] [--timeout 240]
"""
import argparse
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time

MASK = (1 << 64) - 1
CHILDREN = []  # every Popen started, killed on the way out whatever happens
FAILURES = []


def report(ok, what):
    print(("PASS " if ok else "FAIL ") + what, flush=True)
    if not ok:
        FAILURES.append(what)


# ---- The communicator's /dev/shm prefix, as src/base/net/auth.cc derives it ----------------
def siphash24(key, data):
    def rotl(x, bits):
        return ((x << bits) | (x >> (64 - bits))) & MASK

    k0 = int.from_bytes(key[:8], "little")
    k1 = int.from_bytes(key[8:16], "little")
    v = [k0 ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D, k0 ^ 0x6C7967656E657261,
         k1 ^ 0x7465646279746573]

    def sip_round():
        v[0] = (v[0] + v[1]) & MASK
        v[1] = rotl(v[1], 13) ^ v[0]
        v[0] = rotl(v[0], 32)
        v[2] = (v[2] + v[3]) & MASK
        v[3] = rotl(v[3], 16) ^ v[2]
        v[0] = (v[0] + v[3]) & MASK
        v[3] = rotl(v[3], 21) ^ v[0]
        v[2] = (v[2] + v[1]) & MASK
        v[1] = rotl(v[1], 17) ^ v[2]
        v[2] = rotl(v[2], 32)

    def absorb(word):
        v[3] ^= word
        sip_round()
        sip_round()
        v[0] ^= word

    whole = len(data) - len(data) % 8
    for i in range(0, whole, 8):
        absorb(int.from_bytes(data[i:i + 8], "little"))
    absorb(((len(data) & 0xFF) << 56) | int.from_bytes(data[whole:], "little"))
    v[2] ^= 0xFF
    for _ in range(4):
        sip_round()
    return v[0] ^ v[1] ^ v[2] ^ v[3]


def comm_shm_prefix(secret_hex):
    uid = siphash24(bytes.fromhex(secret_hex), b"loom-commuid-v1") or 1
    return "loom-%016x" % uid


def loom_shm_entries():
    try:
        return {name for name in os.listdir("/dev/shm") if name.startswith("loom")}
    except FileNotFoundError:
        return set()


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---- One rank: a process and the threads that read its output and wait for its exit ---------
class Rank:
    ITERATION = re.compile(r"^rank \d+: iteration (\d+) ok$")

    def __init__(self, rank, argv, env):
        self.rank = rank
        self.iterations = 0
        self.stdout_tail = []
        self.stderr = []
        self.exit_time = None
        self.exited = threading.Event()
        self.proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     errors="replace")
        CHILDREN.append(self.proc)
        self.readers = [threading.Thread(target=self._read_stdout, daemon=True),
                        threading.Thread(target=self._read_stderr, daemon=True)]
        for reader in self.readers:
            reader.start()
        threading.Thread(target=self._wait, daemon=True).start()

    def _read_stdout(self):
        for line in self.proc.stdout:
            line = line.rstrip("\n")
            self.stdout_tail = (self.stdout_tail + [line])[-5:]
            match = self.ITERATION.match(line)
            if match:
                self.iterations = int(match.group(1))

    def _read_stderr(self):
        for line in self.proc.stderr:
            self.stderr.append(line.rstrip("\n"))

    def _wait(self):
        self.proc.wait()
        self.exit_time = time.monotonic()
        self.exited.set()

    def output(self):
        for reader in self.readers:
            reader.join(timeout=2)
        return self.stderr

    def loom_error(self):
        for line in self.output():
            if ": loom error: " in line:
                return line.split(": loom error: ", 1)[1]
        return None


def run_round(args, transport, victim, deadline):
    label = "[%s, kill rank %d]" % (transport, victim)
    print("---- %s: %d ranks of %s" % (label, args.ranks, os.path.basename(args.exe)), flush=True)
    secret = secrets.token_hex(16)
    prefix = comm_shm_prefix(secret)
    shm_before = loom_shm_entries()
    env = dict(os.environ)
    env.update({"LOOM_WORLD_SIZE": str(args.ranks), "LOOM_LOCAL_SIZE": str(args.ranks),
                "LOOM_COMM_ID": "127.0.0.1:%d" % free_port(), "LOOM_COMM_SECRET": secret})
    env.setdefault("LOOM_SOCKET_IFNAME", "lo")
    for name in ("LOOM_SHM_DISABLE", "LOOM_TRANSPORT", "LOOM_DEBUG", "LOOM_DEBUG_SUBSYS"):
        env.pop(name, None)
    if transport == "tcp":
        env["LOOM_SHM_DISABLE"] = "1"
    else:
        # The segment names Loom creates are traced: they prove the prefix derived above.
        env.update({"LOOM_DEBUG": "TRACE", "LOOM_DEBUG_SUBSYS": "SHM"})
    ranks = []
    for rank in range(args.ranks):
        rank_env = dict(env, LOOM_RANK=str(rank), LOOM_LOCAL_RANK=str(rank))
        ranks.append(Rank(rank, [args.exe, str(args.count)], rank_env))

    # Every rank must be running all-reduces before the kill.
    warm_until = min(deadline, time.monotonic() + 120)
    while time.monotonic() < warm_until:
        if all(r.iterations >= args.warmup for r in ranks) or any(r.exited.is_set() for r in ranks):
            break
        time.sleep(0.01)
    warm = all(r.iterations >= args.warmup for r in ranks) and not any(r.exited.is_set() for r in ranks)
    report(warm, "%s every rank completed %d all-reduces before the kill (%s)" %
           (label, args.warmup, ", ".join("rank %d: %d" % (r.rank, r.iterations) for r in ranks)))
    if not warm:
        for r in ranks:
            if r.exited.is_set():
                print("  rank %d exited %s early: %s" % (r.rank, r.proc.returncode,
                                                          " | ".join(r.output()[-5:])))
        for r in ranks:
            r.proc.kill()
        return

    ranks[victim].proc.send_signal(signal.SIGKILL)
    killed_at = time.monotonic()
    wait_until = min(deadline, killed_at + max(20.0, 4 * args.limit))
    for r in ranks:
        r.exited.wait(max(0.0, wait_until - time.monotonic()))
    hung = [r.rank for r in ranks if not r.exited.is_set()]
    for r in ranks:
        if not r.exited.is_set():
            r.proc.kill()
            r.exited.wait(5)

    report(ranks[victim].proc.returncode == -signal.SIGKILL,
           "%s rank %d was killed by SIGKILL (returncode %s)" %
           (label, victim, ranks[victim].proc.returncode))
    pattern = re.compile(r"\brank %d\b" % victim)
    for r in ranks:
        if r.rank == victim:
            continue
        if r.rank in hung:
            report(False, "%s rank %d did not exit within %.0f s of the kill (killed by the script)" %
                   (label, r.rank, wait_until - killed_at))
            continue
        elapsed = r.exit_time - killed_at
        report(elapsed <= args.limit, "%s rank %d exited %.3f s after the kill (limit %.0f s)" %
               (label, r.rank, elapsed, args.limit))
        code = r.proc.returncode
        # Non-zero is not enough: a crash or a sanitizer's abort is non-zero too.
        report(code == 3, "%s rank %d exited with code %s (3: a call failed with an error)" %
               (label, r.rank, code))
        if code != 3:
            print("  rank %d stderr:\n    %s" % (r.rank, "\n    ".join(r.output()[-40:])))
        error = r.loom_error()
        report(error is not None and pattern.search(error) is not None,
               "%s rank %d's error names rank %d: %s" % (label, r.rank, victim, error))
        if error is None:
            print("  rank %d stderr: %s" % (r.rank, " | ".join(r.output()[-5:])))

    # /dev/shm: nothing of this communicator, and no other Loom name that appeared meanwhile
    # (a short grace period lets a concurrent Loom job's short-lived names go).
    for _ in range(20):
        ours = sorted(n for n in os.listdir("/dev/shm") if n.startswith(prefix))
        new = sorted(loom_shm_entries() - shm_before)
        if not ours and not new:
            break
        time.sleep(0.1)
    report(not ours, "%s /dev/shm holds no name starting %s%s" %
           (label, prefix, "" if not ours else ": " + ", ".join(ours[:5])))
    report(not new, "%s /dev/shm holds no new loom* entry%s" %
           (label, "" if not new else ": " + ", ".join(new[:5])))
    if transport != "tcp":
        traced = set()
        for r in ranks:
            for line in r.output():
                match = re.search(r"(?:created|mapped) /?(loom[^ ]*)", line)
                if match:
                    traced.add(match.group(1))
        report(bool(traced) and all(name.startswith(prefix) for name in traced),
               "%s the %d segment names Loom traced start with the derived prefix %s%s" %
               (label, len(traced), prefix,
                "" if all(n.startswith(prefix) for n in traced) else ": " + ", ".join(sorted(traced)[:3])))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("exe", help="the allreduce_loop executable")
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--victims", default="2,0", help="ranks to kill, one round each")
    parser.add_argument("--transports", default="shm,tcp", help="shm (the default) and/or tcp")
    parser.add_argument("--count", type=int, default=1 << 20, help="float32 elements per call")
    parser.add_argument("--warmup", type=int, default=5, help="all-reduces each rank completes first")
    parser.add_argument("--limit", type=float, default=5.0, help="seconds a survivor may take")
    parser.add_argument("--timeout", type=float, default=240.0, help="hard limit for the whole run")
    args = parser.parse_args()
    args.exe = os.path.abspath(args.exe)

    def give_up(signum, frame):
        print("FAIL overall timeout of %.0f s" % args.timeout, flush=True)
        for child in CHILDREN:
            if child.poll() is None:
                child.kill()
        os._exit(1)

    signal.signal(signal.SIGALRM, give_up)
    signal.alarm(int(args.timeout) + 1)
    deadline = time.monotonic() + args.timeout
    # SipHash-2-4's reference vector (key 00..0f, empty message) guards the derivation above.
    report(siphash24(bytes(range(16)), b"") == 0x726FDB47DD0E0E31, "SipHash-2-4 reference vector")
    started = time.monotonic()
    try:
        for transport in args.transports.split(","):
            for victim in (int(v) for v in args.victims.split(",")):
                run_round(args, transport, victim, deadline)
    finally:
        for child in CHILDREN:
            if child.poll() is None:
                child.kill()
                child.wait()
    print("%s: %d failed checks (%.1f s)" % ("FAILED" if FAILURES else "PASSED", len(FAILURES),
                                              time.monotonic() - started), flush=True)
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
