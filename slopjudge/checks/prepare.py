"""A judge check's ``prepare`` step (SPEC §4): it may print ``{"additionalContext",
"skip", "fingerprint"}``; a failure or any other output is an ``error``, never a finding."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from slopjudge.checks.script import check_env, last_line, payload_bytes, run_check_command
from slopjudge.hookspec import CheckContext

_KEYS = ("additionalContext", "skip", "fingerprint")


@dataclass
class PrepareResult:
    ok: bool
    additional_context: dict[str, Any] = field(default_factory=dict)
    skip: bool = False
    fingerprint: str | None = None
    reason: str = ""


def _refuse(reason: str) -> PrepareResult:
    # Named for history: the check that gets this result is an error, not a refusal.
    return PrepareResult(ok=False, reason=reason)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_prepare_output(text: str) -> PrepareResult:
    """Read prepare's stdout; anything but the documented object fails (an error)."""
    if not text.strip():
        return PrepareResult(ok=True)
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except ValueError as exc:
        return _refuse(f"prepare printed output that is not JSON: {exc}")
    if not isinstance(data, dict):
        return _refuse("prepare printed JSON that is not an object")
    unknown = sorted(set(data) - set(_KEYS))
    if unknown:
        return _refuse(
            f"prepare printed unknown keys {', '.join(map(repr, unknown))} "
            f"(allowed: {', '.join(_KEYS)})"
        )
    extra = data.get("additionalContext", {})
    if extra is None:
        extra = {}
    if not isinstance(extra, dict):
        return _refuse('prepare printed "additionalContext" that is not an object')
    skip = data.get("skip", False)
    if skip is None:
        skip = False
    if not isinstance(skip, bool):
        return _refuse('prepare printed "skip" that is not true or false')
    fingerprint = data.get("fingerprint")
    if fingerprint is not None and not isinstance(fingerprint, str):
        return _refuse('prepare printed "fingerprint" that is not a string')
    return PrepareResult(ok=True, additional_context=extra, skip=skip, fingerprint=fingerprint)


def run_prepare(ctx: CheckContext, unit: dict[str, Any] | None = None) -> PrepareResult:
    """Run the check's prepare step, if it has one: on the check's payload, or on one
    unit's (a file's or a subject's, as sloprail prepares each one it judges)."""
    command = ctx.check.prepare
    if not command:
        return PrepareResult(ok=True)
    if unit is None:
        payload = payload_bytes(ctx, ensure_ascii=False)
    else:
        from slopjudge.jsonobject import dumps

        payload = dumps(unit, ensure_ascii=False).encode("utf-8")
    timeout = ctx.check.timeout
    result = run_check_command(command, payload, timeout=timeout, cwd=ctx.rule.dir,
                               env=check_env(ctx), registry=ctx.processes)
    if result.start_error is not None:
        return _refuse(f"prepare could not start: {result.start_error}")
    if result.timed_out:
        return _refuse(f"prepare timed out after {timeout:g} s")
    if result.returncode != 0:
        code = result.returncode
        status = (
            f"was killed by signal {-code}"
            if code is not None and code < 0
            else f"exited with status {code}"
        )
        detail = last_line(result.stderr) or last_line(result.stdout)
        return _refuse(f"prepare {status}" + (f": {detail}" if detail else ""))
    try:
        text = result.stdout.decode("utf-8")
    except UnicodeDecodeError:
        return _refuse("prepare printed output that is not UTF-8")
    return parse_prepare_output(text)
