"""Codex's ``apply_patch`` envelope (``*** Begin Patch``, ``*** Add/Update/Delete File:``,
``*** Move to:``, hunks, ``*** End Patch``): what it would write, computed as Codex applies
it (its ``seek_sequence``); nothing is written. A patch that cannot apply raises
:class:`PatchError`, and the hook judges what the call is known to touch
(:func:`slopjudge.changes.edits.unapplied_changeset`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import takewhile
from typing import Literal

from slopjudge.changes.edits import BEGIN, END, EditError, absolute, envelope, read_text

Kind = Literal["add", "delete", "update"]
OPS: dict[str, Kind] = {
    "*** Add File: ": "add", "*** Delete File: ": "delete", "*** Update File: ": "update"}
MOVE = "*** Move to: "
_EOF = "*** End of File"


class PatchError(EditError):
    """The patch does not parse, or a hunk does not apply; ``str()`` is one line."""


@dataclass
class Hunk:
    context: str | None  # the text after ``@@ ``, if any
    old: list[str] = field(default_factory=list)  # context and removed lines
    new: list[str] = field(default_factory=list)  # context and added lines
    end_of_file: bool = False


@dataclass
class PatchOp:
    kind: Kind
    path: str
    move_to: str | None = None
    content: str = ""  # for add
    hunks: list[Hunk] = field(default_factory=list)  # for update


def parse(text: str) -> list[PatchOp]:
    """The operations of one envelope, in order."""
    body = envelope(text)
    if body is None:
        raise PatchError(f"not a patch: no {BEGIN!r} line")
    lines = [line.removesuffix("\r") for line in body.split("\n")]
    if lines[-1].strip() != END:
        raise PatchError(f"the patch does not end with {END!r}")
    lines = lines[1:-1]
    ops: list[PatchOp] = []
    i = 0
    while i < len(lines):
        line, head, n = lines[i], lines[i].strip(), i + 2  # n: its line in the envelope
        i += 1
        if not head:
            continue
        found = operation(line)
        if found is None:
            raise PatchError(f"line {n}: expected '*** Add File:', '*** Update File:' "
                             f"or '*** Delete File:', found {line[:60]!r}")
        op = PatchOp(*found)
        if op.kind == "add":
            added = list(takewhile(lambda ln: ln.startswith("+"), lines[i:]))
            op.content = "".join(ln[1:] + "\n" for ln in added)
            i += len(added)
        elif op.kind == "update":
            if i < len(lines) and lines[i].strip().startswith(MOVE):
                op.move_to = lines[i].strip()[len(MOVE):].strip()
                i += 1
            i = _hunks(lines, i, op)
            if not op.hunks:
                raise PatchError(f"line {n}: update of {op.path} has no hunks")
        ops.append(op)
    return ops


def operation(line: str) -> tuple[Kind, str] | None:
    """The kind and path an operation line names (``*** Add File: x``; a stripped line
    ends in its path, never empty), or None."""
    head = line.strip()
    kind = next((k for prefix, k in OPS.items() if head.startswith(prefix)), None)
    return None if kind is None else (kind, head.split(": ", 1)[1].strip())


def _hunks(lines: list[str], start: int, op: PatchOp) -> int:
    """Read the hunks of one Update; return the index of the line after them."""
    hunk: Hunk | None = None
    for i, line in enumerate(lines[start:], start):
        stripped = line.strip()
        if stripped == "@@" or line.startswith("@@ "):
            hunk = Hunk(context=line[3:] if line.startswith("@@ ") else None)
            op.hunks.append(hunk)
        elif stripped == _EOF:
            if hunk is None:
                raise PatchError(f"line {i + 2}: '{_EOF}' before any hunk line")
            hunk.end_of_file = True
            hunk = None
        elif line.startswith("***"):
            return i
        else:
            if hunk is None:  # the first hunk may omit its @@ line
                hunk = Hunk(context=None)
                op.hunks.append(hunk)
            tag, rest = line[:1], line[1:]
            if tag not in ("", " ", "-", "+"):
                raise PatchError(f"line {i + 2}: a hunk line must start with ' ', '-' or '+', "
                                 f"found {line[:60]!r}")
            if tag != "+":  # context and removed lines
                hunk.old.append(rest)
            if tag != "-":  # context and added lines
                hunk.new.append(rest)
    return len(lines)


# --- applying -------------------------------------------------------------------

# Codex's last, most lenient pass: typographic punctuation read as ASCII.
_PUNCT = str.maketrans({
    **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-"),
    **dict.fromkeys("\u2018\u2019\u201a\u201b", "'"),
    **dict.fromkeys("\u201c\u201d\u201e\u201f", '"'),
    **dict.fromkeys("\u00a0\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
                    "\u202f\u205f\u3000", " "),
})


def _seek(lines: list[str], pattern: list[str], start: int, eof: bool) -> int | None:
    """Where ``pattern`` starts in ``lines`` from ``start`` (at the end first for an
    ``End of File`` hunk), compared exactly, then ignoring trailing, then surrounding
    whitespace, then with typographic punctuation read as ASCII, as Codex does."""
    if not pattern:
        return start
    if len(pattern) > len(lines):
        return None
    first = len(lines) - len(pattern) if eof else start
    for norm in (lambda s: s, str.rstrip, str.strip, lambda s: s.strip().translate(_PUNCT)):
        want = [norm(p) for p in pattern]
        for at in range(first, len(lines) - len(pattern) + 1):
            if all(norm(lines[at + k]) == want[k] for k in range(len(pattern))):
                return at
    return _seek(lines, pattern, start, False) if eof and first != start else None


def apply_hunks(text: str, hunks: list[Hunk], path: str) -> str:
    """``text`` after ``hunks`` (a ``@@ line`` first finds that line; a hunk with no old
    line appends); ends with a newline and keeps the file's CRLF."""
    eol = "\r\n" if "\r\n" in text else "\n"
    lines = text.removesuffix("\n").split("\n") if text else []
    if eol == "\r\n":
        lines = [line.removesuffix("\r") for line in lines]
    edits: list[tuple[int, int, list[str]]] = []
    at = 0
    for n, hunk in enumerate(hunks, 1):
        if hunk.context is not None:
            found = _seek(lines, [hunk.context], at, False)
            if found is None:
                raise PatchError(f"{path}: hunk {n}: context line {hunk.context.strip()!r} "
                                 "not found")
            at = found + 1
        if not hunk.old:
            edits.append((len(lines), 0, hunk.new))
            continue
        old, new = hunk.old, hunk.new
        found = _seek(lines, old, at, hunk.end_of_file)
        if found is None and old[-1] == "":
            old = old[:-1]
            new = new[:-1] if new and new[-1] == "" else new
            found = _seek(lines, old, at, hunk.end_of_file)
        if found is None:
            first = next((x for x in hunk.old if x.strip()), hunk.old[0])
            raise PatchError(f"{path}: hunk {n} does not apply: its lines starting "
                             f"{first.strip()[:60]!r} are not in the file")
        edits.append((found, len(old), new))
        at = found + len(old)
    for start, length, new in reversed(sorted(edits, key=lambda e: e[0])):  # as Codex does
        lines[start:start + length] = new
    return eol.join(lines) + eol


def apply(workspace: str, text: str) -> list[tuple[str, str | None, str | None]]:
    """What the patch would leave: ``(absolute path, moved-from path or None, new content
    or None for a deletion)`` per file, in patch order, relative paths resolved against
    ``workspace`` (pass Codex's working directory). Later operations on a file see the
    earlier ones' result, as when Codex applies them one by one."""
    state: dict[str, str | None] = {}  # what the patch has written so far
    items: dict[str, tuple[str | None, str | None]] = {}
    for op in parse(text):
        path = absolute(workspace, op.path)
        new: str | None = op.content
        if op.kind != "add":
            old = state[path] if path in state else read_text(path)
            if old is None:
                raise PatchError(f"{path}: cannot {op.kind} a file that does not exist")
            new = None if op.kind == "delete" else apply_hunks(old, op.hunks, op.path)
        moved_from = None if op.kind == "delete" else items.get(path, (None, None))[0]
        if op.move_to is not None:
            dest = absolute(workspace, op.move_to)
            moved_from = items.pop(path, (None, None))[0] or path
            state[path] = None
            path, moved_from = dest, (None if dest == path else moved_from)
        state[path] = new
        items[path] = (moved_from, new)
    return [(path, old, new) for path, (old, new) in items.items()]
