"""git's raw records: what ``git diff --raw -p -z`` output says, as FileChanges.

The raw records give status, paths and blob ids; the patch (parsed by
:mod:`.diffparse`) each file's diff, line counts and binary flag. No I/O here:
:mod:`.gitio` runs git, :mod:`.changeset` joins the two.

Mapping to :class:`FileChange`: statuses are A, M, D, R only. A copy is ``A``
with ``old_path`` set to its source; a type change (file <-> symlink) and a
mode-only change are ``M``.
"""

from __future__ import annotations

from functools import partial

from slopjudge.changes.diffparse import Reader, decode, merge_typechanges, parse
from slopjudge.model import FileChange

TYPE_CHECKING = False  # not typing's: a CI run of a docs-only commit never imports it
if TYPE_CHECKING:
    from typing import Any

    from slopjudge.changes.diffparse import FileStatus


class RawRecord:
    """One file's raw record, counts from its patch (a slotted class: see diffparse.Hunk)."""

    __slots__ = ("old_mode", "new_mode", "old_sha", "new_sha", "status", "src", "dst",
                 "added", "removed", "binary")

    def __init__(self, old_mode: str, new_mode: str, old_sha: str, new_sha: str, status: str,
                 src: bytes, dst: bytes | None) -> None:
        self.old_mode, self.new_mode = old_mode, new_mode
        self.old_sha, self.new_sha = old_sha, new_sha
        self.status, self.src, self.dst = status, src, dst
        self.added = 0
        self.removed = 0
        self.binary = False

    def blobs(self) -> list[str]:
        """The ids of the blobs on its sides (none for an absent side or a submodule)."""
        return [sha for mode, sha in ((self.old_mode, self.old_sha), (self.new_mode, self.new_sha))
                if not zero_id(sha) and mode != "160000"]


def diff_records(data: bytes) -> tuple[list[RawRecord], bytes]:
    """Split ``git diff --raw -p -z`` output: the raw records, then the patch text."""
    recs: list[RawRecord] = []
    p, n = 0, len(data)
    while p < n and data[p] == 0x3A:  # ':'
        z = data.index(b"\0", p)
        meta = data[p + 1 : z].decode("ascii").split(" ")
        p = z + 1
        z = data.index(b"\0", p)
        src = data[p:z]
        p = z + 1
        dst = None
        if meta[4][:1] in ("R", "C"):
            z = data.index(b"\0", p)
            dst = data[p:z]
            p = z + 1
        recs.append(RawRecord(meta[0], meta[1], meta[2], meta[3], meta[4], src, dst))
    if p < n and data[p] == 0x00:
        p += 1
    return recs, data[p:]


STATUS: dict[str, FileStatus] = {
    "A": "A", "D": "D", "M": "M", "T": "M", "R": "R", "C": "A", "U": "M", "X": "M",
}


def zero_id(sha: str) -> bool:
    return not sha.strip("0")


def blob_text(blobs: dict[str, bytes], rec: RawRecord, mode: str, sha: str) -> str | None:
    """One side's content; None for binary files, absent sides and submodules."""
    if rec.binary or zero_id(sha) or mode == "160000":
        return None
    blob = blobs.get(sha)
    return None if blob is None else decode(blob)


def file_changes(recs: list[RawRecord], patch: bytes, blobs: dict[str, bytes]) -> list[FileChange]:
    """One FileChange per raw record, with its part of ``patch`` and its contents."""
    parts, lines = parse(patch)
    reader = Reader(parts, lines)
    groups = merge_typechanges(parts)
    files: list[FileChange] = []
    g = 0
    for r in recs:
        kind = r.status[:1]
        status = STATUS.get(kind, "M")
        new_path = r.dst if r.dst is not None else r.src
        diff = ""
        hunks: list[dict[str, Any]] | None = []
        source = None
        if g < len(groups):
            a, b = groups[g]
            last = b or a
            part_path = a.old if a.status == "D" and b is None else (last.new or last.old)
            if part_path == (r.src if kind == "D" else new_path):
                diff = decode(patch[a.start : last.end])
                hunks, source = None, partial(reader.hunks, a, b)
                g += 1
                pair = (a,) if b is None else (a, b)
                r.binary = any(x.binary for x in pair)
                if not r.binary:
                    r.added, r.removed = sum(x.added for x in pair), sum(x.removed for x in pair)
        files.append(FileChange(
            path=decode(r.src if kind == "D" else new_path),
            status=status,
            old_path=decode(r.src) if kind in ("R", "C") else None,
            old_content=None if kind == "A" else blob_text(blobs, r, r.old_mode, r.old_sha),
            new_content=None if kind == "D" else blob_text(blobs, r, r.new_mode, r.new_sha),
            diff=diff, binary=r.binary, added=r.added, removed=r.removed, hunks=hunks,
            hunk_source=source,
        ))
    return files
