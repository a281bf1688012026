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
    from collections.abc import Callable
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
    graph = _Graph(checks, run_one, on_result)
    if jobs <= 1 or len(checks) <= 1:
        graph.run_in_order()
    else:
        graph.run_pooled(min(jobs, len(checks)), on_interrupt)
    return [graph.results[c.full_id] for c in checks]


class _Graph:
    """One execution: which checks wait on which, and the results so far (written
    only from the caller's thread)."""

    def __init__(self, checks: list[Check], run_one: Callable[[Check], CheckResult],
                 on_result: Callable[[CheckResult], None] | None) -> None:
        self.checks = checks
        self.run_one = run_one
        self.on_result = on_result
        self.by_id = {c.full_id: c for c in checks}
        self.results: dict[str, CheckResult] = {}
        self.waiting = {c.full_id: list(c.needs) for c in checks}

    def finish(self, result: CheckResult) -> None:
        self.results[result.id] = result
        if self.on_result is not None:
            self.on_result(result)

    def ready(self) -> list[Check]:
        """The waiting checks whose needs have all finished (or are not in the run)."""
        out = []
        for cid, needs in list(self.waiting.items()):
            if all(n in self.results or n not in self.by_id for n in needs):
                del self.waiting[cid]
                out.append(self.by_id[cid])
        return out

    def blockers_of(self, check: Check) -> list[tuple[str, str]]:
        blockers = []
        for n in check.needs:
            got = self.results.get(n)
            if got is None:
                blockers.append((n, "not run"))
            elif got.outcome != "pass":
                blockers.append((n, got.outcome))
        return blockers

    def guarded(self, check: Check) -> CheckResult:
        try:
            return self.run_one(check)
        except Exception as exc:  # a check kind must not crash the run
            return crashed(check, exc)

    def run_in_order(self) -> None:
        """One at a time, in this thread: no pool to start (a hook with one check, or
        --jobs 1). An interrupt lands in the running check, whose child process is
        killed on the way out (procs.run); nothing else is running."""
        for check in _dependency_order(self.checks, self.by_id):
            blockers = self.blockers_of(check)
            self.finish(skipped_for_needs(check, blockers) if blockers else self.guarded(check))

    def run_pooled(self, workers: int,
                   on_interrupt: Callable[[list[Future[None]]], None] | None) -> None:
        """On a pool of ``workers`` threads of its own: concurrent.futures (logging with
        it) cost a short run more to import than its checks' own work."""
        pool = _Pool(self.guarded, workers)
        try:
            while self.waiting or pool.running:
                self._submit_ready(pool)
                if not pool.running:
                    # Only reachable with a cycle, which the loader refuses; never hang.
                    for cid in list(self.waiting):
                        del self.waiting[cid]
                        self.finish(skipped_for_needs(self.by_id[cid],
                                                      [("(a cycle)", "not run")]))
                    continue
                self.finish(pool.next_result())
        except BaseException:
            # Interrupted: start nothing more, let the caller stop what runs, go on up.
            pool.stopping.set()
            if on_interrupt is not None:
                on_interrupt(_as_futures(list(pool.running.values())))
            raise
        finally:
            pool.close()

    def _submit_ready(self, pool: _Pool) -> None:
        progressed = True
        while progressed:  # skipping one check can make others ready
            progressed = False
            for check in self.ready():
                progressed = True
                blockers = self.blockers_of(check)
                if blockers:
                    self.finish(skipped_for_needs(check, blockers))
                else:
                    pool.submit(check)


class _Pool:
    """Threads taking checks from one queue and putting results on another."""

    def __init__(self, run: Callable[[Check], CheckResult], workers: int) -> None:
        import threading
        from _queue import SimpleQueue

        self.run = run
        self.todo: SimpleQueue[Check | None] = SimpleQueue()
        self.done: SimpleQueue[tuple[Check, CheckResult | None, BaseException | None]] = (
            SimpleQueue())
        self.running: dict[str, threading.Event] = {}  # set once the check's run returned
        self.stopping = threading.Event()
        self.workers = workers
        for _ in range(workers):
            threading.Thread(target=self._work, name="slopjudge-check", daemon=True).start()

    def _work(self) -> None:
        while True:
            check = self.todo.get()
            if check is None:
                return
            ended = self.running[check.full_id]
            if self.stopping.is_set():  # after an interrupt no queued check starts
                ended.set()
                continue
            try:
                self.done.put((check, self.run(check), None))
            except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread
                self.done.put((check, None, exc))
            finally:
                ended.set()

    def submit(self, check: Check) -> None:
        import threading

        self.running[check.full_id] = threading.Event()
        self.todo.put(check)

    def next_result(self) -> CheckResult:
        """The next finished check's result (a Ctrl-C lands in the wait)."""
        from _queue import Empty

        while True:
            try:
                # With a timeout: a signal the kernel hands to a check's thread does
                # not wake a wait without one, and the main thread would only see
                # the Ctrl-C once a check ended (letting queued checks start).
                check, result, exc = self.done.get(timeout=0.05)
                break
            except Empty:
                continue
        del self.running[check.full_id]
        if exc is not None:
            raise exc
        assert result is not None
        return result

    def close(self) -> None:
        for _ in range(self.workers):
            self.todo.put(None)


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
