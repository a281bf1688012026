"""Shell commands for the rule pack: slopjudge's own splitter (``slopjudge.changes.shell``:
simple commands with their argv, working folder, pipe, redirections and
here-document), plus the path questions the shell rules ask of them.

The splitter is slopjudge's, so a rule sees a command as ``tools:`` patterns and
``event.argv`` do. Rule scripts run on slopjudge's interpreter, which has it.
"""

from __future__ import annotations

import os
import sys

try:
    from slopjudge.changes.shell import SHELLS, SUBST_MARK, Simple, resolve, shell_text, split
except ImportError:  # run by hand on a Python without slopjudge: say so, and fail closed
    import json

    print(json.dumps({"reason": "the rule pack runs on the Python slopjudge is installed in"}))
    sys.exit(2)

__all__ = ["SHELLS", "SUBST_MARK", "Simple", "inside", "is_scratch", "resolve", "shell_text",
           "split", "temp_roots"]


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
