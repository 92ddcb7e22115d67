# SPDX-License-Identifier: Apache-2.0
"""Runs one perf tool invocation (a job's band for one contender) and reads its -J JSON."""

import json
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field

# Variables that would silently turn one contender into another (a user's LOOM_SHM_DISABLE=1
# would make "loom-shm" run over TCP): removed from every run, then set per contender.
STRIPPED_ENV = ("LOOM_SHM_DISABLE", "LOOM_TRANSPORT", "GLIBC_TUNABLES")

MPIRUN_FLAGS = ("--allow-run-as-root", "--oversubscribe", "--bind-to", "none")


@dataclass
class Outcome:
    """One invocation: rows (dicts from the JSON) or why there are none."""
    rows: list = field(default_factory=list)
    error: str = ""  # non-empty: the tool failed (exit status, timeout, unreadable JSON)
    wrong: int = 0  # sum of #wrong over checked rows
    seconds: float = 0.0


def _stop_session(process):
    """Kills the session a tool run started in (launcher and ranks). Until it is waited for, the
    launcher's pid, which names the group, cannot be reused."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass  # everything in it has exited already


class Runner:
    def __init__(self, build, log_path, timeout_s=900):
        self.build = os.path.abspath(build)
        self.log_path = log_path
        self.timeout_s = timeout_s
        self.temp = tempfile.mkdtemp(prefix="loom-compare-")

    def close(self):
        shutil.rmtree(self.temp, ignore_errors=True)

    def unavailable(self, contender, collective):
        """Why this contender cannot run this collective here, or None if it can."""
        tool = contender.tool_path(self.build, collective)
        if not os.access(tool, os.X_OK):
            return f"{os.path.relpath(tool, self.build)} not built in {self.build}"
        if contender.launcher == "mpirun" and shutil.which("mpirun") is None:
            return "mpirun not found (apt-get install openmpi-bin)"
        if contender.launcher == "loomrun" and not os.access(self._loomrun(), os.X_OK):
            return f"tools/loomrun not built in {self.build}"
        return None

    def _loomrun(self):
        return os.path.join(self.build, "tools", "loomrun")

    def command(self, contender, job, check, json_path):
        band = job.band
        flags = ["-b", str(band.min_bytes), "-e", str(band.max_bytes), "-f", str(band.factor),
                 "-n", str(band.iters), "-w", str(band.warmup), "-c", str(check), "-d", "float"]
        if job.collective != "all_gather":
            flags += ["-o", "sum"]
        flags += ["-J", json_path]
        tool = contender.tool_path(self.build, job.collective)
        if contender.launcher == "mpirun":
            return ["mpirun", *MPIRUN_FLAGS, "-np", str(job.ranks), tool, *flags]
        return [self._loomrun(), "-n", str(job.ranks), "--timeout", str(self.timeout_s), tool,
                *flags]

    def environment(self, contender):
        env = {k: v for k, v in os.environ.items() if k not in STRIPPED_ENV}
        env.update(dict(contender.env))
        return env

    def run(self, contender, job, check, tag):
        json_path = os.path.join(self.temp, f"{tag}.json")
        argv = self.command(contender, job, check, json_path)
        env = self.environment(contender)
        shown = " ".join(f"{k}={v}" for k, v in contender.env) + " " + shlex.join(argv)
        start = time.monotonic()
        # A session of its own, so a timeout can stop the launcher and every rank it started.
        process = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True, start_new_session=True)
        try:
            stdout, stderr = process.communicate(timeout=self.timeout_s)
            error = "" if process.returncode == 0 else f"exit status {process.returncode}"
        except subprocess.TimeoutExpired:
            _stop_session(process)
            stdout, stderr = process.communicate()
            error = f"timed out after {self.timeout_s} s"
        except BaseException:  # Ctrl-C or SIGTERM: stop the launcher and its ranks too
            _stop_session(process)
            process.wait()
            raise
        outcome = Outcome(seconds=time.monotonic() - start)
        self._log(tag, shown, stdout, stderr, error, outcome.seconds)
        try:
            with open(json_path) as handle:
                report = json.load(handle)
            os.unlink(json_path)
            outcome.rows = report.get("results", [])
            for row in outcome.rows:
                for place in ("out_of_place", "in_place"):
                    outcome.wrong += int(row.get(place, {}).get("wrong") or 0)
        except (OSError, ValueError) as problem:
            error = error or f"no readable JSON ({problem})"
        if error:
            tail = (stderr or stdout or "").strip().splitlines()[-8:]
            outcome.error = error + ("\n    " + "\n    ".join(tail) if tail else "")
        return outcome

    def _log(self, tag, shown, stdout, stderr, error, seconds):
        with open(self.log_path, "a") as log:
            log.write(f"=== {tag} ({seconds:.1f} s){' FAILED: ' + error if error else ''}\n")
            log.write(f"$ {shown.strip()}\n{stdout}")
            if stderr:
                log.write(f"--- stderr\n{stderr}")
            log.write("\n")


def bounds_tool_missing(build, name):
    """Why perf/bounds/<name> cannot run, or None."""
    tool = os.path.join(os.path.abspath(build), "perf", "bounds", name)
    return None if os.access(tool, os.X_OK) else f"perf/bounds/{name} not built in {build}"


def run_bounds_tool(build, name, args, log_path, timeout_s=300):
    """Runs perf/bounds/<name> --json; returns (dict, error)."""
    tool = os.path.join(os.path.abspath(build), "perf", "bounds", name)
    argv = [tool, *args, "--json"]
    env = {k: v for k, v in os.environ.items() if k not in STRIPPED_ENV}
    try:
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return None, f"{name} timed out after {timeout_s} s"
    with open(log_path, "a") as log:
        log.write(f"=== bounds {name}\n$ {shlex.join(argv)}\n{done.stdout}{done.stderr}\n")
    if done.returncode != 0:
        return None, f"{name}: exit status {done.returncode}: {done.stderr.strip()[-300:]}"
    try:
        return json.loads(done.stdout.strip().splitlines()[-1]), None
    except (ValueError, IndexError) as problem:
        return None, f"{name}: unreadable output ({problem})"
