#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Where a CI run's time went, read from what it leaves behind.

    tools/ci/ci_times.py [ROOT] [--top N] [--markdown] [--json FILE]

ROOT is the tree .ci/run ran in (default: this repository). For each build folder it reads
the ninja log (.ninja_log: every compile and link with its start and end) and meson's test
log (meson-logs/testlog.json: every test with its start and duration), and the stage marks
.ci/run writes (ci-stages.tsv). It prints the stage table, each build's compile and link
totals, and the slowest compile units, link steps and tests.

Without ci-stages.tsv (a run of an older .ci/run) the stages are inferred from the same files:
a build from meson's "Build started at" to its last output, tests from the first start to
the last end, the fuzzers from their build to their last log. The checks before the first
build are not seen then; the table says the stages were inferred.
"""
import argparse
import datetime
import json
import os
import pathlib
import sys

# The build folders .ci/run makes, in its order, with the names the stage table uses.
KNOWN_BUILDS = [
    ("build-ci", "release"),
    ("build-asan", "ASan + UBSan"),
    ("build-tsan", "TSan"),
    ("build-fuzz", "fuzz"),
]


class Edge:
    """One ninja edge: a compile, a link or another step, with wall-clock begin and finish."""

    def __init__(self, build, outputs, begin_s, finish_s):
        self.build = build
        self.outputs = outputs
        self.begin = begin_s
        self.finish = finish_s
        self.seconds = finish_s - begin_s

    @property
    def kind(self):
        name = self.outputs[0]
        if name.endswith((".o", ".obj", ".gch", ".pch")):
            return "compile"
        base = os.path.basename(name)
        if name.endswith(".a") or ".so" in base or "." not in base:
            return "link"
        return "other"


def read_ninja_log(folder, label):
    """The ninja log's edges (the last run of each output) and the wall time of its ninja runs.

    A line is start and end in ms since its ninja run began, the output's mtime, the output
    and the command's hash. Lines are written as edges finish, so an end smaller than the line
    before starts a new run. A run began at the median of (mtime - end) over its lines: an
    output a step leaves untouched (restat) keeps an older mtime, so no single line is trusted.
    """
    path = folder / ".ninja_log"
    if not path.exists():
        return [], 0.0
    runs = [[]]
    with open(path) as log:
        for line in log:
            fields = line.rstrip("\n").split("\t")
            if line.startswith("#") or len(fields) != 5:
                continue
            start, end, mtime = int(fields[0]), int(fields[1]), int(fields[2]) / 1e9
            if runs[-1] and end < runs[-1][-1][1]:
                runs.append([])
            runs[-1].append((start, end, mtime, fields[3], fields[4]))
    last = {}
    wall = 0.0
    for run in runs:
        if not run:
            continue
        offsets = sorted(mtime - end / 1000.0 for _, end, mtime, _, _ in run)
        began = offsets[len(offsets) // 2]
        wall += max(end for _, end, _, _, _ in run) / 1000.0
        for start, end, _, output, command_hash in run:
            last[output] = (began + start / 1000.0, began + end / 1000.0, command_hash)
    edges = {}
    for output, (begin, finish, command_hash) in last.items():
        edges.setdefault((begin, finish, command_hash), []).append(output)
    return [Edge(label, sorted(outputs), b, f) for (b, f, _), outputs in edges.items()], wall


def read_tests(folder, label):
    path = folder / "meson-logs" / "testlog.json"
    tests = []
    if not path.exists():
        return tests
    with open(path) as log:
        for line in log:
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue
            tests.append({"build": label, "name": entry.get("name", "?"), "result": entry.get("result", "?"),
                          "start": float(entry.get("starttime") or 0), "seconds": float(entry.get("duration") or 0)})
    return tests


def meson_setup_start(folder):
    """When `meson setup` began (meson-log.txt's first line, local time), or None."""
    path = folder / "meson-logs" / "meson-log.txt"
    try:
        with open(path) as log:
            first = log.readline()
    except OSError:
        return None
    prefix = "Build started at "
    if not first.startswith(prefix):
        return None
    try:
        return datetime.datetime.fromisoformat(first[len(prefix):].strip()).timestamp()
    except ValueError:
        return None


def read_marks(root):
    """.ci/run's stage marks: (name, start, end, CPU seconds or None) in run order, or None."""
    path = root / "ci-stages.tsv"
    if not path.exists():
        return None
    stages = []
    with open(path) as marks:
        for line in marks:
            fields = line.rstrip("\n").split("\t")
            if len(fields) >= 3:
                cpu = float(fields[3]) if len(fields) > 3 and fields[3] else None
                stages.append((fields[0], float(fields[1]), float(fields[2]), cpu))
    return stages


def infer_stages(root, builds):
    """The stage table from the builds' own logs (for runs without ci-stages.tsv)."""
    stages = []
    for folder, label, edges, _, tests in builds:
        first_test = min((t["start"] for t in tests), default=None)
        build_edges = [e for e in edges if first_test is None or e.finish <= first_test + 1]
        begin = meson_setup_start(folder)
        if begin is None and build_edges:
            begin = min(e.begin for e in build_edges)
        if label == "fuzz":
            logs = [p.stat().st_mtime for p in folder.glob("*.log") if p.name != "build.log"]
            build_end = max((e.finish for e in build_edges), default=begin)
            if build_edges:
                stages.append(("fuzz build", min(e.begin for e in build_edges), build_end, None))
            if logs:
                stages.append(("fuzz runs", build_end, max(logs), None))
            continue
        if begin is not None and build_edges:
            name = "checks and release build" if label == "release" else label + " build"
            stages.append((name, begin, max(e.finish for e in build_edges), None))
        if tests:
            stages.append((label + " tests", first_test, max(t["start"] + t["seconds"] for t in tests), None))
    return stages


def collect(root):
    builds = []
    seen = set()
    for name, label in KNOWN_BUILDS:
        folder = root / name
        if folder.is_dir():
            seen.add(name)
            builds.append((folder, label, *read_ninja_log(folder, label), read_tests(folder, label)))
    for folder in sorted(root.glob("build*")):
        if folder.is_dir() and folder.name not in seen and (folder / ".ninja_log").exists():
            builds.append((folder, folder.name, *read_ninja_log(folder, folder.name), read_tests(folder, folder.name)))
    return builds


def report(root, top):
    builds = collect(root)
    marks = read_marks(root)
    stages = marks if marks is not None else infer_stages(root, builds)
    summaries = []
    for _, label, edges, span, tests in builds:
        compiles = [e for e in edges if e.kind == "compile"]
        links = [e for e in edges if e.kind == "link"]
        summaries.append({"build": label, "compiles": len(compiles), "compile_s": sum(e.seconds for e in compiles),
                          "links": len(links), "link_s": sum(e.seconds for e in links),
                          "other_s": sum(e.seconds for e in edges if e.kind == "other"), "build_wall_s": span,
                          "tests": len(tests), "test_s": sum(t["seconds"] for t in tests)})
    edges = [e for _, _, es, _, _ in builds for e in es]
    tests = [t for _, _, _, _, ts in builds for t in ts]

    def slowest(kind):
        chosen = sorted((e for e in edges if e.kind == kind), key=lambda e: -e.seconds)[:top]
        return [{"build": e.build, "seconds": e.seconds, "output": e.outputs[0]} for e in chosen]

    return {
        "root": str(root),
        "stages_from": "ci-stages.tsv" if marks is not None else "inferred from the build logs",
        "stages": [{"stage": s, "seconds": end - begin, "cpu_s": cpu} for s, begin, end, cpu in stages],
        "total_s": (max(s[2] for s in stages) - min(s[1] for s in stages)) if stages else 0.0,
        "cores": os.cpu_count(),
        "builds": summaries,
        "slowest_compiles": slowest("compile"),
        "slowest_links": slowest("link"),
        "slowest_tests": [{"build": t["build"], "seconds": t["seconds"], "name": t["name"], "result": t["result"]}
                          for t in sorted(tests, key=lambda t: -t["seconds"])[:top]],
    }


def table(headers, rows, markdown):
    """Rows of strings as a Markdown table or aligned text; numbers right-aligned."""
    if markdown:
        lines = ["| " + " | ".join(headers) + " |",
                 "|" + "|".join("---:" if i and rows and rows[0][i][:1].isdigit() else "---"
                                for i in range(len(headers))) + "|"]
        lines += ["| " + " | ".join(row) + " |" for row in rows]
        return "\n".join(lines)
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]

    def fmt(cells):
        return "  ".join(c.rjust(w) if i and c[:1].isdigit() else c.ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
    return "\n".join([fmt(headers), fmt(["-" * w for w in widths])] + [fmt(r) for r in rows])


def print_report(data, markdown):
    out = []
    heading = (lambda text: out.append("\n#### " + text + "\n")) if markdown else (lambda text: out.append("\n" + text))
    heading(f"CI stages ({data['stages_from']})")
    with_cpu = any(s["cpu_s"] is not None for s in data["stages"])
    rows = [[s["stage"], f"{s['seconds']:.0f}"] +
            ([f"{s['cpu_s'] / max(s['seconds'], 1e-9):.2f}" if s["cpu_s"] is not None else "-"] if with_cpu else [])
            for s in data["stages"]]
    rows.append(["total, first stage's start to last stage's end", f"{data['total_s']:.0f}"] + (["-"] if with_cpu else []))
    out.append(table(["stage", "seconds"] + ([f"cores busy (of {data['cores']})"] if with_cpu else []), rows, markdown))
    heading("Builds: compile and link time summed over steps (both cores), and the build's wall time")
    rows = [[b["build"], str(b["compiles"]), f"{b['compile_s']:.0f}", str(b["links"]), f"{b['link_s']:.0f}",
             f"{b['other_s']:.0f}", f"{b['build_wall_s']:.0f}", str(b["tests"]), f"{b['test_s']:.0f}"]
            for b in data["builds"]]
    out.append(table(["build", "compiles", "compile s", "links", "link s", "other s", "build wall s",
                      "tests", "test s"], rows, markdown))
    for key, title, column in [("slowest_compiles", "Slowest compile units", "output"),
                               ("slowest_links", "Slowest link steps", "output"),
                               ("slowest_tests", "Slowest tests", "name")]:
        heading(title)
        rows = [[f"{r['seconds']:.1f}", r["build"], r[column] + (f" ({r['result']})" if r.get("result") not in
                                                                  (None, "OK") else "")] for r in data[key]]
        out.append(table(["seconds", "build", column], rows, markdown))
    print("\n".join(out).lstrip("\n"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("root", nargs="?", default=str(pathlib.Path(__file__).resolve().parents[2]),
                        help="the tree .ci/run ran in (default: this repository)")
    parser.add_argument("--top", type=int, default=15, help="how many of the slowest to list (default 15)")
    parser.add_argument("--markdown", action="store_true", help="Markdown tables (for notes and docs)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON to FILE")
    args = parser.parse_args()
    root = pathlib.Path(args.root).resolve()
    data = report(root, args.top)
    if not data["stages"] and not data["builds"]:
        print(f"ci_times: no build folders with logs under {root}", file=sys.stderr)
        return 1
    print_report(data, args.markdown)
    if args.json:
        with open(args.json, "w") as out:
            json.dump(data, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
