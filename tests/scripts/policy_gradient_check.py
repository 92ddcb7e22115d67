#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks of examples/policy_gradient beyond "it solves" (the solving run is its own test).

  policy_gradient_check.py path/to/loomrun path/to/policy_gradient

- a short --fixed-episodes run on 4 ranks exits 0 and its --json summary holds what was asked
  (episodes, updates, ranks, mode) with parameters identical on every rank;
- the same run again gives the same parameter hash (a seed fixes the whole run);
- --episodes-per-update not divisible by the rank count: exit 2, the reason said once;
- a bad flag, --fixed-episodes not a multiple of --episodes-per-update: exit 2 with the reason;
- -h: exit 0 with the usage;
- a failing Loom call (loomCommInitFromEnv without a launcher): exit 1, naming the call and
  Loom's error text;
- an unwritable --json path: exit 1.
Prints PASS/FAIL per check; exits 1 on any failure.
"""
import json
import os
import subprocess
import sys
import tempfile

FAILURES = []


def report(ok, what, detail=""):
    print(("PASS " if ok else "FAIL ") + what, flush=True)
    if not ok:
        if detail:
            print(detail, flush=True)
        FAILURES.append(what)


def run(command, env=None):
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    return result.returncode, result.stdout, result.stderr


def check_fixed_runs(loomrun, program, folder):
    summaries = []
    for attempt in (1, 2):
        path = os.path.join(folder, f"fixed{attempt}.json")
        code, out, err = run([loomrun, "-n", "4", "--timeout", "100", program,
                              "--fixed-episodes", "64", "--episodes-per-update", "16",
                              "--seed", "7", "--json", path])
        report(code == 0, f"fixed-episodes run {attempt} on 4 ranks exits 0 (got {code})",
               out + err)
        if code == 0:
            with open(path) as file:
                summaries.append(json.load(file))
    if not summaries:
        return
    summary = summaries[0]
    expected = {"ranks": 4, "episodes": 64, "updates": 4, "episodes_per_update": 16, "seed": 7,
                "mode": "fixed-episodes", "eval_episodes": 100, "parameters_identical": True}
    wrong = {key: summary.get(key) for key, value in expected.items() if summary.get(key) != value}
    report(not wrong, "the JSON summary holds what was asked", f"differs: {wrong}")
    fields = ("wall_seconds", "moving_average", "eval_average", "solved", "steps", "parameter_hash")
    missing = [key for key in fields if key not in summary]
    report(not missing, "the JSON summary has every field", f"missing: {missing}")
    if len(summaries) == 2:
        hashes = [s["parameter_hash"] for s in summaries]
        report(hashes[0] == hashes[1], "the same seed gives the same final parameters",
               f"{hashes[0]} != {hashes[1]}")


def check_errors(loomrun, program, folder):
    code, out, err = run([loomrun, "-n", "3", "--timeout", "60", program,
                          "--episodes-per-update", "32"])
    report(code == 2 and err.count("not divisible by the 3 ranks") == 1,
           f"episodes per update not divisible by the ranks: exit 2, said once (got {code})", err)

    for args, needle in ((["--no-such-flag", "1"], "unknown flag"),
                         (["--lr", "fast"], "--lr needs a positive number"),
                         (["--fixed-episodes", "100", "--episodes-per-update", "32"],
                          "not a multiple")):
        code, out, err = run([program] + args)
        report(code == 2 and needle in err,
               f"{' '.join(args)}: exit 2 naming the problem (got {code})", err)

    code, out, err = run([program, "-h"])
    report(code == 0 and "--episodes-per-update" in out,
           f"-h: exit 0 with the usage (got {code})", out + err)

    launcher = ("LOOM_RANK", "LOOM_WORLD", "LOOM_COMM")
    env = {k: v for k, v in os.environ.items() if not k.startswith(launcher)}
    code, out, err = run([program], env=env)
    report(code == 1 and "loomCommInitFromEnv failed" in err and "launcher" in err,
           f"a failing Loom call: exit 1 with Loom's error (got {code})", err)

    code, out, err = run([loomrun, "-n", "2", "--timeout", "60", program,
                          "--fixed-episodes", "16", "--episodes-per-update", "16",
                          "--json", os.path.join(folder, "no", "such", "dir.json")])
    report(code == 1 and "cannot write" in err,
           f"an unwritable --json path: exit 1 (got {code})", err)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    loomrun, program = sys.argv[1], sys.argv[2]
    os.environ.setdefault("LOOM_SOCKET_IFNAME", "lo")
    with tempfile.TemporaryDirectory(prefix="policy_gradient_check.") as folder:
        check_fixed_runs(loomrun, program, folder)
        check_errors(loomrun, program, folder)
    print(f"{'FAILED' if FAILURES else 'PASSED'}: {len(FAILURES)} check(s) failed")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
