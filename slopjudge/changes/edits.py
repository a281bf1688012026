"""What a file tool call (Write, Edit, MultiEdit, NotebookEdit, Codex's ``apply_patch``)
would leave on disk, computed before it runs; nothing here writes. Standard library only:
the pre-tool hook uses it on every file tool call.

An Edit is matched as the pinned Claude Code (2.1) matches it: CRLF read as LF, no BOM
(both restored), an ``old_string`` not in the file looked for again with curly quotes
straight, ``\\uXXXX`` escapes decoded, as escapes of its non-ASCII characters, with the
harness's abbreviated tags (``<fnr>`` ...) spelled out. An edit that still does not apply
is judged on its target paths and new text (:func:`unapplied_changeset`).
"""

from __future__ import annotations

import os

from slopjudge.changes.tools import APPLY_PATCH, EDIT_TOOLS, PATH_FIELDS, SHELL_TOOLS
from slopjudge.fsutil import Unreadable, read_if_present, read_or

TYPE_CHECKING = False  # not typing's: this module is on the PreToolUse fast path
if TYPE_CHECKING:
    from typing import Any

_PATCH_PROGRAMS = frozenset({"apply_patch", "applypatch"})
BEGIN, END = "*** Begin Patch", "*** End Patch"  # Codex's apply_patch envelope


class EditError(Exception):
    """The tool input cannot apply to the file on disk (the tool would fail too)."""


def absolute(base: str, path: str) -> str:
    return os.path.normpath(os.path.join(os.path.abspath(base), os.path.expanduser(path)))


def target_path(tool_name: str, tool_input: dict[str, Any], workspace: str) -> str | None:
    """The absolute path a file tool writes, or None for other tools or no path."""
    if tool_name not in EDIT_TOOLS or not isinstance(tool_input, dict):
        return None
    path = tool_input.get(PATH_FIELDS[tool_name]) or tool_input.get("file_path")
    return absolute(workspace, path) if isinstance(path, str) and path else None


def read_text(path: str) -> str | None:
    """A file's text as it is on disk (None when absent); EditError when unreadable."""
    try:
        data = read_if_present(path)
    except Unreadable as exc:
        raise EditError(f"cannot read {path}: {exc}") from None
    return None if data is None else data.decode("utf-8", "surrogateescape")


def _str(tool_input: dict[str, Any], key: str, where: str = "") -> str:
    value = tool_input.get(key)
    if not isinstance(value, str):
        raise EditError(f"{where}tool input field {key!r} is missing or not a string")
    return value


# --- matching an Edit as Claude Code does ----------------------------------------

_QUOTES = {'"': ("\u201c", "\u201d"), "'": ("\u2018", "\u2019")}  # opening, closing
_CURLY = str.maketrans({curly: q for q, pair in _QUOTES.items() for curly in pair})
_ESCAPE_OR_BACKSLASHES = r"(\\\\)|\\u([0-9a-fA-F]{4})"  # a string: compiled on first use
# Abbreviated tags the model may write for the harness's own; spelled out when
# only the spelled-out form is in the file.
_DESANITIZE = (
    ("<fnr>", "<function_results>"), ("<n>", "<name>"), ("</n>", "</name>"),
    ("<o>", "<output>"), ("</o>", "</output>"), ("<e>", "<error>"), ("</e>", "</error>"),
    ("<s>", "<system>"), ("</s>", "</system>"), ("<r>", "<result>"), ("</r>", "</result>"),
    ("< META_START >", "<META_START>"), ("< META_END >", "<META_END>"), ("< EOT >", "<EOT>"),
    ("< META >", "<META>"), ("< SOS >", "<SOS>"), ("\n\nH:", "\n\nHuman:"),
    ("\n\nA:", "\n\nAssistant:"),
)
_OPENERS = frozenset(" \t\n\r([{\u2014\u2013")


def _units(text: str) -> list[int]:
    """UTF-16 code units, as JavaScript indexes a string."""
    data = text.encode("utf-16-le", "surrogatepass")
    return [int.from_bytes(data[i:i + 2], "little") for i in range(0, len(data), 2)]


def _unescape(text: str) -> str:
    import re

    out = re.sub(_ESCAPE_OR_BACKSLASHES,
                 lambda m: m.group(0) if m.group(1) else chr(int(m.group(2), 16)), text)
    return out.encode("utf-16", "surrogatepass").decode("utf-16", "surrogatepass")


def _backslashes_before(text: str, at: int) -> int:
    n = 0
    while at - 1 - n >= 0 and text[at - 1 - n] == "\\":
        n += 1
    return n


def _escaped_form(old: str, new: str, text: str) -> tuple[str, str] | None:
    """``old`` found in ``text`` with each non-ASCII character written as an unescaped
    ``\\uXXXX`` (hex in either case), its first occurrence only; and ``new_string``
    escaped alike: the same digits for a character ``old`` has, else in the case most of
    the found digits are."""
    units = _units(old)
    # The escaped form is ASCII, one character a unit and six an escape: longer than the
    # file, it is not in it (and compiling its pattern would cost 10 us a character).
    if _backslashes_before(old, len(old)) % 2 or len(units) + 5 * sum(
            u >= 0x80 for u in units) > len(text):
        return None
    import re

    starts: list[int] = [0] if old.startswith("\\") else []
    pattern: list[str] = []
    at = 0
    for unit in units:  # under 0x80: an ASCII character
        if unit >= 0x80:
            starts.append(at)
        pattern.append(re.escape(chr(unit)) if unit < 0x80 else rf"\\u((?i:{unit:04x}))")
        at += 1 if unit < 0x80 else 6
    try:
        regex = re.compile("".join(pattern))
    except (re.error, RecursionError, OverflowError):
        return None
    pos = 0
    while (m := regex.search(text, pos)) is not None and not all(
            _backslashes_before(text, m.start() + f) % 2 == 0 for f in starts):
        pos = m.start() + 1
    if m is None or text.find(m.group(0)) != m.start():
        return None
    seen = dict(zip((u for u in units if u >= 0x80), m.groups(), strict=True))
    digits = "".join(m.groups())
    upper = sum(map(str.isupper, digits)) > sum(map(str.islower, digits))
    return m.group(0), "".join(
        chr(u) if u < 0x80 else "\\u" + seen.get(u, f"{u:04X}" if upper else f"{u:04x}")
        for u in _units(new))


def find_actual(text: str, old: str, new: str) -> tuple[str, str]:
    """The text in the file that ``old`` stands for (see the module's docstring) and
    ``new`` written in the file's style where ``old`` matched only loosely (quotes curled,
    non-ASCII characters escaped or escapes decoded); ``old`` and ``new`` when not found."""
    if old in text:
        return old, new
    at = text.translate(_CURLY).find(old.translate(_CURLY))  # the length is kept
    if at != -1:
        actual = text[at:at + len(old)]
        return actual, _curl(new, actual)
    # Without a `\u` nothing decodes; most edits import no `re` (a tenth of a PreToolUse call).
    if "\\u" in old and (decoded := _unescape(old)) in text:
        return decoded, _unescape(_curl(new, decoded))
    if "\\u" in text and any(ord(ch) >= 0x80 for ch in old):
        return _escaped_form(old, new, text) or (old, new)
    return old, new


def _curl(new: str, actual: str) -> str:
    """``new``'s straight quotes curled, of each kind ``actual`` has curly."""
    curls = {q: pair for q, pair in _QUOTES.items() if pair[0] in actual or pair[1] in actual}
    if not curls:
        return new
    # An apostrophe follows a letter: it curls right (closing).
    return "".join(curls[ch][i > 0 and new[i - 1] not in _OPENERS] if ch in curls else ch
                   for i, ch in enumerate(new))


# What `\s` matches in a str pattern (the characters str.isspace admits), and the BOM.
_TRAILING = ("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004"
             "\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff")


def _strip_line_ends(text: str) -> str:
    """Whitespace and BOMs cut from the end of each line (lines end at \\r\\n, \\n or
    \\r). Without `re`, whose import costs an Edit's hook a tenth of its time."""
    return "\n".join("\r".join(part.rstrip(_TRAILING) for part in line.split("\r"))
                     for line in text.split("\n"))


def _locate(path: str, text: str, old: str, new: str) -> tuple[str, str]:
    """An edit's strings as Claude Code applies them to ``text`` (see the module's
    docstring), trailing whitespace cut from ``new_string`` lines outside Markdown."""
    if not path.lower().endswith((".md", ".mdx")):
        new = _strip_line_ends(new)
    if old not in text:
        spelled, respelled = old, new
        for short, full in _DESANITIZE:
            if short in spelled:
                spelled, respelled = spelled.replace(short, full), respelled.replace(short, full)
        if spelled in text:
            old, new = spelled, respelled
    actual, new = find_actual(text, old, new)
    if new == "" and not actual.endswith("\n") and actual + "\n" in text:
        actual += "\n"  # deleting whole lines takes their line end too
    return actual, new


def edit_file(text: str | None, edits: list[tuple[str, str, bool]], path: str) -> str:
    """The file after Edit/MultiEdit steps ``(old, new, replace_all)``, matched
    as Claude Code matches them; :class:`EditError` when they do not apply."""
    if text is None:
        if len(edits) == 1 and edits[0][0] == "":
            return edits[0][1]
        raise EditError(f"{path} does not exist")
    bom, crlf = text.startswith("\ufeff"), "\r\n" in text  # both restored at the end
    original = body = text.removeprefix("\ufeff").replace("\r\n", "\n")
    done: list[str] = []
    for n, (old, new, replace_all) in enumerate(edits, 1):
        old, new = _locate(path, original, old, new)
        where = f"edit {n}: " if len(edits) > 1 else ""
        bare, count = old.rstrip("\n"), body.count(old)
        if old == "":
            if body.strip():
                raise EditError(f"{where}{path} already exists; an empty old_string only "
                                "creates a file")
            body = new
        elif old == new:
            raise EditError(f"{where}old_string and new_string are the same")
        elif bare and any(bare in earlier for earlier in done):
            raise EditError(f"{where}old_string is a substring of an earlier edit's new_string")
        elif count == 0:
            raise EditError(f"{where}old_string not found in {path}")
        elif count > 1 and not replace_all:
            raise EditError(f"{where}old_string occurs {count} times in {path}; "
                            "replace_all is not set")
        else:
            body = body.replace(old, new) if replace_all else body.replace(old, new, 1)
        done.append(new)
    if crlf:
        body = body.replace("\r\n", "\n").replace("\n", "\r\n")
    return ("\ufeff" if bom else "") + body


def _notebook(text: str | None, tool_input: dict[str, Any], path: str) -> str:
    if text is None:
        raise EditError(f"{path} does not exist")
    import json

    try:
        nb = json.loads(text)
    except ValueError as exc:
        raise EditError(f"{path} is not a notebook: {exc}") from None
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list):
        raise EditError(f"{path} has no cells list")
    mode = tool_input.get("edit_mode") or "replace"
    cell_id = tool_input.get("cell_id")
    index: int | None = None
    if isinstance(cell_id, str) and cell_id:
        ids = [cell.get("id") if isinstance(cell, dict) else None for cell in cells]
        number = cell_id.removeprefix("cell-")  # isdecimal: what `\d` matches
        if cell_id in ids:
            index = ids.index(cell_id)
        elif number.isdecimal() and int(number) < len(cells):
            index = int(number)
        else:
            raise EditError(f"cell {cell_id!r} not found in {path}")
    source = None if mode == "delete" else _str(tool_input, "new_source")
    if mode == "insert":
        cell: dict[str, Any] = {"cell_type": tool_input.get("cell_type") or "code", "metadata": {}}
        cells.insert(0 if index is None else index + 1, cell)
    elif mode not in ("delete", "replace"):
        raise EditError(f"unknown edit_mode {mode!r}")
    elif index is None:
        raise EditError(f"{mode} needs a cell_id")
    elif mode == "delete":
        del cells[index]
    else:
        cell = cells[index]
    if mode != "delete":
        cell["source"] = source  # Claude Code writes the source as one string
        if mode == "replace" and isinstance(tool_input.get("cell_type"), str):
            cell["cell_type"] = tool_input["cell_type"]
        if cell.get("cell_type") == "code":
            cell.update(execution_count=None, outputs=[])
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


def envelope(value: object) -> str | None:
    """The ``apply_patch`` envelope in ``value`` (a heredoc, a shell line, a list's last
    item), or None without one."""
    if isinstance(value, list) and value:
        value = value[-1]
    if not isinstance(value, str) or (start := value.find(BEGIN)) < 0:
        return None
    end = value.rfind(END)  # none: the envelope runs to the end, and parse() says so
    return value[start:] if end < start else value[start:end + len(END)]


def _shell_patch(command: object) -> str | None:
    """The patch of a shell command whose first word is ``apply_patch``."""
    if isinstance(command, list):
        words = [w for w in command if isinstance(w, str)]
        if words and os.path.basename(words[0]) in _PATCH_PROGRAMS:
            return envelope(words[-1])
        from slopjudge.changes.shell import shell_text  # 4 ms with shlex: not for a file tool

        command = shell_text(words)
    if not isinstance(command, str) or not command.split():
        return None
    first = command.split(None, 1)[0].split("<<", 1)[0]  # `apply_patch<<'EOF'`
    return envelope(command) if os.path.basename(first) in _PATCH_PROGRAMS else None


def patch_text(tool_name: str | None, tool_input: dict[str, Any] | None) -> str | None:
    """The ``apply_patch`` envelope this call carries, or None: for ``apply_patch``, the
    first value (or a list's last item) holding one, whatever the key (``command``,
    ``input``, ``patch`` have all been seen); for a shell tool, a command whose first word
    is ``apply_patch``."""
    if not isinstance(tool_input, dict):
        return None
    if tool_name == APPLY_PATCH:
        return next((f for v in tool_input.values() if (f := envelope(v)) is not None), None)
    if tool_name in SHELL_TOOLS:
        return _shell_patch(tool_input.get("command", tool_input.get("cmd")))
    return None


def _patch_base(tool_input: dict[str, Any], workspace: str, cwd: str | None) -> str:
    """Where an ``apply_patch``'s relative paths start: the call's ``cwd`` (Codex's working
    directory; default the workspace), then the input's ``workdir``."""
    base = cwd if cwd and os.path.isdir(cwd) else workspace
    workdir = tool_input.get("workdir")  # an empty one joins as nothing (see absolute)
    return os.path.join(base, workdir) if isinstance(workdir, str) else base


def proposed_changes(
    tool_name: str, tool_input: dict[str, Any], workspace: str, cwd: str | None = None
) -> list[tuple[str, str | None, str | None]] | None:
    """Every file a call would write: ``(absolute path, moved-from path or None, new
    content or None for a deletion)``; None when the call edits no file (Bash, MCP, Read)."""
    patch = patch_text(tool_name, tool_input)
    if patch is not None:
        from slopjudge.changes import applypatch

        return applypatch.apply(_patch_base(tool_input, workspace, cwd), patch)
    if tool_name == APPLY_PATCH:
        raise EditError("apply_patch call without a '*** Begin Patch' envelope")
    path = target_path(tool_name, tool_input, workspace)
    if path is None:
        if tool_name in EDIT_TOOLS:
            raise EditError(f"{tool_name} call without a file path")
        return None
    if tool_name == "Write":
        return [(path, None, _str(tool_input, "content"))]
    text = read_text(path)
    if tool_name in ("Edit", "MultiEdit"):
        many = tool_name == "MultiEdit"
        edits = tool_input.get("edits") if many else [tool_input]
        if not isinstance(edits, list) or not edits:
            raise EditError("MultiEdit without edits")
        steps: list[tuple[str, str, bool]] = []
        for n, edit in enumerate(edits, 1):
            if not isinstance(edit, dict):
                raise EditError(f"edit {n} is not an object")
            where = f"edit {n}: " if many else ""
            old, new = _str(edit, "old_string", where), _str(edit, "new_string", where)
            steps.append((old, new, bool(edit.get("replace_all"))))
        return [(path, None, edit_file(text, steps, path))]
    return [(path, None, _notebook(text, tool_input, path))]


# --- edits that cannot be reproduced ---------------------------------------------

def _with_added(path: str, lines: list[str]) -> str:
    """The file on disk with ``lines`` added at its end: its diff shows them as added."""
    text = read_or(path, b"").decode("utf-8", "surrogateescape")  # as read_text decodes
    sep = "\n" if lines and text and not text.endswith("\n") else ""
    return text + sep + "".join(line + "\n" for line in lines)


def unapplied_changeset(
    tool_name: str, tool_input: dict[str, Any], workspace: str, cwd: str | None = None
) -> Any:
    """The changeset a call that cannot be reproduced is judged on: each target path, its new
    text added at the end of the file as it is (a deleted file as a deletion), and every named
    file even with no new text (a header-only entry), so rules with ``paths`` still see it."""
    from slopjudge.changes.proposed import from_proposed_edits, relative
    from slopjudge.errors import ChangesetError
    from slopjudge.model import FileChange

    patch = patch_text(tool_name, tool_input)
    files: list[list[Any]] = []  # [kind, path, moved-to, added lines]
    if patch is not None:  # read line by line, without trusting the envelope's structure
        from slopjudge.changes.applypatch import MOVE, operation  # with dataclasses: a patch's

        base = _patch_base(tool_input, workspace, cwd)
        for line in patch.split("\n"):
            line = line.rstrip("\r")
            head = line.lstrip()
            if (found := operation(line)) is not None:
                files.append([found[0], absolute(base, found[1]), None, []])
            elif head.startswith(MOVE) and files and (name := head[len(MOVE):].strip()):
                files[-1][2] = absolute(base, name)
            elif line.startswith("+") and files:
                files[-1][3].append(line[1:])
    elif (path := target_path(tool_name, tool_input, workspace)) is not None:
        edits = tool_input.get("edits") if tool_name == "MultiEdit" else [tool_input]
        key = {"Write": "content", "NotebookEdit": "new_source"}.get(tool_name, "new_string")
        files = [["update", path, None, [
            line for edit in (edits if isinstance(edits, list) else [])
            if isinstance(edit, dict) and isinstance(edit.get(key), str)
            for line in edit[key].splitlines()]]]
    items: list[tuple[str, str | None, str | None]] = [
        (path, None, None) if kind == "delete"
        else (path, None, "".join(a + "\n" for a in added)) if kind == "add"
        else (moved_to or path, moved_to and path, _with_added(path, added))
        for kind, path, moved_to, added in files]
    try:
        cs = from_proposed_edits(workspace, items)
    except ChangesetError:
        cs = from_proposed_edits(workspace, [])
    ws = os.path.abspath(workspace)
    seen = {f.path for f in cs.files}
    names = dict.fromkeys(relative(ws, named) for named, _, _ in items)  # in order, once each
    cs.files.extend(FileChange(path=name, status="M", diff=f"diff --git a/{name} b/{name}\n")
                    for name in names if name not in seen)
    return cs
