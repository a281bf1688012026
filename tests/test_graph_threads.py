"""Checks run on the graph's own pool of threads, not concurrent.futures' executor: same
results, same order, really parallel, and a Ctrl-C stops it as it stopped the executor."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator

import pytest

from slopjudge.checks import graph
from slopjudge.model import Check, CheckResult


@pytest.fixture
def hook_signals() -> Iterator[None]:
    old = signal.signal(signal.SIGINT, lambda signum, frame: None)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


def _checks(n: int) -> list[Check]:
    return [Check(id=f"c{i}", rule="r", kind="script") for i in range(n)]


def test_independent_checks_run_at_once_in_order(hook_signals: None) -> None:
    started: list[str] = []
    barrier = threading.Barrier(3, timeout=10)  # all three must be running together

    def run_one(check: Check) -> CheckResult:
        started.append(check.id)
        barrier.wait()
        time.sleep(0.01 * (3 - int(check.id[1])))  # finish in reverse order
        return CheckResult(id=check.full_id, rule="r", check=check.id, kind="script",
                           outcome="pass" if check.id != "c1" else "refuse")

    seen: list[str] = []
    results = graph.execute(_checks(3), run_one, jobs=3,
                            on_result=lambda r: seen.append(r.check))
    assert [r.check for r in results] == ["c0", "c1", "c2"]
    assert [r.outcome for r in results] == ["pass", "refuse", "pass"]
    assert sorted(seen) == ["c0", "c1", "c2"] and sorted(started) == sorted(seen)


def test_a_crashing_check_is_an_error_and_an_escape_is_raised(hook_signals: None) -> None:
    def crash(check: Check) -> CheckResult:
        if check.id == "c0":
            raise RuntimeError("boom")
        raise SystemExit(3)

    with pytest.raises(SystemExit):
        graph.execute(_checks(2), crash, jobs=2)
    (only,) = graph.execute(_checks(1), crash, jobs=2)
    assert only.outcome == "error" and "boom" in only.reason


@pytest.mark.parametrize("to_thread", [False, True])
def test_ctrl_c_stops_queued_checks_and_hands_over_the_running_ones(to_thread: bool) -> None:
    """``to_thread``: the kernel hands the signal to a check's thread, not the main one."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    started: list[str] = []
    release = threading.Event()
    both = threading.Barrier(2, timeout=10)
    handed: list[int] = []

    def run_one(check: Check) -> CheckResult:
        started.append(check.id)
        both.wait()  # c0 and c1 run together; c2..c4 wait in the queue
        if check.id == "c0":
            if to_thread:
                signal.pthread_kill(threading.get_ident(), signal.SIGINT)
            else:
                os.kill(os.getpid(), signal.SIGINT)  # as Ctrl-C
        release.wait(10)
        return CheckResult(id=check.full_id, rule="r", check=check.id, kind="script",
                           outcome="pass")

    def on_interrupt(running: list[threading.Event]) -> None:
        handed.append(len(running))
        assert sum(not e.is_set() for e in running) >= 2  # c0 and c1 are still in run_one
        release.set()
        for e in running:
            assert e.wait(10)  # set once the check returned (or was never started)

    try:
        with pytest.raises(KeyboardInterrupt):
            graph.execute(_checks(5), run_one, jobs=2, on_interrupt=on_interrupt)
    finally:
        signal.signal(signal.SIGINT, old)
    # on_interrupt waited for every handed check, the queued ones included (each is
    # done once a worker drained it unstarted): nothing can start after this.
    assert handed == [5] and sorted(started) == ["c0", "c1"]
