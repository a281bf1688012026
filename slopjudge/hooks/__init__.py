"""Agent hook points: ``slopjudge hook start|pre-tool|stop|subagent-stop``.

:func:`main_fast` is what ``slopjudge hook <point>`` calls, before any
argument parser is built: a PreToolUse call with no applicable rule must
cost little more than starting Python.
"""

from __future__ import annotations

POINTS = ("start", "pre-tool", "stop", "subagent-stop")


def main_fast(sub: str) -> int:
    """Run one hook point on stdin's payload; the exit code for the harness."""
    from . import common

    if common.reentered():
        return 0  # a judge slopjudge launched: its own hooks must not judge it
    if sub not in POINTS:
        common.note(f"unknown hook point {sub!r}; expected one of {', '.join(POINTS)}")
        return 2
    payload = common.read_payload()
    if sub == "pre-tool":
        from . import pre_tool

        return pre_tool.main(payload)
    if sub == "start":
        from . import start

        return start.main(payload)
    from . import stop

    return stop.main(sub, payload)
