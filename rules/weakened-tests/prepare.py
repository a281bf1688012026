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
    r"\bshould\b|\.rejects\b|\.throws\b")


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


def main() -> None:
    payload = ss.load_payload()
    removed: list[dict] = []
    behaviour_changed = source_changed(payload)
    for sf in ss.files(payload, include_deleted=True):
        if not sf.is_test:
            continue
        if sf.status == "D":
            old_lines = (sf.old_content or "\n".join(sf.removed)).splitlines()
            count = len([line for line in old_lines if ASSERTION.search(line)])
            if count:
                removed.append({"path": sf.path, "deleted_file": True, "assertions": count})
            continue
        still = {ss.norm(t) for t in {**sf.touched, **sf.added}.values()}
        gone = [line.strip() for line in sf.removed
                if ASSERTION.search(line) and ss.norm(line) not in still]  # moved, not changed
        new = [t.strip() for t in sf.added.values() if ASSERTION.search(t)]
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
