"""Calling the judge runner (``sr-agent`` or ``slopjudge-agent``) and reading its answer,
by sr-agent's contract (SPEC §5): only exit 0 with a stdout verdict that itself validates
as a pass passes; anything but a verdict is ``verdict is None``, the check's ``error``."""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from dataclasses import dataclass
from typing import Any

from slopjudge import procs, usage
from slopjudge.fsutil import which
from slopjudge.judging.verdict import judged, parse_verdict, warm_validator

# Harness-failure causes a retry can fix; the others never change on a retry.
RETRYABLE_CAUSES = frozenset({"usage limit", "other"})

# A verdict is a few KiB. Output beyond this (on stdout or stderr) is never
# cut down into a verdict: the reading stops and the check is an error.
OUTPUT_LIMIT = 16 * 1024 * 1024

_FAILURE_RE = re.compile(r"^sr-agent: harness-failure: (.+?)\s*$")
_REASON_JSON = "JUDGE-REASON-JSON:"
_REASON = "JUDGE-REASON:"


@dataclass
class RunnerOutcome:
    passed: bool
    verdict: dict[str, Any] | None  # a real verdict (cacheable), or None when there was none
    reason: str
    cause: str | None = None  # harness-failure cause, "start", "timeout" or "output"
    attempts: int = 1
    # What the calls cost (JUDGE-USAGE-JSON), summed over retries; None when not reported.
    usage: dict[str, Any] | None = None


def resolve_runner(command: str | None) -> list[str]:
    """The runner: ``command`` (--runner, else the settings', where SLOPJUDGE_RUNNER beats
    the file), else sr-agent on PATH, else the bundled slopjudge-agent."""
    if command and command.strip():
        return shlex.split(command)
    from slopjudge.judging.verifier import _installed

    if found := which("sr-agent") or _installed("slopjudge-agent"):
        return [found]
    return [sys.executable, "-m", "slopjudge.judging.runner.agent"]


def build_argv(
    runner: list[str],
    *,
    model: str,
    verifier: str,
    allowed_tools: list[str],
    disallowed_tools: list[str],
    readonly_dir: str | None,
) -> list[str]:
    """SPEC §5's command line; each tool list is ONE argument, rules joined by spaces."""
    argv = [*runner, "--model", model, "--verify", verifier]
    for flag, value in (("--allowed-tools", " ".join(allowed_tools)),
                        ("--disallowed-tools", " ".join(disallowed_tools)),
                        ("--add-dir:readonly", readonly_dir)):
        if value:
            argv += [flag, value]
    return [*argv, "--prompt-stdin"]


def runner_env(launched_by: str, min_confidence: float | None) -> dict[str, str]:
    """The runner's environment: ours plus the re-entry guards hooks look for."""
    env = dict(os.environ, SLOPJUDGE_LAUNCHED_BY=launched_by, SLOPRAIL_LAUNCHED_BY=launched_by)
    env.pop("SLOPJUDGE_MIN_CONFIDENCE", None)
    if min_confidence is not None:
        env["SLOPJUDGE_MIN_CONFIDENCE"] = f"{min_confidence:g}"
    return env


def _last_reason(text: str) -> tuple[str, bool] | None:
    """The last JUDGE-REASON line's text, and whether it was the JSON form."""
    found = None
    for line in map(str.strip, text.splitlines()):
        if line.startswith(_REASON_JSON):
            body = line.removeprefix(_REASON_JSON).strip()
            try:
                value = json.loads(body)
            except ValueError:
                value = body
            found = (value if isinstance(value, str) else json.dumps(value)), True
        elif line.startswith(_REASON):
            found = line.removeprefix(_REASON).strip(), False
    return found


def read_outcome(
    result: procs.ProcResult, *, timeout: float, min_confidence: float | None
) -> RunnerOutcome:
    """Turn one finished runner process into an outcome (one attempt)."""
    if result.start_error is not None:
        return RunnerOutcome(False, None, f"judge could not start: {result.start_error}", "start")
    if result.timed_out:
        return RunnerOutcome(False, None, f"judge timed out after {timeout:g} s", "timeout")
    if max(len(result.stdout), len(result.stderr)) > OUTPUT_LIMIT:  # run() kept a byte more
        return RunnerOutcome(False, None, f"judge output over {OUTPUT_LIMIT >> 20} MiB", "output")
    stdout, stderr = (data.decode("utf-8", "replace") for data in (result.stdout, result.stderr))

    if result.returncode == 0:
        verdict, problem = parse_verdict(stdout)
        if verdict is None:
            return RunnerOutcome(False, None, f"the judge gave no verdict ({problem})")
        outcome, reason, _ = judged(verdict, min_confidence)
        return RunnerOutcome(outcome == "pass", verdict, reason)

    # A non-zero exit never passes, whatever stdout says.
    last = _last_reason(stderr) or _last_reason(stdout)
    if last is not None and last[1]:
        # The verifier's final "pass: false": a real verdict, with the judge's words.
        verdict, _ = parse_verdict(stdout)
        if verdict is None or verdict["pass"] is not False:
            verdict = {"pass": False, "reasoning": last[0]}
        return RunnerOutcome(False, verdict, last[0] or "the judge refused without a reason")
    causes = [m[1] for line in stderr.splitlines() if (m := _FAILURE_RE.match(line.strip()))]
    if causes:
        return RunnerOutcome(False, None, f"judge unavailable: {causes[-1]}", causes[-1])
    if last is not None:
        return RunnerOutcome(False, None, f"the judge gave no valid verdict: {last[0]}")
    # Say why: the runner's own last word (e.g. its harness is not installed).
    sig = result.signal
    status = f"killed by signal {sig}" if sig else f"exited with status {result.returncode}"
    tail = next((ln.strip() for ln in reversed(stderr.splitlines()) if ln.strip()), "")
    tail = tail if len(tail) <= 300 else tail[:299] + "…"
    detail = f"runner {status}: {tail}" if tail else f"runner {status}"
    return RunnerOutcome(False, None, f"the judge gave no verdict ({detail})")


def call_runner(
    argv: list[str],
    prompt: str,
    *,
    cwd: str,
    timeout: float,
    launched_by: str,
    min_confidence: float | None,
    retries: int = 1,
    backoff_s: float = 3.0,
    extra_env: dict[str, str] | None = None,
    registry: procs.Registry | None = None,
) -> RunnerOutcome:
    """Run the judge; retry a crashed runner whose cause a retry can fix (a verdict is
    final). ``registry``: the engine run the runner's process belongs to."""
    import tenacity  # lazily: only a real judge call needs it

    warm_validator()
    env = {**runner_env(launched_by, min_confidence), **(extra_env or {})}
    data = prompt.encode("utf-8")
    spent: dict[str, Any] | None = None

    def attempt() -> RunnerOutcome:
        nonlocal spent
        result = procs.run(argv, input=data, timeout=timeout, cwd=cwd, env=env,
                           max_output=OUTPUT_LIMIT + 1, registry=registry)
        spent = usage.add(spent, usage.parse_usage_line(result.stderr.decode("utf-8", "replace")))
        return read_outcome(result, timeout=timeout, min_confidence=min_confidence)

    retrying = tenacity.Retrying(
        stop=tenacity.stop_after_attempt(max(0, retries) + 1),
        wait=tenacity.wait_fixed(max(0.0, backoff_s)),
        retry=tenacity.retry_if_result(lambda o: o.verdict is None and o.cause in RETRYABLE_CAUSES),
        retry_error_callback=lambda state: state.outcome.result() if state.outcome else None,
    )
    outcome: RunnerOutcome = retrying(attempt)
    outcome.attempts, outcome.usage = int(retrying.statistics["attempt_number"]), spent
    if outcome.attempts > 1 and outcome.verdict is None:
        outcome.reason += f" (after {outcome.attempts} attempts)"
    return outcome
