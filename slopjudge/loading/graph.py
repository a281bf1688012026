"""Run checks in dependency order on a bounded pool.

A check starts once every check it ``needs`` has finished; if any of them did
not pass, the check is ``skipped`` and says which. Results come back in a
fixed order (the order checks were given), whatever order they finish in.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from slopjudge.model import Check, CheckResult


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
    on_interrupt: Callable[[list[Future[CheckResult]]], None] | None = None,
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
    lock = threading.Lock()

    def finish(result: CheckResult) -> None:
        with lock:
            results[result.id] = result
        if on_result is not None:
            on_result(result)

    def ready() -> Iterable[Check]:
        for cid in list(waiting):
            needs = waiting[cid]
            if all(n in results or n not in by_id for n in needs):
                del waiting[cid]
                yield by_id[cid]

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        running: dict[Future[CheckResult], Check] = {}

        def submit_ready() -> None:
            progressed = True
            while progressed:  # skipping one check can make others ready
                progressed = False
                for check in list(ready()):
                    progressed = True
                    blockers = []
                    for n in check.needs:
                        got = results.get(n)
                        if got is None:
                            blockers.append((n, "not run"))
                        elif got.outcome != "pass":
                            blockers.append((n, got.outcome))
                    if blockers:
                        finish(skipped_for_needs(check, blockers))
                    else:
                        running[pool.submit(run_one, check)] = check

        try:
            while waiting or running:
                submit_ready()
                if not running:
                    # Only reachable with a cycle, which the loader refuses; never hang.
                    for cid in list(waiting):
                        del waiting[cid]
                        finish(skipped_for_needs(by_id[cid], [("(a cycle)", "not run")]))
                    continue
                done, _ = wait(list(running), return_when=FIRST_COMPLETED)
                for fut in done:
                    check = running.pop(fut)
                    try:
                        result = fut.result()
                    except Exception as exc:  # a check kind must not crash the run
                        result = CheckResult(
                            id=check.full_id, rule=check.rule, check=check.id, kind=check.kind,
                            outcome="error", reason=f"internal error: {type(exc).__name__}: {exc}",
                        )
                    finish(result)
        except BaseException:
            # Interrupted: start nothing more, let the caller stop what runs, go on up.
            pool.shutdown(wait=False, cancel_futures=True)
            if on_interrupt is not None:
                on_interrupt([f for f in running if not f.done()])
            raise
    return [results[c.full_id] for c in checks]
