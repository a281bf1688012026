"""Match a rule's ``tools:`` patterns against an agent's tool call.

Standard library only: this runs on the hook fast path.

Pattern forms:

- ``Write``, ``Bash``, ``mcp__*``, ``mcp__github__*``, ``*``: a glob on the
  tool name (case-sensitive, ``fnmatch`` syntax).
- ``Bash(git push *)``: the tool name, then a glob on the shell command.
  It matches when the glob matches the whole command or any one simple
  command inside it (the command split on ``&&``, ``||``, ``;``, ``|``,
  ``&`` and newlines, outside quotes), with leading ``VAR=value`` words and
  subshell parentheses dropped. A trailing `` *`` also admits the bare
  command (``git push *`` matches ``git push``), and Claude Code's legacy
  ``git push:*`` means the same. Matching errs wide: a guard that fires
  too often is safer than one that can be stepped around.
- ``Write(src/**)``, ``Edit(*.py)``: for the file tools (Write, Edit,
  MultiEdit, NotebookEdit, Read), a ``**``-aware glob on the file's path
  relative to the workspace (``workspace`` argument, default the current
  directory). A glob without ``/`` matches the file name in any folder, as
  ``.gitignore`` does; a leading ``/`` anchors at the workspace root and
  ``//`` starts an absolute path (Claude Code's spelling). A file outside
  the workspace is matched by its absolute path. Paths are resolved first
  (symlinks, ``..``, case on a case-folding file system): see
  :func:`resolve_path`.
- A parenthesised pattern on any other tool (an MCP tool, WebFetch, ...)
  globs the tool input serialised as compact JSON with sorted keys.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shlex
from functools import lru_cache
from typing import Any

FILE_TOOLS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit", "Read"})
_PATH_KEYS = ("file_path", "notebook_path", "path")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def split_pattern(pattern: str) -> tuple[str, str | None]:
    """``"Bash(git push *)"`` → ``("Bash", "git push *")``; ``"Write"`` → ``("Write", None)``."""
    pattern = pattern.strip()
    if pattern.endswith(")") and "(" in pattern:
        name, _, rest = pattern.partition("(")
        return name.strip(), rest[:-1]
    return pattern, None


def tool_matches(
    pattern: str,
    tool_name: str | None,
    tool_input: dict[str, Any] | None,
    workspace: str | None = None,
) -> bool:
    """Whether one ``tools:`` pattern admits this tool call."""
    if not tool_name:
        return False
    name_glob, arg_glob = split_pattern(pattern)
    if not fnmatch.fnmatchcase(tool_name, name_glob or "*"):
        return False
    if arg_glob is None:
        return True
    data = tool_input if isinstance(tool_input, dict) else {}
    if tool_name == "Bash":
        command = shell_text(data.get("command"))
        return command is not None and command_matches(arg_glob, command)
    if tool_name in FILE_TOOLS:
        path = next((data[k] for k in _PATH_KEYS if isinstance(data.get(k), str)), None)
        return path is not None and path_matches(arg_glob, path, workspace)
    try:
        text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError):
        return False
    return fnmatch.fnmatchcase(text, arg_glob)


def any_tool_matches(
    patterns: list[str],
    tool_name: str | None,
    tool_input: dict[str, Any] | None,
    workspace: str | None = None,
) -> bool:
    """An empty list admits every tool, as the rule field's default says."""
    if not patterns:
        return True
    return any(tool_matches(p, tool_name, tool_input, workspace) for p in patterns)


# --- Bash -------------------------------------------------------------------

def shell_text(command: object) -> str | None:
    """A shell command as one line of text; Codex also sends it as an argv list
    (``["bash", "-lc", "<script>"]`` runs the script)."""
    if isinstance(command, str):
        return command
    if not isinstance(command, list) or not command or not all(
            isinstance(w, str) for w in command):
        return None
    if (len(command) >= 3 and os.path.basename(command[0]) in ("bash", "sh", "zsh", "dash")
            and command[1] in ("-c", "-lc")):
        return str(command[2])
    return shlex.join(command)


def _command_globs(glob: str) -> list[str]:
    glob = glob.strip()
    if glob.endswith(":*"):  # Claude Code's legacy prefix form
        stem = glob[:-2].rstrip()
        return [stem, stem + " *"]
    if glob.endswith(" *"):
        return [glob, glob[:-2].rstrip()]
    return [glob]


def command_matches(glob: str, command: str) -> bool:
    """Whether ``glob`` matches the command or one of its simple commands."""
    globs = _command_globs(glob)
    candidates = [" ".join(command.split())]
    for raw, argv in zip(split_commands(command), bash_segments(command), strict=False):
        candidates.append(" ".join(raw.split()))
        words = _strip_assignments(argv)
        if words:
            candidates.append(" ".join(words))
    return any(fnmatch.fnmatchcase(c, g) for c in candidates for g in globs)


def _strip_assignments(argv: list[str]) -> list[str]:
    i = 0
    while i < len(argv) and _ASSIGNMENT.match(argv[i]):
        i += 1
    rest = argv[i:]
    # `env A=1 git push` and `command git push` run the same program.
    while rest and rest[0] in ("env", "command", "exec", "nohup", "time", "sudo"):
        rest = _strip_assignments(rest[1:]) if rest[0] == "env" else rest[1:]
    return rest


def _close_paren(command: str, i: int) -> int:
    """Index just past the ``)`` closing a ``$(`` whose body starts at ``i``."""
    depth, quote, n = 1, None, len(command)
    while i < n:
        c = command[i]
        if quote == "'":
            if c == "'":
                quote = None
        elif c == "\\":
            i += 2
            continue
        elif quote == '"':
            if c == '"':
                quote = None
            elif command.startswith("$(", i):
                i = _close_paren(command, i + 2)
                continue
        elif c in ("'", '"'):
            quote = c
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return n


def _close_backtick(command: str, i: int) -> int:
    n = len(command)
    while i < n:
        if command[i] == "\\":
            i += 2
            continue
        if command[i] == "`":
            return i + 1
        i += 1
    return n


def split_commands(command: str) -> list[str]:
    """The simple commands of a shell line, as raw text, split outside quotes.

    Separators: ``&&``, ``||``, ``;``, ``|``, ``&``, newline. Text inside
    ``$( )``, backticks and quotes is never split; subshell parentheses and
    braces around a command are dropped. The commands inside ``$( )`` and
    backticks run too, so they follow as segments of their own.
    """
    parts: list[str] = []
    inner: list[str] = []
    buf: list[str] = []
    i, n = 0, len(command)
    quote: str | None = None

    def flush() -> None:
        text = "".join(buf).strip()
        buf.clear()
        text = text.strip("(){} \t").strip()
        if text:
            parts.append(text)

    while i < n:
        c = command[i]
        if quote == "'":
            buf.append(c)
            if c == "'":
                quote = None
        elif c == "\\":
            buf.append(command[i:i + 2])
            i += 2
            continue
        elif command.startswith("$(", i):
            end = _close_paren(command, i + 2)
            inner.append(command[i + 2:end - 1])
            buf.append(command[i:end])
            i = end
            continue
        elif c == "`":
            end = _close_backtick(command, i + 1)
            inner.append(command[i + 1:end - 1])
            buf.append(command[i:end])
            i = end
            continue
        elif quote == '"':
            buf.append(c)
            if c == '"':
                quote = None
        elif c in ("'", '"'):
            quote = c
            buf.append(c)
        elif c == "#" and (not buf or buf[-1].isspace()):
            # A comment runs to the end of the line.
            j = command.find("\n", i)
            i = n if j < 0 else j
            continue
        elif command.startswith(("&&", "||"), i):
            flush()
            i += 2
            continue
        elif c in ";|&\n":
            # `>&`, `2>&1` and `&>` are redirections, not separators.
            if c == "&" and (buf and buf[-1] in "<>" or command.startswith("&>", i)):
                buf.append(c)
            else:
                flush()
        else:
            buf.append(c)
        i += 1
    flush()
    for text in inner:
        parts.extend(split_commands(text))
    return parts


def bash_segments(command: str) -> list[list[str]]:
    """The argv of each simple command in ``command`` (shlex-split).

    A segment shlex cannot split (an unbalanced quote) falls back to
    whitespace splitting, so odd commands still yield words to match.
    """
    out: list[list[str]] = []
    for raw in split_commands(command):
        try:
            argv = shlex.split(raw, comments=False, posix=True)
        except ValueError:
            argv = raw.split()
        if argv:
            out.append(argv)
    return out


# --- paths ------------------------------------------------------------------

@lru_cache(maxsize=256)
def _glob_regex(glob: str) -> re.Pattern[str]:
    """Translate a ``**``-aware glob: ``*`` and ``?`` stop at ``/``; ``**`` spans folders."""
    out: list[str] = []
    i, n = 0, len(glob)
    while i < n:
        c = glob[i]
        if glob.startswith("**", i):
            i += 2
            if i < n and glob[i] == "/":
                out.append("(?:.*/)?")  # `a/**/b` also matches `a/b`
                i += 1
            else:
                out.append(".*")
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            j = glob.find("]", i + 1)
            if j < 0:
                out.append(re.escape(c))
            else:
                body = glob[i + 1:j]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = j + 1
                continue
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out) + r"\Z", re.DOTALL)


@lru_cache(maxsize=64)
def _real_root(workspace: str) -> str:
    return os.path.realpath(workspace)


@lru_cache(maxsize=64)
def folds_case(folder: str) -> bool:
    """Whether the file system holding ``folder`` treats names case-insensitively."""
    name = os.path.basename(folder.rstrip(os.sep))
    probe = folder if name.swapcase() != name else os.path.join(folder, ".git")
    other = os.path.join(os.path.dirname(probe), os.path.basename(probe).swapcase())
    if other == probe:
        return False
    try:
        return os.path.samefile(probe, other)
    except OSError:
        return False


def true_case(path: str) -> str:
    """``path`` with each existing component spelled as the folder stores it."""
    parts = path.split(os.sep)
    out = parts[0] or os.sep
    for i, part in enumerate(parts[1:], 1):
        if not part:
            continue
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
    """The file ``path`` really names: absolute (relative paths are the
    workspace's), ``~`` expanded, symlinks and ``..`` resolved as the kernel
    resolves them, and, where the file system folds case, spelled as stored.

    Rules match the resolved path, so ``alias/x`` (``alias`` -> ``rules``),
    ``src/../rules/x`` and ``RULES/x`` are all ``rules/x``.
    """
    real = os.path.realpath(os.path.join(workspace, os.path.expanduser(path)))
    if folds_case(_real_root(workspace)):
        real = true_case(real)
    return real


def resolve_tool_input(tool_name: str | None, tool_input: dict[str, Any],
                       workspace: str) -> dict[str, Any]:
    """``tool_input`` with a file tool's path fields resolved (see :func:`resolve_path`)."""
    if tool_name not in FILE_TOOLS:
        return tool_input
    out = dict(tool_input)
    for key in _PATH_KEYS:
        value = out.get(key)
        if isinstance(value, str) and value:
            out[key] = resolve_path(value, workspace)
    return out


def path_matches(glob: str, path: str, workspace: str | None = None) -> bool:
    """A ``**``-aware glob on ``path`` (resolved) relative to ``workspace``."""
    root = _real_root(os.path.abspath(workspace or os.getcwd()))
    full = resolve_path(path, root)
    rel = os.path.relpath(full, root)
    if rel == ".." or rel.startswith(".." + os.sep):
        rel = full
    rel = rel.replace(os.sep, "/")
    glob = glob.strip()
    if glob.startswith("./"):
        glob = glob[2:]
    if "/" not in glob.rstrip("/"):
        # Like .gitignore: a bare name matches in any folder.
        return bool(_glob_regex(glob).match(rel.rsplit("/", 1)[-1])) or bool(
            _glob_regex(glob).match(rel))
    if glob.startswith("//"):  # Claude Code's spelling of an absolute path
        return bool(_glob_regex(glob[1:]).match(full.replace(os.sep, "/")))
    return bool(_glob_regex(glob.lstrip("/")).match(rel))
