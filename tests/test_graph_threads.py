"""Where no Ctrl-C can land (a hook's own signal handlers are set), independent checks
run a thread each, without the executor: same results, same order, really parallel."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator

import pytest

from slopjudge.loading import graph
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
    assert not graph._interruptible()
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


def test_with_ctrl_c_live_the_pool_is_used() -> None:
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        assert graph._interruptible()
    finally:
        signal.signal(signal.SIGINT, old)
