"""CLI hygiene around outcomes: bad options fail before any check runs; agreement and
replay never count a runner error as a verdict, and say so when nothing could be compared.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import (
    commit_all,
    executable,
    make_repo,
    read_jsonl,
    run_json,
    script_rule,
    sh,
    sj,
    write_files,
    write_rule,
)

PASS = '{"pass": true, "reasoning": "clean"}'


def marked_repo(tmp_path: Path) -> Path:
    """A changed repo whose one script check leaves a marker when it runs."""
    repo = make_repo(tmp_path / "repo", {"a.py": "a = 1\n"})
    script_rule(repo / "rules", "scripted", f'cat >/dev/null; touch "{tmp_path / "ran"}"')
    commit_all(repo, "rules")
    write_files(repo, {"a.py": "a = 2\n"})
    return repo


@pytest.mark.parametrize(("output", "message"), [
    ("rules", "slopjudge: --output rules: is a directory"),
    ("no/such/dir/report.json", "slopjudge: --output no/such/dir/report.json: no folder "),
])
def test_output_is_checked_before_any_check_runs(tmp_path: Path, output: str,
                                                 message: str) -> None:
    repo = marked_repo(tmp_path)
    res = sj("run", "--format", "json", "--output", output, cwd=repo)
    assert res.returncode == 2
    assert res.stderr.startswith(message) and len(res.stderr.splitlines()) == 1, res.stderr
    assert not (tmp_path / "ran").exists(), "a check ran before --output was found unusable"


def test_output_that_can_be_written_gets_the_report(tmp_path: Path) -> None:
    repo = marked_repo(tmp_path)
    res = sj("run", "--format", "json", "--output", "report.json", cwd=repo)
    assert (res.returncode, res.stdout) == (0, "")
    assert json.loads((repo / "report.json").read_text())["outcome"] == "pass"


@pytest.mark.parametrize("jobs", ["0", "-3"])
def test_jobs_below_one_is_refused(tmp_path: Path, jobs: str) -> None:
    repo = marked_repo(tmp_path)
    res = sj("run", "--jobs", jobs, cwd=repo)
    assert res.returncode == 2
    assert res.stderr == f"slopjudge: --jobs takes a number of at least 1, not {jobs}\n"
    assert not (tmp_path / "ran").exists()


def test_base_help_says_it_judges_from_the_merge_base(tmp_path: Path) -> None:
    res = sj("run", "--help", cwd=tmp_path)
    assert res.returncode == 0
    assert "merge base" in " ".join(res.stdout.split())


def test_test_with_an_unknown_rule_exits_2(tmp_path: Path) -> None:
    repo = marked_repo(tmp_path)
    res = sj("test", "--rule", "nope", cwd=repo)
    assert (res.returncode, res.stderr) == (2, "slopjudge: no such rule: nope\n")
    # Control: a known rule with no cases is not an unknown rule.
    assert sj("test", "--rule", "scripted", cwd=repo).returncode == 0


# --- agreement and replay count only verdicts ---------------------------------------------


def judged_log(tmp_path: Path) -> Path:
    """A repo whose event log holds one runner error and one real refusal."""
    repo = make_repo(tmp_path / "repo", {"a.py": "a = 1\n", "b.py": "b = 1\n"})
    for rid in ("one", "two"):
        write_rule(repo / "rules", rid, f"""
description: {rid}
checks:
  - id: ask
    judge: ./ask.md.j2
""", {"ask.md.j2": f"{rid}: is this fine?\n{{{{ change }}}}\n"})
    commit_all(repo, "rules")
    write_files(repo, {"a.py": "a = 2\n"})
    auth = executable(tmp_path / "auth.sh", sh(
        "cat >/dev/null\necho 'sr-agent: harness-failure: authentication' >&2\nexit 1"))
    code, report = run_json("--runner", str(auth), "--rule", "one", cwd=repo)
    assert (code, report["checks"][0]["outcome"]) == (2, "error")
    refuse = executable(tmp_path / "refuse.sh", sh(
        "cat >/dev/null\necho '{\"pass\": false, \"reasoning\": \"no\"}'"))
    code, report = run_json("--runner", str(refuse), "--rule", "two", cwd=repo)
    assert (code, report["checks"][0]["outcome"]) == (1, "refuse")
    return repo


def test_agreement_skips_runner_errors_and_says_so(tmp_path: Path) -> None:
    repo = judged_log(tmp_path)
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"id": "one/ask", "label": "pass"}\n{"id": "two/ask", "label": "refuse"}\n')
    res = sj("report", "agreement", "--labels", str(labels), cwd=repo)
    assert res.returncode == 0, res.stderr
    assert "2 labels, 1 matched a recorded verdict, 1 with none" in res.stdout
    assert "skipped 1 judge record(s) that are not verdicts" in res.stdout
    assert "accuracy        1.000" in res.stdout  # the error is not a false refusal
    res = sj("report", "agreement", "--labels", str(labels), "--format", "json", cwd=repo)
    out = json.loads(res.stdout)
    assert (out["n"], out["skipped"], out["false_refusals"]) == (1, 1, 0)


def test_agreement_with_nothing_to_compare_exits_2(tmp_path: Path) -> None:
    repo = judged_log(tmp_path)
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"id": "one/ask", "label": "pass"}\n')  # only an error recorded
    res = sj("report", "agreement", "--labels", str(labels), cwd=repo)
    assert res.returncode == 2
    assert "nothing to compare" in res.stdout and "skipped 1" in res.stdout


def test_agreement_skips_crashes_an_older_log_recorded_as_refusals(tmp_path: Path) -> None:
    repo = judged_log(tmp_path)
    log = repo / ".slopjudge" / "events.jsonl"
    events = read_jsonl(log)
    for ev in events:
        if ev["outcome"] == "error":
            ev["outcome"] = "refuse"  # what logs said before errors were told apart
    log.write_text("".join(json.dumps(ev) + "\n" for ev in events))
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"id": "one/ask", "label": "pass"}\n')
    res = sj("report", "agreement", "--labels", str(labels), "--format", "json", cwd=repo)
    assert res.returncode == 2
    out = json.loads(res.stdout)
    assert (out["n"], out["false_refusals"], out["skipped"]) == (0, 0, 1)


def test_replay_skips_runner_errors(tmp_path: Path) -> None:
    repo = judged_log(tmp_path)
    again = executable(tmp_path / "again.sh", sh(
        "cat >/dev/null\necho '{\"pass\": false, \"reasoning\": \"no\"}'"))
    res = sj("replay", "--runner", str(again), "--format", "json", cwd=repo)
    assert res.returncode == 0, res.stderr
    summary = json.loads(res.stdout)["summary"]
    assert (summary["prompts"], summary["replayed"], summary["skipped_records"]) == (1, 1, 1)
    assert summary["agreement"] == 1.0
    assert "skipped 1 recorded judge outcome(s) that are not verdicts" in res.stderr


def test_replay_with_nothing_replayed_exits_2(tmp_path: Path) -> None:
    repo = judged_log(tmp_path)
    broken = executable(tmp_path / "broken.sh", sh("cat >/dev/null\nexit 3"))
    res = sj("replay", "--runner", str(broken), cwd=repo)
    assert res.returncode == 2
    assert "slopjudge: nothing was replayed: 1 prompt(s), no new verdict" in res.stderr
    assert "replayed 0/1 prompts" in res.stdout


def test_replay_with_only_errors_recorded_exits_2(tmp_path: Path) -> None:
    repo = judged_log(tmp_path)
    res = sj("replay", "--runner", str(tmp_path / "refuse.sh"), "--rule", "one", cwd=repo)
    assert res.returncode == 2
    assert "no recorded judge verdict with a kept prompt to replay" in res.stderr


@pytest.mark.parametrize("argv", [["--base", ""], ["--diff", ""],
                                  ["--base", "HEAD", "--head", " "]])
def test_an_empty_source_value_is_refused_not_read_as_the_work_tree(tmp_path: Path,
                                                                     argv: list[str]) -> None:
    """``--base "$UNSET_VAR"`` in a CI script: a usage error, never "nothing to check"."""
    repo = marked_repo(tmp_path)
    res = sj("run", *argv, cwd=repo)
    assert res.returncode == 2, res.stdout
    assert res.stderr == f"slopjudge: --{argv[-2][2:]} was given an empty value\n"
    assert not (tmp_path / "ran").exists()
