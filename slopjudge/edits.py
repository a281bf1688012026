"""What a file tool call would leave on disk, computed before it runs.

Standard library only: the pre-tool hook uses it on every file tool call.

:func:`proposed_content` applies the tool input of Write, Edit, MultiEdit
and NotebookEdit to the file as it is on disk, the way Claude Code would,
and returns the file's new text. :func:`proposed_changes` also covers
Codex's ``apply_patch`` (its own tool, or run through the shell tool as
``apply_patch <<'EOF' ...``), which may touch several files. Nothing here
ever writes.

An Edit whose ``old_string`` is absent (or, without ``replace_all``, not
unique) raises :class:`EditError`. Claude Code refuses such an edit itself,
so the hook lets the call through: the tool fails on its own and nothing
changes on disk. Should the harness still apply it (Claude Code also
retries with curly quotes normalised), the Stop hook judges the result.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

FILE_TOOLS = ("Write", "Edit", "MultiEdit", "NotebookEdit")
APPLY_PATCH = "apply_patch"
# Codex's shell tools (and Claude's Bash): `apply_patch` may run through them.
SHELL_TOOLS = frozenset({"Bash", "shell", "local_shell", "exec_command"})
_PATCH_PROGRAMS = frozenset({"apply_patch", "applypatch"})
_SHELLS = frozenset({"bash", "sh", "zsh", "dash"})


class EditError(Exception):
    """The tool input cannot apply to the file on disk (the tool would fail too)."""


def target_path(tool_name: str, tool_input: dict[str, Any], workspace: str) -> str | None:
    """The absolute path a file tool writes, or None for other tools or no path."""
    if tool_name not in FILE_TOOLS or not isinstance(tool_input, dict):
        return None
    key = "notebook_path" if tool_name == "NotebookEdit" else "file_path"
    path = tool_input.get(key) or tool_input.get("file_path")
    if not isinstance(path, str) or not path:
        return None
    return os.path.normpath(os.path.join(workspace, os.path.expanduser(path)))


def read_text(path: str) -> str | None:
    """A file's text as it is on disk (None when absent); EditError when unreadable."""
    try:
        with open(path, encoding="utf-8", errors="surrogateescape", newline="") as f:
            return f.read()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise EditError(f"{path} is a directory") from None
    except OSError as exc:
        raise EditError(f"cannot read {path}: {exc.strerror or exc}") from None


def _str(tool_input: dict[str, Any], key: str, default: str | None = None) -> str:
    value = tool_input.get(key, default)
    if not isinstance(value, str):
        raise EditError(f"tool input field {key!r} is missing or not a string")
    return value


def apply_edit(text: str | None, old: str, new: str, replace_all: bool, path: str) -> str:
    """One Edit step, with Claude Code's rules (empty ``old_string`` creates a file)."""
    if text is None:
        if old == "":
            return new
        raise EditError(f"{path} does not exist")
    if old == "":
        if text == "":
            return new
        raise EditError(f"{path} already exists; an empty old_string only creates a file")
    if old == new:
        raise EditError("old_string and new_string are the same")
    count = text.count(old)
    if count == 0:
        raise EditError(f"old_string not found in {path}")
    if count > 1 and not replace_all:
        raise EditError(f"old_string occurs {count} times in {path}; replace_all is not set")
    return text.replace(old, new) if replace_all else text.replace(old, new, 1)


def _notebook(text: str | None, tool_input: dict[str, Any], path: str) -> str:
    if text is None:
        raise EditError(f"{path} does not exist")
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
        for i, existing in enumerate(cells):
            if isinstance(existing, dict) and existing.get("id") == cell_id:
                index = i
                break
        else:
            m = re.fullmatch(r"(?:cell-)?(\d+)", cell_id)
            if not m or int(m.group(1)) >= len(cells):
                raise EditError(f"cell {cell_id!r} not found in {path}")
            index = int(m.group(1))
    if mode == "delete":
        if index is None:
            raise EditError("delete needs a cell_id")
        del cells[index]
    else:
        source = _str(tool_input, "new_source")
        if mode == "insert":
            cell_type = tool_input.get("cell_type") or "code"
            cell: dict[str, Any] = {"cell_type": cell_type, "metadata": {}, "source": source}
            if cell_type == "code":
                cell.update(execution_count=None, outputs=[])
            cells.insert(0 if index is None else index + 1, cell)
        elif mode == "replace":
            if index is None:
                raise EditError("replace needs a cell_id")
            cell = cells[index]
            cell["source"] = source  # Claude Code writes the source as one string
            if isinstance(tool_input.get("cell_type"), str):
                cell["cell_type"] = tool_input["cell_type"]
            if cell.get("cell_type") == "code":
                cell["execution_count"] = None
                cell["outputs"] = []
        else:
            raise EditError(f"unknown edit_mode {mode!r}")
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


def proposed_content(
    tool_name: str, tool_input: dict[str, Any], workspace: str
) -> tuple[str, str | None] | None:
    """``(absolute path, new content)`` for a file tool call; None for other tools.

    The content is None for a deletion (no Claude Code tool deletes yet; the
    shape allows it). Raises :class:`EditError` when the input cannot apply.
    """
    path = target_path(tool_name, tool_input, workspace)
    if path is None:
        if tool_name in FILE_TOOLS:
            raise EditError(f"{tool_name} call without a file path")
        return None
    if tool_name == "Write":
        return path, _str(tool_input, "content")
    text = read_text(path)
    if tool_name == "Edit":
        return path, apply_edit(text, _str(tool_input, "old_string"),
                                _str(tool_input, "new_string"),
                                bool(tool_input.get("replace_all")), path)
    if tool_name == "MultiEdit":
        edits = tool_input.get("edits")
        if not isinstance(edits, list) or not edits:
            raise EditError("MultiEdit without edits")
        for n, edit in enumerate(edits, 1):
            if not isinstance(edit, dict):
                raise EditError(f"edit {n} is not an object")
            try:
                text = apply_edit(text, _str(edit, "old_string"), _str(edit, "new_string"),
                                  bool(edit.get("replace_all")), path)
            except EditError as exc:
                raise EditError(f"edit {n}: {exc}") from None
        return path, text
    return path, _notebook(text, tool_input, path)


def _envelope(value: object) -> str | None:
    if isinstance(value, str):
        from .applypatch import extract

        return extract(value)
    if isinstance(value, list) and value and isinstance(value[-1], str):
        return _envelope(value[-1])
    return None


def _shell_patch(command: object) -> str | None:
    """The patch of a shell command whose first word is ``apply_patch``."""
    if isinstance(command, list):
        words = [w for w in command if isinstance(w, str)]
        if not words:
            return None
        if os.path.basename(words[0]) in _PATCH_PROGRAMS:
            return _envelope(words[-1])
        if (len(words) >= 3 and os.path.basename(words[0]) in _SHELLS
                and words[1] in ("-c", "-lc")):
            return _shell_patch(words[2])
        return None
    if not isinstance(command, str):
        return None
    words = command.split(None, 1)
    if not words:
        return None
    first = words[0].split("<<", 1)[0]  # `apply_patch<<'EOF'`
    if os.path.basename(first) not in _PATCH_PROGRAMS:
        return None
    return _envelope(command)


def patch_text(tool_name: str | None, tool_input: dict[str, Any] | None) -> str | None:
    """The ``apply_patch`` envelope this call carries, or None.

    For ``apply_patch`` itself: the first string value (or a list's last
    item) holding ``*** Begin Patch``, whatever the key (``command``,
    ``input``, ``patch`` have all been seen). For a shell tool: the command
    when its first word is ``apply_patch``.
    """
    if not isinstance(tool_input, dict):
        return None
    if tool_name == APPLY_PATCH:
        for value in tool_input.values():
            found = _envelope(value)
            if found is not None:
                return found
        return None
    if tool_name in SHELL_TOOLS:
        return _shell_patch(tool_input.get("command", tool_input.get("cmd")))
    return None


def proposed_changes(
    tool_name: str, tool_input: dict[str, Any], workspace: str, cwd: str | None = None
) -> list[tuple[str, str | None, str | None]] | None:
    """Every file a call would write: ``(absolute path, moved-from path or
    None, new content or None for a deletion)``; None when the call edits no
    file (Bash, MCP, Read, ...).

    ``cwd`` anchors an ``apply_patch``'s relative paths (Codex resolves them
    against its working directory); default the workspace. Raises
    :class:`EditError` when the input cannot apply.
    """
    patch = patch_text(tool_name, tool_input)
    if patch is not None:
        from . import applypatch

        base = cwd if cwd and os.path.isdir(cwd) else workspace
        workdir = tool_input.get("workdir")
        if isinstance(workdir, str) and workdir:
            base = os.path.join(base, workdir)
        return applypatch.apply(base, patch)
    if tool_name == APPLY_PATCH:
        raise EditError("apply_patch call without a '*** Begin Patch' envelope")
    single = proposed_content(tool_name, tool_input, workspace)
    if single is None:
        return None
    return [(single[0], None, single[1])]
