# SPDX-License-Identifier: Apache-2.0
"""A stand-in for the `expecttest` package, enough for torch 1.13's test helpers to import.

Why: torch/testing/_internal/common_utils.py does `import expecttest` at the top (its TestCase
derives from expecttest.TestCase and it reads/writes expecttest.ACCEPT), and Debian ships no
package for expecttest, so PyTorch's own distributed suite cannot even be imported without it.
run_suite.py puts this folder on sys.path only when a real `expecttest` is not importable.

The distributed suite (distributed_test.py) calls none of the inline-expect assertions, so they
are implemented here plainly: compare the normalised text, never rewrite a source file.
"""
import textwrap
import unittest

# common_utils reads this and sets it from its --accept flag; accepting (rewriting the expected
# text in the test's source) is not supported by this stand-in.
ACCEPT = False


def _normalize(text):
    return textwrap.dedent(text).strip()


class TestCase(unittest.TestCase):
    longMessage = True

    def assertExpectedInline(self, actual, expect, skip=0):
        if not isinstance(actual, str):
            raise TypeError("assertExpectedInline is strings only")
        self.assertMultiLineEqual(_normalize(expect), _normalize(actual))

    def assertExpectedRaisesInline(self, exc_type, callable, expect, *args, **kwargs):
        try:
            callable(*args, **kwargs)
        except exc_type as e:
            self.assertExpectedInline(str(e), expect)
            return
        self.fail("Did not raise when expected to")
