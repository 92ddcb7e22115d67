#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Run PyTorch's own distributed test suite against a torch.distributed backend.

The suite is torch/testing/_internal/distributed/distributed_test.py (the class
DistributedTest._DistTestBase) as Debian's python3-torch 1.13 installs it. Upstream drives it
with test/distributed/test_distributed_spawn.py, which does not ship; this is the project's own
driver for it:

    /usr/bin/python3 run_suite.py --backend loom --world 3 --subset subset.txt
    /usr/bin/python3 run_suite.py --backend gloo --world 3 --all --report gloo3.json
    /usr/bin/python3 run_suite.py --backend loom --world 2 -k all_reduce
    /usr/bin/python3 run_suite.py --backend loom --list

Each test runs in `world` processes (MultiProcessTestCase), spawned as upstream does or, with
--start fork, forked from the runner (same outcomes, ~0.6 s a test instead of ~4); the parent waits for
them for at most --timeout seconds (then dumps their stacks, kills them and fails the test), and
a watchdog ends the whole run if a test's parent ever outlives that by a minute. Prints one line
per test (PASS / SKIP with the reason / FAIL with the key error line), then
'N passed, N failed, N skipped'; exits 1 when any test failed (and, with --fail-on-skip, when
any was skipped), 2 on bad arguments.

Needs /usr/bin/python3 (the only Python with torch here); for --backend loom, loom_torch on
PYTHONPATH (e.g. PYTHONPATH=build/python).

How the suite is adapted (all before distributed_test is imported, because it decides its skips
at import time from the environment and from DistTestCases' sets):
  * BACKEND and WORLD_SIZE are set in the environment (the spawned ranks inherit them);
  * for loom, `import loom_torch` registers the backend, and "loom" is added to
    DistTestCases.backend_feature["plugin"], ["ddp"] and ["subgroup"] (loom implements process
    groups and DDP's collectives; "gpu" and "cuda" stay gloo/nccl-only). Its by-design refusals
    (tag != 0, recv from any source, bitwise ops, CUDA tensors) are NOT declared in
    skip_collective, so the tests that need them run and fail, visibly;
  * --force (or 'NAME force' in a subset file) runs a test the suite skips statically by
    backend NAME (e.g. all_to_all: 'Only MPI supports all_to_all'); such outcomes are marked
    "[forced past: <the suite's reason>]" in the output and "forced_past" in the report;
  * `expecttest` (imported by common_utils; no Debian package) comes from shims/ when missing;
  * TestDistBackend._run turns on "DDP with ReplicatedTensor", which imports
    torch.distributed._shard, which fails on Python 3.11 (a dataclass with a mutable default);
    that switch is made a no-op, so DDP runs its ordinary (non-ReplicatedTensor) path;
  * INIT_METHOD is set to a file:// placeholder (setUp points it at a fresh file per test), so
    that file-init-only tests are not skipped at import; forked ranks get the per-test value;
  * common_utils parses sys.argv when imported, so the runner's own arguments are removed first.
"""
import argparse
import fnmatch
import json
import logging
import os
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))


def read_subset(path):
    """[(name, line number, forced)]: 'NAME' or 'NAME force' a line, '#' starts a comment."""
    entries = []
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            words = line.split("#", 1)[0].split()
            if not words:
                continue
            if len(words) > 2 or (len(words) == 2 and words[1] != "force"):
                sys.exit(f"run_suite.py: {path}:{lineno}: expected 'NAME' or 'NAME force'")
            entries.append((words[0], lineno, len(words) == 2))
    return entries


def _parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", default="loom", help="torch.distributed backend: loom (default) or gloo")
    p.add_argument("--world", type=int, nargs="+", default=[3],
                   help="world size(s); several run one after the other (default 3)")
    sel = p.add_mutually_exclusive_group()
    sel.add_argument("--subset", metavar="FILE", help="test names, one a line, '#' starts a comment")
    sel.add_argument("--all", action="store_true", help="every test of the suite (the default)")
    p.add_argument("-k", dest="patterns", action="append", default=[],
                   help="run only tests whose name contains this (or matches it as a glob); repeatable")
    p.add_argument("--force", metavar="PATTERN", action="append", default=[],
                   help="run these tests even though the suite skips them statically for this backend "
                        "(e.g. 'Only MPI supports all_to_all'); a name, substring or glob; repeatable")
    p.add_argument("--start", choices=("spawn", "fork"), default="spawn",
                   help="how the ranks start: spawn (default; what upstream's runner does: each rank "
                        "imports torch and the suite afresh, ~1.5 s of CPU each) or fork (from this "
                        "process, which has imported them but holds no process group: much faster)")
    p.add_argument("--timeout", type=int, default=120,
                   help="seconds one test may run before its processes are killed (default 120)")
    p.add_argument("--report", metavar="FILE.json", help="write every test's outcome to this JSON file")
    p.add_argument("--fail-on-skip", action="store_true",
                   help="count a skipped test as a failure (for the CI subset, which must really run)")
    p.add_argument("--list", action="store_true", help="list the selected tests and exit")
    p.add_argument("-v", "--verbose", action="store_true", help="print the full error of each failure")
    args = p.parse_args(argv)
    if any(w < 2 for w in args.world):
        p.error("--world must be at least 2")
    if args.subset:  # 'NAME force' lines join --force (read here, before the suite is imported)
        args.force += [n for n, _, forced in read_subset(args.subset) if forced]
    return args


if __name__ == "__main__":
    ARGS = _parse_args(sys.argv[1:])
    # The suite reads these at import time, here and in every spawned rank (which inherit the
    # environment). A multi-world run re-executes this script per world size (see main()).
    os.environ["BACKEND"] = ARGS.backend
    os.environ["WORLD_SIZE"] = str(ARGS.world[0])
    os.environ["DISTRIBUTED_TESTS_DEFAULT_TIMEOUT"] = str(ARGS.timeout)
    os.environ.setdefault("LOOM_SOCKET_IFNAME", "lo")
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    os.environ["PYTORCH_SUITE_FORCE"] = "\n".join(ARGS.force)
    os.environ["PYTORCH_SUITE_START"] = ARGS.start
    # distributed_test reads INIT_METHOD at import (default env://) and skips
    # test_barrier_timeout_global unless it is file://. TestDistBackend.setUp points it at a fresh
    # file for every test before the ranks start; this placeholder only makes the import see the
    # file:// scheme, as upstream's runner does when it runs the suite with file init.
    os.environ["INIT_METHOD"] = "file://" + os.path.join(os.environ.get("TMPDIR", "/tmp"), "loom-suite-unused")
    # common_utils parses sys.argv on import (--seed, --accept, ...); the spawned ranks get this
    # same trimmed argv.
    sys.argv = sys.argv[:1]

if "BACKEND" not in os.environ or "WORLD_SIZE" not in os.environ:
    sys.exit("run_suite.py: run it as a script (BACKEND and WORLD_SIZE are set from its arguments)")

BACKEND = os.environ["BACKEND"]

try:
    import expecttest  # noqa: F401  (a real one, if installed)
except ImportError:
    sys.path.insert(0, os.path.join(HERE, "shims"))  # sys.path travels to the spawned ranks
    import expecttest  # noqa: F401

import unittest

import torch
import torch.distributed as dist

if BACKEND == "loom":
    import loom_torch  # noqa: F401  registers the backend name "loom"

from torch.testing._internal import common_distributed
from torch.testing._internal.common_distributed import DistTestCases

if BACKEND not in ("gloo", "nccl", "ucc", "mpi"):
    for _feature in ("plugin", "ddp", "subgroup"):
        DistTestCases.backend_feature[_feature].add(BACKEND)

# "DDP with ReplicatedTensor": TestDistBackend._run calls _set_ddp_with_replicated_tensor(True),
# after which constructing DistributedDataParallel imports torch.distributed._shard, and that
# raises on Python 3.11 ("mutable default ... TensorProperties ... use default_factory"). _run
# looks the function up when it runs, so replacing it here (in every rank) keeps the switch off.
import torch.nn.parallel._replicated_tensor_ddp_utils as _rt_utils  # noqa: E402

_rt_utils._set_ddp_with_replicated_tensor = lambda value: None

import torch.testing._internal.distributed.distributed_test as _suite  # noqa: E402
from torch.testing._internal.distributed.distributed_test import (  # noqa: E402
    DistributedTest,
    TestDistBackend,
)


# all_gather_coalesced's deprecation notice, once per call per rank
warnings.filterwarnings("ignore", message=r".*all_gather_coalesced will be deprecated")

# common_distributed configures INFO logging (every spawned process, every store barrier); keep
# warnings and the ranks' error tracebacks. PYTORCH_SUITE_LOG_LEVEL=INFO brings the rest back.
logging.getLogger().setLevel(os.environ.get("PYTORCH_SUITE_LOG_LEVEL", "WARNING"))


class TestDistBackendWithSpawn(TestDistBackend, DistributedTest._DistTestBase):
    """What upstream's test_distributed_spawn.py builds: each test in WORLD_SIZE spawned ranks."""

    @classmethod
    def _run(cls, rank, test_name, file_name, pipe):
        # A spawned rank imports the suite after setUp set INIT_METHOD to this test's file; a forked
        # one inherits the module as the parent imported it, so give it the same value.
        _suite.INIT_METHOD = os.environ.get("INIT_METHOD", "env://")
        super(TestDistBackendWithSpawn, cls)._run(rank, test_name, file_name, pipe)

    def setUp(self):
        super().setUp()
        if os.environ.get("PYTORCH_SUITE_START") == "fork":
            self._start_processes(torch.multiprocessing.get_context("fork").Process)
        else:
            self._spawn_processes()
        torch.backends.cudnn.flags(enabled=True, allow_tf32=False).__enter__()


def all_test_names():
    return list(unittest.TestLoader().getTestCaseNames(TestDistBackendWithSpawn))


def _matches(name, patterns):
    return any(pat == name or pat in name or fnmatch.fnmatchcase(name, pat) for pat in patterns)


# Forcing: many tests are gated on the backend's NAME, not on what it can do ("Only MPI supports
# all_to_all", "Test requires backend to be one of {'gloo'}"). Those gates are static: the
# decorator (sandcastle_skip / sandcastle_skip_if) marks the test function __unittest_skip__,
# which only the parent's unittest machinery reads; the ranks call the function directly. A forced
# test gets, on this class, a plain function calling the suite's one, without the mark. Skips the
# test decides while it runs (no CUDA, too few GPUs, world size) still happen.
FORCED = {}  # name -> the static skip reason that was bypassed


def _force(patterns):
    if not patterns:
        return
    for name in all_test_names():
        if not _matches(name, patterns):
            continue
        fn = getattr(DistributedTest._DistTestBase, name)
        if not getattr(fn, "__unittest_skip__", False):
            continue  # it runs anyway

        def forced(self, _fn=fn):
            return _fn(self)

        forced.__name__ = forced.__qualname__ = name
        forced.__doc__ = fn.__doc__
        setattr(TestDistBackendWithSpawn, name, forced)
        FORCED[name] = getattr(fn, "__unittest_skip_why__", "")


# The ranks inherit the environment, so they force the same tests (so that a rank's own
# getattr() finds the same function as the parent's).
_force([p for p in os.environ.get("PYTORCH_SUITE_FORCE", "").split("\n") if p])


def select_tests(args):
    known = all_test_names()
    if args.subset:
        entries = read_subset(args.subset)
        unknown = [f"{args.subset}:{ln}: {n}" for n, ln, _ in entries if n not in known]
        if unknown:
            sys.exit("run_suite.py: no such test in the suite:\n  " + "\n  ".join(unknown))
        names = [n for n, _, _ in entries]
    else:
        names = known
    if args.patterns:
        names = [n for n in names if _matches(n, args.patterns)]
    return names


def _key_line(text):
    """The line of a failure that says what went wrong: the last 'SomeError: ...' line."""
    candidates = []
    for line in text.splitlines():
        s = line.strip()
        head = s.split(":", 1)[0]
        if ":" in s and (head.endswith("Error") or head.endswith("Exception") or head == "Timeout"):
            candidates.append(s)
        elif s.startswith("Timing out after") or "timed out" in s:
            candidates.append(s)
    if not candidates:
        lines = [l.strip() for l in text.splitlines() if l.strip()]
        return lines[-1] if lines else ""
    # Prefer the error raised inside a rank over the parent's summary "RuntimeError: Process N exited..."
    inner = [c for c in candidates if not c.startswith("RuntimeError: Process ")]
    return (inner or candidates)[-1][:400]


_TTY = sys.stdout.isatty()


class _Result(unittest.TestResult):
    def __init__(self, verbose):
        super().__init__()
        self.verbose = verbose
        self.records = []
        self._t0 = 0.0

    def startTest(self, test):
        super().startTest(test)
        self._t0 = time.monotonic()
        if _TTY:  # a progress line, overwritten by the outcome
            print(f"  ...   {test._testMethodName}", end="\r", flush=True)

    def _record(self, test, status, detail=""):
        secs = time.monotonic() - self._t0
        name = test._testMethodName
        if _TTY:
            print("\033[K", end="")
        rec = {"name": name, "status": status, "seconds": round(secs, 2)}
        mark = ""
        if name in FORCED:
            rec["forced_past"] = FORCED[name]
            mark = f"  [forced past: {FORCED[name]}]"
        if status == "skip":
            rec["reason"] = detail
            print(f"SKIP  {name}  ({detail}){mark}", flush=True)
        elif status == "fail":
            rec["key_line"] = _key_line(detail)
            rec["detail"] = detail[-6000:]
            print(f"FAIL  {name}  ({secs:.1f} s): {rec['key_line']}{mark}", flush=True)
            if self.verbose:
                print(detail, flush=True)
        else:
            print(f"PASS  {name}  ({secs:.1f} s){mark}", flush=True)
        self.records.append(rec)

    def addSuccess(self, test):
        super().addSuccess(test)
        self._record(test, "pass")

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._record(test, "skip", reason)

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._record(test, "fail", self.failures[-1][1])

    def addError(self, test, err):
        super().addError(test, err)
        self._record(test, "fail", self.errors[-1][1])

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._record(test, "pass")

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._record(test, "fail", "unexpected success")


def run_one_world(args, names):
    import faulthandler

    world = int(os.environ["WORLD_SIZE"])
    # The parent's own per-test limit (MultiProcessTestCase._join_processes); a few tests carry a
    # longer one upstream, cap those too.
    for k in list(common_distributed.TIMEOUT_OVERRIDE):
        common_distributed.TIMEOUT_OVERRIDE[k] = min(common_distributed.TIMEOUT_OVERRIDE[k], args.timeout)
    print(f"== PyTorch {torch.__version__} distributed suite: backend {BACKEND}, world {world}, "
          f"{len(names)} tests, ranks by {args.start}, {args.timeout} s each at most", flush=True)
    result = _Result(args.verbose)
    t0 = time.monotonic()
    for name in names:
        # Last resort against a hang outside the parent's own timeout (e.g. in setUp): dump every
        # thread's stack and end the run.
        faulthandler.dump_traceback_later(args.timeout + 60, exit=True)
        try:
            TestDistBackendWithSpawn(name).run(result)
        finally:
            faulthandler.cancel_dump_traceback_later()
    wall = time.monotonic() - t0
    counts = {s: sum(r["status"] == s for r in result.records) for s in ("pass", "fail", "skip")}
    return {"backend": BACKEND, "world": world, "torch": torch.__version__,
            "wall_seconds": round(wall, 1), "counts": counts, "tests": result.records}


def main():
    args = ARGS
    if len(args.world) > 1:
        # The suite reads WORLD_SIZE at import: run one process per world size.
        import subprocess
        import tempfile
        rc = 0
        totals = {"pass": 0, "fail": 0, "skip": 0}
        with tempfile.TemporaryDirectory() as tmp:
            for w in args.world:
                part = os.path.join(tmp, f"world{w}.json")
                cmd = [sys.executable, os.path.abspath(__file__), *_passthrough_argv(args, w, part)]
                rc = max(rc, subprocess.call(cmd))
                if args.list:
                    continue
                if not os.path.exists(part):
                    totals["fail"] += 1  # that run died before its report
                    continue
                with open(part) as f:
                    report = json.load(f)
                for k in totals:
                    totals[k] += report["counts"][k]
                if args.report:
                    root, ext = os.path.splitext(args.report)
                    with open(f"{root}.world{w}{ext or '.json'}", "w") as f:
                        json.dump(report, f, indent=1)
        if not args.list:
            if args.fail_on_skip:
                totals["fail"] += totals["skip"]
                totals["skip"] = 0
            print(f"== all world sizes {' '.join(map(str, args.world))}:")
            print(f"{totals['pass']} passed, {totals['fail']} failed, {totals['skip']} skipped")
        return rc

    names = select_tests(args)
    if args.list:
        print("\n".join(names))
        return 0
    if not names:
        print("run_suite.py: no test selected", file=sys.stderr)
        return 2
    report = run_one_world(args, names)
    c = report["counts"]
    print(f"== backend {BACKEND}, world {report['world']}: {report['wall_seconds']} s")
    if args.report:
        with open(args.report, "w") as f:
            json.dump(report, f, indent=1)
    failed = c["fail"] + (c["skip"] if args.fail_on_skip else 0)
    if args.fail_on_skip and c["skip"]:
        print(f"{c['skip']} skipped test(s) count as failed (--fail-on-skip)")
    print(f"{c['pass']} passed, {failed} failed, {c['skip'] if not args.fail_on_skip else 0} skipped")
    return 1 if failed else 0


def _passthrough_argv(args, world, report):
    out = ["--backend", args.backend, "--world", str(world), "--timeout", str(args.timeout),
           "--start", args.start, "--report", report]
    for pat in args.force:
        out += ["--force", pat]
    if args.subset:
        out += ["--subset", args.subset]
    for pat in args.patterns:
        out += ["-k", pat]
    if args.fail_on_skip:
        out.append("--fail-on-skip")
    if args.list:
        out.append("--list")
    if args.verbose:
        out.append("-v")
    return out


if __name__ == "__main__":
    sys.exit(main())
