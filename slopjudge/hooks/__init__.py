"""Agent hook points: ``slopjudge hook start|pre-tool|stop|subagent-stop``, entered at
:func:`main_fast` before any argument parser is built (a PreToolUse call with no
applicable rule must cost little more than starting Python).

Pre-tool and stop block whenever slopjudge cannot decide; start never blocks but says
what is not in force. docs/fail-closed.md lists every case.
"""

from __future__ import annotations

from slopjudge.harnesses.base import HOOKS

POINTS = tuple(point for _event, point, _matcher, _timeout in HOOKS)
# The timeouts `slopjudge install` writes, until the settings say otherwise.
DEFAULT_TIMEOUTS = {point: timeout for _event, point, _matcher, timeout in HOOKS}
_CALL: dict[str, object] = {}  # this call: point, start time, timeout, whether a Stop retry


def main_fast(sub: str, harness: str | None = None) -> int:
    """One hook point on stdin's payload for the agent ``harness`` (None: Claude Code)."""
    # First: until the handler is set, a signal ends the process, which Claude
    # Code reads as an allow.
    _stop_children_on_signals(sub)
    import sys

    if sys.stderr is None:  # started with fd 2 closed: print(file=None) would write stdout
        sys.stderr = open("/dev/null", "w")  # noqa: SIM115 - the process's own stream
    _CALL.clear()
    _CALL.update(started=_started(), point=sub)
    set_deadline(DEFAULT_TIMEOUTS.get(sub, 60))
    try:
        return _main(sub, harness)
    finally:
        disarm()
        _CALL.clear()  # a hook point called on its own (a test, a library) sets no deadline


def _main(sub: str, harness: str | None) -> int:
    if sub != "start":
        import gc

        # One call per process: collecting reference cycles while it imports costs more
        # (about a tenth of a PreToolUse hook) than the memory it would free.
        gc.disable()
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
    """One hook point on the raw payload (``problem``: why stdin could not be read)."""
    from slopjudge.harnesses import registry as harnesses
    from slopjudge.hooks import common

    agent = harnesses.get(harness)
    _CALL["agent"] = agent  # the deadline answers in its form too
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
    """On SIGTERM, SIGINT or SIGHUP: kill every check process this hook started (they sit
    in sessions of their own, and the threads waiting on them cannot be stopped), then
    exit, blocking when the hook can: it was stopped before it could decide."""
    import _signal as signal  # `signal` builds its enums on import: a cost on every hook call

    names = {signal.SIGTERM: "SIGTERM", signal.SIGINT: "SIGINT", signal.SIGHUP: "SIGHUP"}

    def handler(signum: int, frame: object) -> None:
        verdict = "" if sub == "start" else ", so this call is blocked"
        _exit_now(f"slopjudge: hook {sub} stopped by {names[signum]}"
                  f"{verdict}\n", 0 if sub == "start" else 2)

    for sig in names:
        try:
            signal.signal(sig, handler)
        except (ValueError, OSError):  # not the main thread: the caller owns signals
            pass


def _exit_now(message: str, code: int, answer: str = "") -> None:
    """Kill the checks this hook started (none unless ``procs`` was imported), then exit."""
    import os
    import sys

    procs = sys.modules.get("slopjudge.procs")
    if procs is not None:
        procs.kill_all()
    if answer:
        os.write(1, answer.encode())
    os.write(2, message.encode())
    os._exit(code)


def margin(timeout_s: float) -> float:
    """How long before the agent's timeout a hook gives its answer: a tenth, 2 to 30 s."""
    return max(2.0, min(30.0, timeout_s / 10))


def set_deadline(timeout_s: float) -> None:
    """One deadline for the call, ``margin`` under the agent's timeout (which lets the call
    through), counted from this process's start: past it the checks are killed and the call
    blocks, saying why. Set again once the settings name the timeout."""
    import _signal as signal
    import time

    started = _CALL.get("started")
    if started is None:
        return  # not a hook process's call (see main_fast)
    _CALL["timeout"] = timeout_s
    left = timeout_s - margin(timeout_s) - (time.monotonic() - float(started))  # type: ignore[arg-type]
    try:
        signal.signal(signal.SIGALRM, _on_deadline)
        signal.setitimer(signal.ITIMER_REAL, max(0.001, left))
    except (ValueError, OSError):  # not the main thread: the caller owns signals
        pass


def _started() -> float:
    """When this process started, on the monotonic clock (Python's start-up counts against
    the agent's timeout too, and under load takes seconds); now, where /proc says nothing."""
    import os
    import time

    now = time.monotonic()
    try:
        with open("/proc/self/stat", "rb") as fh:
            ticks = int(fh.read().rsplit(b")", 1)[1].split()[19])
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return now
    # A process that has run for long (a test run) counts from now.
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
    sub, timeout = _CALL.get("point", "?"), float(_CALL.get("timeout", 0))  # type: ignore[arg-type]
    why = (f"slopjudge: hook {sub} did not decide within {timeout - margin(timeout):g} s, "
           f"{margin(timeout):g} s before the {timeout:g} s timeout the agent gives it "
           "(a judge or check that did not answer in time; `hook_timeout` in the settings "
           "is that timeout)")
    if sub == "start":
        _exit_now(f"{why}; the session starts without its baseline\n", 0)
    if _CALL.get("retry"):  # a Stop already blocked once for this: the turn may end
        import json

        text = f"{why}. Letting the turn end; the block stands and a person must look at it."
        # The agent's own form when that answer ends the turn; an agent that would be
        # blocked once more to relay it (Codex) would be blocked again at every stop. (Only
        # stop.main sets retry, after run_point has named the agent.)
        answer, ends = _CALL["agent"].end_notice(text)  # type: ignore[attr-defined]
        _exit_now(f"{text}\n", 0, json.dumps(answer if ends else {"systemMessage": text}) + "\n")
    _exit_now(f"{why}, so this call is blocked. This is not a finding in the change; "
              "say so in your reply.\n", 2)
