"""Script checks (SPEC §4): exit 0 passes, another status refuses; a script that could
not start, timed out or was killed decided nothing: an ``error`` (it blocks too)."""

from __future__ import annotations

import os
import sys
import time

from slopjudge.checks.graph import check_result
from slopjudge.hookspec import CheckContext
from slopjudge.jsonobject import dumps, parse_json_object
from slopjudge.model import Changeset, Check, CheckResult, Event, Finding, Rule
from slopjudge.procs import ProcResult, Registry, run, script_argv

TYPE_CHECKING = False  # not typing's: a PreToolUse hook running checks imports this module
if TYPE_CHECKING:
    from typing import Any


def check_env(ctx: CheckContext, base: dict[str, str] | None = None) -> dict[str, str]:
    """A script's or prepare's environment: ``base`` (else ours) and the rule's facts."""
    return rule_env(ctx.rule, ctx.event, ctx.workspace, ctx.changeset, base)


def rule_env(rule: Rule, event: Event, workspace: str,
             changeset: Changeset | None = None,
             base: dict[str, str] | None = None) -> dict[str, str]:
    """Ours plus the SLOPJUDGE_* facts, and the same facts under sloprail's SR_* names
    (docs/sloprail.md), so a script brought over reads what it read there."""
    return dict(
        os.environ if base is None else base,
        SLOPJUDGE_RULE=rule.id, SLOPJUDGE_RULE_DIR=rule.dir, SLOPJUDGE_WORKSPACE=workspace,
        SLOPJUDGE_EVENT=event.kind, SLOPJUDGE_SESSION_ID=event.session_id or "",
        SR_GUARDRAIL=rule.id, SR_GUARDRAIL_DIR=rule.dir, SR_WORKSPACE=workspace,
        SR_SESSION_ID=event.session_id or "", SR_TRANSCRIPT=event.transcript_path or "",
        SR_BASE=(changeset.base or "") if changeset else "",
        SR_HEAD=(changeset.head or "") if changeset else "",
    )


def last_line(data: bytes) -> str:
    lines = [ln.strip() for ln in data.decode("utf-8", "replace").splitlines() if ln.strip()]
    return lines[-1][:500] if lines else ""


def _failure(proc: ProcResult, timeout: float) -> str:
    """A fixed sentence for a script that gave no reason of its own."""
    if proc.start_error:
        return f"script could not start: {proc.start_error}"
    if proc.timed_out:
        return f"timed out after {timeout:g} s"
    if proc.signal is not None:
        import signal

        try:
            name = signal.Signals(proc.signal).name
        except ValueError:
            name = f"signal {proc.signal}"
        return f"script was killed by {name}"
    return f"script exited with status {proc.returncode} and gave no reason"


def payload_bytes(ctx: CheckContext, ensure_ascii: bool = True) -> bytes:
    """What the check's command reads on stdin: the rule's payload, serialised once."""
    shared = ctx.shared_payload
    if (shared is not None and ctx.payload.get("check") == {"id": ctx.check.id}
            and len(ctx.payload) == len(shared.base) + 1
            and all(ctx.payload.get(k) is v for k, v in shared.base.items())):
        return bytes(shared.for_check(ctx.check.id, ensure_ascii))
    return dumps(ctx.payload, ensure_ascii=ensure_ascii).encode("utf-8")


def python_env(env: dict[str, str], rule_dir: str) -> dict[str, str]:
    """``env`` for a Python script: bytecode is read and written only under slopjudge's
    own folder outside the workspace (``PYTHONPYCACHEPREFIX``), never in a
    ``__pycache__`` beside the rules: one there is a file an agent could plant, and one
    written by the run would be a protected file changed."""
    from slopjudge.cachesign import key_path
    from slopjudge.fsutil import find_workspace

    folder = os.path.join(os.path.dirname(key_path()), "pycache")
    top = find_workspace(rule_dir)
    out = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
    out["PYTHONPYCACHEPREFIX"] = folder
    if folder == top or folder.startswith(top.rstrip(os.sep) + os.sep):
        out["PYTHONDONTWRITEBYTECODE"] = "1"  # state kept in the project: write nothing there
    return out


def run_check_command(command: str, payload: bytes, *, timeout: float, cwd: str,
                      env: dict[str, str], registry: Registry | None = None) -> ProcResult:
    """A rule's script or prepare as its own process (``procs.script_argv``)."""
    argv = script_argv(command)
    if len(argv) == 2 and argv[0] == sys.executable:
        script = os.path.join(cwd, argv[1])
        if not os.path.isfile(script) or not os.access(script, os.R_OK):
            # The interpreter would exit 2 for it: a refusal in disguise.
            why = "not found" if not os.path.exists(script) else "not a readable file"
            return ProcResult(None, b"", b"", start_error=f"{argv[1]}: {why}")
        env = python_env(env, cwd)
    return run(argv, input=payload, timeout=timeout, cwd=cwd, env=env, registry=registry)


def join_diffs(files: list[dict[str, Any]]) -> str:
    diffs = (f.get("diff") or "" for f in files)
    return "".join(d if d.endswith("\n") else d + "\n" for d in diffs if d)


def with_files(base: dict[str, Any], files: list[dict[str, Any]]) -> dict[str, Any]:
    """The payload ``base`` for some of its files: its changeset and change cut to them."""
    change = (files[0].get("diff") or "") if len(files) == 1 else join_diffs(files)
    return dict(base, changeset=dict(base["changeset"], files=files), change=change)


def per_file(base: dict[str, Any]) -> list[dict[str, Any]]:
    """``each: file``: the payload once per file, with that file's event (as sloprail
    runs a file-guard on each file event)."""
    from slopjudge.payload import file_event

    cited = base["changeset"].get("citations")
    return [dict(with_files(base, [f]), event=file_event(base.get("event") or {}, f, cited))
            for f in base["changeset"].get("files") or []]


def run_script(ctx: CheckContext) -> CheckResult:
    """The check kind for scripts; ``each: file`` runs once a file until one does not pass."""
    if ctx.check.each != "file" or not ctx.payload["changeset"].get("files"):
        return _run_one(ctx, payload_bytes(ctx))
    started = time.monotonic()
    for payload in per_file(ctx.payload):
        result = _run_one(ctx, dumps(payload).encode("utf-8"))
        if result.outcome != "pass":
            break
    result.duration_ms = int((time.monotonic() - started) * 1000)
    return result


def run_rule_script(rule: Rule, command: str, event: Event, payload: dict[str, Any],
                    workspace: str, registry: Registry | None) -> ProcResult:
    """A rule's ``when`` or ``subjects`` script, on the rule's payload."""
    return run_check_command(command, dumps(payload).encode("utf-8"), timeout=120.0,
                             cwd=rule.dir, env=rule_env(rule, event, workspace),
                             registry=registry)


def _run_one(ctx: CheckContext, data: bytes) -> CheckResult:
    check = ctx.check
    assert check.script is not None
    started = time.monotonic()
    proc = run_check_command(check.script, data, timeout=check.timeout,
                             cwd=ctx.rule.dir, env=check_env(ctx), registry=ctx.processes)
    return script_result(check, proc, int((time.monotonic() - started) * 1000))


def script_result(check: Check, proc: ProcResult, duration_ms: int) -> CheckResult:
    stdout = proc.stdout.decode("utf-8", "replace")
    stderr = proc.stderr.decode("utf-8", "replace")
    obj = parse_json_object(stdout)
    raw = obj.get("findings") if obj else None
    findings = [Finding(path=i["path"] if isinstance(i.get("path"), str) else None,
                        line=i["line"] if type(i.get("line")) is int else None,  # not a bool
                        message=str(i.get("message") or ""))
                for i in (raw if isinstance(raw, list) else []) if isinstance(i, dict)]
    passed = proc.returncode == 0 and not proc.timed_out
    # Could not start, timed out, killed by a signal: the script never decided.
    undecided = proc.start_error is not None or proc.timed_out or proc.signal is not None
    if passed:
        reason = str(obj.get("reason") or "") if obj else ""
    else:  # its own reason: the JSON's (else stdout, when not JSON), else stderr
        said = obj.get("reason") if obj is not None else stdout
        said = (said.strip() if isinstance(said, str) else "") or stderr.strip()
        reason = _failure(proc, check.timeout) if undecided or not said else said
    return check_result(check, "pass" if passed else "error" if undecided else "refuse",
                        reason, findings=findings, duration_ms=duration_ms)
