"""Shared helpers for the default rule pack's scripts.

Standard library only. A rule script reads the SPEC §3 payload from stdin,
looks at the lines a change ADDS (with their new-file line numbers, from the
hunks slopjudge parsed into each file's payload entry: no script parses a
diff), and reports findings with path and line.

The lexer splits each line into code, string literals and comments for
Python, JS/TS, Go and hash-comment languages, so a pattern written inside a
string (a regex in a linter, a script written by a test) is not mistaken
for code, and a comment is not mistaken for a call.
"""

from __future__ import annotations

import os
import sys

# The payload's reading and the crash guard live in hookio (the PreToolUse rules
# import only that); slopscan's users keep reaching them here.
from hookio import dumps, event, load_payload, main_guard, tool_input, workspace  # noqa: F401

# Imported where they are used (ast, difflib, json), and no dataclasses: every check
# of the pack imports this module, and those imports would cost it more than its work.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import ast
    import re
    from collections.abc import Callable, Iterable, Iterator, Sequence
    from collections.abc import Set as AbstractSet
    from typing import Any

try:
    from slopjudge import pathglob
except ImportError:  # run by hand on a Python without slopjudge: say so, and fail closed
    print('{"reason": "the rule pack runs on the Python slopjudge is installed in"}')
    sys.exit(2)

LANG_BY_EXT = {
    ".py": "python", ".pyi": "python",
    ".js": "js", ".jsx": "js", ".mjs": "js", ".cjs": "js",
    ".ts": "js", ".tsx": "js", ".mts": "js", ".cts": "js",
    ".go": "go",
    ".sh": "hash", ".bash": "hash", ".zsh": "hash", ".yaml": "hash", ".yml": "hash",
    ".toml": "hash", ".rb": "hash", ".pl": "hash", ".r": "hash", ".cfg": "hash", ".ini": "hash",
    ".c": "clike", ".h": "clike", ".cc": "clike", ".cpp": "clike", ".hpp": "clike",
    ".java": "clike", ".kt": "clike", ".rs": "clike", ".swift": "clike", ".cs": "clike",
    ".scala": "clike",
}
CODE_LANGS = {"python", "js", "go", "clike"}

# re's flags (re.I, re.M, re.S) as the ints they are, for a check's patterns: `re` is
# imported when a pattern is first compiled, and a change that reaches none (most clean
# Writes) never pays for it, about a sixth of a Write's hook with the enum it loads.
I, M, S = 2, 8, 16  # noqa: E741 - re.I, re.M, re.S by their names in re

class Later:
    """A regular expression compiled when it is first used, once per process: a check's
    module would otherwise compile on every run all it defines, and most changes never
    reach most of a check's expressions (compiling one costs more than searching a change
    with it). Every method of a compiled pattern is there (``search``, ``sub``, ...).

    ``words``: strings one of which every match holds, as the pattern spells them (in
    lower case when the pattern ignores case, or ``fold``): ``search``, ``match`` and
    ``finditer`` answer a text with none of them without compiling the pattern. A text
    that is not ASCII is always searched when case is ignored (``re.I`` folds some other
    letters onto ASCII ones: the Kelvin sign is a k)."""

    __slots__ = ("pattern", "flags", "words", "fold", "_rx")

    def __init__(self, pattern: str, flags: int = 0, words: tuple[str, ...] = (),
                 fold: bool = False) -> None:
        self.pattern = pattern
        self.flags = flags
        self.words = words
        self.fold = fold or bool(flags & I)
        self._rx: re.Pattern[str] | None = None

    def compiled(self) -> re.Pattern[str]:
        if self._rx is None:
            import re

            self._rx = re.compile(self.pattern, self.flags)
        return self._rx

    def may_hold(self, text: str) -> bool:
        """False when ``text`` holds none of the ``words`` (and so no match)."""
        if not self.words:
            return True
        if self.fold:
            if not text.isascii():
                return True
            text = text.lower()
        return any(w in text for w in self.words)

    def search(self, text: str, *span: int) -> re.Match[str] | None:
        return self.compiled().search(text, *span) if self.may_hold(text) else None

    def match(self, text: str, *span: int) -> re.Match[str] | None:
        return self.compiled().match(text, *span) if self.may_hold(text) else None

    def finditer(self, text: str, *span: int) -> Iterator[re.Match[str]]:
        return self.compiled().finditer(text, *span) if self.may_hold(text) else iter(())

    def __getattr__(self, name: str) -> Any:  # sub, findall, fullmatch, groups ...
        return getattr(self.compiled(), name)


_RX: dict[tuple[str, int], Later] = {}


def rx(pattern: str, flags: int = 0) -> Later:
    """``pattern`` as a :class:`Later`, one per pattern and flags: ``ss.rx(p).search(t)``
    where ``re.search(p, t)`` would import `re` even when the call is never reached."""
    found = _RX.get((pattern, flags))
    if found is None:
        if len(_RX) >= 512:  # patterns made from a file's names: stay bounded
            _RX.clear()
        found = _RX[(pattern, flags)] = Later(pattern, flags)
    return found


# Every match holds one of its ``words``: most paths are answered without the regex.
TEST_PATH_RE = Later(
    r"(^|/)(tests?|__tests__|__mocks__|spec|specs|testing|e2e)/"
    r"|(^|/)test_[^/]*\.py$|_test\.py$|(^|/)conftest\.py$"
    r"|_test\.go$|\.(test|spec)\.[cm]?[jt]sx?$",
    words=("test", "spec", "__mocks__", "e2e/"),
)
FIXTURE_PATH_RE = Later(r"(^|/)(fixtures?|testdata|__snapshots__)/",
                        words=("fixture", "testdata/", "__snapshots__/"))


# --------------------------------------------------------------------------- records


class _Record:
    """A plain record: its fields are its ``__slots__``; equal to a record of the same
    class with equal fields, shown with them (as a dataclass, without its import)."""

    __slots__: tuple[str, ...] = ()
    __hash__ = None  # type: ignore[assignment]  # mutable and compared by value

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in self.__slots__)

    def __repr__(self) -> str:
        shown = ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__slots__
                          if not n.startswith("_"))
        return f"{type(self).__name__}({shown})"


# --------------------------------------------------------------------------- diff


class NewLine(_Record):
    __slots__ = ("no", "text", "added")

    def __init__(self, no: int, text: str, added: bool) -> None:
        self.no = no  # 1-based line number in the new file
        self.text = text
        self.added = added


def file_hunks(f: dict[str, Any]) -> tuple[list[list[NewLine]], list[str]]:
    """New-side lines of each hunk (context and added, in new-file order), and the removed
    lines: read from the hunks slopjudge parsed into the payload (a file's ``hunks``, SPEC
    §3), never from the diff text. A line's CR (a CRLF file) is dropped, as the new
    content's ``splitlines`` drops it."""
    if "hunks" not in f:
        # A payload without parsed hunks would let every added line go unseen: refuse to
        # guess (the check crashes, which blocks) rather than pass.
        raise ValueError("the payload's files carry no parsed hunks: this rule pack needs "
                         "the slopjudge it ships with")
    hunks: list[list[NewLine]] = []
    removed: list[str] = []
    for h in f["hunks"] or []:
        lines = [NewLine(no, _text(t), False) for no, t in h["context"]]
        lines += [NewLine(no, _text(t), True) for no, t in h["added"]]
        lines.sort(key=_line_no)
        hunks.append(lines)
        removed += [_text(t) for _, t in h["removed"]]
    return hunks, removed


def _line_no(nl: NewLine) -> int:
    return nl.no  # not operator.attrgetter: `operator` is imported for nothing else


def _text(line: str) -> str:
    return line[:-1] if line.endswith("\r") else line


# --------------------------------------------------------------------------- lexer


class LexLine(_Record):
    __slots__ = ("no", "text", "added", "code", "comment", "strings", "doc", "in_string")

    def __init__(self, no: int, text: str, added: bool, code: str = "", comment: str = "",
                 strings: list[str] | None = None, doc: bool = False,
                 in_string: bool = False) -> None:
        self.no = no
        self.text = text
        self.added = added
        self.code = code  # the code part, string contents removed (quotes kept)
        self.comment = comment  # comment text on this line, markers stripped
        # literals that start on this line
        self.strings: list[str] = [] if strings is None else strings
        # the line lies (partly) inside a Python triple-quoted string, or inside a
        # documentation comment (`/** ... */`: JSDoc, TSDoc, Javadoc), whose `*` on each line
        # is optional; either is documentation, its code lines are examples
        self.doc = doc
        self.in_string = in_string  # the line starts inside a multi-line string


# The characters where the lexer's state can change, per language: every other
# character of code (or of a string) is copied as is, so runs of them are
# copied at once.
_CODE_STOPS = {"python": "#\"'`", "hash": "#\"'`", "js": "/\"'`", "go": "/\"'`",
               "clike": "/\"'`"}


def _string_stop(state: str) -> str:
    """Where a string in ``state`` may end or escape: a backslash (not in a Go raw
    string) or the first character of its delimiter."""
    return "`" if state == "`raw" else state[0] + "\\"


def _next_stop(s: str, i: int, chars: str, seen: dict[str, int]) -> int:
    """The first index from ``i`` of one of ``chars`` in ``s`` (``len(s)``: none).
    ``seen``: each character's last answer on this line, -1 for none left, so a long
    line is searched about once per character, not once per stop."""
    best = len(s)
    for c in chars:
        at = seen.get(c, -2)
        if at != -1 and at < i:
            at = seen[c] = s.find(c, i)
        if 0 <= at < best:
            best = at
    return best


def lex(lines: list[NewLine], lang: str | None) -> list[LexLine]:
    out: list[LexLine] = []
    if lang not in CODE_LANGS and lang != "hash":
        return [LexLine(nl.no, nl.text, nl.added, code=nl.text) for nl in lines]
    state: str | None = None  # None | "block" | string delimiter
    doc_block = False  # the block comment is a documentation comment (`/**`)
    buf_str: list[str] = []
    str_owner: LexLine | None = None
    triple = False
    code_stop = _CODE_STOPS[lang]
    for nl in lines:
        if state is None and not any(c in nl.text for c in code_stop):
            out.append(LexLine(nl.no, nl.text, nl.added, code=nl.text))  # all of it is code
            continue
        ll = LexLine(nl.no, nl.text, nl.added, in_string=state not in (None, "block"))
        code: list[str] = []
        comment: list[str] = []
        s = nl.text
        i = 0
        n = len(s)
        seen: dict[str, int] = {}
        if state is not None and state != "block":
            ll.doc = triple
        elif state == "block":
            ll.doc = doc_block
        while i < n:
            c = s[i]
            if state == "block":
                end = s.find("*/", i)
                if end < 0:
                    comment.append(s[i:])
                    i = n
                else:
                    comment.append(s[i:end])
                    i = end + 2
                    state = None
                continue
            if state is not None:  # inside a string
                j = _next_stop(s, i, _string_stop(state), seen)
                if j > i:  # plain characters of the string
                    buf_str.append(s[i:j])
                    i = j
                    continue
                if c == "\\" and state != "`raw":
                    buf_str.append(s[i : i + 2])
                    i += 2
                    continue
                delim = "`" if state == "`raw" else state
                if s.startswith(delim, i):
                    if str_owner is not None:
                        str_owner.strings.append("".join(buf_str))
                    buf_str = []
                    code.append(delim)
                    i += len(delim)
                    state = None
                    continue
                buf_str.append(c)
                i += 1
                continue
            # code
            j = _next_stop(s, i, code_stop, seen)
            if j > i:  # plain code up to the next character that may start something
                code.append(s[i:j])
                i = j
                continue
            if lang in ("python", "hash") and c == "#":
                comment.append(s[i + 1 :])
                i = n
                continue
            if lang in ("js", "go", "clike") and s.startswith("//", i):
                comment.append(s[i + 2 :])
                i = n
                continue
            if lang in ("js", "go", "clike") and s.startswith("/*", i):
                state = "block"
                doc_block = s.startswith("/**", i) and not s.startswith("/**/", i)
                ll.doc = ll.doc or doc_block
                i += 2
                continue
            if lang == "js" and c == "/" and _regex_can_start(code):
                j = _scan_regex(s, i)
                if j > i:
                    code.append("/re/")
                    i = j
                    continue
            if c in "\"'`":
                if lang == "python" and s.startswith(c * 3, i):
                    state = c * 3
                    triple = True
                    ll.doc = True
                    code.append(state)
                    i += 3
                elif c == "`" and lang == "go":
                    state = "`raw"
                    triple = False
                    code.append(c)
                    i += 1
                elif c == "`" and lang not in ("js",):
                    code.append(c)
                    i += 1
                    continue
                else:
                    state = c
                    triple = False
                    code.append(c)
                    i += 1
                buf_str = []
                str_owner = ll
                continue
            code.append(c)
            i += 1
        # single-quoted strings end at the line's end in every language here
        if state in ("'", '"'):
            if str_owner is not None:
                str_owner.strings.append("".join(buf_str))
            buf_str = []
            state = None
        elif state is not None and state != "block":
            buf_str.append("\n")
        ll.code = "".join(code)
        ll.comment = " ".join(x.strip() for x in comment if x.strip())
        if lang in ("js", "go", "clike") and state == "block" and not ll.comment:
            ll.comment = ""
        out.append(ll)
    if state not in (None, "block") and str_owner is not None and buf_str:
        str_owner.strings.append("".join(buf_str))
    return out


def _regex_can_start(code: list[str]) -> bool:
    # Only the end of the line's code so far decides: joining all of it for every slash
    # would make a long minified line quadratic. Eight characters after the strip hold
    # the longest keyword below and the boundary before it.
    tail = ""
    for piece in reversed(code):
        tail = piece + tail
        if len(tail.rstrip()) >= 8:
            break
    prev = tail.rstrip()
    if not prev:
        return True
    if prev[-1] in "(,=:[!&|?{};+-*%<>~^":
        return True
    import re

    return bool(re.search(r"\b(return|typeof|case|in|of|delete|void|throw)$", prev))


def _scan_regex(s: str, i: int) -> int:
    j = i + 1
    in_class = False
    while j < len(s):
        c = s[j]
        if c == "\\":
            j += 2
            continue
        if c == "[":
            in_class = True
        elif c == "]":
            in_class = False
        elif c == "/" and not in_class:
            if j == i + 1:
                return i
            j += 1
            while j < len(s) and s[j].isalpha():
                j += 1
            return j
        j += 1
    return i


# --------------------------------------------------------------------------- files


class SourceFile(_Record):
    __slots__ = ("path", "status", "old_path", "new_content", "old_content", "diff", "lang",
                 "hunks", "removed", "added", "_lexed", "_tree", "touched", "_texts", "_by_no",
                 "_is_test")

    def __init__(self, path: str, status: str, old_path: str | None, new_content: str | None,
                 old_content: str | None, diff: str, lang: str | None,
                 hunks: list[list[NewLine]], removed: list[str], added: dict[int, str],
                 touched: dict[int, str] | None = None) -> None:
        self.path = path
        self.status = status
        self.old_path = old_path
        self.new_content = new_content
        self.old_content = old_content
        self.diff = diff
        self.lang = lang
        self.hunks = hunks
        self.removed = removed
        self.added = added
        # + lines that are not new content
        self.touched: dict[int, str] = {} if touched is None else touched
        self._lexed: list[LexLine] | None = None
        self._tree: Any = False
        self._texts: dict[int, str] | None = None  # line_text's lines by number
        self._by_no: dict[int, LexLine] | None = None
        self._is_test: bool | None = None

    @property
    def is_test(self) -> bool:
        if self._is_test is None:
            self._is_test = is_test_path(self.path)
        return self._is_test

    def new_lines(self) -> list[NewLine]:
        """The new file's lines when known, else the hunks' new-side lines (hunks joined)."""
        if self.new_content is not None:
            return [
                NewLine(i, t, i in self.added)
                for i, t in enumerate(self.new_content.splitlines(), start=1)
            ]
        return [nl for h in self.hunks for nl in h]

    def lexed(self) -> list[LexLine]:
        if self._lexed is None:
            if self.new_content is not None:
                self._lexed = lex(self.new_lines(), self.lang)
            else:
                self._lexed = [ll for h in self.hunks for ll in lex(h, self.lang)]
        return self._lexed

    def lexed_by_no(self) -> dict[int, LexLine]:
        """:meth:`lexed` by line number (built once; in hunks joined, the last line of a
        number)."""
        if self._by_no is None:
            self._by_no = {ll.no: ll for ll in self.lexed()}
        return self._by_no

    def added_lexed(self) -> list[LexLine]:
        return [ll for ll in self.lexed() if ll.added]

    def added_indexed(self) -> list[tuple[int, LexLine]]:
        """The added lines with their index in :meth:`lexed` (to look back from them)."""
        return [(i, ll) for i, ll in enumerate(self.lexed()) if ll.added]

    def python_tree(self) -> ast.Module | None:
        if self._tree is False:
            self._tree = None
            if self.lang == "python" and self.new_content is not None:
                import pyast as ast

                try:
                    self._tree = ast.parse(self.new_content)
                except (SyntaxError, ValueError):
                    self._tree = None
        return self._tree

    def line_text(self, no: int) -> str:
        if self._texts is None:  # built once: a check asks line by line
            self._texts = {}
            for nl in self.new_lines():
                self._texts.setdefault(nl.no, nl.text)
        return self._texts.get(no, "")


def lang_of(path: str) -> str | None:
    base = os.path.basename(path)
    if base in ("Dockerfile", "Makefile") or base.startswith("Dockerfile."):
        return "hash"
    return LANG_BY_EXT.get(os.path.splitext(base)[1].lower())


def is_test_path(path: str) -> bool:
    return bool(TEST_PATH_RE.search(path.replace("\\", "/")))


def _source_file(f: dict[str, Any], all_paths: AbstractSet[str], ws: str,
                 globs: Sequence[str]) -> tuple[SourceFile, bool]:
    """One changed file's :class:`SourceFile`, and whether it is test data."""
    status = str(f.get("status") or "M")
    path = str(f.get("path") or "")
    diff = f.get("diff") or ""
    hunks, removed = file_hunks(f)
    new_content = f.get("newContent")
    new_content = new_content if isinstance(new_content, str) else None
    old_content = f.get("oldContent") if isinstance(f.get("oldContent"), str) else None
    test_data = is_test_data(path, new_content, all_paths, ws, globs)
    added = {nl.no: nl.text for h in hunks for nl in h if nl.added}
    if not hunks and status == "A" and new_content is not None:
        added = {i: t for i, t in enumerate(new_content.splitlines(), start=1)}
    fresh = new_line_numbers(hunks, removed, added, old_content, new_content)
    touched = {no: t for no, t in added.items() if no not in fresh}
    added = {no: t for no, t in added.items() if no in fresh}
    for h in hunks:
        for nl in h:
            if nl.added and nl.no in touched:
                nl.added = False
    sf = SourceFile(
        path=path,
        status=status,
        old_path=f.get("oldPath"),
        new_content=new_content,
        old_content=old_content,
        diff=diff,
        lang=lang_of(path),
        hunks=hunks,
        removed=removed,
        added=added,
    )
    sf.touched = touched
    return sf, test_data


# The files already read in this process, shared by the checks it runs: slopjudge runs
# the pack's scripts one after another in one interpreter, where this module stays
# imported, so the second check of a file reuses the first's lexing and syntax tree.
# A SourceFile is read, never changed, by the checks. Bounded: a run over thousands of
# files keeps the first ones, which is all a hook call has.
_SHARED: dict[tuple[Any, ...], tuple[dict[str, Any], SourceFile, bool]] = {}
_SHARED_MAX = 64


def _shared_source_file(f: dict[str, Any], all_paths: frozenset[str], ws: str,
                        globs: tuple[str, ...]) -> tuple[SourceFile, bool]:
    """:func:`_source_file`, once per process for a file entry equal in every field."""
    key = (f.get("path"), f.get("newContent"), f.get("diff"), ws, all_paths, globs)
    try:
        hit = _SHARED.get(key)
    except TypeError:  # a field of a type no payload of slopjudge's has: not shared
        return _source_file(f, all_paths, ws, globs)
    if hit is not None and hit[0] == f:
        return hit[1], hit[2]
    sf, test_data = _source_file(f, all_paths, ws, globs)
    if len(_SHARED) < _SHARED_MAX:
        _SHARED[key] = (f, sf, test_data)
    return sf, test_data


def _context(payload: dict[str, Any]) -> tuple[str, frozenset[str], tuple[str, ...]]:
    """What a file's SourceFile depends on besides the file: the workspace, every path of
    the change (a test case's expected-output sibling) and the test-data globs."""
    cs = payload.get("changeset") or {}
    all_paths = frozenset(str(f.get("path") or "")
                          for f in (cs.get("files") or []) + (cs.get("others") or [])
                          if isinstance(f, dict))
    return workspace(payload), all_paths, tuple(test_data_globs())


def files(
    payload: dict[str, Any], *, include_deleted: bool = False, include_test_data: bool = False
) -> Iterator[SourceFile]:
    """The changed files, each with ``added`` holding only the lines whose content is new to
    the file (see :func:`new_line_numbers`). Files that are data for the project's own tests
    (:func:`is_test_data`) are left out unless ``include_test_data``."""
    cs = payload.get("changeset") or {}
    ws, all_paths, globs = _context(payload)
    for f in cs.get("files") or []:
        if not isinstance(f, dict) or f.get("binary"):
            continue
        status = str(f.get("status") or "M")
        if status == "D" and not include_deleted:
            continue
        sf, test_data = _shared_source_file(f, all_paths, ws, globs)
        if test_data and not include_test_data:
            continue
        yield sf


def may_match(sf: SourceFile, rx: re.Pattern[str] | Later) -> bool:
    """Whether the file's new text could hold a match of ``rx`` (in code, a comment or a
    string): False only when the text is ASCII and has none. Python reads identifiers
    through NFKC, so a text with other characters may spell a name in them. A check
    skips the parse of a file that cannot hold what it looks for."""
    text = _new_text(sf)
    return not text.isascii() or rx.search(text) is not None


def may_hold(sf: SourceFile, words: Iterable[str], fold: bool = True) -> bool:
    """Whether the file's new text could hold one of ``words`` (lower case), in any
    case (``fold``) or as written: as :func:`may_match`, for words, where a plain search
    is many times faster than a regex, and needs no `re`."""
    text = _new_text(sf)
    if not text.isascii():
        return True
    if fold:
        text = text.lower()
    return any(w in text for w in words)


def _new_text(sf: SourceFile) -> str:
    if sf.new_content is not None:
        return sf.new_content
    return "\n".join(nl.text for h in sf.hunks for nl in h)


def any_of(*patterns: re.Pattern[str] | Later, words: tuple[str, ...] = (),
           fold: bool = False) -> Later:
    """One regex that finds a match in a text of lines wherever any of ``patterns``
    (each with its own case flag) matches one of its lines (``^`` and ``$`` at every
    line): a file none of them can match is not read line by line (:func:`may_match`).
    A pattern that looks past the end of a line (``x(?!\\s)``) needs the line alone.
    ``words`` and ``fold``: as :class:`Later`'s, for every one of ``patterns``."""
    return Later("|".join(
        f"(?{'i' if p.flags & I else ''}m:{p.pattern})" for p in patterns),
        words=words, fold=fold)


def by_tree(
    sf: SourceFile,
    out: list[Finding],
    on_tree: Callable[[SourceFile, ast.Module, list[Finding]], None],
    on_lines: Callable[[SourceFile, list[Finding]], None],
) -> None:
    """A Python file read through its syntax tree when the whole new file parses, else
    line by line (a hunk alone, or a file that does not parse)."""
    tree = sf.python_tree()
    if tree is not None:
        on_tree(sf, tree, out)
    else:
        on_lines(sf, out)


def repo_text(payload: dict[str, Any], path: str) -> str | None:
    """A file of the repository as the change leaves it: from the change when it holds the
    file, else from the work tree, else from the head commit of a range (a CI clone may have
    no files checked out); None when it is nowhere."""
    cs = payload.get("changeset") or {}
    for f in cs.get("files") or []:
        if isinstance(f, dict) and f.get("path") == path and isinstance(f.get("newContent"), str):
            return str(f["newContent"])
    ws = workspace(payload)
    try:
        with open(os.path.join(ws, path), encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        pass
    if not cs.get("head"):
        return None
    from slopjudge.changes.gitio import ChangesetError, git

    try:
        return git(ws, ["show", f"{cs['head']}:{path}"]).decode("utf-8", "replace")
    except ChangesetError:
        return None


def code_files(payload: dict[str, Any]) -> Iterator[SourceFile]:
    """The changed files in a programming language (``CODE_LANGS``)."""
    return (sf for sf in files(payload) if sf.lang in CODE_LANGS)


# --------------------------------------------------------------------------- added vs touched


def indent(text: str) -> int:
    """How far a line is indented (its leading whitespace characters)."""
    return len(text) - len(text.lstrip())


def norm(text: str) -> str:
    """A line's content as a formatter leaves it alone: no whitespace, one kind of quote,
    no trailing comma or semicolon."""
    # str.split() drops the same characters as \s (str.isspace), without the regex.
    return "".join(text.split()).replace("'", '"').rstrip(",;")


def new_line_numbers(
    hunks: list[list[NewLine]],
    removed: list[str],
    added: dict[int, str],
    old_content: str | None,
    new_content: str | None,
) -> set[int]:
    """The added lines whose content is new to the file.

    A ``+`` line is only touched, not new, when the old file already had as many lines of
    the same content (moved, re-indented, requoted), or when the line is a piece of a removed
    line, or removed lines joined, that a formatter re-wrapped. Old and new contents come from
    the payload when it has them, else from the diff's context, removed and added lines.
    """
    if not added:
        return set()
    if old_content is not None:
        old_lines = old_content.splitlines()
    else:
        old_lines = [nl.text for h in hunks for nl in h if not nl.added] + removed
    if not old_lines and not removed:
        # Nothing old that a line could repeat or re-wrap (a new file): every added line
        # the new content holds is new, as the counts below would find.
        if new_content is None:
            return set(added)
        present = set(new_content.splitlines())
        if all(text in present for text in added.values()):
            return set(added)
    if new_content is not None:
        new_lines = new_content.splitlines()
    else:
        new_lines = [nl.text for h in hunks for nl in h]
    old_count, new_count = _tally(old_lines), _tally(new_lines)
    gone = "\n".join(norm(t) for t in removed)
    gone_joined = gone.replace("\n", "")
    fresh: set[int] = set()
    for no, text in added.items():
        key = norm(text)
        if not key:
            fresh.add(no)
            continue
        if new_count.get(key, 0) <= old_count.get(key, 0):
            continue
        if len(key) >= 6 and (key in gone_joined) and removed:
            continue  # re-wrapped: a piece of removed lines, or several of them joined
        fresh.add(no)
    return fresh


def _tally(lines: list[str]) -> dict[str, int]:
    """How many times each line occurs, as ``norm`` sees it. Not ``collections.Counter``:
    its import costs an Edit's hook about 1 ms, more than the counting."""
    counts: dict[str, int] = {}
    for text in lines:
        key = norm(text)
        counts[key] = counts.get(key, 0) + 1
    return counts


def edited_from(sf: SourceFile, text: str, cutoff: float = 0.75) -> str | None:
    """The removed line this added line is an edit of (a rename inside it, a changed
    argument), when one is that close."""
    key = norm(text)
    if not key:
        return None
    import difflib

    best = difflib.get_close_matches(key, [norm(r) for r in sf.removed], n=1, cutoff=cutoff)
    return best[0] if best else None


def old_names(sf: SourceFile) -> set[str]:
    """Names defined in the old version of the file (functions, classes, JS/Go tests by
    title): a construct with one of them existed before the change."""
    text = sf.old_content
    if text is None:
        text = "\n".join([nl.text for h in sf.hunks for nl in h if not nl.added] + sf.removed)
    import re

    names = set(re.findall(r"(?m)^\s*(?:async\s+)?(?:def|class)\s+(\w+)", text))
    names |= set(re.findall(r"(?m)^\s*func\s+(?:\([^)]*\)\s*)?(\w+)", text))
    names |= set(re.findall(r"\bfunction\s*\*?\s*(\w+)", text))
    names |= set(re.findall(r"\b(?:it|test|describe)(?:\.\w+)?\s*\(\s*[\"'`]([^\"'`]+)", text))
    return names


# --------------------------------------------------------------------------- test data

# Folders that hold data for a project's own tests: inputs and expected outputs of the
# formatter, linter or parser under test.
TEST_DATA_DIR = Later(
    r"(^|/)(testdata|test_data|test-data|__snapshots__|__fixtures__|golden)/"
    r"|(^|/)(tests?|testing|spec|__tests__)/(.+/)?(data|cases|fixtures?|inputs?|outputs?|"
    r"expected|golden|snapshots?|samples?|resources|corpus|examples?|files)/",
    words=("test", "spec/", "__snapshots__/", "__fixtures__/", "golden/"),
)
PAIR_SUFFIXES = (".out", ".expected", ".output", ".golden", ".exp", ".ref", ".result")
PAIR_STEMS = Later(r"([._-](in|input|out|output|expected|actual|golden|before|after))$", I)
# A file that carries its own expected output or its tool's flags is a test case, not code.
DATA_MARKERS = Later(r"(?m)^\s*(#|//)\s*(flags|output|input|expected( output)?|"
                     r"args|options)\s*(:|$)")
# The repository's own list, beside the rules (so an agent cannot widen it: the rules folder
# is protected like the rules themselves).
TEST_DATA_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_config",
                              "test-data.txt")


def test_data_globs() -> list[str]:
    """Globs a repository names as test data: ``SLOPJUDGE_TEST_DATA`` (separated by the path
    separator or newlines) and the lines of ``rules/_config/test-data.txt``, in the glob
    dialect of a rule's ``paths`` (a folder admits every file below it)."""
    env = os.environ.get("SLOPJUDGE_TEST_DATA", "")
    globs = env.replace(os.pathsep, "\n").split("\n")
    try:
        with open(TEST_DATA_FILE, encoding="utf-8") as fh:
            globs += fh.read().splitlines()
    except OSError:
        pass
    return [g.strip() for g in globs if g.strip() and not g.strip().startswith("#")]


def is_test_data(path: str, content: str | None, others: AbstractSet[str], ws: str,
                 globs: Sequence[str]) -> bool:
    """Whether a file is data for the project's own tests, by its role: under a test-data
    folder, one of a pair of input and expected-output files, a test case that carries its
    tool's flags or expected output, a Python file in a test tree that no one can import
    (its name is not an identifier), or named by the repository's setting (``globs``:
    :func:`test_data_globs`)."""
    p = path.replace("\\", "/")
    if pathglob.matcher(tuple(globs))(p):
        return True
    if TEST_DATA_DIR.search(p):
        return True
    if not (is_test_path(p) or FIXTURE_PATH_RE.search(p)):
        return False
    folder, base = os.path.split(p)
    stem, ext = os.path.splitext(base)
    if ext == ".py" and not stem.isidentifier():
        return True
    siblings = [os.path.join(folder, stem + s) for s in PAIR_SUFFIXES]
    siblings += [os.path.join(folder, base + s) for s in PAIR_SUFFIXES]
    m = PAIR_STEMS.search(stem)
    if m:
        root = stem[: m.start()]
        siblings += [os.path.join(folder, root + sep + w + ext) for sep in "._-"
                     for w in ("in", "input", "out", "output", "expected", "golden")]
    if any(s in others or os.path.isfile(os.path.join(ws, s)) for s in siblings if s != p):
        return True
    head = (content or "")[:4000]
    if not (head and DATA_MARKERS.search(head)):
        return False
    import re

    return re.search(r"(?m)^\s*(def test|func Test|(it|test|describe)\s*\()", head) is None


def node_added(sf: SourceFile, node: ast.AST) -> bool:
    start = getattr(node, "lineno", None)
    end = getattr(node, "end_lineno", None) or start
    if start is None:
        return False
    return any(n in sf.added for n in range(start, end + 1))


def dotted(node: ast.expr, *, through_calls: bool = False) -> str:
    """``a.b.c`` for the name or attribute chain ``node`` (what a call calls, a decorator);
    "" for anything else. ``through_calls``: a call stands for what it calls
    (``a().b`` is ``a.b``, ``@mark.skip(...)`` is ``mark.skip``)."""
    import pyast as ast

    names: list[str] = []  # from the last name back
    while True:
        if through_calls and isinstance(node, ast.Call):
            node = node.func
        if isinstance(node, ast.Attribute):
            names.append(node.attr)
            node = node.value
            continue
        if isinstance(node, ast.Name):
            names.append(node.id)
        return ".".join(reversed(names))


def glob_match(path: str, pattern: str) -> bool:
    """Whether ``pattern`` matches ``path``, in the glob dialect of a rule's ``paths``
    (slopjudge's own matcher: ``src`` admits ``src/a.py``, ``*.py`` any folder)."""
    return pathglob.match(pattern, path)


# --------------------------------------------------------------------------- output


class Finding(_Record):
    __slots__ = ("path", "line", "message")

    def __init__(self, path: str, line: int | None, message: str) -> None:
        self.path = path
        self.line = line
        self.message = message


def finish(findings: list[Finding], advice: str, limit: int = 8) -> None:
    """Exit 0 when nothing was found; else print the refusal JSON (findings in file
    and line order, each once) and exit 1."""
    if not findings:
        sys.exit(0)
    seen: set[tuple[str, int | None, str]] = set()
    unique: list[Finding] = []
    for f in sorted(findings, key=lambda f: (f.path, f.line or 0)):
        key = (f.path, f.line, f.message)
        if key not in seen:
            seen.add(key)
            unique.append(f)
    parts = [
        f"{f.path}:{f.line}: {f.message}" if f.line else f"{f.path}: {f.message}"
        for f in unique[:limit]
    ]
    more = f" (and {len(unique) - limit} more)" if len(unique) > limit else ""
    reason = "; ".join(parts) + more + ". " + advice
    print(dumps({
        "reason": reason,
        "findings": [{"path": f.path, "line": f.line, "message": f.message} for f in unique],
    }))
    sys.exit(1)


def check_files(
    scan: Callable[[SourceFile, list[Finding]], None],
    advice: str,
    select: Callable[[dict[str, Any]], Iterable[SourceFile]] = files,
) -> None:
    """The whole run of a check that reads changed files one at a time: every file ``select``
    takes from the payload through ``scan``, then :func:`finish` with what it found; a crash
    fails closed (:func:`main_guard`)."""
    def main() -> None:
        payload = load_payload()
        out: list[Finding] = []
        for sf in select(payload):
            scan(sf, out)
        finish(out, advice)

    main_guard(main)


def words(text: str) -> list[str]:
    """Lower-case word tokens, identifiers split on snake_case and camelCase."""
    import re

    out: list[str] = []
    for tok in re.findall(r"[A-Za-z][A-Za-z0-9]*", text):
        for part in re.findall(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])", tok):
            out.append(part.lower())
    return out


def iter_added_comments(sf: SourceFile) -> Iterable[LexLine]:
    for ll in sf.added_lexed():
        if ll.comment:
            yield ll
