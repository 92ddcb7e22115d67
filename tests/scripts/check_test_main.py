#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The test programs' shared main (tests/support/test_main.cc) on one of them: --test-file
selects exactly the tests that file defines; --gtest_filter and GTEST_FILTER both apply (a test
runs only when it passes both, so CI's GTEST_FILTER exclusions hold beside an entry's own
filter); a file that defines no test exits 1, naming it; without --test-file the program is an
ordinary GoogleTest program.

    check_test_main.py PROGRAM FILE_A FILE_B

FILE_A and FILE_B are two source files of PROGRAM, spelled as the entries spell them.
"""
import os
import subprocess
import sys

FAILURES = []


def check(ok, what, detail=""):
    print(("PASS " if ok else "FAIL ") + what + ("" if ok or not detail else f": {detail}"), flush=True)
    if not ok:
        FAILURES.append(what)


def listed(program, *args, gtest_filter=None):
    """The full names --gtest_list_tests prints, and the exit status."""
    env = {k: v for k, v in os.environ.items() if k != "GTEST_FILTER"}
    if gtest_filter is not None:
        env["GTEST_FILTER"] = gtest_filter
    done = subprocess.run([program, "--gtest_list_tests", *args], env=env, capture_output=True, text=True,
                          timeout=60)
    names, suite = [], ""
    for line in done.stdout.splitlines():
        if not line.startswith(" "):
            suite = line.split("#")[0].strip()
        else:
            names.append(suite + line.split("#")[0].strip())
    return names, done.returncode, done.stderr


def main():
    program, file_a, file_b = sys.argv[1:4]
    everything, rc, _ = listed(program)
    check(rc == 0 and len(everything) > 0, "without --test-file every test is listed", f"exit {rc}")
    only_a, rc, _ = listed(program, f"--test-file={file_a}")
    only_b, _, _ = listed(program, f"--test-file={file_b}")
    check(rc == 0 and 0 < len(only_a) < len(everything), f"--test-file={file_a} lists a part",
          f"{len(only_a)} of {len(everything)}")
    check(not set(only_a) & set(only_b), "two files' tests are disjoint")
    both, _, _ = listed(program, f"--test-file={file_a}", f"--test-file={file_b}")
    check(sorted(both) == sorted(only_a + only_b), "two --test-file flags list both files' tests")

    first, second = only_a[0], only_a[-1]
    by_argument, _, _ = listed(program, f"--test-file={file_a}", f"--gtest_filter={first}:{second}")
    check(sorted(by_argument) == sorted({first, second}), "--gtest_filter narrows the file's tests",
          str(by_argument))
    by_variable, _, _ = listed(program, f"--test-file={file_a}", gtest_filter=f"-{first}")
    check(first not in by_variable and len(by_variable) == len(only_a) - 1,
          "GTEST_FILTER alone narrows the file's tests", str(len(by_variable)))
    merged, _, _ = listed(program, f"--test-file={file_a}", f"--gtest_filter={first}:{second}",
                          gtest_filter=f"-{first}")
    check(merged == [second] or (first == second and merged == []),
          "--gtest_filter and GTEST_FILTER both apply", str(merged))
    plain, _, _ = listed(program, f"--gtest_filter={first}:{second}", gtest_filter=f"-{first}")
    check(plain == [second] or (first == second and plain == []),
          "both apply without --test-file too", str(plain))

    none, rc, err = listed(program, "--test-file=unit/test_no_such_file.cc")
    check(rc == 1 and not none and "test_no_such_file.cc" in err, "a file with no tests exits 1, naming it",
          f"exit {rc}, {err.strip()}")

    if FAILURES:
        print(f"{len(FAILURES)} failed: " + "; ".join(FAILURES))
        return 1
    print("all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
