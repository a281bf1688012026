#!/usr/bin/env python3
"""weakened-tests prepare: ask the judge only when a test's assertions were removed or changed."""

from __future__ import annotations

import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_lib"))
import slopscan as ss  # noqa: E402

ASSERTION = re.compile(
    r"\bassert\b|\bassert\w*\s*\(|\bexpect\s*\(|\.to(Be|Equal|Throw|Match|Have|Contain|StrictEqual)\w*\(|"
    r"\bt\.(Error|Errorf|Fatal|Fatalf|Fail|FailNow)\s*\(|\brequire\.\w+\(|\bself\.assert\w+|pytest\.raises|"
    r"\.should\b|\bshould\.\w+\(|\.rejects\b|\.throws\b")
# A test's name is no assertion: renaming a test (a typo fixed in `it("...")`) changes none.
TEST_NAME = re.compile(
    r"""\b(it|test|describe|context|t\.Run|s\.Run|suite\.Run)\s*\(\s*(["'`])(?:\\.|(?!\2).)*\2""")


# What a loosened assertion reads like: only that a value exists or is truthy, membership
# instead of equality, a tolerance, a skip or xfail.
LOOSE = re.compile(
    r"is\s+not\s+None|\bassert\s+\w[\w.\[\]()]*\s*(#.*)?$|\bin\s|\bapprox\(|\brel\s*=|\babs\s*=|"
    r"toBeTruthy|toBeDefined|toBeFalsy|not\.toBeNull|toContain|toMatch\(|expect\.any\(|"
    r"assertIsNotNone|assertTrue|assertIn\b|assertAlmostEqual|NotNil|NotEmpty|Contains|"
    r"InDelta|InEpsilon|\.skip\b|xfail|t\.Skip|pytest\.skip"
)


def source_changed(payload: dict) -> bool:
    """Whether the change also edits code that is not a test: the behaviour under test may
    have changed on purpose."""
    cs = payload.get("changeset") or {}
    return any(isinstance(f, dict) and ss.lang_of(str(f.get("path") or "")) in ss.CODE_LANGS
               and not ss.is_test_path(str(f.get("path") or ""))
               for f in (cs.get("files") or []) + (cs.get("others") or []))


def code_of(text: str, lang: str | None) -> str:
    """The line's code, its comment left out (prose that says "assert" is no assertion)."""
    return ss.lex([ss.NewLine(1, text, True)], lang)[0].code


def is_assertion(text: str, lang: str | None) -> bool:
    return bool(ASSERTION.search(code_of(text, lang)))


# `assert cond, "message"`: the message explains a failure, it checks nothing.
ASSERT_MESSAGE = re.compile(r"""^(\s*assert\s+[^,#]+?)\s*,\s*(\(\s*$|[rbuf]*["'(]).*$""")


def key(text: str) -> str:
    """A line as compared across the change: whitespace, test names and assertion messages
    do not count."""
    text = ASSERT_MESSAGE.sub(r"\1", text)
    return ss.norm(TEST_NAME.sub(lambda m: f"{m[1]}(''", text))


def main() -> None:
    payload = ss.load_payload()
    removed: list[dict] = []
    behaviour_changed = source_changed(payload)
    tests = [sf for sf in ss.files(payload, include_deleted=True) if sf.is_test]
    # Assertions may move between test files (a test split into a new file): still there.
    still = {key(t) for sf in tests for t in {**sf.touched, **sf.added}.values()}
    for sf in tests:
        if sf.status == "D":
            old_lines = (sf.old_content or "\n".join(sf.removed)).splitlines()
            count = len([line for line in old_lines
                         if is_assertion(line, sf.lang) and key(line) not in still])
            if count:
                removed.append({"path": sf.path, "deleted_file": True, "assertions": count})
            continue
        gone = [line.strip() for line in sf.removed
                if is_assertion(line, sf.lang) and key(line) not in still]  # moved, not changed
        new = [t.strip() for t in sf.added.values() if is_assertion(t, sf.lang)]
        loosened = [t for t in new if LOOSE.search(t)]
        # Ask when assertions are fewer than before, or the new ones read looser, or expected
        # values were rewritten while no code under test changed: an expected value rewritten
        # one for one beside a change of the code is an ordinary change of behaviour.
        if gone and (len(gone) > len(new) or loosened or not behaviour_changed):
            entry: dict = {"path": sf.path, "removed_or_changed": gone[:40]}
            if loosened:
                entry["looser"] = loosened[:20]
            removed.append(entry)
    if not removed:
        print(json.dumps({"skip": True}))
        return
    print(json.dumps({"additionalContext": {"removed_assertions": removed}}))


if __name__ == "__main__":
    ss.main_guard(main)
