#!/usr/bin/env python3
"""weakened-tests prepare: ask the judge only when a test's assertions were removed or changed."""

from __future__ import annotations

import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_lib"))
import slopscan as ss  # noqa: E402

ASSERTION = ss.Later(
    r"\bassert\b|\bassert\w*\s*\(|\bexpect\s*\(|\.to(Be|Equal|Throw|Match|Have|Contain|StrictEqual)\w*\(|"
    r"\bt\.(Error|Errorf|Fatal|Fatalf|Fail|FailNow)\s*\(|\brequire\.\w+\(|\bself\.assert\w+|pytest\.raises|"
    r"\.should\b|\bshould\.\w+\(|\.rejects\b|\.throws\b")
# A test's name is no assertion: renaming a test (a typo fixed in `it("...")`) changes none.
TEST_NAME = ss.Later(
    r"""\b(it|test|describe|context|t\.Run|s\.Run|suite\.Run)\s*\(\s*(["'`])(?:\\.|(?!\2).)*\2""")


# What a loosened assertion reads like: only that a value exists or is truthy, membership
# instead of equality, a tolerance, a skip or xfail.
LOOSE = ss.Later(
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
ASSERT_HEAD = ss.Later(r"^\s*assert\s")


def without_message(text: str) -> str:
    """A Python `assert` without its message: the text up to its first comma outside any
    brackets (a comma inside a call's arguments is the condition's)."""
    if not ASSERT_HEAD.match(text):
        return text
    depth = 0
    quote = ""
    for i, c in enumerate(text):
        if quote:
            quote = "" if c == quote else quote
        elif c in "\"'":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            return text[:i]
    return text


def key(text: str) -> str:
    """A line as compared across the change: whitespace, test names and assertion messages
    do not count."""
    text = without_message(text)
    return ss.norm(TEST_NAME.sub(lambda m: f"{m[1]}(''", text))


# A literal an assertion checks: a number, or a string (the lexer keeps a string's quotes
# in the code and its text apart).
NUMBER = ss.Later(r"(?<![\w.])-?\d+(?:\.\d+)?(?:e-?\d+)?\b")


def literals(text: str, lang: str | None) -> set[str]:
    """What an assertion checks with: its numbers, strings and names."""
    ll = ss.lex([ss.NewLine(1, text, True)], lang)[0]
    return (set(NUMBER.findall(ll.code)) | {s.strip() for s in ll.strings}
            | set(re.findall(r"[A-Za-z_$][\w$]*", ll.code)))


def rewritten_in_form(gone: list[str], added: list[str], lang: str | None) -> list[str]:
    """The removed assertions that no added one restates: an added assertion much like a
    removed one that keeps all of its values and names (`deque([])` -> `deque()`, a
    callback dropped from `.expect(200, () => {})`) is the same check written another way;
    each added assertion stands for one removed."""
    import difflib

    pool = [(ss.norm(code_of(a, lang)), literals(a, lang)) for a in added if not LOOSE.search(a)]
    kept = []
    for g in gone:
        key, want = ss.norm(code_of(g, lang)), literals(g, lang)
        match = max(((difflib.SequenceMatcher(None, key, k).ratio(), i)
                     for i, (k, lits) in enumerate(pool) if want <= lits), default=(0.0, -1))
        if match[0] >= 0.75:
            pool.pop(match[1])
        else:
            kept.append(g)
    return kept


DEFINED = ss.Later(r"^\s*(?:export\s+)?(?:default\s+)?(?:async\s+)?"
                     r"(?:def|class|function|func(?:\s+\([^)]*\))?|const|let|var|type)\s+(\w+)")


def removed_subjects(payload: dict) -> set[str]:
    """Names the change takes out of the code under test: definitions removed from
    non-test files and not added back, and the modules of deleted non-test files."""
    gone: set[str] = set()
    back: set[str] = set()
    for sf in ss.files(payload, include_deleted=True):
        if sf.is_test or sf.lang not in ss.CODE_LANGS:
            continue
        if sf.status == "D":
            gone.add(os.path.splitext(os.path.basename(sf.path))[0])
        gone |= {m[1] for t in sf.removed if (m := DEFINED.match(t))}
        back |= {m[1] for t in sf.added.values() if (m := DEFINED.match(t))}
    return {n for n in gone - back if len(n) > 3}


def main() -> None:
    payload = ss.load_payload()
    removed: list[dict] = []
    behaviour_changed = source_changed(payload)
    tests = [sf for sf in ss.files(payload, include_deleted=True) if sf.is_test]
    # Assertions may move between test files (a test split into a new file): still there.
    still = {key(t) for sf in tests for t in {**sf.touched, **sf.added}.values()}
    added_all = [t.strip() for sf in tests for t in sf.added.values() if is_assertion(t, sf.lang)]
    subjects: set[str] | None = None
    changed: list[tuple[ss.SourceFile, list[str], list[str]]] = []
    for sf in tests:
        if sf.status == "D":
            old_text = sf.old_content or "\n".join(sf.removed)
            count = len([line for line in old_text.splitlines()
                         if is_assertion(line, sf.lang) and key(line) not in still])
            if subjects is None:
                subjects = removed_subjects(payload)
            # tests deleted together with the code they test went with their subject
            with_subject = any(re.search(rf"\b{re.escape(n)}\b", old_text) for n in subjects)
            if count and not with_subject:
                removed.append({"path": sf.path, "deleted_file": True, "assertions": count})
            continue
        gone = [line.strip() for line in sf.removed
                if is_assertion(line, sf.lang) and key(line) not in still]  # moved, not changed
        gone = rewritten_in_form(gone, added_all, sf.lang)
        new = [t.strip() for t in sf.added.values() if is_assertion(t, sf.lang)]
        if gone:
            changed.append((sf, gone, [t for t in new if LOOSE.search(t)]))
    # Ask when assertions are fewer than before (counted over every test file: a test may
    # move to another), or the new ones read looser, or expected values were rewritten while
    # no code under test changed: an expected value rewritten one for one beside a change of
    # the code is an ordinary change of behaviour.
    fewer = sum(len(g) for _, g, _ in changed) > len(added_all)
    for sf, gone, loosened in changed:
        if fewer or loosened or not behaviour_changed:
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
