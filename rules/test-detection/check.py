#!/usr/bin/env python3
"""test-detection: production code that checks whether it runs under a test."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_lib"))
import slopscan as ss  # noqa: E402

ADVICE = ("Make the code behave the same under test; if a test needs another behaviour, "
          "inject it (a parameter, a fake, a documented setting) from the test's side.")

# Markers that mean "am I being tested?" and nothing else. Matched on code and on whole
# string literals, never inside comments, docstrings or longer messages.
CODE_MARKERS = [
    (ss.Later(r"\bsys\s*\.\s*_called_from_test\b", words=("_called_from_test",)),
     "sys._called_from_test"),
    (ss.Later(r"\bin\s+sys\s*\.\s*modules\b", words=("modules",)), "sys.modules"),
    (ss.Later(r"\bsys\s*\.\s*modules\s*\.\s*get\s*\(|\bsys\s*\.\s*modules\s*\[",
              words=("modules",)), "sys.modules"),
    (ss.Later(r"\b(process\s*\.\s*env|import\s*\.\s*meta\s*\.\s*env)\s*\.\s*"
              r"(JEST_WORKER_ID|VITEST(_WORKER_ID|_POOL_ID)?)\b",
              words=("JEST_WORKER_ID", "VITEST")), "the test runner's variable"),
    (ss.Later(r"\btypeof\s+(jest|vi)\s*[!=]==?", words=("typeof",)), "the test runner's global"),
    (ss.Later(r"\btesting\s*\.\s*Testing\s*\(\s*\)", words=("Testing",)), "testing.Testing()"),
]
# Whole string literals that name a test runner's marker.
RUNNER_STRINGS = {"PYTEST_CURRENT_TEST", "PYTEST_VERSION", "PYTEST_XDIST_WORKER",
                  "JEST_WORKER_ID", "VITEST", "VITEST_WORKER_ID", "VITEST_POOL_ID", "test.v"}
# Module names that, looked up in sys.modules, tell a test run.
RUNNER_MODULES = {"pytest", "_pytest", "unittest", "nose", "nose2", "doctest"}
# A marker string counts only where the line reads the environment (or flags) with it:
# a table of marker names, like this rule's own, reads nothing.
ENV_READ = ss.Later(
    r"\b(environ|getenv|Getenv|LookupEnv|process\s*\.\s*env|Deno\s*\.\s*env"
    r"|import\s*\.\s*meta\s*\.\s*env|flag\s*\.\s*Lookup)\b",
    words=("env", "Env", "Lookup"),
)
# An environment's name compared with "test" (`process.env.NODE_ENV === "test"`,
# `import.meta.env.MODE !== 'test'`, `os.getenv("APP_ENV") == "testing"`): the code asks
# which environment it runs in, and the one it singles out is the test run.
ENV_NAMES = {"test", "testing"}
COMPARES = ss.Later(r"[!=]==?")
GO_ARGS_TEST = ss.Later(r"\bos\s*\.\s*Args\s*\[\s*0\s*\]", words=("Args",))

# Code whose job is testing: a test runner or plugin, a test utility, a runner's config.
TESTING_PATH = ss.Later(
    r"(^|/)[^/]*(pytest|jest|vitest|mocha|testing|testutils?|test_?utils?|test-utils?"
    r"|test_?helpers?|test-helpers?|test_?support|fixtures?|mocks?|fakes?)[^/]*(/|$)"
    r"|(^|/)(setup_?tests|jest\.setup|vitest\.setup|karma\.conf)[^/]*$"
    r"|(^|/)[^/]*\.config\.[cm]?[jt]s$",
    ss.I,
    words=("test", "jest", "mocha", "fixture", "mock", "fake", "karma.conf", ".config."),
)
TESTING_IMPORT = ss.Later(
    r"^\s*(import\s+(pytest|_pytest|unittest)\b|from\s+(pytest|_pytest|unittest)\b"
    r"|def\s+pytest_\w+\s*\(|@pytest\.fixture)"
    r"|\bfrom\s+[\"'](vitest|@jest/[\w-]+|jest)[\"']|\brequire\(\s*[\"'](jest|vitest)",
    ss.M,
    words=("pytest", "unittest", "jest", "vitest"),
)


def _is_testing_code(sf: ss.SourceFile) -> bool:
    if sf.is_test or TESTING_PATH.search(sf.path):
        return True
    # A module importing the test framework is a plugin or test utility (Go is left out:
    # `testing.Testing()` itself needs the "testing" import). The whole content when
    # known, else what the hunks show.
    text = sf.new_content if sf.new_content is not None else "\n".join(
        nl.text for h in sf.hunks for nl in h)
    return bool(TESTING_IMPORT.search(text))


def _marker(ll: ss.LexLine, lang: str | None) -> str | None:
    if ll.doc and lang == "python":
        return None  # prose in a docstring
    for rx, what in CODE_MARKERS:
        m = rx.search(ll.code)
        if not m:
            continue
        if what == "sys.modules":
            if not any(s in RUNNER_MODULES for s in ll.strings):
                continue
            what = f"{'/'.join(s for s in ll.strings if s in RUNNER_MODULES)} in sys.modules"
        return what
    named = [s for s in ll.strings if s in RUNNER_STRINGS]
    if named and ENV_READ.search(ll.code):
        return named[0]
    if (ENV_READ.search(ll.code) and COMPARES.search(ll.code)
            and any(s.lower() in ENV_NAMES for s in ll.strings)):
        return "the environment's name compared with \"test\""
    if lang == "go" and GO_ARGS_TEST.search(ll.code) and ".test" in ll.strings:
        return "os.Args[0] ending in .test"
    return None


# Every marker above holds one of these words in the line's text (or, in JS and Go, a
# block comment that the code reads around): a file without them is not read.
MAY_MARK = ss.Later(r"sys|env|typeof|Testing|PYTEST|JEST|VITEST|test\.v|Args|/\*",
                    words=("sys", "env", "typeof", "Testing", "PYTEST", "JEST", "VITEST",
                           "test.v", "Args", "/*"))


def scan(sf: ss.SourceFile, out: list[ss.Finding]) -> None:
    if (sf.lang not in ("python", "js", "go") or not ss.may_match(sf, MAY_MARK)
            or _is_testing_code(sf)):
        return
    for ll in sf.added_lexed():
        what = _marker(ll, sf.lang)
        if what:
            out.append(ss.Finding(sf.path, ll.no,
                                  f"production code checks whether it runs under a test "
                                  f"({what}) to behave differently there"))


if __name__ == "__main__":
    ss.check_files(scan, ADVICE, ss.code_files)
