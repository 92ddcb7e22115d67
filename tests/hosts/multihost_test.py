#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Loom across hosts, on the K-host harness (loomhosts.py): real network namespaces on a bridge.

  multihost_test.py path/to/host_rank [PART ...]

Parts (all by default):
  isolation  a rank on one host can reach neither another host's memfd through /proc nor its
             memory with process_vm_readv (what makes a shm-across-hosts bug fail here)
  exact      every collective and send/recv, exact and alike on every rank, at 2 hosts x 2
             ranks, 3 x 1, 2 + 1 and an interleaved 2 x 2, under torchrun's and mpirun's
             environments; ranks of one host must use shm, ranks of different hosts sockets
  deterministic  LOOM_DETERMINISTIC=1: all-reduce, reduce-scatter and reduce bitwise alike at 4
             ranks on one host, 2 x 2 and 2 x 2 interleaved, and at 3, 3 x 1 and 2 + 1
  netem      delay, jitter, loss and reordering on a link where tc netem exists (says why not)
  waiting    3 hosts x 1 rank on this machine's cores, 8 B all-reduce, within 3x of one host's
             3 ranks with shm off: waiting follows the machine, not the host ID
  badinput   two hosts given one LOOM_HOSTID: a warning, sockets between them, exact results;
             also through PyTorch's store (loom_torch, when built)
  linkdown   2 x 2 in a loop; host 1's link goes down: every rank fails within LOOM_TIMEOUT_MS
             naming a rank of the other host and that host, and holds no memfd afterwards
  killhost   3 x 1 in a loop; host 1's processes are all killed: the survivors fail within
             LOOM_TIMEOUT_MS naming rank 1 and host 1, and hold no memfd afterwards
Needs root and namespaces; otherwise prints why and exits 77 (meson's "skipped").
"""
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import loomhosts  # noqa: E402

SKIP = 77
TIMEOUT_MS = 3000
FAILURES = []
HOST_RANK = None


def report(ok, what):
    print(("PASS " if ok else "FAIL ") + what, flush=True)
    if not ok:
        FAILURES.append(what)


def tail(text, lines=6):
    return " | ".join(text.strip().splitlines()[-lines:])


# ---- isolation -------------------------------------------------------------------------------
PROBE_OWNER = ("import ctypes, os, sys\n"
               "fd = os.memfd_create('loom-probe')\n"
               "secret = ctypes.create_string_buffer(b'loom-probe-secret')\n"
               "print(os.getpid(), fd, os.fstat(fd).st_ino, ctypes.addressof(secret), flush=True)\n"
               "sys.stdin.read()\n")
# Looks for the owner's memfd (by inode) and its secret (by address) through each pid given.
PROBE_READER = ("import ctypes, os, sys\n"
                "fd, inode, address = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])\n"
                "libc = ctypes.CDLL(None, use_errno=True)\n"
                "class iovec(ctypes.Structure): _fields_ = [('base', ctypes.c_void_p), ('len', ctypes.c_size_t)]\n"
                "for pid in [int(p) for p in sys.argv[4:]]:\n"
                "    try:\n"
                "        if os.stat('/proc/%d/fd/%s' % (pid, fd)).st_ino == inode: print('reached the memfd via pid', pid)\n"
                "    except OSError: pass\n"
                "    buf = ctypes.create_string_buffer(17)\n"
                "    local, remote = iovec(ctypes.addressof(buf), 17), iovec(address, 17)\n"
                "    if libc.process_vm_readv(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0) == 17 and \\\n"
                "       buf.raw == b'loom-probe-secret': print('read the memory via pid', pid)\n"
                "print('done')\n")


def isolation(cluster):
    owner = subprocess.Popen(cluster.hosts[1].enter() + [sys.executable, "-c", PROBE_OWNER],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        inner_pid, fd, inode, address = owner.stdout.readline().split()
        # Its pid as the machine numbers it: nsenter's child. Host 0 has processes of its own
        # under the inner pid, which must not lead to host 1's either.
        outer_pid = open("/proc/%d/task/%d/children" % (owner.pid, owner.pid)).read().split()[0]
        probe = [sys.executable, "-c", PROBE_READER, fd, inode, address]
        result = cluster.run_on(cluster.hosts[0], probe + [outer_pid, inner_pid])
        report(result.stdout.strip() == "done",
               "isolation: host 0 can neither open host 1's memfd nor read its memory (pid %s there, %s on the "
               "machine): %s" % (inner_pid, outer_pid, tail(result.stdout + result.stderr)))
        same = cluster.run_on(cluster.hosts[1], probe + [inner_pid])
        report("reached the memfd" in same.stdout and "read the memory" in same.stdout,
               "isolation: the probe works where it should (host 1 reaches its own memfd and memory): " +
               tail(same.stdout + same.stderr))
    finally:
        owner.communicate("")


# ---- exact -----------------------------------------------------------------------------------
def connections(stderr):
    """{(a, b): transport} from LOOM_DEBUG=INFO's "rank a <-> rank b over X" lines."""
    found = {}
    for a, b, kind in re.findall(r"rank (\d+) <-> rank (\d+) over (\w+)", stderr):
        found[(int(a), int(b))] = kind
    return found


# What LOOM_ALGO=auto must choose: hierarchical where every host holds the same number (>= 2) of
# ranks, the flat ring across hosts otherwise.
SCHEDULES = {"2x2": "hierarchical collectives", "3x1": "flat ring across hosts", "2+1": "flat ring across hosts",
             "2x2/cyclic": "hierarchical collectives"}


def exact(cluster, host_rank, port):
    for layout_text, style in (("2x2", "torchrun"), ("3x1", "mpirun"), ("2+1", "torchrun"), ("2x2/cyclic", "mpirun")):
        layout = loomhosts.Layout.parse(layout_text)
        start = time.time()
        job = cluster.launch(layout, [host_rank, "check"], style=style, port=port,
                             env={"LOOM_DEBUG": "INFO", "LOOM_DEBUG_SUBSYS": "INIT", "LOOM_TIMEOUT_MS": 60000})
        port += 2
        results = job.wait(timeout=240)
        hashes = [[line for line in out.splitlines() if line.startswith("hash ")] for _, _, out, _ in results]
        for rank, code, out, err in results:
            failures = [line for line in out.splitlines() if line.startswith("FAIL")]
            report(code == 0 and not failures and hashes[rank],
                   "exact %s (%s): rank %d on %s: exit %s, %d results%s" % (
                       layout_text, style, rank, cluster.hosts[layout.host_of[rank]].name, code, len(hashes[rank]),
                       "" if code == 0 and not failures else ": " + tail("\n".join(failures[:3]) + "\n" + err)))
            wrong = []
            for (a, b), kind in connections(err).items():
                want = "shm" if layout.host_of[a] == layout.host_of[b] else "socket"
                if kind != want:
                    wrong.append("%d<->%d %s" % (a, b, kind))
            chosen = re.search(r"comm \S+: ((hierarchical collectives|flat ring)[^\n]*)", err)
            report(not wrong and connections(err) and chosen and chosen.group(1).startswith(SCHEDULES[layout_text]),
                   "exact %s: rank %d's connections: shm inside a host, socket across%s; schedule: %s"
                   % (layout_text, rank, ": wrong " + ", ".join(wrong) if wrong else "",
                      chosen.group(1) if chosen else "not logged"))
        differ = [r for r in range(1, len(hashes)) if hashes[r] != hashes[0]]
        report(not differ, "exact %s: results bitwise alike on every rank (%d results, %.1f s)%s" % (
            layout_text, len(hashes[0]), time.time() - start, ": ranks %s differ from rank 0" % differ if differ else ""))
    return port


# ---- deterministic mode ----------------------------------------------------------------------
def deterministic(cluster, host_rank, port):
    """Bitwise the same results under every layout of one rank count, one host included (where
    small calls take the direct engine's canonical kernel)."""
    for group in (("4", "2x2", "2x2/cyclic"), ("3", "3x1", "2+1")):
        seen = {}
        for layout_text in group:
            results = cluster.launch(loomhosts.Layout.parse(layout_text), [host_rank, "deterministic"], port=port,
                                     env={"LOOM_DETERMINISTIC": 1, "LOOM_TIMEOUT_MS": 60000}).wait(180)
            port += 2
            failed = [(rank, code, tail(out + err)) for rank, code, out, err in results if code != 0]
            report(not failed, "deterministic %s: every rank finished%s" % (layout_text, ": %s" % failed if failed else ""))
            seen[layout_text] = sorted(line for _, _, out, _ in results for line in out.splitlines()
                                       if line.startswith("det "))
        first = group[0]
        for layout_text in group[1:]:
            differ = [a for a, b in zip(seen[first], seen[layout_text]) if a != b]
            report(seen[layout_text] and seen[layout_text] == seen[first],
                   "deterministic: %s gives bitwise the results of %s (%d results)%s" % (
                       layout_text, first, len(seen[first]), ": first difference " + differ[0] if differ else ""))
    return port


# ---- netem -----------------------------------------------------------------------------------
def netem(cluster, host_rank, port):
    why = cluster.add_netem(1)
    if why:
        print("SKIP netem: tc netem is unavailable here (%s): no delay, jitter, loss or reordering test" % why,
              flush=True)
        return port
    layout = loomhosts.Layout.parse("2x2")
    results = cluster.launch(layout, [host_rank, "check", "0"], port=port, env={"LOOM_TIMEOUT_MS": 60000}).wait(300)
    for rank, code, out, err in results:
        report(code == 0, "netem 2x2 (2 ms +- 1 ms, 1% loss, 10% reordering on host 1): rank %d exit %s %s"
               % (rank, code, "" if code == 0 else tail(out + err)))
    subprocess.run(cluster.hosts[1].enter() + ["tc", "qdisc", "del", "dev", "eth0", "root"], check=False)
    return port + 2


# ---- waiting ---------------------------------------------------------------------------------
def median_latency(cluster, layout, host_rank, port, env):
    """Rank 0's median; also checks that every rank logged its choice to yield (more ranks on
    the machine than cores: a logged, safe choice rather than an error)."""
    results = cluster.launch(layout, [host_rank, "latency", "2", "3000"], port=port, env=env).wait(120)
    for rank, code, out, err in results:
        if code != 0:
            return None, "rank %d exit %s: %s" % (rank, code, tail(out + err))
        if layout.nranks > os.cpu_count():
            said = re.search(r"\d+ ranks on this machine \(\d+ on this host\) share \d+ cores: waits yield", err)
            report(said is not None, "waiting %s: rank %d says its waits yield: %s" % (
                layout.name, rank, said.group(0) if said else "no such line: " + tail(err)))
    found = re.search(r"median_us ([\d.]+)", results[0][2])
    return (float(found.group(1)), "") if found else (None, "no median: " + tail(results[0][2]))


def waiting(cluster, host_rank, port):
    logged = {"LOOM_DEBUG": "INFO", "LOOM_DEBUG_SUBSYS": "INIT"}
    across, why = median_latency(cluster, loomhosts.Layout.parse("3x1"), host_rank, port, logged)
    local, why_local = median_latency(cluster, loomhosts.Layout.parse("3"), host_rank, port + 2,
                                      dict(logged, LOOM_SHM_DISABLE=1))
    if across is None or local is None:
        report(False, "waiting: latency runs failed: %s %s" % (why, why_local))
    else:
        report(across <= 3 * local, "waiting: 8 B all-reduce, 3 hosts x 1 rank %.1f us median, 1 host x 3 ranks "
               "with shm off %.1f us (%.1fx; at most 3x), %d cores" % (across, local, across / local, os.cpu_count()))
    return port + 4


# ---- bad input -------------------------------------------------------------------------------
def same_host_id(cluster, host_rank, port):
    """Two hosts given one LOOM_HOSTID cannot share memory: Loom tells them apart, warns, and
    connects them over the network; results stay exact."""
    layout = loomhosts.Layout.parse("2x1")
    results = cluster.launch(layout, [host_rank, "check", "0"], port=port,
                             env={"LOOM_HOSTID": "one-id-for-two-hosts", "LOOM_DEBUG": "INFO",
                                  "LOOM_DEBUG_SUBSYS": "INIT"}).wait(120)
    for rank, code, out, err in results:
        warned = re.search(r"have one host ID but cannot share memory \(different PID namespaces\)", err)
        report(code == 0 and warned and connections(err).get((rank, 1 - rank)) == "socket",
               "one LOOM_HOSTID on two hosts: rank %d warned, used a socket and stayed exact (exit %s)%s" % (
                   rank, code, "" if code == 0 and warned else ": " + tail(out + err)))
    return same_host_id_through_a_store(cluster, port + 2)


# PyTorch's process group over c10d's TCPStore (env://): Loom meets through the store
# (loomCommInitRankStore), whose choice of listen address must also tell the two hosts apart.
TORCH_RANK = ("import os, torch, torch.distributed as dist, loom_torch\n"
              "dist.init_process_group('loom', init_method='env://')\n"
              "t = torch.arange(1001, dtype=torch.float32) * (dist.get_rank() + 1)\n"
              "dist.all_reduce(t)\n"
              "want = torch.arange(1001, dtype=torch.float32) * 3\n"
              "print('exact' if torch.equal(t, want) else 'wrong', flush=True)\n"
              "dist.destroy_process_group()\n")


def same_host_id_through_a_store(cluster, port):
    python = os.path.join(os.path.dirname(HOST_RANK), "..", "..", "python")
    if not os.path.isdir(os.path.join(python, "loom_torch")) or not os.path.exists("/usr/bin/python3"):
        print("SKIP one LOOM_HOSTID through PyTorch's store: loom_torch is not built here", flush=True)
        return port
    layout = loomhosts.Layout.parse("2x1")
    results = cluster.launch(layout, ["/usr/bin/python3", "-c", TORCH_RANK], port=port,
                             env={"LOOM_HOSTID": "one-id-for-two-hosts", "PYTHONPATH": os.path.abspath(python),
                                  "LOOM_TIMEOUT_MS": 20000}).wait(120)
    for rank, code, out, err in results:
        report(code == 0 and "exact" in out, "one LOOM_HOSTID on two hosts through PyTorch's store: rank %d exact "
               "(exit %s)%s" % (rank, code, "" if code == 0 and "exact" in out else ": " + tail(out + err)))
    return port + 2


# ---- host failures ---------------------------------------------------------------------------
def wait_ready(job, ranks, limit=60):
    for rank in ranks:
        job.wait_for_line(rank, "ready", limit)


def check_survivors(cluster, job, layout, lost_of, started, what, root_port):
    """lost_of: surviving rank -> the host it lost, which its error must name with a rank of it."""
    results = job.wait(timeout=TIMEOUT_MS / 1000 + 30)
    for rank, code, out, err in results:
        if rank not in lost_of:
            continue
        lost_name = cluster.hosts[lost_of[rank]].name
        lost_ranks = layout.hosts[lost_of[rank]]
        took = time.time() - started
        error = next((line for line in out.splitlines() if line.startswith("error:")), "")
        stalled = re.search(r"failed (\d+) ms after its last call", out)
        # The timeout, the grace a rank waiting on its own host gives a neighbour's report
        # (min(timeout/10, 500 ms)), and a margin for a loaded machine.
        limit_ms = TIMEOUT_MS + min(TIMEOUT_MS // 10, 500) + 1000
        report(stalled is not None and int(stalled.group(1)) <= limit_ms,
               "%s: rank %d failed within LOOM_TIMEOUT_MS (%d ms) + grace + 1 s of its last call: %s"
               % (what, rank, TIMEOUT_MS, stalled.group(0) if stalled else "no timing line"))
        fds = re.search(r"fds: before (\d+) after (\d+) memfd (\d+) new:(.*)", out)
        names = lost_name in error and any(re.search(r"\brank %d\b" % r, error) for r in lost_ranks)
        report(code == 3 and names, "%s: rank %d failed (exit %s, within %.1f s of a %d ms timeout) naming a rank of "
               "host %s and the host: %s" % (what, rank, code, took, TIMEOUT_MS, lost_name, error[:400] or tail(err)))
        # What may stay: on the rank whose process ran the bootstrap root, the root's listener
        # and its wake-up eventfd (the root's tombstone answers late ranks until the process
        # exits, bootstrap/root_tombstone.h). Nothing else: no memfd, no connection.
        added = [item.strip() for item in fds.group(4).split(";") if item.strip()] if fds else ["no fd line"]
        allowed = {"listening socket :%d" % root_port, "anon_inode:[eventfd]"} if rank == 0 else set()
        report(fds is not None and int(fds.group(3)) == 0 and set(added) <= allowed,
               "%s: rank %d holds no memfd and no descriptor of the job after the abort%s (%s)"
               % (what, rank, " but the root's listener" if rank == 0 else "", fds.group(0) if fds else "no fd line"))


def lose_host(cluster, host_rank, port, layout, cause, lost_of, what):
    """Runs the rank loop on `layout`, calls `cause` once every rank is ready, checks the survivors."""
    job = cluster.launch(layout, [host_rank, "loop", "4096"], port=port, env={"LOOM_TIMEOUT_MS": TIMEOUT_MS})
    wait_ready(job, range(layout.nranks))
    cause()
    check_survivors(cluster, job, layout, lost_of, time.time(), what, port + 1)


def link_down(cluster, host_rank, port):
    layout = loomhosts.Layout.parse("2x2")
    # Each side has lost the other: host 0's ranks must name host 1, and host 1's host 0.
    lost_of = {rank: 1 - layout.host_of[rank] for rank in range(layout.nranks)}
    lose_host(cluster, host_rank, port, layout, lambda: cluster.link_down(1), lost_of, "link down")
    cluster.switch_ip(["link", "set", "h1", "up"])
    return port + 2


def kill_host(cluster, host_rank, port):
    layout = loomhosts.Layout.parse("3x1")
    lose_host(cluster, host_rank, port, layout, lambda: cluster.kill_host(1), {0: 1, 2: 1}, "host killed")
    return port + 2


PARTS = ("isolation", "exact", "deterministic", "netem", "waiting", "badinput", "linkdown", "killhost")


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    global HOST_RANK
    host_rank = HOST_RANK = os.path.abspath(sys.argv[1])
    parts = sys.argv[2:] or PARTS
    why = loomhosts.skip_reason()
    if why:
        print("SKIP: the multi-host harness cannot run here: " + why)
        return SKIP
    port = loomhosts.MASTER_PORT
    with loomhosts.Cluster(3) as cluster:
        print("hosts: " + ", ".join("%s %s" % (h.name, h.address) for h in cluster.hosts), flush=True)
        if "isolation" in parts:
            isolation(cluster)
        for part, run in (("exact", exact), ("deterministic", deterministic), ("netem", netem), ("waiting", waiting),
                          ("badinput", same_host_id), ("linkdown", link_down)):
            if part in parts:
                port = run(cluster, host_rank, port)
    if "killhost" in parts:
        with loomhosts.Cluster(3) as cluster:  # a fresh cluster: this part kills one of its hosts
            kill_host(cluster, host_rank, port)
    print("%d failed" % len(FAILURES))
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
