"""Judge checks (SPEC §5, docs/judges.md): prepare, render, ask the runner (or a mock).

A check passes only when every call returns a valid ``pass: true`` meeting
``min_confidence``; only a verdict refuses, and whatever kept the judge from deciding
is an ``error`` (both block, SPEC §4).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from slopjudge import procs
from slopjudge.checks import script
from slopjudge.checks.graph import check_result
from slopjudge.checks.split import DEFAULT_MAX_PROMPT_TOKENS, Part, number_parts, part_note, plan
from slopjudge.hookspec import CheckContext
from slopjudge.jsonobject import dumps
from slopjudge.judging.cache import VerdictCache, cache_key
from slopjudge.judging.runner import client
from slopjudge.judging.verdict import judged, reject_constant, verdict_instruction
from slopjudge.model import CheckResult, Finding
from slopjudge.usage import total, total_tokens

if TYPE_CHECKING:
    from collections.abc import Callable

    from slopjudge.model import Outcome, RunOutcome


# Each key prepare may print: its type and how a message names it.
_KEYS = {"additionalContext": (dict, "an object"), "skip": (bool, "true or false"),
         "fingerprint": (str, "a string")}


def run_prepare(ctx: CheckContext, unit: dict[str, Any] | None = None) -> dict[str, Any] | str:
    """Run the check's prepare step (SPEC §4), if it has one, on the check's payload or on
    one unit's: what it printed (``_KEYS``), or why it failed, an ``error`` and never a
    finding: a failure or anything but the documented object."""
    command = ctx.check.prepare
    if not command:
        return {}
    payload = (script.payload_bytes(ctx, ensure_ascii=False) if unit is None
               else dumps(unit, ensure_ascii=False).encode("utf-8"))
    timeout = ctx.check.timeout
    result = script.run_check_command(command, payload, timeout=timeout, cwd=ctx.rule.dir,
                                      env=script.check_env(ctx), registry=ctx.processes)
    if result.start_error is not None:
        return f"prepare could not start: {result.start_error}"
    if result.timed_out:
        return f"prepare timed out after {timeout:g} s"
    if result.returncode != 0:
        sig = result.signal
        status = f"was killed by signal {sig}" if sig else f"exited with status {result.returncode}"
        detail = script.last_line(result.stderr) or script.last_line(result.stdout)
        return f"prepare {status}" + (f": {detail}" if detail else "")
    try:
        text = result.stdout.decode("utf-8")
        data = json.loads(text, parse_constant=reject_constant) if text.strip() else {}
    except UnicodeDecodeError:
        return "prepare printed output that is not UTF-8"
    except ValueError as exc:
        return f"prepare printed output that is not JSON: {exc}"
    if not isinstance(data, dict):
        return "prepare printed JSON that is not an object"
    unknown = sorted(set(data) - set(_KEYS))
    if unknown:
        return (f"prepare printed unknown keys {', '.join(map(repr, unknown))} "
                f"(allowed: {', '.join(_KEYS)})")
    for key, (kind, said) in _KEYS.items():  # null is as good as absent
        if data.get(key) is not None and not isinstance(data[key], kind):
            return f'prepare printed "{key}" that is not {said}'
    return data


@dataclass
class _Judgment:
    outcome: RunOutcome
    reason: str
    verdict: dict[str, Any] | None = None
    cache_hit: bool = False
    uncertain: bool = False  # a pass that fell short of min_confidence
    findings: list[Finding] = field(default_factory=list)
    usage: dict[str, Any] | None = None  # what the call cost, as the runner reported it
    called: bool = False  # a model (or its mock) was asked


def _from_verdict(ctx: CheckContext, unit: Part, verdict: dict[str, Any], hit: bool) -> _Judgment:
    # A finding without a path belongs to the unit's file, when it holds one.
    label = unit.files[0] if len(unit.files) == 1 else None
    found = [Finding(path=i.get("path") or label, line=i.get("line"), message=i.get("message", ""))
             for i in verdict.get("findings") or []]
    outcome, reason, uncertain = judged(verdict, ctx.check.min_confidence)
    return _Judgment(outcome, reason, verdict, hit, uncertain, found)


def _ask(ctx: CheckContext, unit: Part, call: Callable[[], _Judgment]) -> _Judgment:
    """``call()`` (one model call) as the budget and the machine's judge slots allow it."""
    from slopjudge.judging.slots import slot

    budget, session, timeout = ctx.options.budget, ctx.event.session_id, ctx.check.timeout
    # The budget's word: why the call must not be made (a str), else what it holds.
    held = None if budget is None else budget.acquire(session, unit.tokens, wait_s=timeout)
    if isinstance(held, str):
        return _Judgment("error", held)
    try:
        with slot(ctx.options.judge_slots, timeout):
            judgment = call()
    except (TimeoutError, OSError) as exc:
        judgment = _Judgment("error", f"the judge was not asked: {exc}")
    finally:
        if held is not None:
            budget.settle(session, held, unit.usage)
    judgment.usage, judgment.called = unit.usage, True
    return judgment


def _run_mock(ctx: CheckContext, unit: Part, mock: str) -> _Judgment:
    """The mock is read as a runner is (start, timeout, output limit, verdict)."""
    check = ctx.check
    prompt = unit.prompt.removesuffix(_instruction(ctx)).rstrip("\n")
    payload = json.dumps(unit.payload, ensure_ascii=False, default=str)
    res = procs.run(
        procs.script_argv(mock), input=f"{prompt}\n\n{payload}\n".encode(), timeout=check.timeout,
        cwd=ctx.rule.dir, env=client.runner_env(check.full_id, check.min_confidence),
        max_output=client.OUTPUT_LIMIT + 1, registry=ctx.processes,
    )
    outcome = client.read_outcome(res, timeout=check.timeout, min_confidence=check.min_confidence)
    if outcome.verdict is None or res.returncode != 0:  # a mock's exit is never a refusal
        return _Judgment("error", f"judge mock {mock}: {outcome.reason}")
    return _from_verdict(ctx, unit, outcome.verdict, False)


def _call_runner(ctx: CheckContext, unit: Part, argv: list[str]) -> _Judgment:
    check, opts = ctx.check, ctx.options
    # The settings' model alias overrides, for the runner.
    aliases = {"SLOPJUDGE_MODEL_ALIASES": json.dumps(opts.model_aliases)}
    outcome = client.call_runner(
        argv, unit.prompt, cwd=ctx.rule.dir, timeout=check.timeout, launched_by=check.full_id,
        min_confidence=check.min_confidence, retries=opts.retries, backoff_s=opts.retry_backoff_s,
        extra_env=aliases if opts.model_aliases else None, registry=ctx.processes)
    unit.usage = outcome.usage
    if outcome.verdict is None:
        # No verdict: slopjudge could not decide, which is not a finding in the change.
        return _Judgment("error", outcome.reason)
    return _from_verdict(ctx, unit, outcome.verdict, False)


def _conclude(result: CheckResult, units: list[Part], judgments: list[_Judgment]) -> None:
    """The check's outcome from its units' judgments (an error beats a refusal, which
    beats a pass; nothing asked is an error), with their reasons, findings and spend."""
    outcomes = {j.outcome for j in judgments}
    outcome: RunOutcome = ("error" if "error" in outcomes or not units else
                           "refuse" if "refuse" in outcomes else "pass")
    said = [(j.outcome, j.reason if u.label is None else f"{u.label}: {j.reason}")
            for u, j in zip(units, judgments, strict=True)]
    result.outcome, result.reason = outcome, "; ".join(r for o, r in said if o == outcome)
    if not units:
        result.reason = "nothing was judged (no unit to ask the model about)"
    refused = "; ".join(r for o, r in said if o == "refuse")
    if outcome == "error" and refused:  # files judged and refused still say so
        result.reason += f"; refused: {refused}"
    result.findings = [f for j in judgments for f in j.findings]
    result.cache_hit = all(j.cache_hit for j in judgments)
    called = [j for j in judgments if j.called]
    result.judge_calls, result.cached_calls = len(called), sum(j.cache_hit for j in judgments)
    result.usage = total(j.usage for j in called)
    if result.usage:
        result.tokens = total_tokens(result.usage)
        result.cost = result.usage.get("cost_usd")
    result.confidence = min((c for j in judgments if isinstance(
        c := (j.verdict or {}).get("confidence"), (int, float))), default=None)
    # Read by the engine for on_uncertain: ask (a pass short of min_confidence).
    result.uncertain = outcome == "refuse" and all(
        j.uncertain for j in judgments if j.outcome == "refuse"
    )


def _result(ctx: CheckContext, outcome: Outcome, reason: str) -> CheckResult:
    return check_result(ctx.check, outcome, reason, model=ctx.check.model)


def _run(ctx: CheckContext) -> CheckResult:
    check, opts = ctx.check, ctx.options
    payload = _without_pack(ctx, ctx.payload)
    if payload is None:
        return _result(ctx, "not_applicable", "only the rule pack's own files changed: judges "
                       "are not sent them (commit the pack; a rule's paths can ask for them)")
    units = _prepared_units(ctx, payload)
    if isinstance(units, CheckResult):
        return units
    # Only now: jinja2 costs a Stop more than the prepare that skipped the judge.
    from slopjudge.loading.templates import TemplateRenderError, template_sha256

    template = check.judge or ""
    result = _result(ctx, "pass", "")
    result.template_sha256 = template_sha256(template)
    try:
        units, problems = _fit_units(ctx, units, template)
    except TemplateRenderError as exc:
        result.outcome, result.reason = "error", f"judge template does not render: {exc}"
        return result
    result.units = len(units)
    result.prompt_tokens = max((u.tokens for u in units), default=0)
    if problems:
        # Never a silent truncation, and never a prompt the model cannot take.
        result.outcome, result.reason = "error", "; ".join(problems)
        return result
    result.prompt = "\n\n".join(u.prompt for u in units)
    result.prompt_sha256 = hashlib.sha256(result.prompt.encode("utf-8")).hexdigest()

    if opts.dry_run:
        if opts.prompts_dir:
            os.makedirs(opts.prompts_dir, exist_ok=True)
            stem = f"{ctx.rule.id}__{check.id}"
            for n, unit in enumerate(units, 1):
                name = f"{stem}__{n}.md" if check.each == "file" or len(units) > 1 else f"{stem}.md"
                Path(opts.prompts_dir, name).write_text(unit.prompt, encoding="utf-8")
        result.outcome, result.reason = "not_judged", "not judged (dry run)"
        return result

    result.runner, ask = _asker(ctx)
    if len(units) <= 1:  # none: _conclude says nothing was judged
        judgments = [ask(unit) for unit in units]
    else:  # judge calls wait on a model, not a CPU: bounded by the judge slots, not the CPUs
        workers = min(len(units), max(1, opts.judge_slots))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="judge-file") as pool:
            judgments = list(pool.map(ask, units))
    _conclude(result, units, judgments)
    return result


def _asker(ctx: CheckContext) -> tuple[str, Callable[[Part], _Judgment]]:
    """Who answers (a mock, or the runner's command line) and how one unit is asked."""
    check, opts = ctx.check, ctx.options
    if opts.judge_mocks is not None:
        mock = opts.judge_mocks.get(check.full_id)
        if not mock:
            why = f"no judge mock for {check.full_id} while SLOPJUDGE_JUDGE_MOCKS is set"
            return "mock", lambda u: _Judgment("error", why)
        return f"mock:{mock}", lambda u: _ask(ctx, u, lambda: _run_mock(ctx, u, mock))
    from slopjudge.judging.verifier import verifier_path

    runner = client.resolve_runner(opts.runner)
    argv = client.build_argv(
        runner, model=check.model, verifier=verifier_path(),
        allowed_tools=check.allowed_tools, disallowed_tools=check.disallowed_tools,
        readonly_dir=ctx.workspace,
    )
    identity = " ".join(runner)
    cache = (VerdictCache(opts.cache_dir, workspace=ctx.workspace)
             if opts.cache_dir and not opts.no_cache else None)

    def ask(unit: Part) -> _Judgment:
        prepared = unit.fingerprint
        key = cache_key(
            unit.prompt + ("" if prepared is None else f"\n\x00prepare-fingerprint:{prepared}"),
            model=check.model, allowed_tools=check.allowed_tools,
            disallowed_tools=check.disallowed_tools, runner_identity=identity)
        cached = cache.get(key) if cache else None
        if cached is not None:
            return _from_verdict(ctx, unit, cached, True)
        judgment = _ask(ctx, unit, lambda: _call_runner(ctx, unit, argv))
        if cache and judgment.verdict is not None:
            with contextlib.suppress(OSError, ValueError):  # an unwritten entry costs a call
                cache.put(key, judgment.verdict)
        return judgment

    return identity, ask


def _instruction(ctx: CheckContext) -> str:
    # The runner works from the rule folder: tell the judge where the repository is.
    return (f"\n\nThe repository under review is at {ctx.workspace} (read-only); "
            "file paths above are relative to it." + verdict_instruction(ctx.check.min_confidence))


def _prepared_units(ctx: CheckContext, payload: dict[str, Any]) -> list[Part] | CheckResult:
    """The units to judge: one per subject (``subject`` = {id, files, context, fingerprint},
    as sloprail gives a judge), else one per file for ``each: file``, else the whole change;
    each with what prepare added (its fingerprint too). A result when prepare decided (an
    error, or a skip). A per-file or per-subject judge is prepared per unit, on that unit's
    payload (its ``event.path``), as sloprail prepares each event."""
    base = dict(payload, additionalContext={}, rubric=ctx.options.rubric)
    files = (base.get("changeset") or {}).get("files") or []
    units = [Part(None, base)]
    if ctx.subjects is not None:
        units = []
        for subject in ctx.subjects:
            held = [f for f in files if f.get("path") in subject["files"]]
            its = dict(script.with_files(base, held), subject=dict(subject, context={}))
            units.append(Part(str(subject["id"]), its,
                              fingerprint=subject.get("fingerprint") or None))
    elif ctx.check.each == "file" and files:
        units = [Part(str(p["changeset"]["files"][0].get("path")), p)
                 for p in script.per_file(base)]
    per_unit = ctx.check.each == "file" or ctx.subjects is not None
    kept = []
    for unit in units:  # the whole change is one unit, prepared on the check's payload
        mine = (run_prepare(ctx, dict(unit.payload, additionalContext={}, rubric=""))
                if per_unit else run_prepare(ctx))
        if isinstance(mine, str):
            why = f"{unit.label}: {mine}" if per_unit else mine
            return _result(ctx, "error", f"{why} (before the model was asked)")
        if not mine.get("skip"):
            unit.payload["additionalContext"] = mine.get("additionalContext") or {}
            # A unit's own fingerprint stays unless prepare names one; the whole change
            # takes prepare's as printed ("" too: it keys the cache apart from none).
            fp = mine.get("fingerprint")
            unit.fingerprint = (fp or unit.fingerprint) if per_unit else fp
            kept.append(unit)
    if units and not kept:  # no unit at all is no decision: an error where they are judged
        return _result(ctx, "skipped", "prepare decided the judge need not be asked")
    return kept


def _without_pack(ctx: CheckContext, payload: dict[str, Any]) -> dict[str, Any] | None:
    """``payload`` without the rule pack's own files (named among ``others`` instead),
    unless the rule's ``paths`` point into the pack; None when they were all its files."""
    pack = ctx.options.pack_paths
    cs = payload.get("changeset") or {}
    files = cs.get("files") or []

    def inside(path: str) -> bool:
        return any(path == p or path.startswith(p + "/") for p in pack)

    if any(inside(p.removeprefix("./").lstrip("/")) for p in ctx.rule.paths):
        return payload  # the rule asks for them
    kept = [f for f in files if not inside(str(f.get("path")))]
    if len(kept) == len(files):
        return payload
    if not kept:
        return None
    moved = [{"path": f["path"], "status": f["status"]} for f in files
             if inside(str(f.get("path")))]
    return dict(payload, change=script.join_diffs(kept),
                changeset=dict(cs, files=kept, others=[*(cs.get("others") or []), *moved]))


def _fit_units(ctx: CheckContext, units: list[Part], template: str
               ) -> tuple[list[Part], list[str]]:
    """Render each unit; split what is over the prompt budget (checks/split.py)."""
    from slopjudge.loading.templates import render

    check, opts = ctx.check, ctx.options
    budget = check.max_prompt_tokens or opts.max_prompt_tokens or DEFAULT_MAX_PROMPT_TOKENS
    each_file = check.each == "file"
    instruction = _instruction(ctx)

    def prompt_of(payload: dict[str, Any]) -> str:
        rendered = render(template, payload, rule_dir=ctx.rule.dir,
                          template_dirs=opts.template_dirs)
        return rendered + part_note(payload["unit"], each_file) + instruction

    parts: list[Part] = []
    problems: list[str] = []
    for n, unit in enumerate(units, 1):
        found = plan(unit.payload, each_file=each_file, render=prompt_of, budget=budget,
                     workspace=ctx.workspace, place=(n, len(units)))
        for part in found.parts:
            part.label = part.label if unit.label is None or each_file else unit.label
            part.fingerprint = unit.fingerprint
        parts += found.parts
        problems += found.problems
    return parts, problems + number_parts(parts, prompt_of, budget, ctx.workspace)


def run_judge(ctx: CheckContext) -> CheckResult:
    """The check kind for judge checks; never raises."""
    started = time.monotonic()
    try:
        result = _run(ctx)
    except Exception as exc:  # a bug must block (error), not crash the run
        result = _result(
            ctx, "error", f"slopjudge failed while judging: {type(exc).__name__}: {exc}"
        )
    result.duration_ms = int((time.monotonic() - started) * 1000)
    return result
