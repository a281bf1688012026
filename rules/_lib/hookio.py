"""What every script of the default rule pack does first and last: read the SPEC §3
payload from stdin, pick the event's parts, and fail closed on a crash.

Standard library and slopjudge's JSON reader only: the PreToolUse rules import just
this and ``shellparse``, so a file tool or Bash call does not pay for ``slopscan``.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

try:
    # json.loads and json.dumps through json's C code, without importing json (about 2 ms
    # of a Write's hook, where every pack script runs in one process).
    from slopjudge.jsonobject import dumps, loads
except ImportError:  # run by hand on a Python without slopjudge
    from json import dumps, loads


def load_payload() -> dict[str, Any]:
    """The payload on stdin."""
    raw = sys.stdin.read()
    if not raw.strip():
        return {}
    data = loads(raw)
    return data if isinstance(data, dict) else {}


def workspace(payload: dict[str, Any]) -> str:
    ws = payload.get("workspace") or os.environ.get("SLOPJUDGE_WORKSPACE") or os.getcwd()
    return str(ws)


def event(payload: dict[str, Any]) -> dict[str, Any]:
    ev = payload.get("event")
    return ev if isinstance(ev, dict) else {}


def tool_input(payload: dict[str, Any]) -> dict[str, Any]:
    ti = event(payload).get("tool_input")
    return ti if isinstance(ti, dict) else {}


def main_guard(fn: Any) -> None:
    """Run a check; a crash refuses with a one-line reason rather than a traceback."""
    try:
        fn()
    except SystemExit:
        raise
    except Exception as exc:  # the check must fail closed, with a readable cause
        print(dumps({"reason": f"the check crashed: {type(exc).__name__}: {exc}"}))
        sys.exit(2)
