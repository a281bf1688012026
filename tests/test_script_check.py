"""Script checks (SPEC §4): exit codes, reasons, timeouts, signals, environment, stdin."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from slopjudge.checks import engine
from slopjudge.checks.options import RunOptions
from slopjudge.model import Changeset, Check, CheckResult, Event, FileChange, Rule
from tests.helpers import (
    commit_all,
    executable,
    kill_quietly,
    make_repo,
    py,
    run_json,
    sh,
    sj,
    wait_gone,
    write_files,
    write_rule,
)


def _rule(folder: Path, script: str, timeout: float = 30.0) -> Rule:
    check = Check(id="check", rule="r", kind="script", script=script, timeout=timeout)
    return Rule(id="r", path=str(folder / "rule.yaml"), dir=str(folder),
                description="r test rule", checks=[check])


def run_body(tmp_path: Path, body: str, *, timeout: float = 30.0, python: bool = False,
             event: Event | None = None) -> CheckResult:
    """Run one script check through the engine on a one-file change."""
    folder = tmp_path / "rules" / "r"
    script = executable(folder / "check", py(body) if python else sh(body))
    change = Changeset(files=[FileChange(path="a.py", status="A", new_content="x = 1\n",
                                         diff="+x = 1\n", added=1)])
    [result] = engine.run([_rule(folder, str(script), timeout)], event or Event(kind="ci"), change,
                          workspace=str(tmp_path), options=RunOptions(jobs=2))
    return result


def test_exit_zero_passes(tmp_path: Path) -> None:
    result = run_body(tmp_path, "cat >/dev/null; exit 0")
    assert result.outcome == "pass", result.reason


def test_refusal_reason_and_findings_from_json(tmp_path: Path) -> None:
    result = run_body(
        tmp_path,
        """
cat >/dev/null
echo '{"reason": "TODO left in a.py", "findings": [{"path": "a.py", "line": 3, "message": "TODO here"}]}'
echo 'ignored because stdout has JSON' >&2
exit 1""",  # noqa: E501 (one JSON line, as a script prints it)
    )
    assert result.outcome == "refuse"
    assert result.reason == "TODO left in a.py"
    assert [(f.path, f.line, f.message) for f in result.findings] == [("a.py", 3, "TODO here")]


def test_refusal_reason_from_plain_stdout(tmp_path: Path) -> None:
    result = run_body(tmp_path, "echo 'plain words on stdout'; echo 'stderr words' >&2; exit 3")
    assert result.outcome == "refuse"
    assert result.reason == "plain words on stdout"


def test_refusal_reason_from_stderr_only(tmp_path: Path) -> None:
    result = run_body(tmp_path, "echo 'only stderr speaks' >&2; exit 1")
    assert result.outcome == "refuse"
    assert result.reason == "only stderr speaks"


def test_refusal_without_words_gets_a_fixed_sentence(tmp_path: Path) -> None:
    result = run_body(tmp_path, "exit 4")
    assert result.outcome == "refuse"
    assert "status 4" in result.reason


def test_json_stdout_with_exit_zero_still_passes_even_with_a_reason(tmp_path: Path) -> None:
    result = run_body(tmp_path, """echo '{"reason": "all good"}'""")
    assert result.outcome == "pass"


def test_killed_by_a_signal_names_it(tmp_path: Path) -> None:
    result = run_body(tmp_path, "kill -KILL $$")
    assert result.outcome == "error"
    assert "SIGKILL" in result.reason


def test_timeout_kills_the_whole_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    body = f"""
sleep 60 &
echo $! > "{pidfile}"
sleep 60
"""
    try:
        result = run_body(tmp_path, body, timeout=0.5)
        assert result.outcome == "error"
        assert result.reason == "timed out after 0.5 s"
        pid = int(pidfile.read_text())
        assert wait_gone([pid], within=3.0) == [], "the grandchild outlived its check"
    finally:
        if pidfile.exists():
            kill_quietly([int(pidfile.read_text())])


def test_grandchild_left_running_after_a_pass_is_reaped(tmp_path: Path) -> None:
    """A check owns its whole process group: a background child dies with it."""
    pidfile = tmp_path / "bg.pid"
    try:
        result = run_body(tmp_path, f'sleep 60 >/dev/null 2>&1 &\necho $! > "{pidfile}"\nexit 0')
        assert result.outcome == "pass"
        assert wait_gone([int(pidfile.read_text())], within=3.0) == []
    finally:
        if pidfile.exists():
            kill_quietly([int(pidfile.read_text())])


def test_script_gone_after_load_errors_could_not_start(tmp_path: Path) -> None:
    folder = tmp_path / "rules" / "r"
    folder.mkdir(parents=True)
    rule = _rule(folder, str(folder / "vanished"))
    [result] = engine.run([rule], Event(kind="ci"),
                          Changeset(files=[FileChange(path="a", status="A", diff="+a\n")]),
                          workspace=str(tmp_path), options=RunOptions(jobs=1))
    assert result.outcome == "error"
    assert "could not start" in result.reason


def test_script_not_executable_after_load_errors(tmp_path: Path) -> None:
    folder = tmp_path / "rules" / "r"
    script = folder / "check"
    folder.mkdir(parents=True)
    script.write_text("#!/bin/sh\nexit 0\n")  # no x bit
    [result] = engine.run([_rule(folder, str(script))], Event(kind="ci"),
                          Changeset(files=[FileChange(path="a", status="A", diff="+a\n")]),
                          workspace=str(tmp_path), options=RunOptions(jobs=1))
    assert result.outcome == "error"
    assert "could not start" in result.reason


def test_missing_script_is_a_load_error(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    write_rule(repo / "rules", "gone", """
description: a rule whose script is missing
checks:
  - script: ./nowhere.sh
""")
    res = sj("validate", cwd=repo)
    assert res.returncode == 1
    lines = [ln for ln in res.stdout.splitlines() if "nowhere.sh" in ln]
    assert lines and lines[0].startswith("rules/gone/rule.yaml:"), res.stdout
    # run refuses to go on with a rules folder that does not load
    res = sj("run", cwd=repo)
    assert res.returncode == 2, res.stdout + res.stderr


def test_environment_cwd_and_payload(tmp_path: Path) -> None:
    """Through the CLI on a real repo: SLOPJUDGE_* variables, cwd and every §3 key on stdin."""
    repo = make_repo(tmp_path / "repo", {"src/app.py": "x = 1\n", "docs/a.md": "a\n"})
    seen = tmp_path / "seen.json"
    write_rule(repo / "rules", "env-rule", """
description: records what it sees
paths: ["src/**"]
checks:
  - id: look
    script: ./look.py
""", {"look.py": py(f"""
import json, os, sys
data = json.load(sys.stdin)
keys = ["SLOPJUDGE_RULE", "SLOPJUDGE_RULE_DIR", "SLOPJUDGE_WORKSPACE", "SLOPJUDGE_EVENT",
        "SLOPJUDGE_SESSION_ID"]
json.dump({{"env": {{k: os.environ.get(k) for k in keys}}, "cwd": os.getcwd(),
           "payload": data}}, open({str(seen)!r}, "w"))
""")})
    commit_all(repo, "rules")
    write_files(repo, {"src/app.py": "x = 22\n", "docs/a.md": "bb\n"})
    code, report = run_json(cwd=repo)
    assert code == 0, report
    got = json.loads(seen.read_text())
    rule_dir = str((repo / "rules" / "env-rule").resolve())
    assert got["env"] == {
        "SLOPJUDGE_RULE": "env-rule", "SLOPJUDGE_RULE_DIR": rule_dir,
        "SLOPJUDGE_WORKSPACE": str(repo.resolve()), "SLOPJUDGE_EVENT": "ci",
        "SLOPJUDGE_SESSION_ID": "",
    }
    assert os.path.realpath(got["cwd"]) == os.path.realpath(rule_dir)
    p = got["payload"]
    assert set(p) >= {"event", "rule", "check", "workspace", "changeset", "change",
                      "additionalContext", "rubric"}
    assert set(p["event"]) >= {"kind", "tool_name", "tool_input", "session_id",
                               "transcript_path", "cwd"}
    assert p["event"]["kind"] == "ci"
    assert p["rule"] == {"id": "env-rule", "dir": rule_dir, "description": "records what it sees"}
    assert p["check"] == {"id": "look"}
    assert p["workspace"] == str(repo.resolve())
    assert set(p["changeset"]) >= {"base", "head", "commits", "files", "others"}
    [f] = p["changeset"]["files"]
    assert set(f) >= {"path", "status", "oldPath", "oldContent", "newContent", "diff", "binary"}
    assert (f["path"], f["status"], f["oldContent"], f["newContent"]) == (
        "src/app.py", "M", "x = 1\n", "x = 22\n")
    assert [o["path"] for o in p["changeset"]["others"]] == ["docs/a.md"]
    assert "+x = 22" in p["change"] and "docs/a.md" not in p["change"]


def test_findings_reach_the_json_report(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    write_rule(
        repo / "rules",
        "finds",
        """
description: refuses with findings
checks:
  - id: scan
    script: ./scan.sh
""",
        {
            "scan.sh": sh("""
cat >/dev/null
echo '{"reason": "two problems", "findings": [{"path": "README.md", "line": 1, "message": "first"}, {"path": "README.md", "line": 2, "message": "second"}]}'
exit 1""")  # noqa: E501 (one JSON line, as a script prints it)
        },
    )
    write_files(repo, {"README.md": "changed\n"})
    code, report = run_json(cwd=repo)
    assert code == 1
    [check] = report["checks"]
    assert check["outcome"] == "refuse" and check["reason"] == "two problems"
    assert check["findings"] == [
        {"path": "README.md", "line": 1, "message": "first"},
        {"path": "README.md", "line": 2, "message": "second"},
    ]


@pytest.mark.parametrize("stdout", ["[1, 2]", '{"reason": 5}', "{not json"])
def test_odd_stdout_still_refuses_with_some_reason(tmp_path: Path, stdout: str) -> None:
    result = run_body(tmp_path, f"echo '{stdout}'; exit 1")
    assert result.outcome == "refuse"
    assert result.reason.strip()
