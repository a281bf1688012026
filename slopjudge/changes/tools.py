"""The agent tools slopjudge knows by name: one home for the file-tool sets."""

from __future__ import annotations

APPLY_PATCH = "apply_patch"  # Codex's patch tool: one call may touch several files

# The tools that name one file in their input, and the field that names it.
PATH_FIELDS = {"Write": "file_path", "Edit": "file_path", "MultiEdit": "file_path",
               "Read": "file_path", "NotebookEdit": "notebook_path"}
# Tools with a file path (``Write(src/**)`` globs it).
PATH_TOOLS = frozenset(PATH_FIELDS)
# Tools that edit the one file they name (slopjudge computes the edit's result).
EDIT_TOOLS = ("Write", "Edit", "MultiEdit", "NotebookEdit")
# Tools whose call is a file change: a pre-tool event on them carries a changeset.
CHANGE_TOOLS = (*EDIT_TOOLS, APPLY_PATCH)
# Codex's shell tools (and Claude's Bash): `apply_patch` may run through them.
SHELL_TOOLS = frozenset({"Bash", "shell", "local_shell", "exec_command"})

# Tools slopjudge knows that change no file (the hook wrapper lets them run when
# slopjudge is missing): their path fields name what they read.
READ_ONLY_TOOLS = frozenset({
    "Read", "Glob", "Grep", "LS", "NotebookRead", "WebFetch", "WebSearch", "TodoWrite",
    "TodoRead", "Task", "Agent", "BashOutput", "KillShell", "KillBash", "ExitPlanMode",
    "AskUserQuestion", "ListMcpResourcesTool", "ReadMcpResourceTool", "update_plan",
    "view_image", "read_file", "list_dir", "grep_files"})
KNOWN_TOOLS = frozenset({*PATH_FIELDS, *SHELL_TOOLS, APPLY_PATCH, *READ_ONLY_TOOLS})
# Fields of an unknown tool's input that name a file it acts on (MCP file servers use
# ``path``; ``source``/``destination`` for a move).
NAMING_FIELDS = ("file_path", "path", "notebook_path", "source", "destination")

TYPE_CHECKING = False  # not typing's: the PreToolUse fast path imports this module
if TYPE_CHECKING:
    from typing import Any


def named_paths(tool_name: str, tool_input: dict[str, Any]) -> list[str]:
    """The paths an unknown tool's input names; [] for the tools slopjudge knows."""
    if tool_name in KNOWN_TOOLS:
        return []
    found = [v for k in NAMING_FIELDS if isinstance(v := tool_input.get(k), str) and v]
    paths = tool_input.get("paths")
    if isinstance(paths, list):
        found += [p for p in paths if isinstance(p, str) and p]
    return found


def as_file_tool(tool_name: str, tool_input: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """An unknown tool that writes or edits the one file its input names, as the file
    tool it acts like (``Write`` for ``{path, content}``, ``MultiEdit`` for MCP's
    ``{path, edits: [{oldText, newText}]}``, ``Edit`` for ``old_string``/``new_string``);
    None for any other call."""
    if tool_name in KNOWN_TOOLS:
        return None
    path = next((v for k in ("file_path", "path") if isinstance(v := tool_input.get(k), str)
                 and v), None)
    if path is None:
        return None
    if isinstance(tool_input.get("content"), str):
        return "Write", {"file_path": path, "content": tool_input["content"]}
    edits = tool_input.get("edits")
    if isinstance(edits, list) and edits and all(isinstance(e, dict) for e in edits):
        pairs = [(e.get("oldText", e.get("old_string")), e.get("newText", e.get("new_string")))
                 for e in edits]
        if all(isinstance(o, str) and isinstance(n, str) for o, n in pairs):
            return "MultiEdit", {"file_path": path, "edits": [
                {"old_string": o, "new_string": n} for o, n in pairs]}
    old, new = tool_input.get("old_string"), tool_input.get("new_string")
    if isinstance(old, str) and isinstance(new, str):
        return "Edit", {"file_path": path, "old_string": old, "new_string": new,
                        "replace_all": tool_input.get("replace_all") is True}
    return None
