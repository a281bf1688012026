"""A judge check's ``prepare`` step (SPEC §4): it may print ``{"additionalContext",
"skip", "fingerprint"}``; a failure or any other output is an ``error``, never a finding."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from slopjudge.checks.script import check_env, last_line, payload_bytes, run_check_command
from slopjudge.hookspec import CheckContext

# Each key prepare may print: its type and how a message names it.
_KEYS = {"additionalContext": (dict, "an object"), "skip": (bool, "true or false"),
         "fingerprint": (str, "a string")}


@dataclass
class PrepareResult:
    ok: bool
    additional_context: dict[str, Any] = field(default_factory=dict)
    skip: bool = False
    fingerprint: str | None = None
    reason: str = ""


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_prepare_output(text: str) -> PrepareResult:
    """Read prepare's stdout; anything but the documented object fails (an error)."""
    if not text.strip():
        return PrepareResult(ok=True)
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except ValueError as exc:
        return PrepareResult(False, reason=f"prepare printed output that is not JSON: {exc}")
    if not isinstance(data, dict):
        return PrepareResult(False, reason="prepare printed JSON that is not an object")
    unknown = sorted(set(data) - set(_KEYS))
    if unknown:
        return PrepareResult(False, reason=f"prepare printed unknown keys "
                             f"{', '.join(map(repr, unknown))} (allowed: {', '.join(_KEYS)})")
    for key, (kind, said) in _KEYS.items():  # null is as good as absent
        if data.get(key) is not None and not isinstance(data[key], kind):
            return PrepareResult(False, reason=f'prepare printed "{key}" that is not {said}')
    return PrepareResult(True, data.get("additionalContext") or {}, bool(data.get("skip")),
                         data.get("fingerprint"))


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
        return PrepareResult(False, reason=f"prepare could not start: {result.start_error}")
    if result.timed_out:
        return PrepareResult(False, reason=f"prepare timed out after {timeout:g} s")
    if result.returncode != 0:
        code = result.returncode
        status = (
            f"was killed by signal {-code}"
            if code is not None and code < 0
            else f"exited with status {code}"
        )
        detail = last_line(result.stderr) or last_line(result.stdout)
        return PrepareResult(False, reason=f"prepare {status}" + (f": {detail}" if detail else ""))
    try:
        text = result.stdout.decode("utf-8")
    except UnicodeDecodeError:
        return PrepareResult(False, reason="prepare printed output that is not UTF-8")
    return parse_prepare_output(text)
