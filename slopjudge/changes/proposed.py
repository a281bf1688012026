"""Proposed edits: the change a file tool is about to make, its diff written as git
prints it; the payload hunks are read off the same lines, so a PreToolUse hook never
loads the diff parser.
"""

from __future__ import annotations

import os

from slopjudge.errors import ChangesetError
from slopjudge.fsutil import Unreadable, read_if_present
from slopjudge.model import Changeset, FileChange

TYPE_CHECKING = False  # not typing's: a file tool's PreToolUse hook builds its change here
if TYPE_CHECKING:
    from typing import Any

    from slopjudge.changes.diffparse import FileStatus

# What git writes for a character it quotes (octal for any other control character).
_QUOTE = str.maketrans({**{chr(c): f"\\{c:03o}" for c in (*range(0x20), 0x7F)},
                        "\a": "\\a", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\v": "\\v",
                        "\f": "\\f", "\r": "\\r", '"': '\\"', "\\": "\\\\"})


def _quote(name: str) -> str:
    """Quote a path as git does with core.quotepath=false."""
    quoted = name.translate(_QUOTE)
    return name if quoted == name else f'"{quoted}"'


def _dash_name(prefix: str, name: str) -> str:
    q = _quote(prefix + name)
    return q + "\t" if " " in q and not q.startswith('"') else q


def _split_keep(text: str) -> list[str]:
    """Lines with their "\\n" (only "\\n" ends a line, as in git)."""
    *lines, last = text.split("\n")
    return [line + "\n" for line in lines] + ([last] if last else [])


def _synth_hunks(old: str, new: str) -> tuple[list[str], int, int, list[dict[str, Any]]]:
    """The hunk lines of the diff (``difflib.unified_diff``'s), the added and removed
    counts, and the payload hunks (``hunk`` in payload.schema.json) of the same lines."""
    a, b = _split_keep(old), _split_keep(new)
    out: list[str] = []
    hunks: list[dict[str, Any]] = []
    for group in _groups(a, b):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        hunk: dict[str, Any] = {
            "oldStart": i1 + 1 if i2 > i1 else i1, "oldLines": i2 - i1,
            "newStart": j1 + 1 if j2 > j1 else j1, "newLines": j2 - j1,
            "added": [], "removed": [], "context": []}
        hunks.append(hunk)
        # A side of the header as difflib writes it: one line is its number alone.
        minus, plus = (str(at) if n == 1 else f"{at},{n}" for at, n in (
            (hunk["oldStart"], hunk["oldLines"]), (hunk["newStart"], hunk["newLines"])))
        out.append(f"@@ -{minus} +{plus} @@\n")
        for tag, a1, a2, b1, b2 in group:
            rows = [(" ", "context", b1 + k, line) for k, line in enumerate(a[a1:a2])] \
                if tag == "equal" else \
                [("-", "removed", a1 + k, line) for k, line in enumerate(a[a1:a2])] + \
                [("+", "added", b1 + k, line) for k, line in enumerate(b[b1:b2])]
            for sign, key, at, line in rows:
                hunk[key].append([at + 1, line.removesuffix("\n")])
                out.append(sign + line if line.endswith("\n")
                           else f"{sign}{line}\n\\ No newline at end of file\n")
    return (out, sum(len(h["added"]) for h in hunks), sum(len(h["removed"]) for h in hunks),
            hunks)


def _groups(a: list[str], b: list[str]) -> list[list[tuple[str, int, int, int, int]]]:
    """difflib's hunks (``get_grouped_opcodes(3)``, which ``unified_diff`` writes). An added
    or deleted file's one hunk, and an edit in one place of a file under 200 lines
    (``_one_place``), are made here: difflib's import, and `re` with it, costs a file tool's
    hook more than its diff does."""
    found = _one_place(a, b)
    if found is not None:
        return found
    import difflib

    return list(difflib.SequenceMatcher(None, a, b).get_grouped_opcodes(3))


def _one_place(a: list[str], b: list[str]) -> list[list[tuple[str, int, int, int, int]]] | None:
    """The hunks of a change in one place (the lines both sides start and end with are
    kept, those between removed and added) when that is difflib's answer, else None.

    It is when no line between occurs on the other side at all (difflib matches the
    longest common run first, and any run then lies in the kept lines), no line of ``b``
    is one difflib skips as too common, and, for lines only added or only removed when the
    kept head is shorter than the kept tail, that tail occurs nowhere earlier on the side
    without them (difflib takes the first)."""
    na, nb = len(a), len(b)
    if a and nb >= 200:  # difflib's autojunk: a line in over 1% of ``b`` starts no match
        counts: dict[str, int] = {}
        for line in b:
            counts[line] = counts.get(line, 0) + 1
        if max(counts.values()) > nb // 100 + 1:
            return None
    heads = enumerate(zip(a, b, strict=False))
    p = next((k for k, pair in heads if pair[0] != pair[1]), min(na, nb))
    tails = enumerate(zip(reversed(a[p:]), reversed(b[p:]), strict=False))
    s = next((k for k, pair in tails if pair[0] != pair[1]), min(na, nb) - p)
    gone, come = a[p : na - s], b[p : nb - s]
    if not gone and not come:
        return []
    if not set(gone).isdisjoint(b) or not set(come).isdisjoint(a):
        return None
    if s > p and not (gone and come):
        side = b if gone else a
        tail = side[len(side) - s :]
        if any(side[j : j + s] == tail for j in range(len(side) - s) if side[j] == tail[0]):
            return None
    group = [("equal", max(0, p - 3), p, max(0, p - 3), p)] if p else []
    group.append(("replace" if gone and come else "delete" if gone else "insert",
                  p, na - s, p, nb - s))
    if s:
        group.append(("equal", na - s, na - s + min(s, 3), nb - s, nb - s + min(s, 3)))
    return [group]


def from_proposed_edits(
    workspace: str, items: list[tuple[str, str | None, str | None]]
) -> Changeset:
    """The change of ``(path, moved-from path or None, new content or None for a
    deletion)`` items; files left as they are drop out, and one outside ``workspace`` is
    named by its absolute path."""
    ws = os.path.abspath(workspace)
    files = [_proposed_file(ws, path, old, new) for path, old, new in items]
    return Changeset(files=[f for f in files if f is not None])


def _read_old(full: str, name: str) -> bytes | None:
    try:
        return read_if_present(full)
    except Unreadable as exc:
        raise ChangesetError(f"cannot read {name}: {exc}") from None


def _proposed_file(ws: str, path: str, old_path: str | None,
                   new_content: str | None) -> FileChange | None:
    full = os.path.abspath(os.path.join(ws, path))
    source = full if old_path is None else os.path.abspath(os.path.join(ws, old_path))
    old_bytes = _read_old(source, relative(ws, source))
    if source != full and (old_bytes is None or new_content is None):
        # Not a rename: a move whose source is gone is judged as written.
        source, old_bytes = full, _read_old(full, relative(ws, full))
    name, old_name, renamed = relative(ws, full), relative(ws, source), source != full
    if old_bytes is None and new_content is None:
        return None
    mode = "100644"
    if old_bytes is not None:
        try:
            mode = "100755" if os.stat(source).st_mode & 0o111 else "100644"
        except OSError:
            pass
    status: FileStatus = "R" if renamed else "A" if old_bytes is None \
        else "D" if new_content is None else "M"
    binary = old_bytes is not None and b"\0" in old_bytes[:8000]
    old_text = None if old_bytes is None else old_bytes.decode("utf-8", errors="replace")
    diff, added, removed, hunks = text_diff(old_name, name, status, mode, old_text,
                                             new_content, binary)
    if not diff:
        return None  # nothing would change
    return FileChange(
        path=name, status=status, old_path=old_name if status == "R" else None,
        old_content=None if binary else old_text,
        new_content=None if binary else new_content,
        diff=diff, binary=binary, added=added, removed=removed, hunks=hunks,
    )


def text_diff(old_name: str, name: str, status: FileStatus, mode: str, old_text: str | None,
              new_text: str | None, binary: bool = False
              ) -> tuple[str, int, int, list[dict[str, Any]]]:
    """One file's diff as git prints it ("" when nothing changes), its added and removed
    line counts, and its payload hunks."""
    head = [f"diff --git {_quote('a/' + old_name)} {_quote('b/' + name)}\n"]
    if status == "A":
        head.append(f"new file mode {mode}\n")
    elif status == "D":
        head.append(f"deleted file mode {mode}\n")
    elif status == "R":
        import difflib

        ratio = difflib.SequenceMatcher(None, old_text or "", new_text or "").ratio()
        head += [f"similarity index {int(ratio * 100)}%\n",
                 f"rename from {_quote(old_name)}\n", f"rename to {_quote(name)}\n"]
    minus = "/dev/null" if status == "A" else _dash_name("a/", old_name)
    plus = "/dev/null" if status == "D" else _dash_name("b/", name)
    if not binary:
        lines, added, removed, hunks = _synth_hunks(old_text or "", new_text or "")
        body = [f"--- {minus}\n", f"+++ {plus}\n", *lines] if lines else []
    else:
        added, removed, hunks = 0, 0, []
        body = [f"Binary files {minus.rstrip(chr(9))} and {plus.rstrip(chr(9))} differ\n"]
    if status == "M" and not body:
        return "", 0, 0, []
    return "".join(head + body), added, removed, hunks


def relative(ws: str, full: str) -> str:
    for root, target in ((ws, full), (os.path.realpath(ws), os.path.realpath(full))):
        if target != root and os.path.commonpath([root, target]) == root:
            return os.path.relpath(target, root).replace(os.sep, "/")
    return full
