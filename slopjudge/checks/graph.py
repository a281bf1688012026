"""Run checks in dependency order on a bounded pool: a check whose ``needs`` did not all
pass is ``skipped`` and says which; results come back in input order."""

from __future__ import annotations

import os

from slopjudge.model import Check, CheckResult

TYPE_CHECKING = False  # not typing's: a PreToolUse hook running checks imports this module
if TYPE_CHECKING:
    import threading
    from collections.abc import Callable
    from typing import Any

    from slopjudge.model import Outcome


def check_result(check: Check, outcome: Outcome, reason: str, **facts: Any) -> CheckResult:
    return CheckResult(id=check.full_id, rule=check.rule, check=check.id, kind=check.kind,
                       outcome=outcome, reason=reason, **facts)


def crashed(check: Check, exc: Exception) -> CheckResult:
    return check_result(check, "error", f"internal error: {type(exc).__name__}: {exc}")


def execute(checks: list[Check], run_one: Callable[[Check], CheckResult], *, jobs: int = 0,
            on_result: Callable[[CheckResult], None] | None = None,
            on_interrupt: Callable[[list[threading.Event]], None] | None = None,
            ) -> list[CheckResult]:
    """Run ``checks`` (needs already validated and acyclic); a need not among them counts
    as not run. On an interrupt (Ctrl-C) no queued check starts, ``on_interrupt`` gets the
    running ones (an event each, set once its run has returned) to stop them, and the
    interrupt goes on up: they report nothing."""
    graph = _Graph(checks, run_one, on_result)
    workers = min(jobs or os.cpu_count() or 1, len(checks))
    if workers <= 1:
        # In this thread, no pool to start (a hook with one check, or --jobs 1). An
        # interrupt lands in the running check, whose child is killed on the way out.
        graph.start_ready()
    else:
        graph.run_pooled(workers, on_interrupt)
    for check in graph.waiting.values():  # only a cycle, which the loader refuses: never hang
        graph.finish(check_result(check, "error", "its needs wait on each other (a cycle): "
                                  "slopjudge could not run it"))
    return [graph.results[c.full_id] for c in checks]


class _Graph:
    """One execution: which checks wait on which, and the results so far (written
    only from the caller's thread)."""

    def __init__(self, checks: list[Check], run_one: Callable[[Check], CheckResult],
                 on_result: Callable[[CheckResult], None] | None) -> None:
        self.run_one = run_one
        self.on_result = on_result
        self.by_id = {c.full_id: c for c in checks}
        self.results: dict[str, CheckResult] = {}
        self.waiting = dict(self.by_id)
        self.todo: Any = None  # the pool's queue of checks to start; None: run them here
        self.running: dict[str, threading.Event] = {}  # set once the check's run returned

    def finish(self, result: CheckResult) -> None:
        self.results[result.id] = result
        if self.on_result is not None:
            self.on_result(result)

    def guarded(self, check: Check) -> CheckResult:
        try:
            return self.run_one(check)
        except Exception as exc:  # a check kind must not crash the run
            return crashed(check, exc)

    def start_ready(self) -> None:
        """Skip, or start (or run here, without a pool), each waiting check whose needs
        have finished or are not in the run; that can make others ready."""
        progressed = True
        while progressed:
            progressed = False
            for cid, check in list(self.waiting.items()):
                if not all(n in self.results or n not in self.by_id for n in check.needs):
                    continue
                del self.waiting[cid]
                progressed = True
                got = [(n, self.results[n].outcome if n in self.results else "not run")
                       for n in check.needs]
                blockers = [f"{n} ({o.replace('_', ' ')})" for n, o in got if o != "pass"]
                if blockers:
                    self.finish(check_result(check, "skipped",
                                             "needs " + ", ".join(blockers) + " to pass first"))
                elif self.todo is None:
                    self.finish(self.guarded(check))
                else:
                    import threading

                    self.running[cid] = threading.Event()
                    self.todo.put(check)

    def run_pooled(self, workers: int,
                   on_interrupt: Callable[[list[threading.Event]], None] | None) -> None:
        """On ``workers`` threads of its own: concurrent.futures (logging with it) cost a
        short run more to import than its checks' own work."""
        import threading
        from _queue import Empty, SimpleQueue

        todo: SimpleQueue[Check | None] = SimpleQueue()
        done: SimpleQueue[tuple[Check, CheckResult | BaseException]] = SimpleQueue()
        stopping = threading.Event()

        def work() -> None:
            while (check := todo.get()) is not None:
                ended = self.running[check.full_id]
                try:
                    if not stopping.is_set():  # after an interrupt no queued check starts
                        done.put((check, self.guarded(check)))
                except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread
                    done.put((check, exc))
                finally:
                    ended.set()

        self.todo = todo
        for _ in range(workers):
            threading.Thread(target=work, name="slopjudge-check", daemon=True).start()
        try:
            self.start_ready()
            while self.running:
                try:
                    # With a timeout: a signal the kernel hands to a check's thread does
                    # not wake a wait without one, and the main thread would only see
                    # the Ctrl-C once a check ended (letting queued checks start).
                    check, got = done.get(timeout=0.05)
                except Empty:
                    continue
                del self.running[check.full_id]
                if isinstance(got, BaseException):
                    raise got
                self.finish(got)
                self.start_ready()
        except BaseException:
            # Interrupted: start nothing more, let the caller stop what runs, go on up.
            stopping.set()
            if on_interrupt is not None:
                on_interrupt(list(self.running.values()))
            raise
        finally:
            for _ in range(workers):
                todo.put(None)
