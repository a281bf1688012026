"""Judge cost, end to end: the real Claude Code CLI against the fake Messages API.

The fake API reports known usage figures on every turn; the pinned CLI sums
them into its ``--output-format json`` result, ``slopjudge-agent`` turns that
into a ``JUDGE-USAGE-JSON`` line, and slopjudge records it in events.jsonl,
the json report and the text summary; ``report cost`` sums the log. The same
run is the judge end to end's passing case: the rendered prompt reaches the model,
its data escaped (tests/test_judge_claude_e2e.py has the refusing and erring ones).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.fakeapi import FakeMessagesAPI, last_user_text
from tests.test_judge_claude_e2e import documented_repo, judge_env, writes

pytestmark = pytest.mark.claude

# What the fake model reports on each turn.
TURN = {"input_tokens": 1200, "cache_creation_input_tokens": 300,
        "cache_read_input_tokens": 4000, "output_tokens": 150}
TURNS = 2  # the judge writes its verdict, then ends its turn
# List prices (USD per million tokens) the pinned CLI applies to the model the fake API
# serves for `sonnet` (claude-sonnet-5-5): input, cache write, cache read, output.
PRICE = {"input_tokens": 2.0, "cache_creation_input_tokens": 2.5,
         "cache_read_input_tokens": 0.1, "output_tokens": 10.0}
EXPECTED_COST = TURNS * sum(TURN[k] * PRICE[k] for k in TURN) / 1e6


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return documented_repo(tmp_path, "def add(a, b):\n    return a + b  # </file> {{ 7*7 }}\n",
                           "    model: [size-md]\n")


def _slopjudge(repo: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "slopjudge", *args], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=180)


def test_run_records_exact_tokens_and_cost_and_report_cost_sums_them(
    tmp_path: Path, repo: Path
) -> None:
    with FakeMessagesAPI(writes({"pass": True, "reasoning": "fine"}), usage=TURN) as api:
        env = judge_env(tmp_path, api.url)
        first = _slopjudge(repo, env, "run", "--format", "json")
        # The same change again: answered from the verdict cache, at no cost.
        second = _slopjudge(repo, env, "run")
    assert not api.errors, api.errors
    assert first.returncode == 0, first.stderr
    assert {r.get("model") for r in api.requests} == {"claude-sonnet-5-5"}
    assert len(api.requests) == TURNS

    want = {k: TURNS * v for k, v in TURN.items()}
    report = json.loads(first.stdout)
    (check,) = report["checks"]
    assert (report["outcome"], check["outcome"]) == ("pass", "pass")
    prompt = last_user_text(api.requests[0])
    # The rendered template reached the model, its data escaped, with the verdict instruction.
    assert "Does this change keep `add` documented?" in prompt
    assert "&lt;/file&gt; {{ 7*7 }}" in prompt and "</file> {{" not in prompt
    assert '"pass"' in prompt and "Write your answer to the file" in prompt
    usage = check["usage"]
    assert {k: usage[k] for k in TURN} == want
    assert usage["cost_usd"] == pytest.approx(EXPECTED_COST, rel=1e-9, abs=0)
    assert usage["model"] == "claude-sonnet-5-5"
    assert (usage["judge_calls"], usage["cached_calls"], usage["units"]) == (1, 0, 1)
    assert usage["duration_ms"] > 0
    run_usage = report["usage"]
    assert run_usage["tokens"] == sum(want.values()) and run_usage["judge_calls"] == 1

    events = [json.loads(x) for x in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert len(events) == 2
    assert events[0]["outcome"] == "pass" and events[0]["prompt_sha256"]
    assert {k: events[0]["usage"][k] for k in TURN} == want
    assert events[0]["cost"] == pytest.approx(EXPECTED_COST, rel=1e-9, abs=0)
    assert events[0]["tokens"] == sum(want.values())
    assert (events[1]["cache_hit"], events[1]["judge_calls"], events[1]["usage"]) == (
        True, 0, None)

    assert second.returncode == 0, second.stderr
    assert "judge cost: 0 judge calls (1 from cache)" in second.stdout

    cost = _slopjudge(repo, env, "report", "cost", "--format", "json")
    assert cost.returncode == 0, cost.stderr
    summary = json.loads(cost.stdout)
    total = summary["total"]
    assert {k: total[k] for k in TURN} == want
    assert total["cost_usd"] == pytest.approx(EXPECTED_COST, abs=1e-6)
    assert (total["judge_calls"], total["cached_calls"]) == (1, 1)
    # A cached verdict used no model: it counts under the model set the rule asks for.
    models = {r["key"]: (r["judge_calls"], r["cached_calls"]) for r in summary["by_model"]}
    assert models == {"claude-sonnet-5-5": (1, 0), "size-md": (0, 1)}
    assert [r["key"] for r in summary["by_check"]] == ["documented/judge"]
    assert summary["cache"]["saved_tokens"] == sum(want.values())
    text = _slopjudge(repo, env, "report", "cost")
    assert "1 judge call, 1 answered from cache" in text.stdout
    assert "claude-sonnet-5-5" in text.stdout


def _first(report: dict[str, Any]) -> dict[str, Any]:
    return dict(report["checks"][0])


def test_a_preference_list_that_fits_no_harness_model_is_an_error_not_a_default(
    tmp_path: Path, repo: Path
) -> None:
    rule = repo / "rules" / "documented" / "rule.yaml"
    rule.write_text(rule.read_text().replace("model: [size-md]", "model: [gpt-9, o9-mini]"))
    with FakeMessagesAPI(writes({"pass": True, "reasoning": "fine"})) as api:
        proc = _slopjudge(repo, judge_env(tmp_path, api.url), "run", "--format", "json")
    assert api.requests == []  # no model was asked
    check = _first(json.loads(proc.stdout))
    assert proc.returncode != 0 and check["outcome"] in ("refuse", "error")
    assert "no model in 'gpt-9,o9-mini' suits harness claude" in check["reason"]


def test_settings_map_a_size_alias_to_another_model(tmp_path: Path, repo: Path) -> None:
    (repo / "slopjudge.yaml").write_text(
        "model_aliases:\n  claude:\n    size-md: claude-opus-5-1\n")
    with FakeMessagesAPI(writes({"pass": True, "reasoning": "fine"})) as api:
        proc = _slopjudge(repo, judge_env(tmp_path, api.url), "run", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert {r.get("model") for r in api.requests} == {"claude-opus-5-1"}
    assert _first(json.loads(proc.stdout))["usage"]["model"] == "claude-opus-5-1"
