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


def main() -> None:
    payload = ss.load_payload()
    removed: list[dict] = []
    for sf in ss.files(payload, include_deleted=True):
        if not sf.is_test:
            continue
        if sf.status == "D":
            old_lines = (sf.old_content or "\n".join(sf.removed)).splitlines()
            count = len([line for line in old_lines if ASSERTION.search(line)])
            if count:
                removed.append({"path": sf.path, "deleted_file": True, "assertions": count})
            continue
        lines = [line.strip() for line in sf.removed if ASSERTION.search(line)]
        added = {t.strip() for t in sf.added.values()}
        lines = [line for line in lines if line not in added]  # moved, not changed
        if lines:
            removed.append({"path": sf.path, "removed_or_changed": lines[:40]})
    if not removed:
        print(json.dumps({"skip": True}))
        return
    print(json.dumps({"additionalContext": {"removed_assertions": removed}}))


if __name__ == "__main__":
    ss.main_guard(main)
