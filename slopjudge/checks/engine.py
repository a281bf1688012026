"""One engine run: the chosen rules' checks run as a graph, each result recorded.

What runs is decided before (``selection.py``: the event filter, ``--rule``,
sharding) and how it runs comes in (``options.py``); each result goes to
``on_result`` as it finishes (the caller's event log: ``records.record.recording``).
Imports stay light at module level: check kinds are imported when a check runs.
"""

from __future__ import annotations

import _thread

from slopjudge.checks import CHECK_KINDS
from slopjudge.checks.options import RunOptions
from slopjudge.checks.selection import event_carries_change, shard_checks
from slopjudge.hookspec import CheckContext
from slopjudge.model import Changeset, Check, CheckResult, Event, Rule

TYPE_CHECKING = False  # not typing's: a PreToolUse hook running checks imports this module
if TYPE_CHECKING:
    import threading
    from collections.abc import Callable, Iterable
    from typing import Any

    from slopjudge.checks.batch import Batch
    from slopjudge.model import Outcome
    from slopjudge.procs import Registry


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
    import gc

    # A run builds every rule's payload and holds them to its end: the cycle collector
    # would walk them over and over and free nothing.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _run(rules, event, changeset, workspace=workspace, options=options,
                    on_result=on_result, on_start=on_start)
    finally:
        if collecting:
            gc.enable()


def _run(
    rules: list[Rule],
    event: Event,
    changeset: Changeset,
    *,
    workspace: str,
    options: RunOptions,
    on_result: Callable[[CheckResult], None] | None,
    on_start: Callable[[str], None] | None,
) -> list[CheckResult]:
    from slopjudge.checks import graph
    from slopjudge.payload import for_rule

    carries_change = event_carries_change(event)
    contexts: dict[str, CheckContext] = {}
    ordered: list[Check] = []
    preset: dict[str, CheckResult] = {}
    wanted = shard_checks(rules, *options.shard) if options.shard else None
    processes: Registry | None = None  # this run's children only; made when a check runs
    split_memo: dict[Any, Any] = {}  # rules with the same paths/exclude split once
    encoded_files: dict[Any, Any] = {}  # and each file entry is serialised once
    # threading.Lock itself: importing threading costs a Write's hook, whose checks all
    # run in its one thread, about 1 ms.
    encoding = _thread.allocate_lock()

    for rule in rules:
        checks = [c for c in rule.checks if wanted is None or c.full_id in wanted]
        if not checks:
            continue
        undecided: list[str] = []
        files, base_payload = for_rule(event=event, workspace=workspace, changeset=changeset,
                                       rule=rule, carries_change=carries_change,
                                       memo=split_memo, problems=undecided)
        rule_cs = Changeset(changeset.base, changeset.head, changeset.commits, files)
        shared = SharedPayload(base_payload, encoded_files, encoding)
        decided: dict[str, CheckResult] = {}
        subjects = None
        if not carries_change or files:
            if processes is None and (rule.require or rule.subjects):
                from slopjudge import procs

                processes = procs.Registry()
            decided, subjects = _rule_shape(rule, checks, event, base_payload, files,
                                            undecided, workspace, processes)
        for check in checks:
            ordered.append(check)
            if carries_change and not files:
                preset[check.full_id] = _not_applicable(
                    check, "no changed file matches this rule's paths"
                )
                continue
            if check.full_id in decided:
                preset[check.full_id] = decided[check.full_id]
                continue
            payload = dict(base_payload, check={"id": check.id})
            if processes is None:
                from slopjudge import procs

                processes = procs.Registry()
            contexts[check.full_id] = CheckContext(
                rule=rule, check=check, event=event, workspace=workspace,
                changeset=rule_cs, payload=payload, options=options, shared_payload=shared,
                processes=processes, subjects=subjects,
            )

    rules_by_id = {r.id: r for r in rules}
    here = _in_process(contexts, options, on_start) if options.in_process else {}

    from slopjudge.checks.graph import default_jobs

    # Script checks use a CPU each, at most ``jobs`` at once; judge checks mostly wait on
    # a model, at most ``judge_slots`` calls at once (judging/slots.py): both kinds run
    # side by side on the pool, so a judge waiting never holds a script check back.
    cpus = options.jobs or default_jobs()
    judges = sum(ctx.check.kind == "judge" for ctx in contexts.values())
    scripts: Any = None  # none when every check ran in process (a Write's hook)
    if contexts:
        import threading

        scripts = threading.BoundedSemaphore(cpus)

    batches = _batches(contexts.values(), event, cpus)

    def run_one(check: Check) -> CheckResult:
        if check.full_id in preset:
            return preset[check.full_id]
        result = here.pop(check.full_id, None)
        if result is None:
            result = run_check(check)
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
        if batch is not None and on_start is not None:
            on_start(check.full_id)
        result = batch.result(ctx, scripts) if batch is not None else None
        if result is None and check.kind == "judge":
            if on_start is not None:
                on_start(check.full_id)
            result = kind(ctx)
        elif result is None:
            with scripts:
                if on_start is not None and batch is None:
                    on_start(check.full_id)
                result = kind(ctx)
        return result

    # With at most one check to run (a change no other rule's files are in: the rest
    # are not applicable, answered already) no pool is started.
    jobs = cpus + min(judges, max(1, options.judge_slots)) if len(contexts) > 1 else 1
    return graph.execute(ordered, run_one, jobs=jobs, on_result=on_result,
                         on_interrupt=lambda running: stop_running(running, processes=processes))


def _in_process(contexts: dict[str, CheckContext], options: RunOptions,
                on_start: Callable[[str], None] | None) -> dict[str, CheckResult]:
    """Run here, now, the checks that are slopjudge's own Python scripts
    (``checks/inproc.py``), taking them out of ``contexts``; their results."""
    from slopjudge.checks import inproc

    if not contexts or not inproc.usable():
        return {}
    from slopjudge.checks.graph import crashed

    runner = inproc.Runner()
    results: dict[str, CheckResult] = {}
    try:
        for full_id, ctx in list(contexts.items()):
            installed = runner.twin(ctx)
            if installed is None:
                continue
            del contexts[full_id]
            if on_start is not None:
                on_start(full_id)
            try:
                results[full_id] = runner.run(ctx, installed)
            except Exception as exc:  # noqa: BLE001 - as the graph does: this check errors
                results[full_id] = crashed(ctx.check, exc)
    finally:
        runner.close()
    return results


def _batches(contexts: Iterable[CheckContext], event: Event,
             cpus: int) -> dict[str, Batch]:
    """Which checks run in a batch of Python scripts (checks/batch.py): one batch for a
    tool call (its scripts each take milliseconds: a second Python start would cost
    more than it saves), else one per CPU."""
    if sum(ctx.check.kind == "script" for ctx in contexts) < 2:
        return {}  # nothing to share a child with: no batch module to import
    from slopjudge.checks.batch import plan

    return plan(contexts, 1 if event.kind == "pre-tool" else cpus)


def _rule_shape(
    rule: Rule, checks: list[Check], event: Event, payload: dict[str, Any],
    files: list[Any], undecided: list[str], workspace: str, processes: Registry | None,
) -> tuple[dict[str, CheckResult], list[dict[str, Any]] | None]:
    """What a rule's sloprail shapes decide before its checks run (docs/sloprail.md):
    results for checks that do not run (a match that cannot be decided, or is false on
    an event about no file; an unmet requirement), and the judges' subjects."""
    def every(outcome: Outcome, reason: str,
              rest: str | None = None) -> dict[str, CheckResult]:
        return {c.full_id: CheckResult(
            id=c.full_id, rule=c.rule, check=c.id, kind=c.kind,
            outcome=outcome if n == 0 or rest is None else "skipped",
            reason=reason if n == 0 or rest is None else rest) for n, c in enumerate(checks)}

    if rule.match and not files:
        from slopjudge.loading.matchexpr import MatchRuntimeError
        from slopjudge.payload import event_matches

        try:
            if not event_matches(rule.match, payload["event"]):
                return every("not_applicable", "the event does not match this rule's "
                             "`match`"), None
        except MatchRuntimeError as exc:
            undecided.append(str(exc))
    if undecided:
        return every("error", "slopjudge could not decide this rule's `match`: "
                     + "; ".join(undecided)), None
    if rule.require:
        from slopjudge.checks.require import unmet

        why = unmet(rule, event, payload, files, workspace, processes)
        if why:
            return every("refuse", f"requirement not met: {why}",
                         "not run: the rule's requirement is not met"), None
    if rule.subjects and files and any(c.kind == "judge" for c in checks):
        from slopjudge.checks.subjects import run_subjects

        found = run_subjects(rule, event, payload, workspace, processes)
        if isinstance(found, str):
            return {c.full_id: CheckResult(id=c.full_id, rule=c.rule, check=c.id, kind=c.kind,
                                           outcome="error", reason=found)
                    for c in checks if c.kind == "judge"}, None
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
        from slopjudge.jsonobject import dumps
        from slopjudge.payload import encode

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
    their groups, KILL after ``grace``.

    ``processes``: the run's children (None: every child of this process)."""
    import signal
    import time

    deadline = time.monotonic() + grace
    sig = signal.SIGTERM
    from slopjudge import procs

    registry = processes if processes is not None else procs.EVERYONE
    while ended:
        registry.signal_all(sig)
        round_end = time.monotonic() + 0.1
        ended = [e for e in ended if not e.wait(max(0.0, round_end - time.monotonic()))]
        if time.monotonic() > deadline:
            if sig == signal.SIGKILL:
                break  # a thread stuck outside a child process: give up waiting on it
            sig = signal.SIGKILL
            deadline = time.monotonic() + grace


# What run() and each check kind import when they first run (slopjudge's own modules).
# The judges' budget is not among them: it is loaded only where a limit is set.
_RUN_IMPORTS = ("slopjudge.checks.graph", "slopjudge.payload", "slopjudge.records.record",
                "slopjudge.procs", "unidiff.patch")  # the callers' event log too
_KIND_IMPORTS = {"script": ("slopjudge.checks.script",), "judge": ("slopjudge.checks.judge",)}


def import_ahead(kinds: Iterable[str] = ("script", "judge")) -> None:
    """Import now what :func:`run` will, for checks of ``kinds``: a caller does it
    while git reads the change, so the two overlap. Only slopjudge's own code (and
    its libraries) is imported, never a rule's. Path patterns are not compiled here: a
    pattern list compiles when a changed path could match it (``pathglob.matcher``). A
    module that fails to import here is left alone: it fails again where it always did."""
    import importlib
    import sys

    # The thread reading git needs the interpreter lock for a moment between its
    # calls: imports hold it for up to the switch interval (5 ms) at a time.
    interval = sys.getswitchinterval()
    sys.setswitchinterval(min(interval, 0.0002))
    try:
        for name in (*_RUN_IMPORTS, *(m for k in kinds for m in _KIND_IMPORTS.get(k, ()))):
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001, S112 - see the docstring
                continue
    finally:
        sys.setswitchinterval(interval)
