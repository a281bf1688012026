"""Agent hook points: ``slopjudge hook start|pre-tool|stop|subagent-stop``.

:func:`main_fast` is what ``slopjudge hook <point>`` calls, before any
argument parser is built: a PreToolUse call with no applicable rule must
cost little more than starting Python.

Fail closed: pre-tool and stop block whenever slopjudge cannot decide (a
payload it cannot read, a broken rule, a check that errors, an internal
error, SIGTERM/SIGINT); start never blocks but says what is not in force.
The README's "Fail-closed contract" lists every case.
"""

from __future__ import annotations

POINTS = ("start", "pre-tool", "stop", "subagent-stop")


class Interrupted(KeyboardInterrupt):
    """SIGTERM or SIGINT reached the hook: it stops what it runs and blocks.

    A KeyboardInterrupt, so the engine's interrupt path stops running checks.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def trap_signals() -> None:
    """From here on SIGTERM/SIGINT raise :class:`Interrupted`. Set before any other
    import: until then a signal ends the process, which Claude Code reads as an allow."""
    import signal

    def on_signal(signum: int, frame: object) -> None:
        # One is enough: a second must not cut the block short.
        for s in (signal.SIGTERM, signal.SIGINT):
            signal.signal(s, signal.SIG_IGN)
        raise Interrupted(signum)

    try:
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, on_signal)
    except ValueError:  # not the main thread (called as a library): the caller's signals
        pass


def main_fast(sub: str) -> int:
    """Run one hook point on stdin's payload; the exit code for the harness."""
    try:
        trap_signals()
        from . import common

        if common.reentered():
            return 0  # a judge slopjudge launched: its own hooks must not judge it
        if sub not in POINTS:
            common.note(f"unknown hook point {sub!r}; expected one of {', '.join(POINTS)}")
            return 2
        try:
            raw = common.read_stdin()
        except common.PayloadError as exc:
            return run_point(sub, b"", exc)
        return run_point(sub, raw)
    except Interrupted as exc:
        return interrupted(sub, exc.signum)


def run_point(sub: str, raw: bytes, problem: Exception | None = None) -> int:
    """One hook point on the raw payload bytes (``problem``: why stdin could not be read)."""
    from . import common

    payload: dict[str, object] | None = None
    if problem is None:
        try:
            payload = common.parse_payload(raw)
        except common.PayloadError as exc:
            problem = exc
    if sub == "pre-tool":
        from . import pre_tool

        return pre_tool.main(payload, problem)
    if sub == "start":
        from . import start

        return start.main(payload, problem)
    from . import stop

    return stop.main(sub, payload, problem)


def interrupted(sub: str, signum: int) -> int:
    """SIGTERM/SIGINT mid-run: stop every child, then block (start only says so)."""
    from . import common

    common.stop_children()
    name = common.signal_name(signum)
    if sub == "pre-tool":
        common.note(f"stopped by {name} before it could decide, so the tool call is blocked")
        return 2
    if sub == "start":
        common.note(f"session start check stopped by {name}; the load check did not finish")
        return 0
    common.emit({"decision": "block", "reason": (
        f"slopjudge was stopped by {name} before it could check this session's changes, "
        "so the stop is blocked. This is not a finding in your change; finish again.")})
    return 0
