"""One engine run: which rules apply to an event, and their checks run as a graph.

Imports stay light at module level (the PreToolUse fast path calls
:func:`applicable_rules` on every tool call); check kinds, reports and the
event log are imported when a check actually runs.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .hookspec import CheckContext, RunOptions
from .model import Changeset, Check, CheckResult, Event, FileChange, Rule

if TYPE_CHECKING:
    from .config import Settings

# Tools whose input is a file edit; a pre-tool event on them carries a change.
FILE_TOOLS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit", "apply_patch"})


def _shell_patch(event: Event) -> bool:
    """A shell call running Codex's ``apply_patch``: judged as that edit."""
    from .edits import SHELL_TOOLS, patch_text

    return (event.tool_name or "") in SHELL_TOOLS and patch_text(
        event.tool_name, event.tool_input) is not None


def event_carries_change(event: Event) -> bool:
    return (event.kind != "pre-tool" or (event.tool_name or "") in FILE_TOOLS
            or _shell_patch(event))


def applicable_rules(rules: list[Rule], event: Event, workspace: str | None = None) -> list[Rule]:
    """Rules whose ``on`` has this event and, for pre-tool, whose ``tools`` match.

    ``workspace`` anchors path patterns such as ``Write(src/**)``; without it,
    the event's cwd (the process's cwd may be anywhere, e.g. under `slopjudge test`).
    """
    chosen = []
    anchor = workspace or event.cwd
    calls: list[tuple[str, dict[str, Any] | None]] = [(event.tool_name or "", event.tool_input)]
    if event.kind == "pre-tool" and any(r.tools for r in rules) and _shell_patch(event):
        # `apply_patch <<'EOF'` through the shell is also the apply_patch tool.
        calls.append(("apply_patch", event.tool_input))
    for rule in rules:
        if event.kind not in rule.on:
            continue
        if event.kind == "pre-tool" and rule.tools:
            from .toolmatch import tool_matches

            if not any(tool_matches(p, name, tool_input, anchor)
                       for p in rule.tools for name, tool_input in calls):
                continue
        chosen.append(rule)
    return chosen


def select_rules(rules: list[Rule], ids: list[str]) -> tuple[list[Rule], list[str]]:
    """The rules named by ``ids`` plus every rule their checks need; and unknown ids."""
    by_id = {r.id: r for r in rules}
    unknown = [i for i in ids if i not in by_id]
    chosen: dict[str, Rule] = {}
    todo = [i for i in ids if i in by_id]
    while todo:
        rid = todo.pop()
        if rid in chosen:
            continue
        chosen[rid] = by_id[rid]
        for check in by_id[rid].checks:
            for need in check.needs:
                dep = need.split("/", 1)[0]
                if dep in by_id and dep not in chosen:
                    todo.append(dep)
    return [r for r in rules if r.id in chosen], unknown


def options_from_settings(settings: Settings, **overrides: Any) -> RunOptions:
    opts = RunOptions(
        jobs=settings.jobs,
        runner=settings.runner,
        events_file=settings.events_file,
        cache_dir=settings.cache_dir,
        template_dirs=list(settings.template_dirs),
    )
    if settings.rubric_path and os.path.isfile(settings.rubric_path):
        opts.rubric = _read_rubric(settings.rubric_path)
    _cost_options(opts, settings)
    if os.environ.get("SLOPJUDGE_JUDGE_MOCKS") is not None:
        from .checks.judge import judge_mocks_from_env

        try:
            opts.judge_mocks = judge_mocks_from_env()
        except ValueError as exc:
            from .errors import SlopjudgeError

            raise SlopjudgeError(str(exc)) from None
    for key, value in overrides.items():
        setattr(opts, key, value)
    return opts


def _cost_options(opts: RunOptions, settings: Settings) -> None:
    opts.max_prompt_tokens = settings.max_prompt_tokens
    opts.model_aliases = dict(settings.model_aliases)
    from .budget import Budget

    opts.budget = Budget.from_settings(settings)


def _read_rubric(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as fh:
        return "".join(line for line in fh if not line.startswith("#"))


def shard_checks(rules: list[Rule], index: int, count: int) -> set[str]:
    """Full ids of the checks in shard ``index`` (1-based) of ``count``.

    Checks linked by ``needs`` stay together, so a shard never waits on
    another; groups go round-robin in sorted order, so every check lands in
    exactly one shard and the split is the same on every machine.
    """
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for rule in rules:
        for check in rule.checks:
            find(check.full_id)
            for need in check.needs:
                parent[find(need)] = find(check.full_id)
    groups: dict[str, list[str]] = {}
    for rule in rules:
        for check in rule.checks:
            groups.setdefault(find(check.full_id), []).append(check.full_id)
    ordered = sorted(groups.values(), key=min)
    mine: set[str] = set()
    for n, members in enumerate(ordered):
        if n % count == index - 1:
            mine.update(members)
    return mine


def _not_applicable(check: Check, reason: str) -> CheckResult:
    return CheckResult(
        id=check.full_id, rule=check.rule, check=check.id, kind=check.kind,
        outcome="not_applicable", reason=reason,
    )


def run(
    rules: list[Rule],
    event: Event,
    changeset: Changeset,
    *,
    workspace: str,
    options: RunOptions,
    on_result: Callable[[CheckResult], None] | None = None,
    on_start: Callable[[str], None] | None = None,
) -> list[CheckResult]:
    """Run every check of ``rules`` for ``event`` on ``changeset``; results in rule order."""
    from . import graph
    from .payload import build_payload

    carries_change = event_carries_change(event)
    if carries_change:  # a Bash call carries none: no changeset code on its hook
        from . import changeset as cs
    contexts: dict[str, CheckContext] = {}
    ordered: list[Check] = []
    preset: dict[str, CheckResult] = {}
    wanted = shard_checks(rules, *options.shard) if options.shard else None

    for rule in rules:
        checks = [c for c in rule.checks if wanted is None or c.full_id in wanted]
        if not checks:
            continue
        files: list[FileChange]
        if carries_change:
            files, others = cs.split(changeset, rule.paths, rule.exclude)
        else:
            files, others = [], []
        rule_cs = Changeset(changeset.base, changeset.head, changeset.commits, files)
        base_payload = build_payload(
            event=event, workspace=workspace, changeset=changeset, files=files,
            others=others, change=cs.unified_diff(files) if files else "", rule=rule,
        )
        shared = SharedPayload(base_payload)
        for check in checks:
            ordered.append(check)
            if carries_change and not files:
                preset[check.full_id] = _not_applicable(
                    check, "no changed file matches this rule's paths"
                )
                continue
            payload = dict(base_payload, check={"id": check.id})
            contexts[check.full_id] = CheckContext(
                rule=rule, check=check, event=event, workspace=workspace,
                changeset=rule_cs, payload=payload, options=options, shared_payload=shared,
            )

    recorder = _Recorder(options, event)
    rules_by_id = {r.id: r for r in rules}

    def run_one(check: Check) -> CheckResult:
        if check.full_id in preset:
            return preset[check.full_id]
        ctx = contexts.pop(check.full_id)  # a finished rule's payload is freed
        if on_start is not None:
            on_start(check.full_id)
        if check.kind == "script":
            from .checks.script import run_script

            result = run_script(ctx)
        else:
            from .checks.judge import run_judge

            result = run_judge(ctx)
        if rules_by_id[check.rule].mode == "shadow" and result.outcome in ("refuse", "error"):
            result.shadow_error = result.outcome == "error"
            result.outcome = "would_refuse"
        return result

    def finished(result: CheckResult) -> None:
        recorder.record(result)
        if on_result is not None:
            on_result(result)

    return graph.execute(ordered, run_one, jobs=options.jobs, on_result=finished,
                         on_interrupt=stop_running)


class SharedPayload:
    """A rule's payload as JSON, serialised once for all its checks: each check's
    bytes are the rule's with its own ``check`` key in front."""

    def __init__(self, base: dict[str, Any]) -> None:
        self.base = {k: v for k, v in base.items() if k != "check"}
        self.encoded: dict[bool, bytes] = {}
        self.lock = threading.Lock()

    def for_check(self, check_id: str, ensure_ascii: bool = True) -> bytes:
        import json

        with self.lock:
            body = self.encoded.get(ensure_ascii)
            if body is None:
                body = self.encoded[ensure_ascii] = json.dumps(
                    self.base, ensure_ascii=ensure_ascii).encode("utf-8")
        head = json.dumps({"check": {"id": check_id}}, ensure_ascii=ensure_ascii)
        if body == b"{}":
            return head.encode("utf-8")
        return head[:-1].encode("utf-8") + b", " + body[1:]


def stop_running(futures: list[Any], grace: float = 2.0) -> None:
    """Stop the running checks after an interrupt: TERM their groups, KILL after ``grace``."""
    import signal
    import time
    from concurrent.futures import wait

    deadline = time.monotonic() + grace
    sig = signal.SIGTERM
    from . import procs

    while futures:
        procs.signal_all(sig)
        _, pending = wait(futures, timeout=0.1)
        futures = list(pending)
        if time.monotonic() > deadline:
            if sig == signal.SIGKILL:
                break  # a thread stuck outside a child process: give up waiting on it
            sig = signal.SIGKILL
            deadline = time.monotonic() + grace


class _Recorder:
    """Appends one event line per finished check, as it finishes.

    Lines go out one at a time so that a run killed half way leaves every
    finished check on record. A failing disk never turns a refusal into a
    pass: recording problems are reported on stderr and the run goes on.
    """

    def __init__(self, options: RunOptions, event: Event) -> None:
        self.path = options.events_file
        self.event = event
        self.lock = threading.Lock()
        self.warned = False

    def record(self, result: CheckResult) -> None:
        if not self.path or result.outcome == "not_applicable":
            return
        from . import record

        try:
            if result.prompt and result.prompt_sha256:
                save_prompt(self.path, result.prompt_sha256, result.prompt)
            rec = record.event_record(
                result, event_kind=self.event.kind, session_id=self.event.session_id
            )
            record.append_events(self.path, [rec])
        except OSError as exc:
            with self.lock:
                if not self.warned:
                    self.warned = True
                    import sys

                    print(f"slopjudge: could not record events to {self.path}: {exc}",
                          file=sys.stderr)


def prompts_dir_for(events_file: str) -> str:
    return os.path.join(os.path.dirname(os.path.abspath(events_file)), "prompts")


def save_prompt(events_file: str, digest: str, prompt: str) -> None:
    """Keep each rendered prompt once, by digest, so `replay` can re-judge it."""
    folder = prompts_dir_for(events_file)
    path = os.path.join(folder, f"{digest}.md")
    if os.path.exists(path):
        return
    os.makedirs(folder, exist_ok=True)
    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(prompt)
    os.replace(tmp, path)


def load_prompt(events_file: str, digest: str) -> str | None:
    try:
        with open(
            os.path.join(prompts_dir_for(events_file), f"{digest}.md"), encoding="utf-8"
        ) as fh:
            return fh.read()
    except OSError:
        return None
