"""Changesets: what changed, read exactly as git reports it (SPEC §3).

Sources: a diff file (git or plain unified), a commit range, the index, the
work tree (untracked files included, ``.gitignore`` respected), two trees, or
a proposed edit from an agent's file tool.

Repository sources run ONE ``git diff --raw --numstat -p -z`` for the whole
change: the raw records give status, paths and blob ids, numstat the line
counts and the binary flag, the patch each file's diff. Contents then come
from a single ``git cat-file --batch``. The work tree is read through a tree
snapshot written with a temporary index, so the real index is never touched.

Mapping to :class:`FileChange`: statuses are A, M, D, R only. A copy is ``A``
with ``old_path`` set to its source; a type change (file <-> symlink) and a
mode-only change are ``M``. Paths are the real bytes git reports (C-style
quoting undone), decoded as UTF-8 with undecodable bytes replaced, so the
payload is always valid JSON. Contents and diffs are decoded the same way;
line endings (CRLF included) are kept as they are.
"""

from __future__ import annotations

import difflib
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field

from .errors import SlopjudgeError
from .model import Changeset, Commit, FileChange
from .pathglob import match, match_any

__all__ = [
    "ChangesetError",
    "from_diff",
    "from_git_range",
    "from_staged",
    "from_working_tree",
    "snapshot_worktree",
    "from_trees",
    "from_proposed_edit",
    "split",
    "unified_diff",
]

_UNLIMITED = 1 << 62  # git output must never be cut short silently
_GIT_TIMEOUT_S = 600.0


class ChangesetError(SlopjudgeError):
    """A changeset could not be read; the message is one line."""


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


# --------------------------------------------------------------------------
# git paths


_C_ESCAPES = {
    ord("a"): 7, ord("b"): 8, ord("t"): 9, ord("n"): 10, ord("v"): 11,
    ord("f"): 12, ord("r"): 13, ord('"'): 34, ord("\\"): 92,
}


def _unquote_c(raw: bytes) -> tuple[bytes, int]:
    """Undo git's C-style quoting of ``raw`` (which starts with ``"``).

    Returns the path bytes and the index just past the closing quote
    (-1 when the quote never closes).
    """
    out = bytearray()
    i, n = 1, len(raw)
    while i < n:
        c = raw[i]
        if c == 0x22:  # closing quote
            return bytes(out), i + 1
        if c == 0x5C and i + 1 < n:
            nxt = raw[i + 1]
            if 0x30 <= nxt <= 0x37:  # octal byte, up to three digits
                j = i + 1
                while j < n and j < i + 4 and 0x30 <= raw[j] <= 0x37:
                    j += 1
                out.append(int(raw[i + 1 : j], 8) & 0xFF)
                i = j
                continue
            out.append(_C_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(c)
        i += 1
    return bytes(out), -1


def _header_path(raw: bytes) -> bytes | None:
    """The path of a ``---``/``+++``/``rename from`` value; None for /dev/null.

    A quoted name is unquoted; an unquoted one ends at the first TAB (git adds
    one after names with spaces; plain diffs put a timestamp there).
    """
    if raw.startswith(b'"'):
        path, end = _unquote_c(raw)
        if end > 0:
            return path
    path = raw.split(b"\t", 1)[0]
    if b"\t" not in raw:
        path = path.rstrip(b"\r")
    if path == b"/dev/null":
        return None
    return path


def _git_line_names(rest: bytes) -> tuple[bytes, bytes] | None:
    """The two names of a ``diff --git <a> <b>`` line (prefixes kept).

    Quoted names parse exactly. Two unquoted names are split where both
    halves name the same file after their prefixes, as git itself does; a
    rename with spaces and no quoting is ambiguous here, and the ``rename
    from/to`` lines that always follow settle it.
    """
    rest = rest.rstrip(b"\r")
    if rest.startswith(b'"'):
        first, end = _unquote_c(rest)
        if end < 0:
            return None
        tail = rest[end:].lstrip(b" ")
        second = _unquote_c(tail)[0] if tail.startswith(b'"') else tail
        return first, second
    if rest.endswith(b'"'):
        q = rest.rfind(b' "')
        if q >= 0:
            return rest[:q], _unquote_c(rest[q + 1 :])[0]
    # Unquoted: try every space; prefer the split whose halves agree.
    candidates = [i for i in range(len(rest)) if rest[i] == 0x20]
    for i in candidates:
        a, b = rest[:i], rest[i + 1 :]
        stripped = _strip_pair(a, b)
        if a == b or (stripped is not None and stripped[0] == stripped[1]):
            return a, b
    if candidates:
        mid = candidates[len(candidates) // 2]
        return rest[:mid], rest[mid + 1 :]
    return None


_PREFIX = re.compile(rb"^[a-z]/")


def _strip_pair(a: bytes, b: bytes) -> tuple[bytes, bytes] | None:
    """Both names without git's one-letter prefixes (a/ b/, or c/ w/ i/ o/...)."""
    if _PREFIX.match(a) and _PREFIX.match(b) and a[:1] != b[:1]:
        return a[2:], b[2:]
    return None


# --------------------------------------------------------------------------
# unified diff parser


_HUNK = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_EPOCH = re.compile(rb"\t(1970-01-01|1969-12-31)[ T]")
_GIT_HEADERS = (
    b"old mode ", b"new mode ", b"deleted file mode ", b"new file mode ",
    b"similarity index ", b"dissimilarity index ", b"index ",
)


@dataclass
class _Hunk:
    old_start: int
    old_len: int
    new_start: int
    new_len: int
    first: int  # index of the first body line
    last: int  # index past the last body line (marker lines included)
    complete: bool = True
    old_marked: bool = False  # "\ No newline at end of file" after an old-side line
    new_marked: bool = False


@dataclass
class _Part:
    """One file's section of a diff, before it becomes a FileChange."""

    start: int  # byte offsets into the diff
    end: int
    git: bool
    old: bytes | None = None  # paths as written (prefixes stripped for git parts)
    new: bytes | None = None
    status: str = "M"
    copy: bool = False
    binary: bool = False
    old_mode: bytes | None = None
    new_mode: bytes | None = None
    added: int = 0
    removed: int = 0
    hunks: list[_Hunk] = field(default_factory=list)
    old_epoch: bool = False  # plain diffs: a 1970 timestamp marks a missing file
    new_epoch: bool = False
    has_dashes: bool = False  # saw ---/+++ lines


def _parse(data: bytes) -> tuple[list[_Part], list[bytes]]:
    """Split a unified diff into per-file parts. Never raises on odd input:
    lines outside any file section are ignored."""
    lines = data.split(b"\n")
    n = len(lines)
    # Byte offset where each line starts; the list costs one int per line.
    offsets = [0] * (n + 1)
    pos = 0
    for idx, ln in enumerate(lines):
        offsets[idx] = pos
        pos += len(ln) + 1
    offsets[n] = pos
    size = len(data)
    parts: list[_Part] = []
    cur: _Part | None = None
    i = 0

    def close(at: int) -> None:
        nonlocal cur
        if cur is not None:
            cur.end = min(offsets[at], size)
            parts.append(cur)
            cur = None

    while i < n:
        line = lines[i]
        if line.startswith(b"diff --git "):
            close(i)
            cur = _Part(start=offsets[i], end=0, git=True)
            names = _git_line_names(line[11:])
            if names is not None:
                pair = _strip_pair(*names) or names
                cur.old, cur.new = pair
            i = _git_headers(lines, i + 1, cur)
            if i < n and not lines[i].startswith((b"@@ ", b"diff --git ")):
                close(i)  # junk after a header-only section ends it
            continue
        if line.startswith(b"--- ") and i + 1 < n and lines[i + 1].startswith(b"+++ "):
            close(i)
            cur = _Part(start=offsets[i], end=0, git=False, has_dashes=True)
            cur.old = _header_path(line[4:])
            cur.new = _header_path(lines[i + 1][4:])
            cur.old_epoch = bool(_EPOCH.search(line))
            cur.new_epoch = bool(_EPOCH.search(lines[i + 1]))
            i += 2
            continue
        if line.startswith(b"@@ ") and cur is not None and (cur.has_dashes or cur.git):
            m = _HUNK.match(line)
            if m is not None:
                i = _hunk(lines, i, m, cur)
                continue
        close(i)
        i += 1
    close(n)
    return parts, lines


def _git_headers(lines: list[bytes], i: int, part: _Part) -> int:
    """Read the extended headers of a git section; return the next line index."""
    n = len(lines)
    while i < n:
        h = lines[i]
        if h.startswith(b"diff --git ") or h.startswith(b"@@ "):
            return i
        if h.startswith(b"--- ") and i + 1 < n and lines[i + 1].startswith(b"+++ "):
            old = _header_path(h[4:])
            new = _header_path(lines[i + 1][4:])
            if old is None:
                part.status, part.old = "A", None
            else:
                part.old = old[2:] if _PREFIX.match(old) else old
            if new is None:
                part.status, part.new = "D", None
            else:
                part.new = new[2:] if _PREFIX.match(new) else new
            part.has_dashes = True
            return i + 2
        h = h.rstrip(b"\r")
        if h.startswith(b"new file mode "):
            part.status, part.new_mode, part.old = "A", h[14:], None
        elif h.startswith(b"deleted file mode "):
            part.status, part.old_mode, part.new = "D", h[18:], None
        elif h.startswith(b"old mode "):
            part.old_mode = h[9:]
        elif h.startswith(b"new mode "):
            part.new_mode = h[9:]
        elif h.startswith(b"rename from "):
            part.status, part.old = "R", _header_path(h[12:])
        elif h.startswith(b"rename to "):
            part.status, part.new = "R", _header_path(h[10:])
        elif h.startswith(b"copy from "):
            part.status, part.copy, part.old = "A", True, _header_path(h[10:])
        elif h.startswith(b"copy to "):
            part.status, part.copy, part.new = "A", True, _header_path(h[8:])
        elif h.startswith(b"Binary files ") and h.endswith(b" differ"):
            part.binary = True
        elif h.startswith(b"GIT binary patch"):
            part.binary = True
            i += 1
            while i < n and not lines[i].startswith(b"diff --git "):
                i += 1
            return i
        elif h.startswith(b"index "):
            mode = h.rsplit(b" ", 1)
            if len(mode) == 2 and mode[1].isdigit() and part.new_mode is None:
                part.old_mode = part.new_mode = mode[1]
        elif not h.startswith(_GIT_HEADERS):
            return i
        i += 1
    return i


def _hunk(lines: list[bytes], i: int, m: re.Match[bytes], part: _Part) -> int:
    """Consume one hunk starting at ``lines[i]``; return the next line index."""
    ol = int(m.group(2)) if m.group(2) is not None else 1
    nl = int(m.group(4)) if m.group(4) is not None else 1
    h = _Hunk(int(m.group(1)), ol, int(m.group(3)), nl, first=i + 1, last=i + 1)
    n = len(lines)
    i += 1
    added = removed = 0
    prev = b" "
    while i < n and (ol > 0 or nl > 0):
        c = lines[i][:1]
        if c == b" " or (c == b"" and i < n - 1):  # some tools drop a blank context line's space
            ol -= 1
            nl -= 1
        elif c == b"-":
            ol -= 1
            removed += 1
        elif c == b"+":
            nl -= 1
            added += 1
        elif c == b"\\":
            _mark(h, prev)
            i += 1
            continue
        else:
            break
        prev = c or b" "
        i += 1
    if ol > 0 or nl > 0 or ol < 0 or nl < 0:
        h.complete = False
    if i < n and lines[i][:1] == b"\\":  # marker after the hunk's last line
        _mark(h, prev)
        i += 1
    h.last = i
    part.added += added
    part.removed += removed
    part.hunks.append(h)
    return i


def _mark(h: _Hunk, prev: bytes) -> None:
    if prev in (b" ", b"-"):
        h.old_marked = True
    if prev in (b" ", b"+"):
        h.new_marked = True


def _rebuild(part: _Part, lines: list[bytes]) -> tuple[bytes | None, bytes | None]:
    """Old and new contents, where the hunks provably hold the whole file.

    The rule: a side that is /dev/null has no content (None). A text file
    added or deleted with no hunk is empty. Otherwise the sides are known
    only when there is exactly ONE complete hunk, it starts at line 1 on
    both sides (0 for an empty side), and one side provably ends inside it:
    that side is empty (length 0) or its last hunk line carries "\\ No
    newline at end of file". A hunk covering one whole side covers the other
    too, since no unchanged line can lie outside it. Everything else (several
    hunks, a hunk not at the top, no end marker) cannot be proven and is
    None: a hunk's trailing context says nothing about the file's length
    when the context size is unknown.
    """
    if part.binary:
        return None, None
    old_none = (part.status == "A" and not part.copy) or part.old is None
    new_none = part.status == "D" or part.new is None
    if not part.hunks:
        if part.status == "A" and not part.copy and part.new_mode != b"160000":
            return None, b""
        if part.status == "D" and part.old_mode != b"160000":
            return b"", None
        return None, None
    if len(part.hunks) != 1:
        return None, None
    h = part.hunks[0]
    if not h.complete:
        return None, None
    if h.old_start > 1 or h.new_start > 1:
        return None, None
    if not (h.old_len == 0 or h.new_len == 0 or h.old_marked or h.new_marked):
        return None, None
    old: list[bytes] = []
    new: list[bytes] = []
    last: list[bytes] | None = None
    both = False
    for idx in range(h.first, h.last):
        ln = lines[idx]
        c = ln[:1]
        if c == b"\\":
            # The previous line had no newline on the side(s) it belongs to.
            if last is not None and last and last[-1].endswith(b"\n"):
                last[-1] = last[-1][:-1]
            if both and new and new[-1].endswith(b"\n"):
                new[-1] = new[-1][:-1]
            continue
        body = ln[1:] + b"\n"
        both = False
        if c == b"-":
            old.append(body)
            last = old
        elif c == b"+":
            new.append(body)
            last = new
        else:
            old.append(body)
            new.append(body)
            last, both = old, True
    return (None if old_none else b"".join(old)), (None if new_none else b"".join(new))


def _is_typechange(a: _Part, b: _Part) -> bool:
    """git prints a file <-> symlink change as a deletion then an addition."""
    if not (a.git and b.git and a.status == "D" and b.status == "A" and not b.copy):
        return False
    if a.old != b.new or a.old_mode is None or b.new_mode is None:
        return False
    return a.old_mode[:2] != b.new_mode[:2]


def _merge_typechanges(parts: list[_Part]) -> list[tuple[_Part, _Part | None]]:
    out: list[tuple[_Part, _Part | None]] = []
    i = 0
    while i < len(parts):
        if i + 1 < len(parts) and _is_typechange(parts[i], parts[i + 1]):
            out.append((parts[i], parts[i + 1]))
            i += 2
        else:
            out.append((parts[i], None))
            i += 1
    return out


def _plain_strip(parts: list[_Part]) -> bool:
    """Whether a plain diff's names carry a leading folder to drop (like -p1).

    Yes when every file named on both sides has a first folder that differs
    between the sides (``a/x``/``b/x``, ``old/x``/``new/x``); with no such file,
    yes when the names start with ``a/`` or ``b/``.
    """
    pairs = [(p.old, p.new) for p in parts if not p.git and p.old and p.new]
    if pairs:
        return all(
            b"/" in o and b"/" in n and o.split(b"/", 1)[0] != n.split(b"/", 1)[0]
            for o, n in pairs
        )
    names = [x for p in parts if not p.git for x in (p.old, p.new) if x]
    return bool(names) and all(x.startswith((b"a/", b"b/")) for x in names)


def from_diff(data: bytes, workspace: str | None = None) -> Changeset:
    """Read a git or plain unified diff.

    ``workspace`` is accepted for symmetry only: contents are never read from
    disk, since the diff need not match the tree. ``newContent``/``oldContent``
    are rebuilt from the hunks only where the hunks provably hold the whole
    file (see :func:`_rebuild`), else None. Plain diffs: ``/dev/null`` or a
    1970 timestamp marks an added or deleted file; a leading folder is dropped
    as described in :func:`_plain_strip`; the file is named by its new name and
    is never a rename (only git headers say "rename").
    """
    if isinstance(data, str):  # tolerate text callers
        data = data.encode("utf-8", errors="surrogateescape")
    parts, lines = _parse(data)
    strip = _plain_strip(parts)
    files: list[FileChange] = []
    for a, b in _merge_typechanges(parts):
        if b is not None:
            old, _ = _rebuild(a, lines)
            _, new = _rebuild(b, lines)
            binary = a.binary or b.binary
            files.append(FileChange(
                path=_text(a.old or b""), status="M",
                old_content=None if binary or old is None else _text(old),
                new_content=None if binary or new is None else _text(new),
                diff=_text(data[a.start : b.end]), binary=binary,
                added=a.added + b.added, removed=a.removed + b.removed,
            ))
            continue
        if not a.git:
            _plain_status(a, strip)
        old, new = _rebuild(a, lines)
        if a.status == "D":
            path, old_path = a.old or a.new or b"", None
        elif a.status == "R" or a.copy:
            path, old_path = a.new or b"", a.old
        else:
            path, old_path = a.new or a.old or b"", None
        files.append(FileChange(
            path=_text(path), status=a.status,  # type: ignore[arg-type]
            old_path=_text(old_path) if old_path is not None else None,
            old_content=None if old is None else _text(old),
            new_content=None if new is None else _text(new),
            diff=_text(data[a.start : a.end]), binary=a.binary,
            added=0 if a.binary else a.added, removed=0 if a.binary else a.removed,
        ))
    return Changeset(base=None, head=None, commits=[], files=files)


def _plain_status(p: _Part, strip: bool) -> None:
    def drop(name: bytes | None) -> bytes | None:
        if name is None or not strip or b"/" not in name:
            return name
        return name.split(b"/", 1)[1]

    p.old, p.new = drop(p.old), drop(p.new)
    only = p.hunks[0] if len(p.hunks) == 1 else None
    if p.old is None or (p.old_epoch and only is not None and only.old_len == 0):
        p.status, p.old = "A", None
    elif p.new is None or (p.new_epoch and only is not None and only.new_len == 0):
        p.status, p.new = "D", None
    else:
        p.status = "M"


# --------------------------------------------------------------------------
# git plumbing


def _git(workspace: str, args: list[str], *, env: dict[str, str] | None = None,
         input: bytes = b"", ok: tuple[int, ...] = (0,)) -> bytes:
    from .procs import run

    argv = ["git", "-c", "core.quotepath=false", "-c", "color.ui=false", *args]
    res = run(argv, input=input, cwd=workspace, env=env, timeout=_GIT_TIMEOUT_S,
              max_output=_UNLIMITED)
    if res.start_error:
        raise ChangesetError(f"cannot run git: {res.start_error}")
    if res.timed_out:
        raise ChangesetError(f"git {args[0]} timed out after {int(_GIT_TIMEOUT_S)} s")
    if res.returncode not in ok:
        msg = _first_line(res.stderr) or f"git {args[0]} exited with {res.returncode}"
        raise ChangesetError(msg)
    return res.stdout


def _first_line(err: bytes) -> str:
    for ln in _text(err).splitlines():
        ln = ln.strip()
        if ln and not ln.startswith(("hint:", "warning:")):
            return ln.removeprefix("fatal: ").removeprefix("error: ")
    return ""


def _toplevel(workspace: str) -> str:
    if not os.path.isdir(workspace):
        raise ChangesetError(f"not a directory: {workspace}")
    try:
        out = _git(workspace, ["rev-parse", "--show-toplevel"])
    except ChangesetError as exc:
        if "not a git repository" in str(exc).lower():
            raise ChangesetError(f"not a git repository: {workspace}") from None
        raise
    top = _text(out).strip()
    if not top:  # inside .git or a bare repository
        raise ChangesetError(f"not a git work tree: {workspace}")
    return top


def _resolve(workspace: str, rev: str, kind: str = "commit") -> str:
    """Full object id of ``rev`` peeled to ``kind``; ChangesetError if unknown."""
    if not rev or rev.startswith("-") or "\n" in rev:
        raise ChangesetError(f"unknown revision: {rev!r}")
    try:
        out = _git(workspace, ["rev-parse", "--verify", "--quiet", f"{rev}^{{{kind}}}"])
    except ChangesetError:
        raise ChangesetError(f"unknown revision: {rev}") from None
    sha = _text(out).strip()
    if not sha:
        raise ChangesetError(f"unknown revision: {rev}")
    return sha


def _empty_tree(workspace: str) -> str:
    return _text(_git(workspace, ["hash-object", "-t", "tree", "--stdin"])).strip()


def _head_tree(workspace: str, rev: str) -> str:
    """The tree of ``rev``; the empty tree when ``rev`` is HEAD of an unborn branch."""
    try:
        return _resolve(workspace, rev, "tree")
    except ChangesetError:
        if rev == "HEAD":
            return _empty_tree(workspace)
        raise


_DIFF_ARGS = [
    "-c", "diff.noprefix=false", "-c", "diff.mnemonicPrefix=false", "-c", "diff.relative=false",
    "diff", "--no-color", "--no-ext-diff", "--no-textconv", "--submodule=short",
    "--src-prefix=a/", "--dst-prefix=b/", "-M", "--raw", "--numstat", "-p", "-z", "--no-abbrev",
]


@dataclass
class _Raw:
    old_mode: str
    new_mode: str
    old_sha: str
    new_sha: str
    status: str
    src: bytes
    dst: bytes | None
    added: int = 0
    removed: int = 0
    binary: bool = False


def _diff_records(data: bytes) -> tuple[list[_Raw], bytes]:
    """Split ``git diff --raw --numstat -p -z`` output: raw records with
    numstat attached, then the patch text."""
    recs: list[_Raw] = []
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
        recs.append(_Raw(meta[0], meta[1], meta[2], meta[3], meta[4], src, dst))
    k = 0
    while p < n and data[p] != 0x00 and data[p : p + 4] != b"diff":
        t1 = data.index(b"\t", p)
        t2 = data.index(b"\t", t1 + 1)
        a, r = data[p:t1], data[t1 + 1 : t2]
        p = t2 + 1
        if data[p] == 0:  # rename/copy: "\0old\0new\0"
            z = data.index(b"\0", p + 1)
            p = data.index(b"\0", z + 1) + 1
            key = data[z + 1 : p - 1]
        else:
            z = data.index(b"\0", p)
            key, p = data[p:z], z + 1
        # Numstat lists the raw records in order; check the name all the same.
        rec = recs[k] if k < len(recs) and _raw_key(recs[k]) == key else next(
            (x for x in recs if _raw_key(x) == key), None)
        if rec is not None:
            rec.binary = a == b"-"
            rec.added = 0 if a == b"-" else int(a)
            rec.removed = 0 if r == b"-" else int(r)
        k += 1
    if p < n and data[p] == 0x00:
        p += 1
    return recs, data[p:]


def _raw_key(rec: _Raw) -> bytes:
    return rec.dst if rec.dst is not None else rec.src


_STATUS = {"A": "A", "D": "D", "M": "M", "T": "M", "R": "R", "C": "A", "U": "M", "X": "M"}


def _cat_blobs(workspace: str, shas: list[str]) -> dict[str, bytes]:
    """Blob contents for ``shas`` in one ``git cat-file --batch``."""
    if not shas:
        return {}
    out = _git(workspace, ["cat-file", "--batch"], input="".join(s + "\n" for s in shas).encode())
    blobs: dict[str, bytes] = {}
    p, n = 0, len(out)
    while p < n:
        nl = out.index(b"\n", p)
        head = out[p:nl].split(b" ")
        p = nl + 1
        if len(head) != 3:  # "<sha> missing"
            continue
        size = int(head[2])
        blobs[head[0].decode("ascii")] = out[p : p + size]
        p += size + 1
    return blobs


def _zero(sha: str) -> bool:
    return not sha.strip("0")


def _changeset_from_git_diff(workspace: str, diff_args: list[str]) -> list[FileChange]:
    out = _git(workspace, [*_DIFF_ARGS, *diff_args])
    recs, patch = _diff_records(out)
    parts, lines = _parse(patch)
    groups = _merge_typechanges(parts)
    wanted: list[str] = []
    for r in recs:
        if r.binary:
            continue
        for mode, sha in ((r.old_mode, r.old_sha), (r.new_mode, r.new_sha)):
            if not _zero(sha) and mode != "160000":
                wanted.append(sha)
    blobs = _cat_blobs(workspace, sorted(set(wanted)))
    files: list[FileChange] = []
    g = 0
    for r in recs:
        kind = r.status[:1]
        status = _STATUS.get(kind, "M")
        new_path = r.dst if r.dst is not None else r.src
        diff = ""
        if g < len(groups):
            a, b = groups[g]
            last = b or a
            part_path = a.old if a.status == "D" and b is None else (last.new or last.old)
            if part_path == (r.src if kind == "D" else new_path):
                diff = _text(patch[a.start : last.end])
                g += 1

        def content(mode: str, sha: str) -> str | None:
            if r.binary or _zero(sha) or mode == "160000":
                return None
            blob = blobs.get(sha)
            return None if blob is None else _text(blob)

        files.append(FileChange(
            path=_text(r.src if kind == "D" else new_path),
            status=status,  # type: ignore[arg-type]
            old_path=_text(r.src) if kind in ("R", "C") else None,
            old_content=None if kind == "A" else content(r.old_mode, r.old_sha),
            new_content=None if kind == "D" else content(r.new_mode, r.new_sha),
            diff=diff, binary=r.binary, added=r.added, removed=r.removed,
        ))
    return files


# --------------------------------------------------------------------------
# repository sources


def from_trees(workspace: str, base_tree: str, head_tree: str) -> Changeset:
    """The change between two tree-ish objects (trees or commits)."""
    _toplevel(workspace)
    base = _resolve(workspace, base_tree, "tree") if base_tree else _empty_tree(workspace)
    head = _resolve(workspace, head_tree, "tree")
    files = _changeset_from_git_diff(workspace, [base, head])
    return Changeset(base=base_tree, head=head_tree, commits=[], files=files)


def from_git_range(workspace: str, base: str, head: str = "HEAD") -> Changeset:
    """Commits ``base..head`` (oldest first) and their change.

    The diff runs from the merge base of ``base`` and ``head`` (as ``git diff
    base...head`` does), so changes made on ``base`` after the branch point do
    not show up reversed; when ``base`` is an ancestor of ``head`` that is
    ``base`` itself. ``Changeset.base`` is that commit.
    """
    _toplevel(workspace)
    head_sha = _resolve(workspace, head)
    try:
        base_sha = _resolve(workspace, base)
    except ChangesetError:
        # A tree as base (git's empty tree: the whole history) has no merge
        # base; every commit reachable from head is in the range.
        tree = _resolve(workspace, base, "tree")
        files = _changeset_from_git_diff(workspace, [tree, head_sha])
        return Changeset(base=tree, head=head_sha, files=files,
                         commits=_commits(workspace, head_sha))
    mb = _text(_git(workspace, ["merge-base", base_sha, head_sha], ok=(0, 1))).split()
    start = mb[0] if mb else base_sha
    files = _changeset_from_git_diff(workspace, [start, head_sha])
    return Changeset(base=start, head=head_sha, files=files,
                     commits=_commits(workspace, f"{base_sha}..{head_sha}"))


def _commits(workspace: str, rev_range: str) -> list[Commit]:
    """The commits of ``rev_range``, oldest first."""
    log = _git(workspace, [
        "-c", "log.showSignature=false", "log", "-z", "--reverse", "--no-color",
        "--format=%H%n%s%n%b", rev_range, "--",
    ])
    commits: list[Commit] = []
    for rec in log.split(b"\0"):
        if not rec.strip():
            continue
        sha, _, rest = _text(rec).partition("\n")
        subject, _, body = rest.partition("\n")
        commits.append(Commit(sha=sha.strip(), subject=subject, body=body.rstrip("\n")))
    return commits


def from_staged(workspace: str) -> Changeset:
    """HEAD (the empty tree on an unborn branch) -> the index."""
    _toplevel(workspace)
    try:
        base = _resolve(workspace, "HEAD")
    except ChangesetError:
        base = _empty_tree(workspace)
    files = _changeset_from_git_diff(workspace, ["--cached", base])
    return Changeset(base=base, head=None, commits=[], files=files)


def _index_path(workspace: str) -> str:
    path = _text(_git(workspace, ["rev-parse", "--git-path", "index"])).strip()
    return path if os.path.isabs(path) else os.path.join(workspace, path)


def snapshot_worktree(workspace: str) -> str:
    """A tree id for the work tree as it is now: tracked and untracked files,
    ignored ones left out. Written through a temporary copy of the index
    (``GIT_INDEX_FILE``), so the real index and the files are not touched; the
    blobs and trees it writes are ordinary unreferenced objects."""
    top = _toplevel(workspace)
    real_index = _index_path(top)
    tmp = tempfile.mkdtemp(prefix="slopjudge-index-")
    try:
        index = os.path.join(tmp, "index")
        if os.path.exists(real_index):
            # Starting from the real index lets git reuse its stat data. Keep its
            # mtime too: git trusts an entry's stat data only when the entry is
            # older than the index, so a fresh mtime would hide an edit made in
            # the same second as the last commit.
            shutil.copy2(real_index, index)
        env = dict(os.environ, GIT_INDEX_FILE=index)
        _git(top, ["-c", "advice.addEmbeddedRepo=false", "-c", "core.safecrlf=false",
                   "add", "-A", "--", "."], env=env)
        return _text(_git(top, ["write-tree"], env=env)).strip()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def from_working_tree(workspace: str, base: str = "HEAD") -> Changeset:
    """``base`` (a commit or tree id; HEAD of an unborn branch is the empty
    tree) -> the work tree, untracked files included, .gitignore respected."""
    _toplevel(workspace)
    base_tree = _head_tree(workspace, base)
    try:
        base_id = _resolve(workspace, base, "commit")
    except ChangesetError:
        base_id = base_tree
    snap = snapshot_worktree(workspace)
    files = _changeset_from_git_diff(workspace, [base_tree, snap])
    return Changeset(base=base_id, head=None, commits=[], files=files)


# --------------------------------------------------------------------------
# proposed edits


_NEEDS_QUOTE = re.compile(r'["\\\x00-\x1f\x7f]')
_QUOTE_MAP = {"\a": "\\a", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\v": "\\v",
              "\f": "\\f", "\r": "\\r", '"': '\\"', "\\": "\\\\"}


def _quote(name: str) -> str:
    """Quote a path as git does with core.quotepath=false."""
    if not _NEEDS_QUOTE.search(name):
        return name
    body = "".join(_QUOTE_MAP.get(ch, f"\\{ord(ch):03o}" if ord(ch) < 0x20 or ord(ch) == 0x7F else ch)
                   for ch in name)
    return f'"{body}"'


def _dash_name(prefix: str, name: str) -> str:
    q = _quote(prefix + name)
    return q + "\t" if " " in q and not q.startswith('"') else q


def _split_keep(text: str) -> list[str]:
    """Lines with their "\\n" (only "\\n" ends a line, as in git)."""
    if not text:
        return []
    parts = text.split("\n")
    out = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return out


def _synth_hunks(old: str, new: str) -> tuple[list[str], int, int]:
    a, b = _split_keep(old), _split_keep(new)
    out: list[str] = []
    added = removed = 0
    lines = difflib.unified_diff(a, b, lineterm="", n=3)
    for _ in range(2):  # difflib's own ---/+++ lines; the caller writes git's
        next(lines, None)
    for line in lines:
        if line.startswith("@@"):
            out.append(line + "\n")
            continue
        if line[:1] == "+":
            added += 1
        elif line[:1] == "-":
            removed += 1
        if line.endswith("\n"):
            out.append(line)
        else:
            out.append(line + "\n\\ No newline at end of file\n")
    return out, added, removed


def from_proposed_edit(workspace: str, path: str, new_content: str | None) -> Changeset:
    """The change a file tool is about to make: old content from disk, new
    content as given (None: the file is deleted), the diff synthesized the
    way git prints it. The path is relative to ``workspace`` when inside it,
    else absolute."""
    ws = os.path.abspath(workspace)
    full = path if os.path.isabs(path) else os.path.join(ws, path)
    full = os.path.abspath(full)
    name = _relative(ws, full)
    old_bytes: bytes | None
    try:
        with open(full, "rb") as fh:
            old_bytes = fh.read()
    except FileNotFoundError:
        old_bytes = None
    except IsADirectoryError:
        raise ChangesetError(f"is a directory: {name}") from None
    except OSError as exc:
        raise ChangesetError(f"cannot read {name}: {exc.strerror or exc}") from None
    if old_bytes is None and new_content is None:
        return Changeset(files=[])
    mode = "100644"
    if old_bytes is not None:
        try:
            mode = "100755" if os.stat(full).st_mode & 0o111 else "100644"
        except OSError:
            pass
    status = "A" if old_bytes is None else ("D" if new_content is None else "M")
    binary = old_bytes is not None and b"\0" in old_bytes[:8000]
    old_text = None if old_bytes is None else _text(old_bytes)
    head = [f"diff --git {_quote('a/' + name)} {_quote('b/' + name)}\n"]
    if status == "A":
        head.append(f"new file mode {mode}\n")
    elif status == "D":
        head.append(f"deleted file mode {mode}\n")
    old_name = "/dev/null" if status == "A" else _dash_name("a/", name)
    new_name = "/dev/null" if status == "D" else _dash_name("b/", name)
    added = removed = 0
    if binary:
        body = [f"Binary files {old_name.rstrip(chr(9))} and {new_name.rstrip(chr(9))} differ\n"]
    else:
        hunks, added, removed = _synth_hunks(old_text or "", new_content or "")
        body = [f"--- {old_name}\n", f"+++ {new_name}\n", *hunks] if hunks else []
    if status == "M" and not body:
        return Changeset(files=[])  # nothing would change
    fc = FileChange(
        path=name, status=status,  # type: ignore[arg-type]
        old_content=None if binary else old_text,
        new_content=None if binary else new_content,
        diff="".join(head + body), binary=binary, added=added, removed=removed,
    )
    return Changeset(base=None, head=None, commits=[], files=[fc])


def _relative(ws: str, full: str) -> str:
    for root, target in ((ws, full), (os.path.realpath(ws), os.path.realpath(full))):
        if target == root:
            continue
        if os.path.commonpath([root, target]) == root:
            return os.path.relpath(target, root).replace(os.sep, "/")
    return full


# --------------------------------------------------------------------------
# rule filtering


def split(changeset: Changeset, paths: list[str], exclude: list[str]) -> tuple[list[FileChange], list[dict]]:
    """Files a rule's ``paths``/``exclude`` admit, and the others as
    ``{"path", "status"}``. A file is admitted when its path (or, for a
    rename, its old path) matches ``paths`` (empty: everything) and its path
    does not match ``exclude``.

    A proposed edit outside the workspace carries an absolute path: ``paths``
    are workspace-relative, so only a rule with no ``paths`` (or an absolute
    pattern) sees it. A rule guarding where files are written still can.
    """
    files: list[FileChange] = []
    others: list[dict] = []
    for f in changeset.files:
        if f.path.startswith("/"):
            wanted = not paths or any(p.startswith("/") and match(p, f.path) for p in paths)
        else:
            wanted = not paths or match_any(paths, f.path) or (
            f.status == "R" and f.old_path is not None and match_any(paths, f.old_path))
        if wanted and not (exclude and match_any(exclude, f.path)):
            files.append(f)
        else:
            others.append({"path": f.path, "status": f.status})
    return files, others


def unified_diff(files: list[FileChange]) -> str:
    """The whole diff a rule sees: each of its files' diffs in order."""
    out: list[str] = []
    for f in files:
        if not f.diff:
            continue
        out.append(f.diff if f.diff.endswith("\n") else f.diff + "\n")
    return "".join(out)
