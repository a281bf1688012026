"""Agent hook points: ``slopjudge hook start|pre-tool|stop|subagent-stop``.

:func:`main_fast` is what ``slopjudge hook <point>`` calls, before any
argument parser is built: a PreToolUse call with no applicable rule must
cost little more than starting Python.

Fail closed: pre-tool and stop block whenever slopjudge cannot decide (a
payload it cannot read, a broken rule, a check that errors, an internal
error, SIGTERM/SIGINT/SIGHUP); start never blocks but says what is not in
force. The README's "Fail-closed contract" lists every case.
"""

from __future__ import annotations

POINTS = ("start", "pre-tool", "stop", "subagent-stop")


def main_fast(sub: str, harness: str | None = None) -> int:
    """Run one hook point on stdin's payload for the agent ``harness`` (None: Claude
    Code); the exit code for the agent."""
    # First: until the handler is set, a signal ends the process, which Claude
    # Code reads as an allow.
    _stop_children_on_signals(sub)
    if sub == "pre-tool":
        import gc

        gc.disable()  # before the imports, whose allocations would set collections off
    from slopjudge.hooks import common

    if common.reentered():
        return 0  # a judge slopjudge launched: its own hooks must not judge it
    if sub not in POINTS:
        common.note(f"unknown hook point {sub!r}; expected one of {', '.join(POINTS)}")
        return 2
    from slopjudge.harnesses import registry as harnesses

    if harness is not None and harness not in harnesses.HARNESSES:
        common.note(f"unknown harness {harness!r} (known: {', '.join(harnesses.HARNESSES)}); "
                    "blocking, because a guard that cannot answer must not let a change by")
        return 0 if sub == "start" else 2
    try:
        raw = common.read_stdin()
    except common.PayloadError as exc:
        return run_point(sub, b"", exc, harness)
    return run_point(sub, raw, None, harness)


def run_point(sub: str, raw: bytes, problem: Exception | None = None,
              harness: str | None = None) -> int:
    """One hook point on the raw payload bytes (``problem``: why stdin could not be read)
    for the agent ``harness`` (None: Claude Code)."""
    from slopjudge.harnesses import registry as harnesses
    from slopjudge.hooks import common

    agent = harnesses.get(harness)
    payload: dict[str, object] | None = None
    if problem is None:
        try:
            payload = agent.read_payload(sub, common.parse_payload(raw))
        except common.PayloadError as exc:
            problem = exc
    if sub == "pre-tool":
        from slopjudge.hooks import pre_tool

        return pre_tool.main(payload, problem, agent)
    if sub == "start":
        from slopjudge.hooks import start

        return start.main(payload, problem, agent)
    from slopjudge.hooks import stop

    return stop.main(sub, payload, problem, agent)


def _stop_children_on_signals(sub: str) -> None:
    """On SIGTERM, SIGINT or SIGHUP: kill every check process this hook started, then exit.

    The checks run in threads the signal cannot stop, and their processes sit
    in sessions of their own: left alone they would outlive the hook. A hook
    that can still block does (exit 2): it was stopped before it could decide.
    """
    import _signal as signal  # `signal` builds its enums on import: a cost on every hook call

    names = {signal.SIGTERM: "SIGTERM", signal.SIGINT: "SIGINT", signal.SIGHUP: "SIGHUP"}

    def handler(signum: int, frame: object) -> None:
        import os
        import sys

        procs = sys.modules.get("slopjudge.procs")  # none started unless it was imported
        if procs is not None:
            procs.kill_all()
        name = names.get(signum, f"signal {signum}")
        verdict = "" if sub == "start" else ", so this call is blocked"
        os.write(2, f"slopjudge: hook {sub} stopped by {name}{verdict}\n".encode())
        os._exit(0 if sub == "start" else 2)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        try:
            signal.signal(sig, handler)
        except (ValueError, OSError):  # not the main thread: the caller owns signals
            pass
