"""The unified-diff parser: git or plain diff bytes into per-file patches and FileChanges.

By hand, since ``unidiff`` does not do it: git's extended headers and C-quoted names,
byte offsets, where a hunk ends in cut-off input; ``unidiff`` reads each hunk's lines.
"""

from __future__ import annotations

import re
from functools import partial
from itertools import accumulate

from slopjudge.model import FileChange

TYPE_CHECKING = False  # not typing's: a CI run of a docs-only commit never imports it
if TYPE_CHECKING:
    from typing import Any, Literal

    FileStatus = Literal["A", "M", "D", "R"]


def decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


_C_ESCAPES = dict(zip(b'abtnvfr"\\', b'\a\b\t\n\v\f\r"\\', strict=True))  # letter -> byte
# A quoted name up to its closing quote (group 2 empty when it never closes).
_QUOTED = re.compile(rb'"((?:[^"\\]|\\.?)*)("?)', re.S)
_ESCAPE = re.compile(rb"\\([0-7]{1,3}|.)", re.S)


def _unescape(m: re.Match[bytes]) -> bytes:
    code = m.group(1)
    if 0x30 <= code[0] <= 0x37:  # an octal byte, up to three digits
        return bytes([int(code, 8) & 0xFF])
    return bytes([_C_ESCAPES.get(code[0], code[0])])


def _unquote_c(raw: bytes) -> tuple[bytes, int]:
    """``raw`` (starting with ``"``) unquoted, and the index past its closing quote (-1: none)."""
    m = _QUOTED.match(raw)
    assert m is not None  # raw starts with a quote
    return _ESCAPE.sub(_unescape, m.group(1)), m.end() if m.group(2) else -1


def _header_path(raw: bytes) -> bytes | None:
    """The path of a ``---``/``+++``/``rename from`` value; None for /dev/null. An unquoted
    one ends at the first TAB (git adds one after names with spaces; plain diffs put a
    timestamp there)."""
    if raw.startswith(b'"'):
        path, end = _unquote_c(raw)
        if end > 0:
            return path
    path = raw.split(b"\t", 1)[0] if b"\t" in raw else raw.rstrip(b"\r")
    return None if path == b"/dev/null" else path


def _git_line_names(rest: bytes) -> tuple[bytes, bytes] | None:
    """The two names of a ``diff --git <a> <b>`` line (prefixes kept). Unquoted names are
    split at the middle space, where two halves naming one file meet; an unquoted rename
    with spaces is ambiguous here, and the ``rename from/to`` lines that follow settle it."""
    rest = rest.rstrip(b"\r")
    if rest.startswith(b'"'):
        first, end = _unquote_c(rest)
        if end < 0:
            return None
        tail = rest[end:].lstrip(b" ")
        return first, _unquote_c(tail)[0] if tail.startswith(b'"') else tail
    if rest.endswith(b'"') and (q := rest.rfind(b' "')) >= 0:
        return rest[:q], _unquote_c(rest[q + 1 :])[0]
    spaces = [i for i, c in enumerate(rest) if c == 0x20]
    if not spaces:
        return None
    mid = spaces[len(spaces) // 2]
    return rest[:mid], rest[mid + 1 :]


_PREFIX = re.compile(rb"^[a-z]/")

_HUNK = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_EPOCH = re.compile(rb"\t(1970-01-01|1969-12-31)[ T]")


# Plain slotted classes, not dataclasses: importing dataclasses (and the inspect it
# loads) cost a short run more than its diff; a large diff makes one of each per file,
# which a generated ``__init__`` makes several times faster than ``model.record``'s.
class Hunk:
    __slots__ = ("old_start", "old_len", "new_start", "new_len", "first", "last", "short",
                 "old_marked", "new_marked", "read")

    def __init__(self, old_start: int, old_len: int, new_start: int, new_len: int,
                 first: int, last: int) -> None:
        self.old_start, self.old_len = old_start, old_len
        self.new_start, self.new_len = new_start, new_len
        self.first = first  # index of the first body line
        self.last = last  # index past the last body line (marker lines included)
        self.short = (0, 0)  # old and new lines the header counts that the body lacks
        self.old_marked = False  # "\ No newline at end of file" after an old-side line
        self.new_marked = False
        self.read: Any = None  # unidiff's reading (:func:`_read`)


class FilePatch:
    """One file's section of a diff, before it becomes a FileChange."""

    __slots__ = ("start", "end", "git", "old", "new", "status", "copy", "binary", "old_mode",
                 "new_mode", "added", "removed", "hunks", "old_epoch", "new_epoch",
                 "has_dashes")

    def __init__(self, start: int, git: bool) -> None:
        self.start, self.end = start, 0  # byte offsets into the diff
        self.git = git
        self.old: bytes | None = None  # paths as written (prefixes stripped for git parts)
        self.new: bytes | None = None
        self.status: FileStatus = "M"
        self.copy = False
        self.binary = False
        self.old_mode: bytes | None = None
        self.new_mode: bytes | None = None
        self.added = 0
        self.removed = 0
        self.hunks: list[Hunk] = []
        self.old_epoch = False  # plain diffs: a 1970 timestamp marks a missing file
        self.new_epoch = False
        self.has_dashes = not git  # saw ---/+++ lines (a plain section starts with them)


def parse(data: bytes) -> tuple[list[FilePatch], list[bytes]]:
    """A unified diff's per-file parts, leniently: lines outside any file section are ignored."""
    lines = data.split(b"\n")
    n = len(lines)
    offsets = [0, *accumulate(len(ln) + 1 for ln in lines)]  # where each line starts
    parts: list[FilePatch] = []
    cur: FilePatch | None = None
    i = 0

    def close(at: int) -> None:
        nonlocal cur
        if cur is not None:
            cur.end = min(offsets[at], len(data))
            parts.append(cur)
            cur = None

    while i < n:
        line = lines[i]
        if line.startswith(b"diff --git "):
            close(i)
            cur = FilePatch(offsets[i], git=True)
            names = _git_line_names(line[11:])
            if names is not None:  # without git's one-letter prefixes (a/ b/, c/ w/, i/ o/...)
                a, b = names
                strip = _PREFIX.match(a) and _PREFIX.match(b) and a[:1] != b[:1]
                cur.old, cur.new = (a[2:], b[2:]) if strip else names
            i = _git_headers(lines, i + 1, cur)  # junk after them ends it (the last branch)
            continue
        if line.startswith(b"--- ") and i + 1 < n and lines[i + 1].startswith(b"+++ "):
            close(i)
            cur = FilePatch(offsets[i], git=False)
            cur.old, cur.new = _header_path(line[4:]), _header_path(lines[i + 1][4:])
            cur.old_epoch, cur.new_epoch = (bool(_EPOCH.search(x)) for x in lines[i : i + 2])
            i += 2
            continue
        if line.startswith(b"@@ ") and cur is not None and (m := _HUNK.match(line)) is not None:
            i = _hunk(lines, i, m, cur)
            continue
        close(i)
        i += 1
    close(n)
    return parts, lines


def _git_headers(lines: list[bytes], i: int, part: FilePatch) -> int:
    """Read the extended headers of a git section; return the next line index."""
    n = len(lines)
    while i < n:
        h = lines[i]
        if h.startswith(b"--- ") and i + 1 < n and lines[i + 1].startswith(b"+++ "):
            old, new = _header_path(h[4:]), _header_path(lines[i + 1][4:])
            part.old = old[2:] if old and _PREFIX.match(old) else old
            part.new = new[2:] if new and _PREFIX.match(new) else new
            part.status = "D" if new is None else "A" if old is None else part.status
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
            return next((k for k in range(i + 1, n) if lines[k].startswith(b"diff --git ")), n)
        elif h.startswith(b"index "):
            mode = h.rsplit(b" ", 1)
            if len(mode) == 2 and mode[1].isdigit() and part.new_mode is None:
                part.old_mode = part.new_mode = mode[1]
        elif not h.startswith((b"similarity index ", b"dissimilarity index ")):
            return i  # a hunk, the next section or junk
        i += 1
    return i


def _hunk(lines: list[bytes], i: int, m: re.Match[bytes], part: FilePatch) -> int:
    """Consume one hunk starting at ``lines[i]``; return the next line index."""
    old_start, ol, new_start, nl = map(int, m.groups(b"1"))  # a count left out is 1
    h = Hunk(old_start, ol, new_start, nl, first=i + 1, last=i + 1)
    n = len(lines)
    i += 1
    added = removed = 0
    prev = b" "
    while i < n:
        c = lines[i][:1]
        if c == b"\\":  # "\ No newline at end of file": the line before has none
            if ol <= 0 and nl <= 0 and lines[i - 1][:1] == b"\\":
                break  # one marker after the hunk's last line, no more
            h.old_marked |= prev != b"+"  # prev: the line before, " " (context), "-" or "+"
            h.new_marked |= prev != b"-"
            i += 1
            continue
        if ol <= 0 and nl <= 0:
            break
        if c == b" " or (c == b"" and i < n - 1):  # some tools drop a blank context line's space
            ol -= 1
            nl -= 1
        elif c == b"-":
            ol -= 1
            removed += 1
        elif c == b"+":
            nl -= 1
            added += 1
        else:
            break
        prev = c or b" "
        i += 1
    h.short = (ol, nl)  # negative where the body holds more
    if h.short == (h.old_len, h.new_len):
        h.read = []  # no line: unidiff would take the next header for its body
    h.last = i
    part.added += added
    part.removed += removed
    part.hunks.append(h)
    return i


def _provable(part: FilePatch) -> bool:
    """Whether the part's one hunk holds both sides whole (see :func:`_rebuild`)."""
    if part.binary or len(part.hunks) != 1:
        return False
    h = part.hunks[0]
    return (h.short == (0, 0) and h.old_start <= 1 and h.new_start <= 1
            and (h.old_len == 0 or h.new_len == 0 or h.old_marked or h.new_marked))


def _rebuild(part: FilePatch) -> tuple[str | None, str | None]:
    """Old and new contents, where the hunks provably hold the whole file (else None):
    exactly ONE complete hunk from line 1 (0 for an empty side) in which one side provably
    ends, being empty or marked "\\ No newline at end of file"; a hunk covering one whole
    side covers the other too. Trailing context says nothing of a file's length when the
    context size is unknown. A file added or deleted with no hunk is empty (a binary
    one's contents are dropped by :func:`file_changes`)."""
    old_none = (part.status == "A" and not part.copy) or part.old is None
    new_none = part.status == "D" or part.new is None
    if not part.hunks:
        if part.status == "A" and not part.copy and part.new_mode != b"160000":
            return None, ""
        if part.status == "D" and part.old_mode != b"160000":
            return "", None
        return None, None
    if not _provable(part):
        return None, None
    h = part.hunks[0]  # read by file_changes, with every other provable part's
    # "\ No newline at end of file" after a side's last line: it has none.
    old, new = ("".join(ln.value for ln in h.read if ln.line_type in (" ", kind))
                .removesuffix("\n" if marked else "")
                for kind, marked in (("-", h.old_marked), ("+", h.new_marked)))
    return (None if old_none else old), (None if new_none else new)


def _read(hunks: list[Hunk], lines: list[bytes]) -> None:
    """unidiff's reading of each hunk not read yet (type, text and numbers of each line),
    all from ONE PatchSet: one per hunk costs more than reading the lines (0.6 s for 10,000
    small files). Where a hunk ends stays :func:`_hunk`'s (unidiff raises on cut-off input
    and names no line): each is handed over with a header counting its body's own lines
    (the starts kept), every ``\\`` line as the English end-of-file marker unidiff knows."""
    todo = [h for h in hunks if h.read is None]
    if not todo:
        return
    from unidiff.patch import PatchSet

    text = ["--- a\n", "+++ b\n"]  # one file header: each hunk is read by its own header
    for h in todo:
        # One decode for the body (never empty: see _hunk): \n never ends inside a UTF-8
        # sequence, so this reads each line as decoding it alone would.
        body = [("\\ No newline at end of file" if ln[:1] == "\\" else ln) + "\n"
                for ln in decode(b"\n".join(lines[h.first : h.last])).split("\n")]
        old = sum(ln[0] not in "+\\" for ln in body)  # a blank line is context
        new = sum(ln[0] not in "-\\" for ln in body)
        text += [f"@@ -{h.old_start},{old} +{h.new_start},{new} @@\n", *body]
    [read] = PatchSet(text)
    for h, got in zip(todo, read, strict=True):
        h.read = got


def hunk_payloads(part: FilePatch, lines: list[bytes]) -> list[dict[str, Any]]:
    """The part's hunks as the payload carries them (``hunk`` in payload.schema.json)."""
    _read(part.hunks, lines)
    out: list[dict[str, Any]] = []
    for h in part.hunks:
        sides: dict[str, list[list[Any]]] = {"+": [], "-": [], " ": []}
        for ln in h.read:
            if ln.line_type in sides:
                number = ln.source_line_no if ln.line_type == "-" else ln.target_line_no
                sides[ln.line_type].append([number, ln.value[:-1]])
        out.append({"oldStart": h.old_start, "oldLines": h.old_len, "newStart": h.new_start,
                    "newLines": h.new_len, "added": sides["+"], "removed": sides["-"],
                    "context": sides[" "]})
    return out


def hunks_of(diff: str) -> list[dict[str, Any]]:
    """The payload hunks of one file's diff text, for a FileChange no parse made."""
    parts, lines = parse(diff.encode("utf-8", errors="surrogateescape"))
    return [h for part in parts for h in hunk_payloads(part, lines)]


def sections(data: bytes, parts: list[FilePatch], lines: list[bytes]
             ) -> list[tuple[FilePatch, FilePatch | None, dict[str, Any]]]:
    """Each file's section (and a type change's second) with its FileChange fields. The
    first payload that needs hunks has unidiff read them all: it mostly needs all."""
    unread = [h for part in parts for h in part.hunks]

    def hunks(pair: tuple[FilePatch, ...]) -> list[dict[str, Any]]:
        _read(unread, lines)
        unread.clear()
        return [h for part in pair for h in hunk_payloads(part, lines)]

    groups: list[tuple[FilePatch, ...]] = []
    for b in parts:
        a = groups[-1][0] if groups and len(groups[-1]) == 1 else None
        # git prints a file <-> symlink change as a deletion then an addition.
        if (a is not None and a.git and b.git and a.status == "D" and b.status == "A"
                and not b.copy and a.old == b.new and a.old_mode is not None
                and b.new_mode is not None and a.old_mode[:2] != b.new_mode[:2]):
            groups[-1] = (a, b)
        else:
            groups.append((b,))
    out: list[tuple[FilePatch, FilePatch | None, dict[str, Any]]] = []
    for pair in groups:
        binary = any(x.binary for x in pair)
        out.append((pair[0], pair[1] if len(pair) == 2 else None, {
            "diff": decode(data[pair[0].start : pair[-1].end]), "binary": binary,
            "added": 0 if binary else sum(x.added for x in pair),
            "removed": 0 if binary else sum(x.removed for x in pair),
            "hunk_source": partial(hunks, pair)}))
    return out


def _plain_names(parts: list[FilePatch]) -> None:
    """A plain diff's names and statuses. The names carry a leading folder to drop (like
    -p1) when every file named on both sides has a first folder that differs between them
    (``old/x``/``new/x``); with no such file, when the names start with ``a/`` or ``b/``.
    ``/dev/null``, or a 1970 timestamp on a side the one hunk leaves empty, marks an added
    or deleted file; a file is never a rename (only git headers say "rename")."""
    plain = [p for p in parts if not p.git]
    pairs = [(p.old, p.new) for p in plain if p.old and p.new]
    names = [x for p in plain for x in (p.old, p.new) if x]
    strip = (all(b"/" in o and b"/" in n and o.split(b"/", 1)[0] != n.split(b"/", 1)[0]
                 for o, n in pairs) if pairs
             else bool(names) and all(x.startswith((b"a/", b"b/")) for x in names))
    for p in plain:
        if strip:
            p.old, p.new = (n.split(b"/", 1)[1] if n and b"/" in n else n for n in (p.old, p.new))
        only = p.hunks[0] if len(p.hunks) == 1 else None
        if p.old is None or (p.old_epoch and only is not None and only.old_len == 0):
            p.status, p.old = "A", None
        elif p.new is None or (p.new_epoch and only is not None and only.new_len == 0):
            p.status, p.new = "D", None


def file_changes(
    data: bytes, parsed: tuple[list[FilePatch], list[bytes]] | None = None
) -> list[FileChange]:
    """The files of a git or plain unified diff (:func:`_plain_names`), in its order."""
    parts, lines = parsed if parsed is not None else parse(data)
    _plain_names(parts)
    _read([h for p in parts if _provable(p) for h in p.hunks], lines)  # contents: one PatchSet
    files: list[FileChange] = []
    for a, b, fields in sections(data, parts, lines):
        old, new = _rebuild(a)
        status, old_path = a.status, None
        if b is not None:  # a type change: a's old side, b's new side
            new, status, path = _rebuild(b)[1], "M", a.old
        elif a.status == "D":
            path = a.old or a.new
        elif a.status == "R" or a.copy:
            path, old_path = a.new, a.old
        else:
            path = a.new or a.old
        files.append(FileChange(
            path=decode(path or b""), status=status,
            old_path=decode(old_path) if old_path is not None else None,
            old_content=None if fields["binary"] else old,
            new_content=None if fields["binary"] else new, **fields))
    return files


# --------------------------------------------------------------------------
# strict reading of diff input (`run --diff`, `payload --diff`, rule fixtures)


class DiffError(ValueError):
    """Diff input that is not a well-formed unified or git diff; ``line`` is 1-based (0: none)."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line


def _shown(line: bytes) -> str:
    text = decode(line.rstrip(b"\r"))
    return text if len(text) <= 60 else text[:59] + "…"


def _after_hunk_is_body(lines: list[bytes], i: int) -> bool:
    """Whether the line right after a finished hunk still reads as hunk body: not a file
    header, nor git format-patch's signature separator ``-- ``."""
    line = lines[i].rstrip(b"\r") if i < len(lines) else b""
    return line[:1] in (b" ", b"+", b"-") and line != b"-- " and not (
        line.startswith(b"--- ") and i + 1 < len(lines) and lines[i + 1].startswith(b"+++ "))


def check(data: bytes) -> tuple[list[FilePatch], list[bytes]]:
    """Raise :class:`DiffError` (the earliest problem, by line) unless ``data`` is a
    well-formed unified or git diff; return what :func:`parse` gave. :func:`parse` is
    lenient on purpose (text around patches, as in ``git format-patch`` mails); input a
    user hands over is held to more. Empty input is an error: an empty file is more often
    a failed ``git diff`` than no change. Not ``unidiff``: it reads random bytes as an
    empty patch set, accepts a hunk longer than its header counts, and names no line."""
    if not data.strip():
        raise DiffError(0, "empty diff (nothing to judge)")
    parts, lines = parse(data)
    if not parts:
        nul = data.find(b"\x00")
        if nul >= 0:
            raise DiffError(0, f"byte {nul + 1} is NUL: binary data, not a unified or git diff")
        first = next((n for n, ln in enumerate(lines) if ln.strip()), 0)
        raise DiffError(first + 1, "not a unified or git diff: no file header "
                        "('diff --git' or '---'/'+++' lines) anywhere in the input")
    problems: list[tuple[int, str]] = []
    headers = {h.first - 1 for part in parts for h in part.hunks}  # the header lines' indexes
    real = len(lines) - 1 if lines and not lines[-1] else len(lines)  # lines that hold text
    for part in parts:
        for h in part.hunks:
            old, new = h.short
            if old == new == 0 and not _after_hunk_is_body(lines, h.last):
                continue
            hunk = f"hunk '{_shown(lines[h.first - 1])}' (line {h.first})"
            if old == new == 0 or old < 0 or new < 0:  # reported at its first extra line
                at = h.last + 1 if old == new == 0 else h.last
                problems.append((at, f"{hunk} holds more lines than its header counts"))
            elif h.last >= real:
                problems.append((real, f"the input ends inside {hunk}, {old} old and {new} new "
                                 "lines short: the diff is cut off"))
            else:
                problems.append((h.last + 1, f"{hunk} ends {old} old and {new} new lines short: "
                                 "the diff is cut off or its counts do not add up"))
    for n, line in enumerate(lines):
        if line.startswith(b"@@ -") and n not in headers:
            problems.append((n + 1, f"'{_shown(line)}' is not a hunk header slopjudge can read, "
                             "or stands outside any file section"))
    for part in parts:
        if part.hunks or part.binary:
            continue
        # Reported where the section stopped: the line that should have been a hunk.
        n = real + 1 if part.end >= len(data) else min(data.count(b"\n", 0, part.end), real) + 1
        where = _shown(lines[n - 1]) if n <= real else "the end of the input"
        if part.has_dashes:
            problems.append((n, f"a hunk ('@@ -a,b +c,d @@') should start here, not {where!r}"
                             if n <= real else "the input ends before the file's first hunk"))
        elif part.status == "M" and part.old_mode == part.new_mode and part.old == part.new:
            problems.append((n, "a git file header that says no change ends here "
                             f"({where}): the diff is cut off or malformed"))
        elif part.status in ("A", "D") and not part.copy and not _empty_blob(data, part):
            # git shows an added or deleted file with no hunk only when it is empty.
            problems.append((n, "the input ends before the first hunk of a file git's index "
                             "line says is not empty: the diff is cut off"))
    if not data.endswith(b"\n"):
        # Every diff tool ends its output with a newline ("\ No newline at end of file"
        # included): a last line without one was most likely cut off.
        problems.append((real, "the input ends mid-line (no newline after the last line): "
                         "the diff looks cut off; if it is whole, end it with a newline"))
    if problems:
        raise DiffError(*min(problems, key=lambda p: p[0]))
    return parts, lines


# The empty blob's id, SHA-1 and SHA-256 repositories.
_EMPTY_BLOBS = (b"e69de29bb2d1d6434b8b29ae775ad8c2e48c5391",
                b"473a0f4c3be8a93681a267e3b1e9a7dcda1185436fe141f7749120a303721813")


def _empty_blob(data: bytes, part: FilePatch) -> bool:
    """Whether the section's ``index`` line names the empty blob on the side that exists."""
    for line in data[part.start : part.end].split(b"\n"):
        if line.startswith(b"index ") and b".." in line:
            old, _, new = line[6:].split(b" ", 1)[0].rstrip(b"\r").partition(b"..")
            blob = new if part.status == "A" else old
            return len(blob) >= 7 and any(e.startswith(blob) for e in _EMPTY_BLOBS)
    return False
