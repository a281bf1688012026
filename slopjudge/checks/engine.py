"""One engine run: the chosen rules' checks (``selection.py``) run as a graph, as
``options.py`` says, each result given to ``on_result`` as it finishes (the caller's
event log). Check kinds are imported when a check of theirs first runs."""

from __future__ import annotations

import _thread
import os

from slopjudge.checks import CHECK_KINDS, graph
from slopjudge.checks.graph import check_result
from slopjudge.checks.options import RunOptions
from slopjudge.checks.selection import event_carries_change, shard_checks
from slopjudge.hookspec import CheckContext
from slopjudge.jsonobject import dumps
from slopjudge.model import Changeset, Check, CheckResult, Event, Rule
from slopjudge.payload import encode, event_matches, for_rule

TYPE_CHECKING = False  # not typing's: a PreToolUse hook running checks imports this module
if TYPE_CHECKING:
    import threading
    from collections.abc import Callable
    from typing import Any

    from slopjudge.checks.batch import Batch
    from slopjudge.model import Outcome
    from slopjudge.procs import Registry


def run(rules: list[Rule], event: Event, changeset: Changeset, *, workspace: str,
        options: RunOptions, on_result: Callable[[CheckResult], None] | None = None,
        on_start: Callable[[str], None] | None = None) -> list[CheckResult]:
    """Run every check of ``rules`` for ``event`` on ``changeset``; results in rule order."""
    import gc

    # A run builds every rule's payload and holds them to its end: the cycle collector
    # would walk them over and over and free nothing.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _run(rules, event, changeset, workspace, options, on_result,
                    on_start or (lambda full_id: None))
    finally:
        if collecting:
            gc.enable()


def _run(rules: list[Rule], event: Event, changeset: Changeset, workspace: str,
         options: RunOptions, on_result: Callable[[CheckResult], None] | None,
         on_start: Callable[[str], None]) -> list[CheckResult]:
    carries_change = event_carries_change(event)
    contexts: dict[str, CheckContext] = {}
    ordered: list[Check] = []
    preset: dict[str, CheckResult] = {}
    wanted = shard_checks(rules, *options.shard) if options.shard else None
    processes: Registry | None = None  # this run's children only; made when one may run
    split_memo: dict[Any, Any] = {}  # rules with the same paths/exclude split once
    encoded_files: dict[Any, Any] = {}  # and each file entry is serialised once
    # threading.Lock itself: importing threading costs a Write's hook, whose checks all
    # run in its one thread, about 1 ms.
    encoding = _thread.allocate_lock()

    for rule in rules:
        checks = [c for c in rule.checks if wanted is None or c.full_id in wanted]
        ordered += checks
        if not checks:
            continue
        undecided: list[str] = []
        files, base_payload = for_rule(event=event, workspace=workspace, changeset=changeset,
                                       rule=rule, carries_change=carries_change,
                                       memo=split_memo, problems=undecided)
        if carries_change and not files:
            preset.update(_every(checks, "not_applicable",
                                 "no changed file matches this rule's paths"))
            continue
        if processes is None and (rule.require or rule.subjects):
            processes = _registry()
        decided, subjects = _rule_shape(rule, checks, event, base_payload, files,
                                        undecided, workspace, processes)
        preset.update(decided)
        if processes is None and len(decided) < len(checks):
            processes = _registry()
        rule_cs = Changeset(changeset.base, changeset.head, changeset.commits, files)
        shared = SharedPayload(base_payload, encoded_files, encoding)
        for check in checks:
            if check.full_id not in decided:
                contexts[check.full_id] = CheckContext(
                    rule=rule, check=check, event=event, workspace=workspace,
                    changeset=rule_cs, payload=dict(base_payload, check={"id": check.id}),
                    options=options, shared_payload=shared, processes=processes,
                    subjects=subjects,
                )

    rules_by_id = {r.id: r for r in rules}
    here = _in_process(contexts, on_start) if options.in_process else {}
    # Script checks use a CPU each, at most ``jobs`` at once; judge checks mostly wait on
    # a model, at most ``judge_slots`` calls at once (judging/slots.py): both kinds run
    # side by side on the pool, so a judge waiting never holds a script check back.
    cpus = options.jobs or os.cpu_count() or 1
    judges = sum(ctx.check.kind == "judge" for ctx in contexts.values())
    scripts: Any = None  # none when every check ran in process (a Write's hook)
    if contexts:
        import threading

        scripts = threading.BoundedSemaphore(cpus)
    # Python scripts run in batches (checks/batch.py): one for a tool call (its scripts
    # each take milliseconds: a second Python start would cost more than it saves), else
    # one per CPU. With fewer than two scripts, no batch module to import.
    batches: dict[str, Batch] = {}
    if sum(ctx.check.kind == "script" for ctx in contexts.values()) > 1:
        from slopjudge.checks.batch import plan

        batches = plan(contexts.values(), 1 if event.kind == "pre-tool" else cpus)

    def run_one(check: Check) -> CheckResult:
        result = (preset.get(check.full_id) or here.pop(check.full_id, None)
                  or run_check(check))
        # A shadow rule never blocks, also when decided before its check ran (an unmet
        # `require`, a `match` that cannot be decided).
        if rules_by_id[check.rule].mode == "shadow" and result.outcome in ("refuse", "error"):
            result.shadow_error = result.outcome == "error"
            result.outcome = "would_refuse"
        return result

    def run_check(check: Check) -> CheckResult:
        ctx = contexts.pop(check.full_id)  # a finished rule's payload is freed
        kind = CHECK_KINDS.get(check.kind)
        if kind is None:  # the loader admits only registered kinds; a Check built by hand may not
            raise ValueError(f"no check kind {check.kind!r} ({' or '.join(CHECK_KINDS)})")
        batch = batches.get(check.full_id)
        if check.kind == "judge" or batch is not None:
            on_start(check.full_id)
            result = batch.result(ctx, scripts) if batch is not None else kind(ctx)
            if result is not None:
                return result
        with scripts:  # a script alone, or one its batch could not answer
            if batch is None:
                on_start(check.full_id)
            return kind(ctx)

    # With at most one check to run (a change no other rule's files are in: the rest
    # are not applicable, answered already) no pool is started.
    jobs = cpus + min(judges, max(1, options.judge_slots)) if len(contexts) > 1 else 1
    return graph.execute(ordered, run_one, jobs=jobs, on_result=on_result,
                         on_interrupt=lambda running: stop_running(running, processes=processes))


def _registry() -> Registry:
    from slopjudge import procs  # not for a run whose checks are all decided before they run

    return procs.Registry()


def _every(checks: list[Check], outcome: Outcome, reason: str) -> dict[str, CheckResult]:
    return {c.full_id: check_result(c, outcome, reason) for c in checks}


def _in_process(contexts: dict[str, CheckContext],
                on_start: Callable[[str], None]) -> dict[str, CheckResult]:
    """Run here, now, the checks that are slopjudge's own Python scripts
    (``checks/inproc.py``), taking them out of ``contexts``; their results."""
    from slopjudge.checks import inproc

    if not contexts or not inproc.usable():
        return {}
    runner = inproc.Runner()
    results: dict[str, CheckResult] = {}
    try:
        for full_id, ctx in list(contexts.items()):
            installed = runner.twin(ctx)
            if installed is None:
                continue
            del contexts[full_id]
            on_start(full_id)
            try:
                results[full_id] = runner.run(ctx, installed)
            except Exception as exc:  # noqa: BLE001 - as the graph does: this check errors
                results[full_id] = graph.crashed(ctx.check, exc)
    finally:
        runner.close()
    return results


def _rule_shape(
    rule: Rule, checks: list[Check], event: Event, payload: dict[str, Any],
    files: list[Any], undecided: list[str], workspace: str, processes: Registry | None,
) -> tuple[dict[str, CheckResult], list[dict[str, Any]] | None]:
    """What a rule's sloprail shapes decide before its checks run (docs/sloprail.md):
    results for checks that do not run (a match that cannot be decided, or is false on
    an event about no file; an unmet requirement), and the judges' subjects."""
    if rule.match and not files:
        from slopjudge.loading.matchexpr import MatchRuntimeError

        try:
            if not event_matches(rule.match, payload["event"]):
                return _every(checks, "not_applicable",
                              "the event does not match this rule's `match`"), None
        except MatchRuntimeError as exc:
            undecided.append(str(exc))
    if undecided:
        return _every(checks, "error", "slopjudge could not decide this rule's `match`: "
                      + "; ".join(undecided)), None
    if rule.require:
        from slopjudge.checks.require import unmet

        why = unmet(rule, event, payload, files, workspace, processes)
        if why:
            rest = _every(checks[1:], "skipped", "not run: the rule's requirement is not met")
            return _every(checks[:1], "refuse", f"requirement not met: {why}") | rest, None
    if rule.subjects and files and any(c.kind == "judge" for c in checks):
        from slopjudge.checks.subjects import run_subjects

        found = run_subjects(rule, event, payload, workspace, processes)
        if isinstance(found, str):
            return _every([c for c in checks if c.kind == "judge"], "error", found), None
        return {}, found
    return {}, None


class SharedPayload:
    """A rule's payload as JSON, serialised once for all its checks: each check's
    bytes are the rule's with its own ``check`` key in front."""

    def __init__(self, base: dict[str, Any], files_cache: dict[Any, Any] | None = None,
                 lock: threading.Lock | None = None) -> None:
        self.base = {k: v for k, v in base.items() if k != "check"}
        self.encoded: dict[bool, bytes] = {}
        # The run's cache of what rules share (file entries, encoded once) and its lock:
        # two rules' first encodings would otherwise both encode every file.
        self.lock = lock or _thread.allocate_lock()
        self.files_cache = files_cache

    def for_check(self, check_id: str, ensure_ascii: bool = True) -> bytes:
        with self.lock:
            body = self.encoded.get(ensure_ascii)
            if body is None:
                body = self.encoded[ensure_ascii] = encode(self.base, ensure_ascii,
                                                           self.files_cache)
        head = dumps({"check": {"id": check_id}}, ensure_ascii=ensure_ascii)
        if body == b"{}":
            return head.encode("utf-8")
        return b"".join((head[:-1].encode("utf-8"), b", ", memoryview(body)[1:]))


def stop_running(ended: list[threading.Event], grace: float = 2.0,
                 processes: Registry | None = None) -> None:
    """Stop the running checks after an interrupt (``ended``: set as each returns): TERM
    the run's children (``processes``; None: all of this process's), KILL after ``grace``."""
    import signal
    import time

    from slopjudge import procs

    registry = processes if processes is not None else procs.EVERYONE
    for sig in (signal.SIGTERM, signal.SIGKILL):
        deadline = time.monotonic() + grace
        while ended:
            registry.signal_all(sig)
            round_end = time.monotonic() + 0.1
            ended = [e for e in ended if not e.wait(max(0.0, round_end - time.monotonic()))]
            if time.monotonic() > deadline:
                break  # past KILL's: a thread stuck outside a child process, not waited on


def import_ahead() -> None:
    """Import now what :func:`run` will (never a rule's code) while the caller's git read
    runs, so the two overlap; path patterns compile later, once a changed path could match
    (``pathglob.matcher``). A module failing here fails again where it always did."""
    import sys

    # The thread reading git needs the interpreter lock for a moment between its
    # calls: imports hold it for up to the switch interval (5 ms) at a time.
    interval = sys.getswitchinterval()
    sys.setswitchinterval(min(interval, 0.0002))
    try:
        # Beyond this module's own: the judges' budget is loaded only where a limit is set.
        for name in ("slopjudge.procs", "slopjudge.records.record",  # the callers' event log
                     "unidiff.patch", "slopjudge.checks.script", "slopjudge.checks.judge"):
            try:
                __import__(name)
            except Exception:  # noqa: BLE001, S112 - see the docstring
                continue
    finally:
        sys.setswitchinterval(interval)
