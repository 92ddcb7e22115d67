#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Loom's all-reduce across hosts against what the network carries (iperf3) and against Gloo.

  perf/hosts/multihost_bench.py [--build DIR] [--reps 5] [--bytes 64M] [--iters 5]
                                [--rows PATTERN,...] [--json FILE] [--quick] [--timeout 300]

Runs on the K-host harness (tests/hosts/loomhosts.py): every host a network/PID/mount/UTS
namespace with its own address on one Linux bridge, so traffic between hosts crosses veth pairs
and the bridge like a (very fast, CPU-bound) network, and ranks of different hosts cannot share
memory. One cluster of as many hosts as the selected rows need (2 or 4) serves every row.

Rows (select with --rows, comma-separated shell patterns, e.g. 'loom-*:2x2,gloo:*'):
  iperf3:2h        iperf3 --bidir, client on host 0, server on host 1; the value is the
                   bandwidth of one direction while both run (mean of the two), "sum" both
  iperf3:4h        the ring's links at once: host i -> host (i+1) mod 4 for every i, four
                   clients each to its own server (distinct ports); the value is the median link,
                   "sum" all four
  loom-auto:2x1, loom-auto:2x2, loom-auto:4x1     all_reduce_perf, LOOM_ALGO=auto (the default)
  loom-ring:2x2, loom-hier:2x2, loom-ring:4x2, loom-hier:4x2   LOOM_ALGO=ring / hierarchical
  gloo:2x1, gloo:2x2, gloo:4x1, gloo:4x2          perf/peers/gloo_all_reduce_perf
  loom-nsocks1:2x1, loom-nsocks4:2x1              LOOM_SOCKET_NSOCKS=1 and 4 (default 2)
The iperf3 rows a selection needs for its ratios are always measured.

Each all-reduce row is one job of the perf tool (float32 sum, -b = -e = --bytes, -n --iters,
checked exactly once): its out-of-place busbw, nccl-tests' algbw * 2(n-1)/n, is the sample.
Loom runs with LOOM_DEBUG=INFO for INIT only, to record which schedule init chose; a row that
asked for `ring` or `hierarchical` and got another (an older library warns that the value is
unknown and falls back to auto) fails with that reason, as does one that exits non-zero.

Repetitions alternate: rep 1 measures every row once, then rep 2, ... (each rep starting one
row later in the list), so drift in this shared machine's speed hits every row alike. The table
gives the median over reps, min-max, and ratios of medians.

Why these references. A ring all-reduce of S bytes over n ranks makes every rank send
2(n-1)/n * S to its ring successor, all ranks at once; busbw = that / time, so busbw is the
rate each ring link carries while every link is busy. With 2 hosts the ring crosses the network
twice, host 0 -> 1 and 1 -> 0, at the same time: the comparable number is one direction of
iperf3 --bidir, not a one-way run (which has the CPUs and the bridge to itself). With 4 hosts
the ring has 4 network links busy at once: the comparable number is one link of 4 parallel
iperf3 pairs along the same ring. All hosts share this machine's cores, so iperf3 measures
what the cores can push through veth + bridge, the very resource the all-reduce competes for
(and the all-reduce must also reduce). Issue target: busbw >= 0.80 of the reference for
loom-auto at 2x1, 2x2 and 4x1. With R > 1 ranks a host the hierarchical schedule moves only
2(K-1)/K * S per host across the network while busbw counts 2(n-1)/n with n = K*R, so its
ratio can exceed 1: that is the algorithm's saving, not a measuring error.

Output: progress lines, then a Markdown table (row, layout, median, min-max, ratio to
reference, ratio to Gloo, notes); --json FILE saves every sample. Exit status: 0 when every
selected row has samples, 1 when a row failed in every rep (it is reported with its reason),
2 on bad usage, 77 when the harness cannot run here (not root, no namespaces).
"""
import argparse
import fnmatch
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "hosts"))
import loomhosts  # noqa: E402

SKIP = 77
TARGET = 0.80
TARGET_ROWS = ("loom-auto:2x1", "loom-auto:2x2", "loom-auto:4x1")
GB = 1e9  # GB/s as nccl-tests prints it: 1e9 bytes per second


class Row:
    def __init__(self, name, kind, layout=None, algo=None, hosts=None, env=None):
        self.name, self.kind, self.layout, self.algo = name, kind, layout, algo
        self.env = env or {}  # extra variables of a Loom row
        self.hosts = hosts if hosts is not None else len(loomhosts.Layout.parse(layout).hosts)
        self.samples = []   # one dict per successful rep; "value" is the row's number (GB/s)
        self.failures = []  # {"rep", "reason"}
        self.given_up = None  # a reason that no later rep can change (not built, bad setting)

    def values(self, key="value"):
        return [sample[key] for sample in self.samples]


def all_rows():
    rows = [Row("iperf3:2h", "iperf-bidir", hosts=2), Row("iperf3:4h", "iperf-ring", hosts=4)]
    rows += [Row("loom-auto:" + layout, "loom", layout, "auto") for layout in ("2x1", "2x2", "4x1")]
    for layout in ("2x2", "4x2"):
        rows += [Row("loom-ring:" + layout, "loom", layout, "ring"),
                 Row("loom-hier:" + layout, "loom", layout, "hierarchical")]
    rows += [Row("gloo:" + layout, "gloo", layout) for layout in ("2x1", "2x2", "4x1", "4x2")]
    # LOOM_SOCKET_NSOCKS (default 2) changes only on a gain of 10% or more here: these rows say.
    rows += [Row("loom-nsocks%d:2x1" % n, "loom", "2x1", "auto", env={"LOOM_SOCKET_NSOCKS": n}) for n in (1, 4)]
    return rows


def reference_name(hosts):
    return "iperf3:%dh" % hosts


def parse_size(text):
    match = re.fullmatch(r"(\d+)([KMG]?)(i?B)?", text.strip(), re.IGNORECASE)
    if not match:
        raise argparse.ArgumentTypeError("not a size: " + text)
    return int(match.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[match.group(2).upper()]


def tail(text, lines=3):
    return " | ".join(line.strip() for line in text.strip().splitlines()[-lines:])


class Ports:
    """A fresh port per job: a rerun never meets the previous job's sockets in TIME_WAIT."""

    def __init__(self, first):
        self.next = first

    def take(self, count=1):
        port = self.next
        self.next += count
        return port


# ---- iperf3 --------------------------------------------------------------------------------
def start_server(cluster, host, port, seconds):
    # One-shot server (-1), bound to the host's address; `timeout` ends it should its client
    # never come (killing nsenter would leave it running inside the host).
    argv = ["timeout", str(seconds + 30), "iperf3", "-s", "-1", "-p", str(port), "-B", host.address]
    server = subprocess.Popen(host.enter() + argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    for _ in range(200):  # listening? (ss inside the host; a client that came too early fails)
        if cluster.run_on(host, ["ss", "-Hltn", "sport = :%d" % port]).stdout.strip():
            return server
        if server.poll() is not None:
            raise RuntimeError("iperf3 server on %s exited: %s" % (host.name, tail(server.stderr.read())))
        time.sleep(0.05)
    raise RuntimeError("iperf3 server on %s never listened on port %d" % (host.name, port))


def client_argv(server_host, port, args, bidir=False):
    # -O: the first second (TCP slow start, clients starting a few ms apart) is not counted.
    argv = ["iperf3", "-c", server_host.address, "-p", str(port), "-t", str(args.iperf_seconds),
            "-O", str(args.iperf_omit), "-J"]
    return argv + (["--bidir"] if bidir else [])


def client_result(process, timeout):
    out, err = process.communicate(timeout=timeout)
    try:
        report = json.loads(out)
    except ValueError:
        raise RuntimeError("iperf3 client exited %s: %s" % (process.returncode, tail(err or out)))
    if "error" in report:
        raise RuntimeError("iperf3: " + report["error"])
    return report["end"]


def measure_iperf(cluster, row, args, ports):
    hosts = cluster.hosts[:row.hosts]
    pairs = [(hosts[0], hosts[1])] if row.kind == "iperf-bidir" else \
            [(hosts[i], hosts[(i + 1) % len(hosts)]) for i in range(len(hosts))]
    base = ports.take(len(pairs))
    servers = [start_server(cluster, server, base + i, args.iperf_seconds + args.iperf_omit)
               for i, (_, server) in enumerate(pairs)]
    try:
        # Every client started before any is waited for: the links run at the same time.
        clients = [subprocess.Popen(client.enter() + client_argv(server, base + i, args, row.kind == "iperf-bidir"),
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                   for i, (client, server) in enumerate(pairs)]
        ends = [client_result(c, args.iperf_seconds + args.iperf_omit + 30) for c in clients]
    finally:
        for server in servers:
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
    # Receiver-side rates: what arrived, not what was queued.
    if row.kind == "iperf-bidir":
        forward = ends[0]["sum_received"]["bits_per_second"] / 8 / GB
        reverse = ends[0]["sum_received_bidir_reverse"]["bits_per_second"] / 8 / GB
        return {"value": (forward + reverse) / 2, "sum": forward + reverse, "0->1": forward, "1->0": reverse}
    links = [end["sum_received"]["bits_per_second"] / 8 / GB for end in ends]
    sample = {"value": statistics.median(links), "sum": sum(links)}
    sample.update({"%d->%d" % (i, (i + 1) % len(links)): bw for i, bw in enumerate(links)})
    return sample


# ---- all-reduce jobs -----------------------------------------------------------------------
# The perf tools' table row: size count type redop root, then time algbw busbw #wrong twice
# (out-of-place, in-place).
def parse_table(stdout, nbytes):
    for line in stdout.splitlines():
        fields = line.split()
        if len(fields) >= 13 and fields[0] == str(nbytes):
            def number(text):
                return None if text == "N/A" else float(text)
            return {"time_us": number(fields[5]), "algbw": number(fields[6]), "busbw": number(fields[7]),
                    "wrong": fields[8], "busbw_inplace": number(fields[11]), "wrong_inplace": fields[12]}
    return None


CHOICE = re.compile(r"(flat ring[^\n]*|hierarchical collectives[^\n]*)")
ALGO_WARNING = re.compile(r"[^\n]*LOOM_ALGO[^\n]*(not one of|unknown)[^\n]*")


class Permanent(RuntimeError):
    """A failure no later rep can change."""


def measure_allreduce(cluster, row, args, ports, store_root):
    sub = os.path.join("perf", "peers", "gloo_all_reduce_perf") if row.kind == "gloo" else \
        os.path.join("perf", "all_reduce_perf")
    exe = os.path.join(args.build, sub)
    if not os.access(exe, os.X_OK):
        raise Permanent("not built: " + exe)
    argv = [exe, "-b", str(args.bytes), "-e", str(args.bytes), "-n", str(args.iters), "-w", str(args.warmup),
            "-c", "1", "-d", "float", "-o", "sum", "-T", str(args.timeout)]
    port = ports.take()
    if row.kind == "gloo":
        # Gloo's ranks meet in a FileStore directory: its default name ends in the parent's pid,
        # which nsenter's children see as 0 on every host, so give every job its own directory
        # (hosts share the machine's /tmp). Its TCP device binds 127.0.0.1 unless told the
        # interface: eth0 is each host's one link to the bridge.
        env = {"LOOM_GLOO_STORE_DIR": os.path.join(store_root, "gloo-%d" % port), "LOOM_SOCKET_IFNAME": "eth0"}
    else:
        env = dict({"LOOM_ALGO": row.algo, "LOOM_DEBUG": "INFO", "LOOM_DEBUG_SUBSYS": "INIT,ENV"}, **row.env)
    # loomrun's variables: the one launcher style both Loom and the Gloo tool read.
    job = cluster.launch(loomhosts.Layout.parse(row.layout), argv, style="loomrun", env=env, port=port)
    results = job.wait(timeout=args.timeout + 60)
    stderr = "\n".join(err for _, _, _, err in results)
    warning = ALGO_WARNING.search(stderr)
    if warning:  # a library that does not know the value ran auto instead: not this row
        raise Permanent("LOOM_ALGO=%s not accepted: %s" % (row.algo, warning.group(0).strip()))
    for rank, code, out, err in results:
        if code is None:
            raise RuntimeError("rank %d timed out after %ds: %s" % (rank, args.timeout + 60, tail(err or out)))
        if code != 0:
            raise RuntimeError("rank %d exited %d: %s" % (rank, code, tail(err or out)))
    parsed = next((p for p in (parse_table(out, args.bytes) for _, _, out, _ in results) if p), None)
    if parsed is None or parsed["busbw"] is None:
        raise RuntimeError("no %d-byte row in the output: %s" % (args.bytes, tail(results[0][2])))
    if parsed["wrong"] not in ("0", "N/A") or parsed["wrong_inplace"] not in ("0", "N/A"):
        raise RuntimeError("wrong results: %s out-of-place, %s in-place" % (parsed["wrong"], parsed["wrong_inplace"]))
    sample = dict(parsed, value=parsed["busbw"])
    if row.kind == "loom":
        choice = CHOICE.search(results[0][3])
        sample["schedule"] = choice.group(0).strip() if choice else "not logged"
        if choice and row.algo == "ring" and not choice.group(0).startswith("flat ring"):
            raise Permanent("asked LOOM_ALGO=ring, init chose: " + sample["schedule"])
        if choice and row.algo == "hierarchical" and not choice.group(0).startswith("hierarchical"):
            raise Permanent("asked LOOM_ALGO=hierarchical, init chose: " + sample["schedule"])
    return sample


# ---- the run -------------------------------------------------------------------------------
def measure(cluster, rows, args):
    ports = Ports(args.port)
    store_root = tempfile.mkdtemp(prefix="loom-multihost-bench-")
    try:
        for rep in range(args.reps):
            # Rotate the order too, so no row always runs right after the same neighbour.
            order = rows[rep % len(rows):] + rows[:rep % len(rows)]
            for row in order:
                if row.given_up:
                    continue
                started = time.time()
                try:
                    if row.kind.startswith("iperf"):
                        sample = measure_iperf(cluster, row, args, ports)
                    else:
                        sample = measure_allreduce(cluster, row, args, ports, store_root)
                except (RuntimeError, OSError, subprocess.SubprocessError, KeyError, ValueError) as error:
                    # Permanent is a RuntimeError: a row that cannot work is not run again.
                    if isinstance(error, Permanent):
                        row.given_up = str(error)
                    row.failures.append({"rep": rep + 1, "reason": str(error)})
                    print("rep %d/%d %-14s FAILED%s: %s" % (rep + 1, args.reps, row.name,
                                                           " (not retried)" if row.given_up else "", error), flush=True)
                    continue
                sample["rep"] = rep + 1
                sample["seconds"] = round(time.time() - started, 2)
                row.samples.append(sample)
                extra = "  (%s)" % sample["schedule"] if "schedule" in sample else \
                    "  (sum %.2f)" % sample["sum"] if "sum" in sample else ""
                print("rep %d/%d %-14s %8.2f GB/s%s" % (rep + 1, args.reps, row.name, sample["value"], extra),
                      flush=True)
    finally:
        shutil.rmtree(store_root, ignore_errors=True)


def median(values):
    return statistics.median(values) if values else None


def summarize(rows):
    by_name = {row.name: row for row in rows}
    summary = {}
    for row in rows:
        values = row.values()
        entry = {"median": median(values), "min": min(values, default=None), "max": max(values, default=None),
                 "reps_ok": len(values), "failures": row.failures}
        if row.kind.startswith("iperf"):
            entry["sum_median"] = median(row.values("sum"))
            entry["per_pair_median"] = {key: median(row.values(key))
                                        for key in (row.samples[0] if row.samples else {}) if "->" in key}
        else:
            ref = by_name.get(reference_name(row.hosts))
            ref_median = ref and median(ref.values())
            entry["ratio_to_reference"] = entry["median"] / ref_median if entry["median"] and ref_median else None
            gloo = by_name.get("gloo:" + row.layout)
            gloo_median = gloo and median(gloo.values()) if row.kind == "loom" else None
            entry["ratio_to_gloo"] = entry["median"] / gloo_median if entry["median"] and gloo_median else None
            if row.name in TARGET_ROWS and entry["ratio_to_reference"] is not None:
                entry["target_met"] = entry["ratio_to_reference"] >= TARGET
            schedules = sorted({s.get("schedule") for s in row.samples if s.get("schedule")})
            if schedules:
                entry["schedule"] = schedules
        summary[row.name] = entry
    return summary


def fmt(value, digits=2):
    return "-" if value is None else "%.*f" % (digits, value)


def table(rows, summary, args):
    lines = ["| row | layout | median GB/s | min-max GB/s | ratio to reference | ratio to Gloo | notes |",
             "| --- | --- | ---: | ---: | ---: | ---: | --- |"]
    for row in rows:
        entry = summary[row.name]
        notes = []
        if entry["reps_ok"] < args.reps:
            reasons = sorted({f["reason"] for f in row.failures})
            notes.append("%d/%d reps ok; failed: %s" % (entry["reps_ok"], args.reps, "; ".join(reasons)))
        if row.kind.startswith("iperf"):
            layout = "%d hosts" % row.hosts
            what = "per direction, both at once" if row.kind == "iperf-bidir" else "median link, %d at once" % row.hosts
            notes.insert(0, "%s; sum %s GB/s" % (what, fmt(entry["sum_median"])))
            ratio_ref, ratio_gloo = "reference", "-"
        else:
            layout = row.layout
            ratio_ref, ratio_gloo = fmt(entry["ratio_to_reference"]), fmt(entry["ratio_to_gloo"])
            if "target_met" in entry:
                ratio_ref += " (target %.2f: %s)" % (TARGET, "met" if entry["target_met"] else "MISSED")
            if entry.get("schedule"):
                notes.insert(0, "; ".join(entry["schedule"]))
        span = "-" if entry["min"] is None else "%s-%s" % (fmt(entry["min"]), fmt(entry["max"]))
        lines.append("| %s | %s | %s | %s | %s | %s | %s |" % (
            row.name, layout, fmt(entry["median"]), span, ratio_ref, ratio_gloo,
            " ".join(notes).replace("|", "/")))
    return "\n".join(lines)


def select(rows, patterns, parser):
    wanted = [row for row in rows if any(fnmatch.fnmatchcase(row.name, p) for p in patterns)]
    unmatched = [p for p in patterns if not any(fnmatch.fnmatchcase(row.name, p) for row in rows)]
    if unmatched:
        parser.error("--rows: %s match no row (rows: %s)" % (", ".join(unmatched), ", ".join(r.name for r in rows)))
    # The references the selection's ratios need.
    needed = {reference_name(row.hosts) for row in wanted}
    return [row for row in rows if row in wanted or row.name in needed]


def default_build():
    for name in ("build-dev", "build"):
        if os.path.exists(os.path.join(ROOT, name, "perf", "all_reduce_perf")):
            return os.path.join(ROOT, name)
    return os.path.join(ROOT, "build-dev")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__.split("\n", 2)[2],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=None, help="build folder with perf/ (default build-dev, else build)")
    parser.add_argument("--reps", type=int, default=5, help="alternating repetitions (default 5)")
    parser.add_argument("--bytes", type=parse_size, default=64 << 20, help="all-reduce size (default 64M)")
    parser.add_argument("--iters", type=int, default=5, help="timed iterations per job (-n, default 5)")
    parser.add_argument("--warmup", type=int, default=2, help="warm-up calls per job (-w, default 2)")
    parser.add_argument("--rows", default="*", help="comma-separated patterns of row names (default all)")
    parser.add_argument("--json", help="save every sample and the summary here")
    parser.add_argument("--quick", action="store_true", help="a smoke test: 1 MiB, 1 rep, 2 iterations, 1 s iperf3")
    parser.add_argument("--iperf-seconds", type=int, default=2, help="iperf3 -t (default 2)")
    parser.add_argument("--iperf-omit", type=int, default=1, help="iperf3 -O, seconds not counted (default 1)")
    parser.add_argument("--timeout", type=int, default=300, help="seconds a job may take (perf tools' -T)")
    parser.add_argument("--port", type=int, default=30000, help="first port of the jobs (default 30000)")
    args = parser.parse_args()
    if args.quick:
        args.bytes, args.reps, args.iters, args.warmup = 1 << 20, 1, 2, 1
        args.iperf_seconds, args.iperf_omit, args.timeout = 1, 0, 60
    if args.reps < 1 or args.iters < 1 or args.bytes < 4 or args.bytes % 4:
        parser.error("--reps and --iters must be >= 1, --bytes a multiple of 4 (float32)")
    args.build = os.path.abspath(args.build or default_build())
    rows = select(all_rows(), [p.strip() for p in args.rows.split(",") if p.strip()], parser)

    reason = loomhosts.skip_reason()
    if reason:
        print("SKIP: the K-host harness cannot run here: " + reason, flush=True)
        return SKIP
    if shutil.which("iperf3") is None:
        # The references are the point of the ratios: without them say so, measure the rest.
        for row in rows:
            if row.kind.startswith("iperf"):
                row.given_up = "iperf3 is not installed (Debian: apt-get install iperf3)"
                row.failures.append({"rep": 0, "reason": row.given_up})
    nhosts = max(row.hosts for row in rows)
    print("# multihost_bench: %d hosts, build %s, %d bytes, %d reps, %d iters, %d CPUs" % (
        nhosts, args.build, args.bytes, args.reps, args.iters, os.cpu_count()), flush=True)
    print("# rows: " + ", ".join(row.name for row in rows), flush=True)
    inits = []
    try:
        with loomhosts.Cluster(nhosts, prefix="mhbhost") as cluster:
            inits = [host.init for host in cluster.hosts]
            measure(cluster, rows, args)
    finally:
        # Closing the cluster ends the unshare launchers but not each host's PID 1 (left
        # sleeping); killing it ends whatever is still inside the host (an iperf3 server, a hung
        # rank). After the launchers, which would otherwise complain about their child's death.
        for pid in inits:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    summary = summarize(rows)
    print()
    print("## Loom all-reduce across %d-host namespaces, %s, float32 sum, medians of %d reps" % (
        nhosts, "%d MiB" % (args.bytes >> 20) if args.bytes % (1 << 20) == 0 else "%d B" % args.bytes, args.reps))
    print()
    print(table(rows, summary, args))
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"bytes": args.bytes, "reps": args.reps, "iters": args.iters, "warmup": args.warmup,
                       "build": args.build, "hosts": nhosts, "cpus": os.cpu_count(), "target": TARGET,
                       "rows": {row.name: {"kind": row.kind, "layout": row.layout, "algo": row.algo,
                                           "hosts": row.hosts, "samples": row.samples, "summary": summary[row.name]}
                                for row in rows}}, out, indent=1)
        print("\n(raw numbers in %s)" % args.json)
    failed = [row.name for row in rows if not row.samples]
    if failed:
        print("\nFAILED rows (no sample): " + ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
