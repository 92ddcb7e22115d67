#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Tests check_spdx.py: it passes on the repository, and in a planted tree it reports exactly
the source files that lack the line (not data files), and --fix adds it after a shebang."""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = os.path.join(HERE, "check_spdx.py")
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))


def run(root, *extra):
    return subprocess.run([sys.executable, CHECK, "--root", root, *extra], capture_output=True, text=True)


def main():
    failures = []
    real = run(ROOT)
    if real.returncode != 0:
        failures.append("the repository has files without the license line:\n" + real.stderr)

    with tempfile.TemporaryDirectory() as planted:
        files = {
            "src/good.cc": "// SPDX-License-Identifier: Apache-2.0\nint x;\n",
            "src/bad.h": "#pragma once\n",
            "tools/script": "#!/bin/sh\necho hi\n",
            "tools/good_script": "#!/bin/sh\n# SPDX-License-Identifier: Apache-2.0\n",
            "meson.build": "project('x')\n",
            "tests/data/machine.xml": "<system/>\n",
            "docs/readme.md": "# Title\n",
        }
        for relative, text in files.items():
            path = os.path.join(planted, relative)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
        result = run(planted)
        reported = sorted(line.split(":")[0] for line in result.stderr.splitlines() if line.strip())
        expected = ["meson.build", "src/bad.h", "tools/script"]
        if result.returncode != 1 or reported != expected:
            failures.append(f"planted tree: exit {result.returncode}, reported {reported}, expected {expected}")
        fixed = run(planted, "--fix")
        again = run(planted)
        if fixed.returncode != 0 or again.returncode != 0:
            failures.append("--fix did not leave a clean tree:\n" + again.stderr)
        with open(os.path.join(planted, "tools/script")) as f:
            lines = f.read().splitlines()
        if lines[:2] != ["#!/bin/sh", "# SPDX-License-Identifier: Apache-2.0"]:
            failures.append(f"--fix placed the line wrongly in a script: {lines[:2]}")
        with open(os.path.join(planted, "src/bad.h")) as f:
            if not f.readline().startswith("// SPDX-License-Identifier: Apache-2.0"):
                failures.append("--fix did not use // in a header")

    for failure in failures:
        print("FAIL: " + failure)
    print("check_spdx tests: " + ("failed" if failures else "passed"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
