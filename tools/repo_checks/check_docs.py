#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every link in the repository's documents resolves, and no document names an issue number.

    check_docs.py [--root DIR]

Documents are the Markdown files (*.md) that `git ls-files` lists when DIR is the top of a git
work tree (tracked files and new files git does not ignore), else those a walk finds outside
build folders. In each document:

- every link whose target is a relative path — `[text](target)`, `![alt](target)`, and a
  reference definition `[label]: target` — must name an existing file or folder, relative to
  the document (a target starting with `/` is relative to DIR). `#anchor` alone, or
  `file.md#anchor`, must match a heading of that Markdown file by GitHub's rule: lowercase,
  punctuation dropped except `-` and `_`, spaces become `-`, and a repeated heading gets `-1`,
  `-2`, ... Links with a scheme (https:, mailto:) are not fetched. Code (fenced blocks and
  `inline spans`) holds no links;
- no issue numbers: "issue 15", "issues 3", "issue #7", "finding 8", "findings 8-10", and
  `#14` outside code. An HTML entity (`&#0;`) and a reference qualified with another
  project's repository (`NVIDIA/nccl#877`, `NVIDIA/nccl PR #877`) are not issue numbers of
  this project. A document says what the thing is instead.

Prints each problem as `file:line: message` and exits 1 when there is any, 0 otherwise.
"""
import argparse
import os
import re
import subprocess
import sys
import urllib.parse

SKIPPED_DIRS = {".git", "__pycache__", ".cache", "node_modules"}

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
ATX_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
SETEXT_UNDERLINE = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
HTML_ANCHOR = re.compile(r"<a\s[^>]*(?:name|id)\s*=\s*[\"']([^\"']+)[\"']", re.IGNORECASE)
CODE_SPAN = re.compile(r"(`+)((?:(?!\n[ \t]*\n)[^`]|(?!\1)`+)+?)\1")
# [text](target "title") and ![alt](target); a target may hold one level of parentheses.
INLINE_LINK = re.compile(
    r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^>]*>|(?:[^()\s]|\([^()\s]*\))*)(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)")
REFERENCE_DEFINITION = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")

ISSUE_WORD = re.compile(r"\bissues?\s+#?\d+", re.IGNORECASE)
FINDING_WORD = re.compile(r"\bfindings?\s+#?\d", re.IGNORECASE)
HASH_NUMBER = re.compile(r"#\d+\b")
# Another project's reference: owner/repo#N, owner/repo PR #N, owner/repo pull request #N.
QUALIFIED = re.compile(r"[\w.-]+/[\w.-]+(?:\s+(?:PR|pull request))?\s*$", re.IGNORECASE)


def documents(root):
    """The Markdown files to check, relative to root."""
    try:
        top = subprocess.run(["git", "-C", root, "rev-parse", "--show-toplevel"], check=True,
                             capture_output=True, text=True).stdout.strip()
        if os.path.realpath(top) != os.path.realpath(root):
            raise ValueError("not the top of a work tree")
        out = subprocess.run(["git", "-C", root, "ls-files", "-z", "--cached", "--others",
                              "--exclude-standard", "--", "*.md"],
                             check=True, capture_output=True).stdout
        files = sorted({p for p in out.decode().split("\0") if p})
        return [p for p in files if os.path.isfile(os.path.join(root, p))]
    except (OSError, ValueError, subprocess.CalledProcessError):
        files = []
        for directory, subdirs, names in os.walk(root):
            subdirs[:] = sorted(d for d in subdirs if d not in SKIPPED_DIRS and not d.startswith("build"))
            files += [os.path.relpath(os.path.join(directory, n), root) for n in names if n.endswith(".md")]
        return sorted(files)


def link_text(match):
    """A link as its text alone: `[text](target)` becomes `[text]`."""
    link = match.group(0)
    return link[:link.rfind("](") + 1]


def fence_flags(lines):
    """For each line, whether it belongs to a fenced code block (the fence lines included)."""
    flags, fence = [], None
    for line in lines:
        match = FENCE.match(line)
        if fence is None:
            if match:
                fence = match.group(1)
            flags.append(fence is not None)
        else:
            flags.append(True)
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence) \
                    and not line.strip()[len(match.group(1)):].strip():
                fence = None
    return flags


def masked_lines(lines, flags):
    """The lines with fenced blocks emptied and inline code spans blanked (a span may run over
    several lines of a paragraph, never over a blank line); columns stay where they were."""
    joined = "\n".join("" if fenced else line for line, fenced in zip(lines, flags))
    masked = CODE_SPAN.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), joined)
    return masked.split("\n")


def slug(heading):
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = re.sub(r"<[^>]+>", "", text)                          # inline HTML
    text = text.replace("`", "").replace("*", "")
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(text):
    """Every anchor a document offers: its headings' slugs (repeats numbered) and HTML ids."""
    found, seen = set(), {}
    previous = None
    lines = text.split("\n")
    for line, in_fence in zip(lines, fence_flags(lines)):
        if in_fence:
            previous = None
            continue
        for name in HTML_ANCHOR.findall(line):
            found.add(name)
        heading = None
        match = ATX_HEADING.match(line)
        if match:
            heading = match.group(2) or ""
        elif previous is not None and previous.strip() and SETEXT_UNDERLINE.match(line) \
                and not ATX_HEADING.match(previous) and "|" not in previous:
            heading = previous.strip()
        if heading is not None:
            base = slug(heading)
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
        previous = line
    return found


class Checker:
    def __init__(self, root):
        self.root = root
        self.anchor_cache = {}
        self.problems = []

    def report(self, document, number, message):
        self.problems.append(f"{document}:{number}: {message}")

    def anchors_of(self, path):
        if path not in self.anchor_cache:
            with open(path, encoding="utf-8", errors="replace") as f:
                self.anchor_cache[path] = anchors(f.read())
        return self.anchor_cache[path]

    def check_target(self, document, number, target):
        if target.startswith("<") and target.endswith(">"):
            target = target[1:-1]
        if not target or SCHEME.match(target):
            return  # external: not fetched
        path_part, _, anchor = target.partition("#")
        path_part = urllib.parse.unquote(path_part.split("?", 1)[0])
        anchor = urllib.parse.unquote(anchor)
        if path_part:
            base = self.root if path_part.startswith("/") else os.path.dirname(os.path.join(self.root, document))
            path = os.path.normpath(os.path.join(base, path_part.lstrip("/")))
            if not os.path.exists(path):
                self.report(document, number, f"broken link '{target}': no such file or folder")
                return
        else:
            path = os.path.join(self.root, document)
        if anchor and path.endswith(".md") and os.path.isfile(path):
            if anchor.lower() not in self.anchors_of(path) and anchor not in self.anchors_of(path):
                where = "this document" if not path_part else os.path.relpath(path, self.root)
                self.report(document, number, f"broken anchor '#{anchor}': no heading of {where} has it")

    def check_issue_numbers(self, document, number, line, masked):
        for regex in (ISSUE_WORD, FINDING_WORD):
            for match in regex.finditer(line):
                self.report(document, number,
                            f"names an issue number ('{match.group(0)}'); say what the thing is instead")
        prose = INLINE_LINK.sub(link_text, masked)  # a link's target is a path, not prose
        prose = re.sub(r"<!--.*?-->", "", prose)
        for match in HASH_NUMBER.finditer(prose):
            before = prose[:match.start()]
            if before.endswith("&") or (before and (before[-1].isalnum() or before[-1] in "/_")):
                continue  # an HTML entity (&#0;), or part of a word or path
            if QUALIFIED.search(before):
                continue  # another project's reference
            self.report(document, number,
                        f"names an issue number ('{match.group(0)}'); say what the thing is instead")

    def check(self, document):
        with open(os.path.join(self.root, document), encoding="utf-8", errors="replace") as f:
            lines = f.read().split("\n")
        flags = fence_flags(lines)
        for number, (line, masked) in enumerate(zip(lines, masked_lines(lines, flags)), 1):
            self.check_issue_numbers(document, number, line, masked)
            for match in INLINE_LINK.finditer(masked):
                self.check_target(document, number, match.group(1))
            match = REFERENCE_DEFINITION.match(masked)
            if match:
                self.check_target(document, number, match.group(1))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    checker = Checker(root)
    files = documents(root)
    for document in files:
        checker.check(document)
    for problem in checker.problems:
        print(problem, file=sys.stderr)
    print(f"check_docs: {len(files)} documents, {len(checker.problems)} problems")
    return 1 if checker.problems else 0


if __name__ == "__main__":
    sys.exit(main())
