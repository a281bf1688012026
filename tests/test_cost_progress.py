"""The progress line: the checks running now with their elapsed time, cached verdicts marked."""

from __future__ import annotations

import io
import threading
import time

import pytest

from slopjudge.model import CheckResult, RunReport
from slopjudge.report.text import Progress, render


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _judge(cid: str, outcome: str = "pass", cached: bool = False) -> CheckResult:
    rule, check = cid.split("/")
    return CheckResult(id=cid, rule=rule, check=check, kind="judge", outcome=outcome,
                       cache_hit=cached, cached_calls=1 if cached else 0,
                       judge_calls=0 if cached else 1,
                       usage=None if cached else {"input_tokens": 1000, "output_tokens": 20,
                                                  "cost_usd": 0.0042})


def test_running_checks_and_cached_verdicts_show_on_the_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    # A stopped clock: the elapsed times shown are exactly 0 ms however loaded the machine.
    monkeypatch.setattr(time, "monotonic", lambda: 1000.0)
    tty = _Tty()
    progress = Progress(tty, delay=0)
    progress.start(3)
    progress.begin("slow/judge")
    progress.begin("other/judge")
    progress.begin("cached/judge")
    progress.advance(_judge("cached/judge", cached=True))
    line = tty.getvalue().split("\r\x1b[K")[-1]
    assert line.startswith("[1/3] ") and ", 1 cached" in line
    assert "running: slow/judge 0 ms, other/judge" in line
    assert "cached/judge: pass (cached)" in line
    progress.advance(_judge("slow/judge"))
    line = tty.getvalue().split("\r\x1b[K")[-1]
    assert "running: other/judge" in line and "slow/judge: pass" in line
    assert "(cached)" not in line
    progress.finish()


def test_the_line_ticks_while_a_check_runs() -> None:
    tty = _Tty()
    progress = Progress(tty, delay=0, tick=0.05)
    progress.start(1)
    progress.begin("slow/judge")

    def frames_now() -> list[str]:
        return [f for f in tty.getvalue().split("\r\x1b[K") if f]

    deadline = time.monotonic() + 10
    while len(set(frames_now())) < 3 and time.monotonic() < deadline:
        threading.Event().wait(0.02)  # poll the drawn line until the ticker has redrawn it
    progress.finish()
    frames = frames_now()
    assert len(frames) >= 3  # redrawn with nothing finishing
    assert all("running: slow/judge" in f for f in frames)
    # The elapsed time of the running check grows from frame to frame.
    assert frames[0] != frames[-1]


def test_the_summary_has_a_judge_cost_line() -> None:
    report = RunReport(outcome="pass", checks=[_judge("a/j"), _judge("b/j", cached=True)])
    text = render(report)
    assert ("judge cost: 1 judge call (1 from cache), 1,020 tokens (in 1,000, out 20, cache 0),"
            " $0.0042") in text
    sized = _judge("c/j")
    sized.prompt_tokens, sized.units = 93_000, 2
    assert render(RunReport(outcome="pass", checks=[sized])).count(
        "; 2 prompts, the largest about 93,000 tokens (estimated)") == 1
    no_judges = RunReport(outcome="pass", checks=[CheckResult(
        id="a/s", rule="a", check="s", kind="script", outcome="pass")])
    assert "judge cost" not in render(no_judges)


def test_progress_on_a_closed_stream_stays_off() -> None:
    import io

    stream = io.StringIO()
    stream.close()
    progress = Progress(stream, delay=0)
    assert progress.enabled is False
