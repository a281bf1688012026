"""Usage per judge call: the JUDGE-USAGE-JSON line, slopjudge-agent's reading of the
Claude Code JSON result, the client's reading of the line, the report cost tables."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_agent import PASS, Run, bindir, run  # noqa: F401  (fixtures)

from slopjudge.harnesses.base import alias_overrides
from slopjudge.judging.runner.client import call_runner
from slopjudge.records.costreport import cost_report, render_cost
from slopjudge.usage import (
    add,
    from_claude_result,
    from_codex_events,
    parse_usage_line,
    summary,
    usage_line,
)

RESULT = {
    "type": "result", "subtype": "success", "is_error": False, "duration_ms": 3547,
    "result": json.dumps(PASS), "total_cost_usd": 0.0123,
    "usage": {"input_tokens": 1200, "cache_creation_input_tokens": 300,
              "cache_read_input_tokens": 4000, "output_tokens": 150},
    "modelUsage": {"claude-sonnet-5-5": {"inputTokens": 1200}},
}


def test_the_last_well_formed_usage_line_counts() -> None:
    text = "\n".join([
        'JUDGE-USAGE-JSON: {"input_tokens": 1}',
        "noise",
        'JUDGE-USAGE-JSON: {"input_tokens": 5, "output_tokens": 2, "cost_usd": 0.5}',
        "JUDGE-USAGE-JSON: {broken",
        'JUDGE-USAGE-JSON: ["not", "an", "object"]',
    ])
    assert parse_usage_line(text) == {"input_tokens": 5, "output_tokens": 2, "cost_usd": 0.5}
    assert parse_usage_line("") is None
    assert parse_usage_line("JUDGE-USAGE-JSON: {}") is None


@pytest.mark.parametrize("bad", [-1, "12", True, None, float("nan"), float("inf"), [1]])
def test_values_that_are_not_counts_are_dropped(bad: Any) -> None:
    line = usage_line({"input_tokens": 7}).replace("}", f', "output_tokens": {json.dumps(bad)}}}')
    assert parse_usage_line(line) == {"input_tokens": 7}


def test_adding_usages_sums_counts_and_joins_models() -> None:
    a = {"input_tokens": 1, "cost_usd": 0.25, "model": "haiku"}
    b = {"input_tokens": 2, "output_tokens": 3, "model": "sonnet"}
    assert add(a, b) == {"input_tokens": 3, "output_tokens": 3, "cost_usd": 0.25,
                         "model": "haiku,sonnet"}
    assert add(None, None) is None and add(a, None) == a
    assert add(a, {"model": "haiku"})["model"] == "haiku"
    assert summary(add(a, b), 2, 1) == (
        "2 judge calls (1 from cache), 6 tokens (in 3, out 3, cache 0), $0.2500")


def test_claude_result_and_codex_events() -> None:
    assert from_claude_result(RESULT) == {
        "input_tokens": 1200, "cache_creation_input_tokens": 300,
        "cache_read_input_tokens": 4000, "output_tokens": 150, "cost_usd": 0.0123,
        "duration_ms": 3547, "model": "claude-sonnet-5-5"}
    assert from_claude_result("nope") is None
    events = "\n".join([
        '{"type": "thread.started"}',
        '{"type": "turn.completed", "usage": {"input_tokens": 10, "cached_input_tokens": 4,'
        ' "output_tokens": 2}}',
        "not json",
        '{"type": "turn.completed", "usage": {"input_tokens": 5, "output_tokens": 1}}',
    ])
    # Codex's input_tokens include the cached ones: 10 - 4 uncached, + 5.
    assert from_codex_events(events) == {
        "input_tokens": 11, "cache_read_input_tokens": 4, "output_tokens": 3}


def test_the_agent_prints_the_claude_usage_and_still_reads_the_answer_file(
    run: Run, verifier: str  # noqa: F811
) -> None:
    # The model writes FAIL to the answer file; the JSON result's text says pass:
    # only the answer file counts.
    failing = {"pass": False, "reasoning": "adds slop"}
    p = run("--model", "size-md", "--verify", verifier, "judge",
            plan=[{"write": failing, "stdout": json.dumps(dict(RESULT))}])
    assert p.returncode == 2 and p.stdout == b""
    assert "--output-format" in run.calls()[0]["argv"]
    usage = parse_usage_line(p.stderr.decode())
    assert usage is not None
    assert (usage["input_tokens"], usage["output_tokens"], usage["cost_usd"], usage["model"]) == (
        1200, 150, 0.0123, "claude-sonnet-5-5")


def test_the_agent_sums_usage_over_re_asks(run: Run, verifier: str) -> None:  # noqa: F811
    p = run("--model", "size-md", "--verify", verifier, "judge", plan=[
        {"stdout": json.dumps(dict(RESULT, result="I think it is fine"))},
        {"write": PASS, "stdout": json.dumps(RESULT)},
    ])
    assert p.returncode == 0 and json.loads(p.stdout) == PASS
    usage = parse_usage_line(p.stderr.decode())
    assert usage is not None and usage["input_tokens"] == 2400
    assert usage["cost_usd"] == pytest.approx(0.0246)


def test_the_json_result_text_is_the_fallback_answer(run: Run, verifier: str) -> None:  # noqa: F811
    # No answer file written, but the reply is exactly one verdict object.
    p = run("--model", "size-md", "--verify", verifier, "judge",
            plan=[{"stdout": json.dumps(RESULT)}])
    assert p.returncode == 0 and json.loads(p.stdout) == PASS


def test_an_older_cli_without_json_output_still_works(run: Run, verifier: str) -> None:  # noqa: F811
    p = run("--model", "size-md", "--verify", verifier, "judge",
            plan=[{"stdout": json.dumps(PASS)}])
    assert p.returncode == 0 and json.loads(p.stdout) == PASS
    usage = parse_usage_line(p.stderr.decode())
    assert usage is not None and set(usage) == {"duration_ms", "model"}  # nothing invented


def test_model_aliases_from_the_settings_reach_the_harness(run: Run, verifier: str) -> None:  # noqa: F811
    aliases = json.dumps({"claude": {"size-md": "claude-opus-5-1"}, "codex": {}})
    p = run("--model", "size-md", "--verify", verifier, "judge", plan=[{"write": PASS}],
            SLOPJUDGE_MODEL_ALIASES=aliases)
    argv = run.calls()[0]["argv"]
    assert p.returncode == 0 and argv[argv.index("--model") + 1] == "claude-opus-5-1"
    bad = run("--model", "size-md", "--verify", verifier, "judge",
              SLOPJUDGE_MODEL_ALIASES='{"claude": {"huge": "x"}}')
    assert bad.returncode == 2 and run.calls()[1:] == []
    assert "'huge' is not one of size-xs" in bad.stderr.decode()


def test_a_preference_list_takes_the_first_model_the_harness_runs() -> None:
    from slopjudge.harnesses.claude import ClaudeCode
    from slopjudge.harnesses.codex import Codex

    assert ClaudeCode().resolve_model("gpt-6-luna,size-sm") == "haiku"
    assert Codex().resolve_model("opus,gpt-6-luna") == "gpt-6-luna"
    with pytest.raises(ValueError, match="no model in 'opus,sonnet' suits harness codex"):
        Codex().resolve_model("opus,sonnet")
    assert alias_overrides(None, "claude") == {}
    with pytest.raises(ValueError, match="not JSON"):
        alias_overrides("{", "claude")


def test_the_client_reads_the_usage_line_and_sums_it_over_retries(tmp_path: Path) -> None:
    runner = tmp_path / "runner.py"
    count = tmp_path / "count"
    runner.write_text(f"""#!{sys.executable}
import os, sys
sys.stdin.read()
n = len(open({str(count)!r}).read()) if os.path.exists({str(count)!r}) else 0
open({str(count)!r}, "a").write("x")
print('JUDGE-USAGE-JSON: {{"input_tokens": 100, "cost_usd": 0.5}}', file=sys.stderr)
if n == 0:
    print("sr-agent: harness-failure: other", file=sys.stderr)
    sys.exit(1)
print('{{"pass": true, "reasoning": "ok"}}')
""")
    runner.chmod(0o755)
    outcome = call_runner([str(runner)], "p", cwd=str(tmp_path), timeout=30, launched_by="r/c",
                          min_confidence=None, retries=1, backoff_s=0)
    assert outcome.passed and outcome.attempts == 2
    assert outcome.usage == {"input_tokens": 200, "cost_usd": 1.0}


def _event(**kw: Any) -> dict[str, Any]:
    base = {"kind": "judge", "rule": "r", "check": "c", "id": "r/c", "model": "size-md",
            "time": "2026-11-30T10:00:00.000Z", "judge_calls": 1, "cached_calls": 0,
            "usage": {"input_tokens": 100, "output_tokens": 10, "cost_usd": 0.01,
                      "model": "claude-haiku-5-5"}}
    base.update(kw)
    return base


def test_report_cost_groups_by_rule_check_model_and_day_and_prices_the_cache() -> None:
    events = [
        _event(),
        _event(time="2026-12-01T09:00:00.000Z", rule="s", id="s/c"),
        _event(judge_calls=0, cached_calls=1, usage=None, cache_hit=True),
        {"kind": "script", "id": "x/y", "rule": "x", "outcome": "pass"},
        _event(judge_calls=2, usage={"input_tokens": 300, "cost_usd": 0.04, "model": "opus"}),
    ]
    report = cost_report(events)
    total = report["total"]
    assert (total["judge_calls"], total["cached_calls"], total["input_tokens"]) == (4, 1, 500)
    assert total["cost_usd"] == pytest.approx(0.06)
    assert [r["key"] for r in report["by_rule"]] == ["r", "s"]
    assert [r["key"] for r in report["by_day"]] == ["2026-11-30", "2026-12-01"]
    assert {r["key"]: r["judge_calls"] for r in report["by_model"]} == {
        "claude-haiku-5-5": 2, "opus": 2, "size-md": 0}
    # r/c: 3 calls for 0.05 and 410 tokens; its one cached unit saved a mean call.
    assert report["cache"]["cached_calls"] == 1
    assert report["cache"]["saved_cost_usd"] == pytest.approx(0.05 / 3, abs=1e-6)
    assert report["cache"]["saved_tokens"] == round(410 / 3)
    text = render_cost("events.jsonl", report)
    assert text.splitlines()[0] == (
        "events.jsonl: 4 judge calls, 1 answered from cache, 520 tokens, $0.0600")
    assert "claude-haiku-5-5" in text and "2026-12-01" in text


def test_report_cost_drops_what_a_runner_s_usage_would_drop() -> None:
    # json reads NaN and Infinity: a hand-edited log line must not stop the report.
    usage = {"input_tokens": float("nan"), "output_tokens": float("inf"), "cost_usd": -1,
             "cache_read_input_tokens": -5, "model": "opus"}
    events = [_event(usage=usage), _event(usage=None, judge_calls=float("inf"),
                                          cached_calls=float("nan"))]
    total = cost_report(events)["total"]
    assert (total["tokens"], total["cost_usd"], total["judge_calls"]) == (0, 0.0, 1)
    assert total["cached_calls"] == 0


def test_report_cost_on_a_log_with_no_judges(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    log.write_text('{"kind": "script", "id": "a/b"}\n{"torn":')
    proc = subprocess.run([sys.executable, "-m", "slopjudge", "report", "cost", "--events",
                           str(log)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"{log}: 0 judge calls, 0 answered from cache, 0 tokens")


def test_codex_json_events_give_the_reply_and_the_usage() -> None:
    from slopjudge.harnesses.codex import Codex

    stream = "\n".join([
        '{"type": "thread.started", "thread_id": "t"}',
        '{"type": "item.completed", "item": {"type": "agent_message", "text": "thinking"}}',
        '{"type": "turn.completed", "usage": {"input_tokens": 50, "cached_input_tokens": 20,'
        ' "output_tokens": 7}}',
        '{"type": "item.completed", "item": {"type": "agent_message",'
        ' "text": "{\\"pass\\": true, \\"reasoning\\": \\"ok\\"}"}}',
        '{"type": "turn.completed", "usage": {"input_tokens": 10, "output_tokens": 3}}',
    ]).encode()
    reply, usage = Codex().parse_output(stream)
    assert json.loads(reply) == {"pass": True, "reasoning": "ok"}
    assert usage == {"input_tokens": 40, "cache_read_input_tokens": 20, "output_tokens": 10}
    plain = json.dumps(PASS).encode()
    assert Codex().parse_output(plain) == (plain, None)
