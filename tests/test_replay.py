"""`slopjudge replay`: recorded judge prompts re-judged through another runner, agreement shown."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import (
    commit_all,
    fake_runner,
    make_repo,
    read_jsonl,
    sj,
    write_files,
    write_rule,
)

TEMPLATE = "Is this change fine?\n{{ change }}\n"


def recorded_repo(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "repo", {"a.py": "a = 1\n", "b.py": "b = 1\n"})
    for rid in ("judge-one", "judge-two"):
        write_rule(repo / "rules", rid, f"""
description: {rid}
checks:
  - id: ask
    judge: ./ask.md.j2
""", {"ask.md.j2": f"{rid} asks.\n" + TEMPLATE})
    commit_all(repo, "rules")
    write_files(repo, {"a.py": "a = 'two'\n", "b.py": "b = 'two'\n"})
    passing = fake_runner(tmp_path / "pass.sh", passed=True)
    res = sj("run", "--runner", str(passing), cwd=repo)
    assert res.returncode == 0, res.stdout + res.stderr
    return repo


def replay(repo: Path, runner: Path, *args: str, code: int = 0) -> dict:
    res = sj("replay", "--runner", str(runner), "--format", "json", *args, cwd=repo)
    assert res.returncode == code, res.stdout + res.stderr
    return json.loads(res.stdout)


def test_replay_with_a_refusing_runner_counts_new_refusals(tmp_path: Path) -> None:
    repo = recorded_repo(tmp_path)
    events = read_jsonl(repo / ".slopjudge" / "events.jsonl")
    assert len({e["prompt_sha256"] for e in events}) == 2
    calls = tmp_path / "calls"
    refusing = fake_runner(tmp_path / "refuse.sh", passed=False, reasoning="no", calls=calls)
    out = replay(repo, refusing)
    assert len(calls.read_text().splitlines()) == 2  # one call per kept prompt
    s = out["summary"]
    assert (s["prompts"], s["replayed"], s["new_refusals"], s["new_passes"]) == (2, 2, 2, 0)
    assert s["agreement"] == 0.0
    assert sorted(r["id"] for r in out["rows"]) == ["judge-one/ask", "judge-two/ask"]
    assert all((r["recorded"], r["replayed"]) == ("pass", "refuse") for r in out["rows"])


def test_replay_with_an_agreeing_runner(tmp_path: Path) -> None:
    repo = recorded_repo(tmp_path)
    out = replay(repo, fake_runner(tmp_path / "again.sh", passed=True), "--rule", "judge-two")
    s = out["summary"]
    assert (s["prompts"], s["agreement"], s["new_refusals"]) == (1, 1.0, 0)
    res = sj("replay", "--runner", str(tmp_path / "again.sh"), cwd=repo)
    assert res.returncode == 0
    assert "agreement 1.00" in res.stdout and "0 new refusals" in res.stdout


def test_replay_runner_without_verdict_is_counted_apart(tmp_path: Path) -> None:
    repo = recorded_repo(tmp_path)
    # Nothing replayed: no measurement, so a non-zero exit (2) after the report.
    out = replay(repo, fake_runner(tmp_path / "broken.sh", exit_code=2), code=2)
    s = out["summary"]
    assert (s["replayed"], s["no_verdict"], s["new_refusals"]) == (0, 2, 0)


def test_replay_the_prompt_sent_is_the_recorded_one(tmp_path: Path) -> None:
    repo = recorded_repo(tmp_path)
    seen = tmp_path / "seen"
    seen.mkdir()
    runner = tmp_path / "keep.sh"
    runner.write_text(f"#!/bin/sh\nf=$(mktemp -p {seen})\ncat > \"$f\"\n"
                      "echo '{\"pass\": true, \"reasoning\": \"ok\"}'\n")
    runner.chmod(0o755)
    replay(repo, runner)
    prompts = sorted(p.read_text() for p in seen.iterdir())
    kept = sorted(p.read_text() for p in (repo / ".slopjudge" / "prompts").iterdir())
    assert prompts == kept and len(kept) == 2
    assert all("a = 'two'" in p and "b = 'two'" in p for p in prompts)


def test_replay_without_a_log_or_verdicts(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    runner = fake_runner(tmp_path / "r.sh")
    res = sj("replay", "--runner", str(runner), cwd=repo)
    assert res.returncode == 2 and "no event log" in res.stderr
    (repo / ".slopjudge").mkdir()
    (repo / ".slopjudge" / "events.jsonl").write_text(
        json.dumps({"id": "x/y", "kind": "script", "outcome": "pass"}) + "\n")
    res = sj("replay", "--runner", str(runner), cwd=repo)
    assert res.returncode == 2 and "no recorded judge verdict" in res.stderr
