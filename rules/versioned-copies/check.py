#!/usr/bin/env python3
"""versioned-copies: added files that are a second copy of an existing one."""

from __future__ import annotations

import os
import re
import sys
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_lib"))
import slopscan as ss  # noqa: E402

ADVICE = ("Edit the original file in place and delete the copy; "
          "version control keeps the old version. If both versions must be served, "
          "put them in versioned packages (api/v1/, api/v2/) instead.")

# Compiled where first used (ss.Later): only an added or renamed file is asked about.
# Backup artefacts: never meant to be committed.
BACKUP_NAME = ss.Later(
    r"(\.(bak|orig|old|swp|swo|rej)|~)$|[ _-]\(?copy\)?( ?\d+)?$| \(\d+\)$|[_-](backup|bak)$",
    re.I,
)
# Suffixes that only ever mean "another take on the same file".
ALWAYS = ss.Later(
    r"[_-](fixed|final|updated|refactored|improved|rewrite|rewritten|working|revised|corrected|"
    r"enhanced|optimi[sz]ed|cleaned)$",
    re.I,
)
# Suffixes with legitimate uses elsewhere: a copy only when the original sits beside it.
IF_ORIGINAL = ss.Later(
    r"[_-](v\d+|new|old|alt|tmp|temp|orig|original|latest|clean|simple|\d)$", re.I
)
VERSIONED_DIR = ss.Later(
    r"(^|/)(migrations|alembic|versions|changelog\.d|fixtures|testdata|vendor)/", re.I
)


def split_name(base: str) -> tuple[str, str]:
    lead = "." if base.startswith(".") else ""
    rest = base[len(lead):]
    stem, dot, ext = rest.partition(".")
    return lead + stem, (dot + ext)


def exists_after(path: str, ws: str, present: set[str], deleted: set[str]) -> bool:
    """Whether the file is there once the change applies: named by it, or on disk and kept."""
    if path in deleted:
        return False
    return path in present or os.path.isfile(os.path.join(ws, path))


def switched_caller(cs: dict[str, Any], original: str, copy: str) -> str | None:
    """A changed file that stops naming the original module and names the copy instead:
    its callers are moved to the copy rather than the original being fixed."""
    was = re.compile(rf"(?<![\w-]){re.escape(original)}(?![\w-])")
    now = re.compile(rf"(?<![\w-]){re.escape(copy)}(?![\w-])")
    for f in cs.get("files") or []:
        if not isinstance(f, dict) or f.get("status") != "M":
            continue
        hunks, removed = ss.file_hunks(f)
        added = [nl.text for h in hunks for nl in h if nl.added]
        if any(was.search(t) for t in removed) and any(now.search(t) for t in added):
            return str(f.get("path"))
    return None


def main() -> None:
    payload = ss.load_payload()
    ws = ss.workspace(payload)
    cs = payload.get("changeset") or {}
    present: set[str] = set()
    deleted: set[str] = set()
    for f in (cs.get("files") or []) + (cs.get("others") or []):
        if isinstance(f, dict) and f.get("path"):
            (deleted if f.get("status") == "D" else present).add(str(f["path"]))
            if f.get("oldPath") and f.get("status") != "R":
                present.add(str(f["oldPath"]))
    out: list[ss.Finding] = []
    for f in cs.get("files") or []:
        if not isinstance(f, dict) or f.get("status") not in ("A", "R"):
            continue
        path = str(f.get("path") or "")
        if VERSIONED_DIR.search(path):
            continue
        folder, base = os.path.split(path)
        stem, ext = split_name(base)
        if BACKUP_NAME.search(base) or BACKUP_NAME.search(stem):
            out.append(ss.Finding(path, None, f"backup copy {base!r} added"))
            continue
        m = ALWAYS.search(stem)
        if m:
            message = f"{base!r} is a revised copy ({m.group(0)!r} suffix)"
            out.append(ss.Finding(path, None, message))
            continue
        m = IF_ORIGINAL.search(stem)
        if m:
            original = stem[: m.start()] + ext
            beside = os.path.join(folder, original) if folder else original
            if stem[: m.start()] and exists_after(beside, ws, present, deleted):
                out.append(ss.Finding(path, None, f"{base!r} duplicates {original!r} beside it"))
            elif stem[: m.start()]:
                caller = switched_caller(cs, stem[: m.start()], stem)
                if caller:
                    out.append(ss.Finding(path, None, f"{base!r} is a copy of "
                                          f"{stem[: m.start()]!r}: {caller} is switched to it"))
    ss.finish(out, ADVICE)


if __name__ == "__main__":
    ss.main_guard(main)
