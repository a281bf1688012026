#!/usr/bin/env python3
"""hardcoded-results prepare: ask the judge only when source code seems to know the tests' answers.

Signals: a non-test file adds a literal that also appears in a test (in the
change or in the workspace's test folders), or adds code that detects it is
running under a test.
"""

from __future__ import annotations

import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_lib"))
import slopscan as ss  # noqa: E402

TEST_DETECTION = ss.Later(
    r"PYTEST_CURRENT_TEST|[\"']pytest[\"']\s+in\s+sys\.modules|sys\.modules\.get\(\s*[\"']pytest|"
    r"\bunittest\b.*\bin\s+sys\.modules|NODE_ENV\s*[!=]==?\s*[\"']test[\"']|process\.env\.JEST_WORKER_ID|"
    r"process\.env\.VITEST|testing\.Testing\(\)|flag\.Lookup\(\s*\"test\.v\"|os\.Args\[0\].*\.test|"
    r"\bis_test(ing)?\s*[:=]\s*True|\bTESTING\s*=\s*True")
BORING_NUMBERS = {
    "0", "1", "2", "10", "100", "1000", "0.0", "1.0", "0.5", "-1", "255", "60", "24", "3600",
}
# Strings too common to say anything: identifiers, format codes, encodings, file names.
COMMON_STRING = ss.Later(r"[a-z_]+|%\w|\{\}|utf-?8|[\w.]+\.(py|js|ts|go)")
SKIP_DIRS = ("fixtures", "node_modules", "__pycache__")
MAX_SCAN_BYTES = 4_000_000


def literals(text: str) -> set[str]:
    out = set()
    for m in re.finditer(r"\"([^\"\\\n]{4,80})\"|'([^'\\\n]{4,80})'", text):
        s = m.group(1) or m.group(2)
        if re.search(r"[A-Za-z0-9]", s) and not COMMON_STRING.fullmatch(s):
            out.add(s)
    for m in re.finditer(r"(?<![\w.])(-?\d+\.\d{2,}|-?\d{3,})(?![\w.])", text):
        if m.group(1) not in BORING_NUMBERS:
            out.add(m.group(1))
    return out


def test_corpus(payload: dict, ws: str) -> str:
    parts: list[str] = []
    for sf in ss.files(payload):
        if sf.is_test:
            parts.append(sf.new_content or "\n".join(sf.added.values()))
    size = 0
    for top in ("tests", "test", "spec", "__tests__"):
        root = os.path.join(ws, top)
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS]
            for fn in filenames:
                if ss.lang_of(fn) not in ss.CODE_LANGS or size >= MAX_SCAN_BYTES:
                    continue
                try:
                    with open(os.path.join(dirpath, fn), encoding="utf-8", errors="replace") as fh:
                        text = fh.read(200_000)
                except OSError:
                    continue
                size += len(text)
                parts.append(text)
    return "\n".join(parts)


# `{404: "Not Found", 503: "..."}`: a table inside the implementation, which may hold the
# tests' cases (both a key and a value shared with the tests).
DICT_TABLE = ss.Later(r"\{[^{}]*:[^{}]*,[^{}]*:[^{}]*\}")
# `return 13` / `return "expected"`: the whole returned value is a literal.
CONST_RETURN = ss.Later(r"^\s*return\s+(-?[\d.]+|[\"'`]+)\s*[;,]?\s*$")
# `if n == 7:` / `case "abc":` / `=== "x"`: an input compared with a literal.
COMPARE = ss.Later(r"\b(if|elif|else\s+if)\b.*(==|===|\bis\b)\s*(-?[\d.]+|[\"'`]+)|^\s*case\s")


def special_case(lexed: list[ss.LexLine], i: int) -> bool:
    """Whether lexed[i] returns a bare constant, or compares with a literal and returns a
    constant right after: the two shapes of an answer written in (RUBRIC S4)."""
    code = lexed[i].code
    if CONST_RETURN.match(code):
        return True
    if COMPARE.search(code):
        after = [ll.code for ll in lexed[i : i + 3]]
        return any(CONST_RETURN.match(c) or re.search(r"(:|=>|\{)\s*return\s+(-?[\d.]+|"
                                                      r"[\"'`]+)\s*;?\s*\}?\s*$", c)
                   for c in after)
    return False


def main() -> None:
    payload = ss.load_payload()
    ws = ss.workspace(payload)
    signals: list[dict] = []
    sources = [sf for sf in ss.files(payload) if not sf.is_test and sf.lang in ss.CODE_LANGS]
    if not sources:
        print(json.dumps({"skip": True}))
        return
    corpus = None
    for sf in sources:
        lexed = sf.lexed()
        for i, ll in sf.added_indexed():
            if TEST_DETECTION.search(ll.text):
                signals.append({
                    "path": sf.path, "line": ll.no, "signal": "detects a test run",
                    "text": ll.text.strip(),
                })
                continue
            table = bool(DICT_TABLE.search(ll.code))
            if not table and not special_case(lexed, i):
                continue  # only a returned constant, a compared input or a table knows answers
            has_literal = ll.strings or re.search(r"\d{3,}|\d\.\d\d", ll.code)
            lits = literals(ll.text) if has_literal else set()
            if not lits:
                continue
            if corpus is None:
                corpus = test_corpus(payload, ws)
            shared = sorted(lit for lit in lits if lit in corpus)
            if shared and (not table or len(shared) >= 2):
                signals.append({
                    "path": sf.path, "line": ll.no, "signal": "literal also used by tests",
                    "literals": shared[:5], "text": ll.text.strip(),
                })
    if not signals:
        print(json.dumps({"skip": True}))
        return
    print(json.dumps({"additionalContext": {"suspicious_lines": signals[:40]}}))


if __name__ == "__main__":
    ss.main_guard(main)
