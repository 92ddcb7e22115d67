#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Sums test cases over a meson test log: GoogleTest executables count their own cases,
any other test counts as one. Prints 'N passed, N failed, N skipped' as the last line."""
import json
import re
import sys

passed = failed = skipped = 0
paths = sys.argv[1:]
if paths[:1] == ["--extra-failed"]:
    failed += int(paths[1])
    paths = paths[2:]
for path in paths:
    with open(path) as log:
        for line in log:
            entry = json.loads(line)
            out = entry.get("stdout", "") or ""
            ok = entry.get("result") in ("OK", "EXPECTEDFAIL")
            m_pass = re.search(r"^\[  PASSED  \] (\d+) test", out, re.M)
            m_fail = re.search(r"^\[  FAILED  \] (\d+) test", out, re.M)
            m_skip = re.search(r"^\[  SKIPPED \] (\d+) test", out, re.M)
            if m_pass or m_fail:
                passed += int(m_pass.group(1)) if m_pass else 0
                failed += int(m_fail.group(1)) if m_fail else 0
                skipped += int(m_skip.group(1)) if m_skip else 0
                # A crash or timeout after the summary still fails the executable.
                if not ok and not m_fail:
                    failed += 1
            elif entry.get("result") == "SKIP":
                skipped += 1
            elif ok:
                passed += 1
            else:
                failed += 1
print(f"{passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed else 0)
