#!/usr/bin/env python3
"""versioned-copies: added files that are a second copy of an existing one."""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing's import costs more than this check's work on most changes
    from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_lib"))
import slopscan as ss  # noqa: E402

ADVICE = ("Edit the original file in place and delete the copy; "
          "version control keeps the old version. If both versions must be served, "
          "put them in versioned packages (api/v1/, api/v2/) instead.")

# Compiled where first used (ss.Later): only an added or renamed file is asked about, and
# only when it holds one of a pattern's words.
# Backup artefacts: never meant to be committed.
BACKUP_NAME = ss.Later(
    r"(\.(bak|orig|old|swp|swo|rej)|~)$|[ _-]\(?copy\)?( ?\d+)?$| \(\d+\)$|[_-](backup|bak)$",
    ss.I,
    words=("bak", "orig", "old", "swp", "swo", "rej", "~", "copy", " (", "backup"),
)
# Suffixes that only ever mean "another take on the same file".
ALWAYS = ss.Later(
    r"[_-](fixed|final|updated|refactored|improved|rewrite|rewritten|working|revised|corrected|"
    r"enhanced|optimi[sz]ed|cleaned)$",
    ss.I,
    words=("_", "-"),
)
# Suffixes with legitimate uses elsewhere: a copy only when the original is in the
# repository beside it (or the repository is not at hand to ask). Also in camelCase
# (`formatNew.ts`, `clientV2.go`).
IF_ORIGINAL = ss.Later(
    r"[_-](v\d+|new|old|alt|tmp|temp|orig|original|latest|clean|simple|\d)$"
    r"|(?<=[a-z0-9])(V\d+|New|Old|Alt|Tmp|Temp|Orig|Original|Latest)$", ss.I,
    words=("_", "-", "v", "new", "old", "alt", "tmp", "temp", "orig", "latest"),
)
# A function or class defined under a versioned name beside the one it copies
# (`parse_v2` beside `parse`, `loadNew` beside `load`).
DEFINITION = ss.Later(
    r"^\s*(?:(?:export\s+)?(?:default\s+)?(?:async\s+)?(?:def|class|function\*?)\s+"
    r"|func\s+(?:\([^)]*\)\s*)?|(?:export\s+)?(?:const|let|var)\s+)"
    r"(?P<name>[A-Za-z_$][\w$]*?)(?P<suffix>_v\d+|V\d+|_new|New|_old|Old|_copy|Copy|_fixed|Fixed)"
    r"\b(?!\s*:?=\s*(?![(]|function|async))",
    words=("_v", "V", "_new", "New", "_old", "Old", "_copy", "Copy", "_fixed", "Fixed"),
)
VERSIONED_DIR = ss.Later(
    r"(^|/)(migrations|alembic|versions|changelog\.d|fixtures|testdata|vendor)/", ss.I,
    words=("migrations/", "alembic/", "versions/", "changelog.d/", "fixtures/", "testdata/",
           "vendor/"),
)


def split_name(base: str) -> tuple[str, str]:
    lead = "." if base.startswith(".") else ""
    rest = base[len(lead):]
    stem, dot, ext = rest.partition(".")
    return lead + stem, (dot + ext)


class Repository:
    """Where the change's repository can be looked up once the change applies: the work tree
    on disk, and the head commit of a range (a CI clone may have no files checked out). A
    diff read alone, none of whose files or folders the workspace holds, comes from a
    repository that is not at hand."""

    def __init__(self, payload: dict[str, Any], present: set[str], deleted: set[str],
                 added: set[str]) -> None:
        cs = payload.get("changeset") or {}
        self.ws = ss.workspace(payload)
        self.head = cs.get("head")
        self.present, self.deleted = present, deleted
        bare = not cs.get("base") and not self.head and ss.event(payload).get("kind") != "pre-tool"
        looked_up = [os.path.dirname(p) if p in added else p for p in present | deleted]
        self.at_hand = not bare or any(os.path.exists(os.path.join(self.ws, p))
                                       for p in looked_up if p)

    def has(self, path: str) -> bool:
        """Whether the file is there once the change applies: named by it, or in the
        repository and kept."""
        if path in self.deleted:
            return False
        if path in self.present or os.path.isfile(os.path.join(self.ws, path)):
            return True
        if not self.head:
            return False
        from slopjudge.changes.gitio import git  # only a versioned name gets this far

        return bool(git(self.ws, ["ls-tree", "--name-only", str(self.head), "--", path]).strip())


def switched_caller(cs: dict[str, Any], original: str, copy: str) -> str | None:
    """A changed file that stops naming the original module and names the copy instead:
    its callers are moved to the copy rather than the original being fixed."""
    import re  # here: only a copy of a module reaches this

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


def copied_functions(sf: ss.SourceFile, out: list[ss.Finding]) -> None:
    """Functions and classes the change adds under a versioned name of one the file still
    defines: the original should have been changed."""
    if not sf.added:
        return
    found = [(ll, m) for ll in sf.added_lexed() if (m := DEFINITION.match(ll.code))]
    if not found:
        return
    text = "\n".join(nl.text for nl in sf.new_lines())  # the file, or what its hunks show
    defined = ss.old_names(ss.SourceFile(sf.path, "A", None, None, text, "", sf.lang, [], [], {}))
    for ll, m in found:
        if m["name"] in defined and f"{m['name']}_v1" not in defined:
            out.append(ss.Finding(sf.path, ll.no, f"{m['name']}{m['suffix']} copies "
                                  f"{m['name']}, which the file still defines"))


def main() -> None:
    payload = ss.load_payload()
    cs = payload.get("changeset") or {}
    present: set[str] = set()
    deleted: set[str] = set()
    for f in (cs.get("files") or []) + (cs.get("others") or []):
        if isinstance(f, dict) and f.get("path"):
            (deleted if f.get("status") == "D" else present).add(str(f["path"]))
            if f.get("oldPath") and f.get("status") != "R":
                present.add(str(f["oldPath"]))
    added = {str(f.get("path")) for f in cs.get("files") or []
             if isinstance(f, dict) and f.get("status") == "A"}
    repo = Repository(payload, present, deleted, added)
    out: list[ss.Finding] = []
    for sf in ss.code_files(payload):
        if not VERSIONED_DIR.search(sf.path):
            copied_functions(sf, out)
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
            root = stem[: m.start()]
            caller = switched_caller(cs, root, stem) if root else None
            if root and repo.has(beside):
                out.append(ss.Finding(path, None, f"{base!r} duplicates {original!r} beside it"))
            elif caller:
                out.append(ss.Finding(path, None, f"{base!r} is a copy of {root!r}: {caller} "
                                      f"is switched to it"))
            elif root and not repo.at_hand:
                out.append(ss.Finding(path, None, f"{base!r} reads as another version of "
                                      f"{original!r} (the diff came alone: its repository is "
                                      f"not at hand to show whether {original!r} exists)"))
    ss.finish(out, ADVICE)


if __name__ == "__main__":
    ss.main_guard(main)
