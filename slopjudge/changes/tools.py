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
