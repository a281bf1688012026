"""Run checks in dependency order on a bounded pool.

A check starts once every check it ``needs`` has finished; if any of them did
not pass, the check is ``skipped`` and says which. Results come back in a
fixed order (the order checks were given), whatever order they finish in.
"""

from __future__ import annotations

import os

from slopjudge.model import Check, CheckResult

TYPE_CHECKING = False  # not typing's: a PreToolUse hook running checks imports this module
if TYPE_CHECKING:
    import threading
    from collections.abc import Callable, Iterable
    from concurrent.futures import Future


def default_jobs() -> int:
    return os.cpu_count() or 1


def skipped_for_needs(check: Check, blockers: list[tuple[str, str]]) -> CheckResult:
    parts = [f"{cid} ({outcome.replace('_', ' ')})" for cid, outcome in blockers]
    return CheckResult(
        id=check.full_id,
        rule=check.rule,
        check=check.id,
        kind=check.kind,
        outcome="skipped",
        reason="needs " + ", ".join(parts) + " to pass first",
    )


def execute(
    checks: list[Check],
    run_one: Callable[[Check], CheckResult],
    *,
    jobs: int = 0,
    on_result: Callable[[CheckResult], None] | None = None,
    on_interrupt: Callable[[list[Future[None]]], None] | None = None,
) -> list[CheckResult]:
    """Run ``checks`` (needs already validated and acyclic) and return results in input order.

    A need naming a check that is not in ``checks`` counts as not run: the
    dependent is skipped, never run as if the need had passed.

    On an interrupt (Ctrl-C) no queued check starts; ``on_interrupt`` gets the
    running ones so it can stop them, and the interrupt goes on up. Checks cut
    short this way report nothing: they did not refuse, they were stopped.
    """
    jobs = jobs or default_jobs()
    by_id = {c.full_id: c for c in checks}
    results: dict[str, CheckResult] = {}
    waiting = {c.full_id: [n for n in c.needs] for c in checks}

    def finish(result: CheckResult) -> None:
        results[result.id] = result  # only ever called from this thread
        if on_result is not None:
            on_result(result)

    def ready() -> Iterable[Check]:
        for cid in list(waiting):
            needs = waiting[cid]
            if all(n in results or n not in by_id for n in needs):
                del waiting[cid]
                yield by_id[cid]

    def blockers_of(check: Check) -> list[tuple[str, str]]:
        blockers = []
        for n in check.needs:
            got = results.get(n)
            if got is None:
                blockers.append((n, "not run"))
            elif got.outcome != "pass":
                blockers.append((n, got.outcome))
        return blockers

    def guarded(check: Check) -> CheckResult:
        try:
            return run_one(check)
        except Exception as exc:  # a check kind must not crash the run
            return crashed(check, exc)

    if jobs <= 1 or len(checks) <= 1:
        # One at a time, in this thread: no pool to start (a hook with one check, or
        # --jobs 1). An interrupt lands in the running check, whose child process is
        # killed on the way out (procs.run); nothing else is running.
        for check in _dependency_order(checks, by_id):
            blockers = blockers_of(check)
            finish(skipped_for_needs(check, blockers) if blockers else guarded(check))
        return [results[c.full_id] for c in checks]

    import threading
    from _queue import Empty, SimpleQueue

    # A pool of `jobs` threads of its own: concurrent.futures (logging with it) cost a
    # short run more to import than its checks' own work.
    todo: SimpleQueue[Check | None] = SimpleQueue()
    done: SimpleQueue[tuple[Check, CheckResult | None, BaseException | None]] = SimpleQueue()
    running: dict[str, threading.Event] = {}  # set once the check's run_one returned
    stopping = threading.Event()

    def worker() -> None:
        while True:
            check = todo.get()
            if check is None:
                return
            ended = running[check.full_id]
            if stopping.is_set():  # after an interrupt no queued check starts
                ended.set()
                continue
            try:
                done.put((check, guarded(check), None))
            except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread
                done.put((check, None, exc))
            finally:
                ended.set()

    workers = min(jobs, len(checks))
    for _ in range(workers):
        threading.Thread(target=worker, name="slopjudge-check", daemon=True).start()

    def submit_ready() -> None:
        progressed = True
        while progressed:  # skipping one check can make others ready
            progressed = False
            for check in list(ready()):
                progressed = True
                blockers = blockers_of(check)
                if blockers:
                    finish(skipped_for_needs(check, blockers))
                else:
                    running[check.full_id] = threading.Event()
                    todo.put(check)

    try:
        while waiting or running:
            submit_ready()
            if not running:
                # Only reachable with a cycle, which the loader refuses; never hang.
                for cid in list(waiting):
                    del waiting[cid]
                    finish(skipped_for_needs(by_id[cid], [("(a cycle)", "not run")]))
                continue
            while True:  # a Ctrl-C lands here
                try:
                    # With a timeout: a signal the kernel hands to a check's thread does
                    # not wake a wait without one, and the main thread would only see
                    # the Ctrl-C once a check ended (letting queued checks start).
                    check, result, exc = done.get(timeout=0.05)
                    break
                except Empty:
                    continue
            del running[check.full_id]
            if exc is not None:
                raise exc
            assert result is not None
            finish(result)
    except BaseException:
        # Interrupted: start nothing more, let the caller stop what runs, go on up.
        stopping.set()
        if on_interrupt is not None:
            on_interrupt(_as_futures(list(running.values())))
        raise
    finally:
        for _ in range(workers):
            todo.put(None)
    return [results[c.full_id] for c in checks]


def _as_futures(ended: list[threading.Event]) -> list[Future[None]]:
    """Futures done when each running check has returned, for ``on_interrupt``; made
    only after an interrupt, the one time concurrent.futures is imported."""
    import threading
    from concurrent.futures import Future

    futures: list[Future[None]] = []
    for event in ended:
        future: Future[None] = Future()

        def settle(event: threading.Event = event, future: Future[None] = future) -> None:
            event.wait()
            future.set_result(None)

        threading.Thread(target=settle, daemon=True).start()
        futures.append(future)
    return futures


def crashed(check: Check, exc: Exception) -> CheckResult:
    return CheckResult(
        id=check.full_id, rule=check.rule, check=check.id, kind=check.kind,
        outcome="error", reason=f"internal error: {type(exc).__name__}: {exc}",
    )


def _dependency_order(checks: list[Check], by_id: dict[str, Check]) -> list[Check]:
    """``checks`` in input order, each moved after the checks it needs (a cycle, which
    the loader refuses, keeps input order: its checks are then skipped as not run)."""
    out: list[Check] = []
    placed: set[str] = set()
    visiting: set[str] = set()

    def place(check: Check) -> None:
        if check.full_id in placed or check.full_id in visiting:
            return
        visiting.add(check.full_id)
        for n in check.needs:
            if n in by_id:
                place(by_id[n])
        visiting.discard(check.full_id)
        placed.add(check.full_id)
        out.append(check)

    for check in checks:
        place(check)
    return out
