"""Shell commands for the rule pack: slopjudge's own splitter (``slopjudge.changes.shell``:
simple commands with their argv, working folder, pipe, redirections and
here-document), plus the path questions the shell rules ask of them.

The splitter is slopjudge's, so a rule sees a command as ``tools:`` patterns and
``event.argv`` do. Rule scripts run on slopjudge's interpreter, which has it.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from slopjudge.changes.shell import SHELLS, SUBST_MARK, Simple, split

try:
    import slopjudge.changes  # noqa: F401 - whether slopjudge is there at all
except ImportError:  # run by hand on a Python without slopjudge: say so, and fail closed
    import json

    print(json.dumps({"reason": "the rule pack runs on the Python slopjudge is installed in"}))
    sys.exit(2)

__all__ = ["SHELLS", "SUBST_MARK", "Simple", "inside", "is_scratch", "resolve", "shell_text",
           "split", "temp_roots"]
_SHELL = frozenset(("SHELLS", "SUBST_MARK", "Simple", "split"))


def __getattr__(name: str) -> Any:
    """The splitter's names, from slopjudge's shell module on first use: a file tool's
    checks need only paths, and the module costs them about 1.5 ms to import."""
    if name not in _SHELL:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from slopjudge.changes import shell

    return getattr(shell, name)


def resolve(path: str, cwd: str, home: str) -> str:
    """``slopjudge.changes.shell.resolve``, which for a path with no ``~`` or ``$`` in
    front (every path a file tool names) is this, without the splitter's import."""
    if not path.startswith(("~", "$")):
        return os.path.normpath(os.path.join(cwd, path))
    from slopjudge.changes.shell import resolve as shell_resolve

    return shell_resolve(path, cwd, home)


def shell_text(command: object) -> str | None:
    """``slopjudge.changes.shell.shell_text``; a file tool's input has no command."""
    if not isinstance(command, list):
        return command if isinstance(command, str) else None
    from slopjudge.changes.shell import shell_text as text

    return text(command)


def inside(path: str, root: str) -> bool:
    root = os.path.normpath(root)
    return path == root or path.startswith(root.rstrip("/") + "/")


def temp_roots() -> list[str]:
    roots = ["/tmp", "/var/tmp", "/private/tmp"]
    if os.environ.get("TMPDIR"):
        roots.append(os.environ["TMPDIR"])
    return sorted({os.path.normpath(r) for r in roots} | {os.path.realpath(r) for r in roots})


def is_scratch(path: str, workspace: str) -> bool:
    """A path under a system temp folder (not the folder itself) counts as scratch space.

    When the workspace itself lives in a temp folder, the workspace's own
    parent stays off limits, so `../x` is still outside.
    """
    parent = os.path.dirname(os.path.normpath(workspace))
    if inside(path, parent) and any(inside(parent, r) and parent != r for r in temp_roots()):
        return False
    return any(inside(path, r) and path != r for r in temp_roots())
