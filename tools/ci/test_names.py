#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every test a CI run ran, by stage, from its meson test logs; or what differs between two runs.

    tools/ci/test_names.py ROOT              one line a test: stage, meson entry, GoogleTest case, result
    tools/ci/test_names.py --diff OLD NEW    the tests that ran in one run and not in the other

A meson entry that is a GoogleTest program contributes one line per case it ran (from its
"[       OK ]", "[  FAILED  ]" and "[  SKIPPED ]" lines); any other entry one line. The meson
suite is left out of the entry's name ("loom:unit+threads / stream" is "stream"), so moving an
entry to another suite or program is not a difference; running it in another stage is.
"""
import argparse
import json
import pathlib
import re
import sys

BUILDS = {"build-ci": "release", "build-asan": "ASan + UBSan", "build-tsan": "TSan"}
CASE = re.compile(r"^\[ {7}OK \] (\S+) \(|^\[  FAILED  \] (\S+) \(|^\[  SKIPPED \] (\S+) \(", re.M)


def run_tests(root):
    """{(stage, entry, case): result} for every test of the run under ROOT."""
    tests = {}
    for folder, stage in BUILDS.items():
        log = pathlib.Path(root) / folder / "meson-logs" / "testlog.json"
        if not log.exists():
            continue
        with open(log) as lines:
            for line in lines:
                entry = json.loads(line)
                name = entry["name"].split(" / ", 1)[-1]
                cases = [(m.group(1) and "OK") or (m.group(2) and "FAIL") or "SKIP"
                         for m in CASE.finditer(entry.get("stdout") or "")]
                names = [m.group(1) or m.group(2) or m.group(3) for m in CASE.finditer(entry.get("stdout") or "")]
                if names:
                    for case, result in zip(names, cases):
                        tests[(stage, name, case)] = result
                else:
                    tests[(stage, name, "-")] = entry.get("result", "?")
    return tests


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("roots", nargs="+", metavar="ROOT")
    parser.add_argument("--diff", action="store_true", help="compare two runs: OLD NEW")
    args = parser.parse_args()
    if not args.diff:
        for root in args.roots:
            for (stage, name, case), result in sorted(run_tests(root).items()):
                print(f"{stage}\t{name}\t{case}\t{result}")
        return 0
    if len(args.roots) != 2:
        parser.error("--diff takes OLD and NEW")
    old, new = (run_tests(root) for root in args.roots)
    for label, runs in [("old", old), ("new", new)]:
        by_stage = {}
        for stage, _, _ in runs:
            by_stage[stage] = by_stage.get(stage, 0) + 1
        print(f"{label}: {len(runs)} tests (" + ", ".join(f"{s} {n}" for s, n in sorted(by_stage.items())) + ")")
    lost = sorted(set(old) - set(new))
    gained = sorted(set(new) - set(old))
    for sign, keys in [("-", lost), ("+", gained)]:
        for stage, name, case in keys:
            print(f"{sign} {stage}\t{name}\t{case}")
    if not lost and not gained:
        print("the same tests, in the same stages")
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
