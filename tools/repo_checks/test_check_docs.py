#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Tests check_docs.py: it passes on the repository, and in a planted tree it reports exactly
the broken links, broken anchors and issue numbers planted there, and nothing of the good links,
good anchors, code, HTML entities and other projects' references beside them."""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = os.path.join(HERE, "check_docs.py")
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))

# Each planted document; a line that must be reported ends with "<- KIND", KIND being what the
# report's message must contain. The marker itself is in an HTML comment, which holds no link.
PLANTED = {
    "README.md": """\
# Planted project

## Set-up, step by step

A good link: [the guide](docs/guide.md), a folder: [docs](docs/), the same file's heading:
[set-up](#set-up-step-by-step), another file's heading: [install](docs/guide.md#install-it-now).
A repeated heading's second anchor: [again](docs/guide.md#notes-1).
External links are not fetched: [site](https://example.com/missing.md), [mail](mailto:a@b.c).
A missing file: [gone](docs/missing.md). <!-- <- broken link -->
A missing heading: [nowhere](docs/guide.md#no-such-heading). <!-- <- broken anchor -->
A missing heading here: [here](#not-a-heading). <!-- <- broken anchor -->
This was issue 15's work. <!-- <- issue number -->
Code is not a link: `[x](not-there.md)` and `issue #3` in code is still an issue number. <!-- <- issue number -->

```sh
cat [fenced](not-a-link.md)   # no link in a fence, and #12 in a fence is a comment
```

An entity &#0; is not an issue, nor NVIDIA/nccl#877, nor NVIDIA/nccl PR #877.
""",
    "docs/guide.md": """\
# Guide

## Install it now

## Notes

## Notes

Back to [the top](../README.md#planted-project) and [a file](../src/code.c).
As findings 8-10 showed, see #14. <!-- <- issue number, issue number -->
[Reference]: ../src/missing.c
<!-- the reference definition above names a missing file: <- broken link -->
""",
    "src/code.c": "int x;\n",
}


def expected_problems():
    """(file, line, kind) for every marker in the planted documents."""
    expected = []
    for relative, text in PLANTED.items():
        lines = text.splitlines()
        for number, line in enumerate(lines, 1):
            if "<- " not in line:
                continue
            kinds = [k.strip() for k in line.split("<- ", 1)[1].replace("-->", "").split(",")]
            # A comment line on its own reports on the line above it.
            at = number - 1 if line.startswith("<!--") else number
            expected += [(relative, at, kind) for kind in kinds]
    return sorted(expected)


def run(root):
    return subprocess.run([sys.executable, CHECK, "--root", root], capture_output=True, text=True)


def kind_of(message):
    for kind in ("broken link", "broken anchor", "issue number"):
        if kind in message:
            return kind
    return message


def main():
    failures = []
    real = run(ROOT)
    if real.returncode != 0:
        failures.append("the repository's documents have problems:\n" + real.stderr)

    with tempfile.TemporaryDirectory() as planted:
        for relative, text in PLANTED.items():
            path = os.path.join(planted, relative)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        result = run(planted)
        reported = []
        for line in result.stderr.splitlines():
            if not line.strip():
                continue
            relative, number, message = line.split(":", 2)
            reported.append((relative, int(number), kind_of(message)))
        reported.sort()
        expected = expected_problems()
        if result.returncode != 1 or reported != expected:
            failures.append(f"planted tree: exit {result.returncode}\n  reported {reported}\n  expected {expected}\n"
                            + result.stderr)

    for failure in failures:
        print("FAIL: " + failure)
    print("check_docs tests: " + ("failed" if failures else "passed"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
