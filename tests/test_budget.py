"""Spend limits: a run (or an agent session) stops calling judges at its budget.

The runner is a real process standing in for the model: it counts its calls
in a log, prints a verdict and reports a fixed usage on its
``JUDGE-USAGE-JSON`` line, as any sr-agent-compatible runner may.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from slopjudge.checks import engine
from slopjudge.checks.options import options_from_settings
from slopjudge.judging.budget import Budget, Limits
from slopjudge.loading.config import load_settings
from slopjudge.loading.rulecache import load_rules_cached
from slopjudge.model import Changeset, Event, FileChange

RUNNER = """#!{python}
import json, os, sys, time
sys.stdin.read()
with open(os.environ["CALL_LOG"], "a") as fh:
    fh.write(os.environ["SLOPJUDGE_LAUNCHED_BY"] + "\\n")
time.sleep(float(os.environ.get("CALL_SECONDS", "0")))  # calls overlap, as a model's do
print('{{"pass": true, "reasoning": "fine"}}')
usage = {{"input_tokens": 900, "output_tokens": 100, "cost_usd": 0.01, "model": "fake-model"}}
usage.update(json.loads(os.environ.get("CALL_USAGE", "{{}}")))
print("JUDGE-USAGE-JSON: " + json.dumps(usage), file=sys.stderr)
"""


def new_file(path: str) -> str:
    return (f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
            f"@@ -0,0 +1,1 @@\n+x = 1  # {path}\n")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = tmp_path / "repo"
    rules = r / "rules"
    rules.mkdir(parents=True)
    for n in range(5):
        (rules / f"judge-{n}.yaml").write_text(
            f"description: judge {n}\nchecks:\n  - id: judge\n    judge: j.md.j2\n")
    (rules / "each.yaml.off").write_text(
        "description: per file\nchecks:\n  - id: judge\n    judge: j.md.j2\n    each: file\n")
    (r / "templates").mkdir()
    (r / "templates" / "j.md.j2").write_text(
        "Judge {{ rule.id }}.\n<diff>\n{{ change }}</diff>\n")
    runner = tmp_path / "runner.py"
    runner.write_text(RUNNER.format(python=sys.executable))
    runner.chmod(0o755)
    subprocess.run(["git", "init", "-q", str(r)], check=True)
    (tmp_path / "change.diff").write_text("".join(new_file(f"src/m{n}.py") for n in range(5)))
    return r


def run(repo: Path, settings: str, *extra: str, env_extra: dict[str, str] | None = None
        ) -> tuple[int, dict[str, Any], list[str]]:
    tmp = repo.parent
    (repo / "slopjudge.yaml").write_text(settings)
    log = tmp / "calls.log"
    log.unlink(missing_ok=True)
    env = {**os.environ, "CALL_LOG": str(log), "SLOPJUDGE_EVENTS_FILE": str(tmp / "events.jsonl"),
           **(env_extra or {})}
    env.pop("SLOPJUDGE_JUDGE_MOCKS", None)
    env.pop("SLOPJUDGE_RUNNER", None)
    proc = subprocess.run(
        [sys.executable, "-m", "slopjudge", "run", "--diff", str(tmp / "change.diff"),
         "--runner", str(tmp / "runner.py"), "--format", "json", *extra],
        cwd=repo, env=env, capture_output=True, text=True, timeout=300,
    )
    assert proc.stdout.strip(), proc.stderr
    calls = log.read_text().splitlines() if log.exists() else []
    return proc.returncode, json.loads(proc.stdout), calls


def outcomes(report: dict[str, Any]) -> list[str]:
    return sorted(c["outcome"] for c in report["checks"])


def test_max_judge_calls_stops_calling_and_errors_the_rest(repo: Path) -> None:
    code, report, calls = run(repo, "max_judge_calls: 3\njobs: 3\n", "--no-cache")
    assert len(calls) == 3  # never more, even with three checks running at once
    assert outcomes(report) == ["error", "error", "pass", "pass", "pass"] and code == 2
    for c in report["checks"]:
        if c["outcome"] == "error":
            assert c["reason"] == ("budget max_judge_calls (3) is spent: 3 of 3 judge calls "
                                   "made in this run; this check was not judged")
            assert c["usage"]["judge_calls"] == 0
    assert report["usage"]["judge_calls"] == 3
    assert report["usage"]["input_tokens"] == 2700 and report["usage"]["cost_usd"] == 0.03


def test_cached_verdicts_cost_nothing_against_the_budget(repo: Path) -> None:
    _, report, calls = run(repo, "max_judge_calls: 5\n")
    assert len(calls) == 5 and outcomes(report) == ["pass"] * 5
    code, report, calls = run(repo, "max_judge_calls: 0\n")
    assert calls == [] and code == 0 and outcomes(report) == ["pass"] * 5
    assert (report["usage"]["judge_calls"], report["usage"]["cached_calls"]) == (0, 5)


def test_max_tokens_counts_what_the_runner_reported(repo: Path) -> None:
    # The prompts' estimated size, from a dry run: every check's is the same.
    _, dry, calls = run(repo, "", "--dry-run")
    sizes = {c["usage"]["prompt_tokens"] for c in dry["checks"]}
    assert calls == [] and len(sizes) == 1
    (prompt,) = sizes
    # 1,000 tokens a call: the first call counts 1,000 for its prompt's estimate, so
    # each later one is estimated at 1,000 too; a third would pass the limit.
    limit = 2999
    code, report, calls = run(repo, f"max_tokens: {limit}\njobs: 1\n", "--no-cache")
    assert len(calls) == 2 and outcomes(report).count("error") == 3
    reason = next(c["reason"] for c in report["checks"] if c["outcome"] == "error")
    assert reason == (f"budget max_tokens ({limit:,}) would be exceeded: 2,000 tokens spent "
                      "or held in this run, and this call is estimated at 1,000 more; "
                      "this check was not judged")
    assert report["usage"]["input_tokens"] + report["usage"]["output_tokens"] <= limit
    assert prompt < 1000  # what the runner reported, not the prompt's size, is counted


def test_max_cost_usd(repo: Path) -> None:
    code, report, calls = run(repo, "max_cost_usd: 0.025\njobs: 1\n", "--no-cache")
    assert len(calls) == 2 and code == 2  # a third call of $0.01 would pass $0.025
    reason = next(c["reason"] for c in report["checks"] if c["outcome"] == "error")
    assert reason == ("budget max_cost_usd ($0.0250) would be exceeded: $0.0200 spent or held "
                      "in this run, and this call is estimated at $0.0100 more; "
                      "this check was not judged")


def _twenty_judges(repo: Path) -> None:
    for n in range(5, 20):
        (repo / "rules" / f"judge-{n}.yaml").write_text(
            f"description: judge {n}\nchecks:\n  - id: judge\n    judge: j.md.j2\n")


@pytest.mark.parametrize(("settings", "usage", "calls_made", "budget"), [
    ("max_cost_usd: 0.5", {"cost_usd": 0.4}, 1, "max_cost_usd"),  # the case
    ("max_cost_usd: 0.5", {"cost_usd": 0.04}, 12, "max_cost_usd"),
    ("max_tokens: 5500", {}, 5, "max_tokens"),
    ("max_judge_calls: 7", {}, 7, "max_judge_calls"),
    ("session_max_cost_usd: 0.1", {"cost_usd": 0.03}, 3, "session_max_cost_usd"),
    ("session_max_tokens: 4500", {}, 4, "session_max_tokens"),
])
def test_parallel_calls_never_pass_a_limit_together(
        repo: Path, settings: str, usage: dict[str, float], calls_made: int, budget: str) -> None:
    """20 judge checks, 8 at a time, each call taking a while: the calls made stay
    within the limit, and every check past it is an error naming the budget."""
    _twenty_judges(repo)
    code, report, calls = run(repo, settings + "\n", "--no-cache", "--jobs", "8",
                              env_extra={"CALL_SECONDS": "0.3", "CALL_USAGE": json.dumps(usage)})
    limit = float(settings.split(": ")[1])
    spent = report["usage"]
    total = {"max_cost_usd": spent.get("cost_usd", 0.0), "max_judge_calls": len(calls),
             "max_tokens": spent["input_tokens"] + spent["output_tokens"]}
    assert total[budget.removeprefix("session_")] <= limit
    assert len(calls) == calls_made and code == 2
    errors = [c["reason"] for c in report["checks"] if c["outcome"] == "error"]
    assert len(errors) == 20 - calls_made
    assert all(r.startswith(f"budget {budget} (") for r in errors), errors


def test_each_file_units_share_the_budget(repo: Path) -> None:
    for n in range(5):
        (repo / "rules" / f"judge-{n}.yaml").unlink()
    (repo / "rules" / "each.yaml.off").rename(repo / "rules" / "each.yaml")
    code, report, calls = run(repo, "max_judge_calls: 2\n", "--no-cache")
    assert len(calls) == 2 and code == 2
    (check,) = report["checks"]
    assert check["outcome"] == "error" and check["usage"]["judge_calls"] == 2
    assert check["reason"].count("budget max_judge_calls (2) is spent") == 3


def test_a_bad_budget_setting_is_one_line(repo: Path) -> None:
    (repo / "slopjudge.yaml").write_text("max_cost_usd: lots\n")
    proc = subprocess.run([sys.executable, "-m", "slopjudge", "run", "--dry-run"], cwd=repo,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "slopjudge: slopjudge.yaml:1:1: `max_cost_usd` must be a number >= 0"]


def _hook_run(repo: Path, session: str) -> list[str]:
    """One hook call's engine run (fresh options, as a new process would have)."""
    settings = load_settings(str(repo))
    rules = load_rules_cached(settings).rules
    options = options_from_settings(settings, no_cache=True,
                                           runner=str(repo.parent / "runner.py"))
    files = [FileChange(path=f"src/m{n}.py", status="A", new_content="x = 1\n",
                        diff=new_file(f"src/m{n}.py")) for n in range(2)]
    results = engine.run(rules[:2], Event(kind="stop", session_id=session), Changeset(files=files),
                         workspace=str(repo), options=options)
    return [r.outcome for r in results]


def test_session_budget_holds_across_hook_calls(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (repo / "slopjudge.yaml").write_text("session_max_judge_calls: 3\n")
    monkeypatch.setenv("CALL_LOG", str(repo.parent / "calls.log"))
    monkeypatch.setenv("SLOPJUDGE_EVENTS_FILE", str(repo.parent / "events.jsonl"))
    monkeypatch.delenv("SLOPJUDGE_JUDGE_MOCKS", raising=False)
    assert _hook_run(repo, "s-1") == ["pass", "pass"]
    assert sorted(_hook_run(repo, "s-1")) == ["error", "pass"]
    assert _hook_run(repo, "s-1") == ["error", "error"]
    assert _hook_run(repo, "s-2") == ["pass", "pass"]  # another session has its own budget
    spend = json.loads(Path(
        Budget(Limits(), str(repo / ".slopjudge")).session_path("s-1")).read_text())
    assert (spend["judge_calls"], spend["tokens"]) == (3, 3000)
    assert spend["cost_usd"] == pytest.approx(0.03)
    assert len((repo.parent / "calls.log").read_text().splitlines()) == 5


def test_a_damaged_session_file_fails_closed(tmp_path: Path) -> None:
    budget = Budget(Limits(session_max_judge_calls=100), str(tmp_path))
    path = Path(budget.session_path("s"))
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    problem = budget.acquire("s", 10)
    assert problem is not None and problem.startswith(
        f"budget: this agent session's spend record {path} cannot be read (not JSON")
    assert "delete it to reset" in problem
    assert not isinstance(budget.acquire(None, 10), str)  # no session id: the "default" one


@pytest.mark.parametrize("record", [
    '{"judge_calls": -5, "tokens": 0, "cost_usd": 0, "held": {}}',
    '{"judge_calls": "lots", "tokens": 0, "cost_usd": 0, "held": {}}',
    '{"judge_calls": 0, "tokens": 0, "cost_usd": NaN, "held": {}}',
    '{"judge_calls": 0, "tokens": 0, "cost_usd": 0, "held": {"x.1": [1, 0]}}',
    '{"judge_calls": 0, "tokens": 0}',
    "[]",
])
def test_a_session_record_slopjudge_did_not_write_fails_closed(tmp_path: Path,
                                                                record: str) -> None:
    # A count read as nothing spent would let the session spend again.
    budget = Budget(Limits(session_max_judge_calls=100), str(tmp_path))
    path = Path(budget.session_path("s"))
    path.parent.mkdir(parents=True)
    path.write_text(record)
    problem = budget.acquire("s", 10)
    assert isinstance(problem, str) and f"spend record {path} cannot be read" in problem


def test_a_wait_for_the_first_calls_rates_counts_from_the_ask_not_the_lock(
        tmp_path: Path) -> None:
    # The lock is held past the wait (as a settle holds it across a session's flock) and
    # the first call settles after that: the ask is refused, never reserved past its wait.
    import threading
    import time

    budget = Budget(Limits(max_tokens=10**9), str(tmp_path))
    first = budget.acquire(None, 100, wait_s=1)
    assert not isinstance(first, str)
    held = threading.Event()

    def hold_then_settle() -> None:
        with budget._changed:
            held.set()
            time.sleep(1.0)
        time.sleep(0.3)
        budget.settle(None, first, {"input_tokens": 100})

    thread = threading.Thread(target=hold_then_settle)
    thread.start()
    held.wait()
    got = budget.acquire(None, 100, wait_s=0.5)
    thread.join()
    assert isinstance(got, str) and "no estimate of a call's cost within 0.5 s" in got
