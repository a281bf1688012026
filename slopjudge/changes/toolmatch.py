"""Match a rule's ``tools:`` patterns against an agent's tool call (docs/hooks.md).

Matching errs wide: a guard that fires too often is safer than one that can be stepped
around. Standard library only: this runs on the hook fast path.
"""

from __future__ import annotations

import os

from slopjudge.changes.tools import PATH_TOOLS, SHELL_TOOLS

TYPE_CHECKING = False  # not typing's: this module is on the PreToolUse fast path
if TYPE_CHECKING:
    from typing import Any

_PATH_KEYS = ("file_path", "notebook_path", "path")
_GLOBBY = frozenset("*?[")


def tool_matches(pattern: str, tool_name: str | None, tool_input: dict[str, Any] | None,
                 workspace: str | None = None) -> bool:
    """Whether one ``tools:`` pattern (``Bash(git push *)``: a name glob and an argument
    glob; ``Write``: a name glob alone) admits this tool call."""
    if not tool_name:
        return False
    name_glob = pattern.strip()
    arg_glob: str | None = None
    if name_glob.endswith(")") and "(" in name_glob:
        name_glob, _, arg_glob = name_glob[:-1].partition("(")
    name_glob = name_glob.strip() or "*"
    # `Bash` names every shell tool slopjudge accepts (Codex's run the same commands).
    shell = tool_name in SHELL_TOOLS and name_glob == "Bash"
    # A plain name is compared, not compiled: most patterns are one (`Write`, `Bash`).
    if name_glob != tool_name and not shell and (
            not _GLOBBY.intersection(name_glob) or not _fnmatchcase(tool_name, name_glob)):
        return False
    if arg_glob is None:
        return True
    data = tool_input if isinstance(tool_input, dict) else {}
    if tool_name in SHELL_TOOLS:
        from slopjudge.changes.shell import shell_text

        command = shell_text(data.get("command", data.get("cmd")))
        return command is not None and command_matches(arg_glob, command)
    if tool_name in PATH_TOOLS:
        path = next((data[k] for k in _PATH_KEYS if isinstance(data.get(k), str)), None)
        return path is not None and path_matches(arg_glob, path, workspace)
    import json

    try:
        text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError):
        return False
    return _fnmatchcase(text, arg_glob)


def any_tool_matches(patterns: list[str], tool_name: str | None,
                     tool_input: dict[str, Any] | None, workspace: str | None = None) -> bool:
    """An empty list admits every tool, as the rule field's default says."""
    return not patterns or any(tool_matches(p, tool_name, tool_input, workspace)
                               for p in patterns)


def command_matches(glob: str, command: str) -> bool:
    """Whether ``glob`` matches the command or one of its simple commands, as written
    (``sudo rm x``) or as run (``rm x``); a trailing `` *`` admits the bare command too."""
    glob = glob.strip()
    if glob.endswith(":*"):  # Claude Code's legacy prefix form
        glob = glob[:-2].rstrip() + " *"
    globs = [glob, glob[:-2].rstrip()] if glob.endswith(" *") else [glob]
    return any(_fnmatchcase(c, g) for c in _candidates(command) for g in globs)


def _fnmatchcase(name: str, pattern: str) -> bool:
    # fnmatch imports `re` (14 ms of CPU against 17.5 ms for all of `python -c pass`,
    # bench venv): only a glob in a rule's `tools:` needs it, not every tool call.
    import fnmatch

    return fnmatch.fnmatchcase(name, pattern)


# Not functools' lru_cache: its import costs a Read no rule concerns a fifth of
# `python -c pass`.
_CANDIDATES: dict[str, tuple[str, ...]] = {}


def _candidates(command: str) -> tuple[str, ...]:
    """The texts a command glob is tried on: the command and each simple command, as
    written and as run; split once for all of a call's patterns (the last 64 remembered)."""
    hit = _CANDIDATES.get(command)
    if hit is not None:
        return hit
    from slopjudge.changes.shell import split as split_shell

    candidates = {" ".join(command.split())}
    simples = split_shell(command)
    for s in simples:  # grows: a here-document's commands follow
        candidates.update((" ".join(s.words), " ".join(s.argv)))
        if s.heredoc:
            # Erring wide: a here-document may be a script a shell runs.
            simples.extend(split_shell(s.heredoc, depth=1))
    if len(_CANDIDATES) >= 64:
        _CANDIDATES.clear()
    hit = _CANDIDATES[command] = tuple(sorted(candidates))
    return hit


def folds_case(folder: str) -> bool:
    """Whether the file system holding ``folder`` (a real path) treats names case-insensitively."""
    name = os.path.basename(folder)
    probe = folder if name.swapcase() != name else os.path.join(folder, ".git")
    other = os.path.join(os.path.dirname(probe), os.path.basename(probe).swapcase())
    try:
        return os.path.samefile(probe, other)
    except OSError:
        return False


def true_case(path: str) -> str:
    """``path`` (a real path) with each existing component spelled as the folder stores it."""
    parts = path.split(os.sep)
    out = parts[0] or os.sep
    for i, part in enumerate(parts[1:], 1):
        try:
            names = os.listdir(out)
        except OSError:
            return os.path.join(out, *parts[i:])
        if part not in names:
            folded = part.casefold()
            part = next((n for n in names if n.casefold() == folded), part)
        out = os.path.join(out, part)
    return out


def resolve_path(path: str, workspace: str) -> str:
    """The file ``path`` really names, as the kernel resolves it (``~``, symlinks, ``..``)
    and spelled as stored where the file system folds case: ``alias/x`` (``alias`` ->
    ``rules``), ``src/../rules/x`` and ``RULES/x`` are all ``rules/x``."""
    real = os.path.realpath(os.path.join(workspace, os.path.expanduser(path)))
    return true_case(real) if folds_case(os.path.realpath(workspace)) else real


def resolve_tool_input(tool_input: dict[str, Any], workspace: str) -> dict[str, Any]:
    """A file tool's ``tool_input`` with its path fields resolved (see :func:`resolve_path`)."""
    return {k: resolve_path(v, workspace) if k in _PATH_KEYS and isinstance(v, str) and v
            else v for k, v in tool_input.items()}


def path_matches(glob: str, path: str, workspace: str | None = None) -> bool:
    """Whether the path glob matches ``path`` (resolved) relative to ``workspace``; ``//``
    starts an absolute one."""
    # Imported here: pathglob loads functools, which a tool call no `tools:` path
    # pattern concerns never needs.
    from slopjudge import pathglob

    root = os.path.realpath(workspace or os.getcwd())
    full = resolve_path(path, root).replace(os.sep, "/")
    glob = glob.strip()
    if glob.startswith("//"):  # Claude Code's spelling of an absolute path
        return pathglob.match(glob[1:], full[1:])
    rel = os.path.relpath(full, root).replace(os.sep, "/")
    if rel == ".." or rel.startswith("../"):
        # Outside the workspace only a pattern free to start in any folder
        # (`*.py`, `**/x`) reaches the file, by its absolute path.
        anchored = "/" in glob.rstrip("/") and not glob.startswith("**")
        return not anchored and pathglob.match(glob, full[1:])
    return pathglob.match(glob, rel)

