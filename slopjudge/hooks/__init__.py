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


# The timeouts `slopjudge install` writes (install.HOOKS), until the settings say otherwise.
DEFAULT_TIMEOUTS = {"start": 60, "pre-tool": 660, "stop": 660, "subagent-stop": 660}
_CALL: dict[str, object] = {}  # this call: point, start time, timeout, whether a Stop retry


def main_fast(sub: str, harness: str | None = None) -> int:
    """Run one hook point on stdin's payload for the agent ``harness`` (None: Claude
    Code); the exit code for the agent."""
    # First: until the handler is set, a signal ends the process, which Claude
    # Code reads as an allow.
    _stop_children_on_signals(sub)
    _CALL.clear()
    _CALL["started"] = _started()
    set_deadline(sub, DEFAULT_TIMEOUTS.get(sub, 60))
    try:
        return _main(sub, harness)
    finally:
        disarm()
        _CALL.clear()  # a hook point called on its own (a test, a library) sets no deadline


def _main(sub: str, harness: str | None) -> int:
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


def margin(timeout_s: float) -> float:
    """How long before the agent's timeout a hook gives its answer: a tenth, 2 to 30 s."""
    return max(2.0, min(30.0, timeout_s / 10))


def set_deadline(sub: str, timeout_s: float) -> None:
    """One deadline for the whole call, ``margin`` under the agent's timeout: past it
    every check this hook started is killed and the call blocks, saying why (the agent
    would let the call through at its own timeout). Measured from this process's
    start; set again once the settings name the timeout."""
    import _signal as signal
    import time

    started = _CALL.get("started")
    if started is None:
        return  # not a hook process's call (see main_fast)
    _CALL.update(point=sub, timeout=timeout_s)
    left = timeout_s - margin(timeout_s) - (time.monotonic() - float(started))  # type: ignore[arg-type]
    try:
        signal.signal(signal.SIGALRM, _on_deadline)
        signal.setitimer(signal.ITIMER_REAL, max(0.001, left))
    except (ValueError, OSError):  # not the main thread: the caller owns signals
        pass


def _started() -> float:
    """When this process started, on the monotonic clock: Python's start-up counts
    against the agent's timeout too, and on a loaded machine it can take seconds. Now,
    where /proc says nothing."""
    import os
    import time

    now = time.monotonic()
    try:
        with open("/proc/self/stat", "rb") as fh:
            ticks = int(fh.read().rsplit(b")", 1)[1].split()[19])
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return now
    # A process that has run for long (a test run, a hook server's worker) counts from now.
    return now - age if 0 <= age < 60 else now


def disarm() -> None:
    """The answer is being written: the deadline no longer applies."""
    import _signal as signal

    try:
        signal.setitimer(signal.ITIMER_REAL, 0)
    except (ValueError, OSError):
        pass


def stop_retry(retry: bool) -> None:
    """A Stop whose block is being retried: past the deadline the turn may end."""
    _CALL["retry"] = retry


def _on_deadline(signum: int, frame: object) -> None:
    import json
    import os
    import sys

    procs = sys.modules.get("slopjudge.procs")
    if procs is not None:
        procs.kill_all()  # the answer is due now
    sub, timeout = _CALL.get("point", "?"), float(_CALL.get("timeout", 0))  # type: ignore[arg-type]
    why = (f"slopjudge: hook {sub} did not decide within {timeout - margin(timeout):g} s, "
           f"{margin(timeout):g} s before the {timeout:g} s timeout the agent gives it "
           "(a judge or check that did not answer in time; `hook_timeout` in the settings "
           "is that timeout)")
    if sub == "start":
        os.write(2, f"{why}; the session starts without its baseline\n".encode())
        os._exit(0)
    if _CALL.get("retry"):  # a Stop already blocked once for this: the turn may end
        text = f"{why}. Letting the turn end; the block stands and a person must look at it."
        os.write(1, (json.dumps({"systemMessage": text}) + "\n").encode())
        os.write(2, f"{text}\n".encode())
        os._exit(0)
    os.write(2, f"{why}, so this call is blocked. This is not a finding in the change; "
                "say so in your reply.\n".encode())
    os._exit(2)
