"""Honest outcomes from `slopjudge run`, driven as a user would: a subprocess in a real git repo.

A check that could not decide (runner missing, authentication, usage limit,
timeout, crash, signal, no verdict, output over the limit, a broken prepare,
a script that cannot finish) is an ``error``: the run exits 2 and every
report format says "error", never "refuse". A judge's valid ``pass: false``
and a script's non-zero exit are refusals: exit 1. Only the model is faked
(a runner script speaking the sr-agent contract).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.helpers import (
    by_id,
    commit_all,
    executable,
    make_repo,
    read_jsonl,
    run_json,
    sh,
    sj,
    write_files,
    write_rule,
)

TEMPLATE = "Is this change fine?\n{{ change }}\n"
PASS = '{"pass": true, "reasoning": "clean"}'
REFUSE = '{"pass": false, "reasoning": "the helper duplicates utils.slugify"}'


def judged_repo(tmp_path: Path, *, timeout: str = "20s", prepare: str | None = None) -> Path:
    """A repo with one judge rule (``judged/ask``) and a changed file for it to judge."""
    repo = make_repo(tmp_path / "repo", {"a.py": "a = 1\n"})
    files = {"ask.md.j2": TEMPLATE}
    prep = ""
    if prepare is not None:
        files["prep.sh"] = sh(prepare)
        prep = "    prepare: ./prep.sh\n"
    write_rule(repo / "rules", "judged", f"""
description: asks a judge
checks:
  - id: ask
    judge: ./ask.md.j2
    timeout: {timeout}
{prep}""", files)
    commit_all(repo, "rules")
    write_files(repo, {"a.py": "a = 'two'\n"})
    return repo


def runner(tmp_path: Path, body: str) -> Path:
    """A fake judge runner: counts its calls, then runs ``body``."""
    calls = tmp_path / "calls"
    return executable(tmp_path / "runner.sh", sh(f'cat >/dev/null\necho call >> "{calls}"\n'
                                                 + body))


def calls(tmp_path: Path) -> int:
    path = tmp_path / "calls"
    return len(path.read_text().splitlines()) if path.exists() else 0


# Each runner misbehaviour, what the report must say, and how often the runner may be asked.
UNDECIDED = {
    "authentication": (
        "echo 'sr-agent: harness-failure: authentication' >&2\n"
        "echo 'claude exited with status 1: invalid x-api-key' >&2\nexit 1",
        "judge unavailable: authentication", 1),
    "usage limit": (
        "echo 'sr-agent: harness-failure: usage limit' >&2\nexit 1",
        "judge unavailable: usage limit (after 2 attempts)", 2),
    "version skew": (
        "echo 'sr-agent: harness-failure: version skew' >&2\nexit 1",
        "judge unavailable: version skew", 1),
    "no verdict": ("echo 'LGTM, ship it'", "the judge gave no verdict", 1),
    "empty answer": ("exit 0", "the judge gave no verdict", 1),
    "crash": ("echo 'Traceback: boom' >&2\nexit 3",
              "the judge gave no verdict (runner exited with status 3: Traceback: boom)", 1),
    "killed by a signal": ("kill -9 $$", "signal 9", 1),
    "a pass then a non-zero exit": (f"echo '{PASS}'\nexit 2", "the judge gave no verdict", 1),
}


@pytest.mark.parametrize("case", sorted(UNDECIDED))
def test_a_judge_that_could_not_decide_is_an_error(tmp_path: Path, case: str) -> None:
    body, reason, asked = UNDECIDED[case]
    repo = judged_repo(tmp_path)
    code, report = run_json("--runner", str(runner(tmp_path, body)), cwd=repo)
    check = by_id(report)["judged/ask"]
    assert (code, report["outcome"], check["outcome"]) == (2, "error", "error"), check
    assert reason in check["reason"]
    assert calls(tmp_path) == asked
    # The event log says error too: agreement and replay must not read it as a verdict.
    [event] = read_jsonl(repo / ".slopjudge" / "events.jsonl")
    assert event["outcome"] == "error"


def test_missing_runner_is_an_error(tmp_path: Path) -> None:
    repo = judged_repo(tmp_path)
    code, report = run_json("--runner", str(tmp_path / "no-such-runner"), cwd=repo)
    check = by_id(report)["judged/ask"]
    assert (code, check["outcome"]) == (2, "error")
    assert check["reason"] == f"judge could not start: {tmp_path / 'no-such-runner'}: not found"


def test_timeout_is_an_error(tmp_path: Path) -> None:
    repo = judged_repo(tmp_path, timeout="1s")
    code, report = run_json("--runner", str(runner(tmp_path, "sleep 30")), cwd=repo)
    check = by_id(report)["judged/ask"]
    assert (code, check["outcome"], check["reason"]) == (2, "error", "judge timed out after 1 s")
    assert calls(tmp_path) == 1  # a timeout is never retried


def test_output_over_the_limit_is_an_error_not_a_truncated_pass(tmp_path: Path) -> None:
    # A pass, then 65 MiB, then a refusal: never cut down into the pass at the top.
    body = (f"echo '{PASS}'\n"
            "head -c 68157440 /dev/zero | tr '\\0' 'x'\necho\n"
            f"echo '{REFUSE}'")
    repo = judged_repo(tmp_path)
    code, report = run_json("--runner", str(runner(tmp_path, body)), cwd=repo)
    check = by_id(report)["judged/ask"]
    assert (code, check["outcome"], check["reason"]) == (2, "error", "judge output over 16 MiB")


def test_output_over_the_limit_on_stderr_is_an_error(tmp_path: Path) -> None:
    body = f"head -c 20000000 /dev/zero | tr '\\0' 'x' >&2\necho '{PASS}'"
    repo = judged_repo(tmp_path)
    code, report = run_json("--runner", str(runner(tmp_path, body)), cwd=repo)
    assert (code, by_id(report)["judged/ask"]["outcome"]) == (2, "error")


def test_output_under_the_limit_still_judges(tmp_path: Path) -> None:
    # Control for the two above: big chatter on stderr alone does not stop a real verdict.
    body = f"head -c 1000000 /dev/zero | tr '\\0' 'x' >&2\necho '{REFUSE}'"
    repo = judged_repo(tmp_path)
    code, report = run_json("--runner", str(runner(tmp_path, body)), cwd=repo)
    check = by_id(report)["judged/ask"]
    assert (code, check["outcome"]) == (1, "refuse")
    assert check["reason"] == "the helper duplicates utils.slugify"


@pytest.mark.parametrize(("body", "code", "outcome"), [
    (f"echo '{PASS}'", 0, "pass"),
    (f"echo '{REFUSE}'", 1, "refuse"),
    # The verifier's final "pass: false" as sr-agent reports it: a real verdict.
    ("echo 'JUDGE-REASON-JSON: \"the helper duplicates utils.slugify\"' >&2\nexit 2",
     1, "refuse"),
])
def test_a_real_verdict_passes_or_refuses(tmp_path: Path, body: str, code: int,
                                          outcome: str) -> None:
    repo = judged_repo(tmp_path)
    got, report = run_json("--runner", str(runner(tmp_path, body)), cwd=repo)
    assert (got, report["outcome"], by_id(report)["judged/ask"]["outcome"]) == (
        code, outcome, outcome)


@pytest.mark.parametrize("prepare", [
    "cat >/dev/null; echo 'cannot read the schema' >&2; exit 4",
    "cat >/dev/null; echo 'not json'",
    "cat >/dev/null; kill -9 $$",
])
def test_a_broken_prepare_is_an_error_and_the_model_is_not_asked(tmp_path: Path,
                                                                  prepare: str) -> None:
    repo = judged_repo(tmp_path, prepare=prepare)
    code, report = run_json("--runner", str(runner(tmp_path, f"echo '{PASS}'")), cwd=repo)
    check = by_id(report)["judged/ask"]
    assert (code, check["outcome"]) == (2, "error")
    assert "before the model was asked" in check["reason"]
    assert calls(tmp_path) == 0


def script_repo(tmp_path: Path, body: str, timeout: str = "20s") -> Path:
    repo = make_repo(tmp_path / "repo", {"a.py": "a = 1\n"})
    write_rule(repo / "rules", "scripted", f"""
description: a script check
checks:
  - id: check
    script: ./check.sh
    timeout: {timeout}
""", {"check.sh": sh(body)})
    commit_all(repo, "rules")
    write_files(repo, {"a.py": "a = 'two'\n"})
    return repo


@pytest.mark.parametrize(("body", "timeout", "code", "outcome", "reason"), [
    ("cat >/dev/null; echo 'TODO left in a.py'; exit 1", "20s", 1, "refuse", "TODO left in a.py"),
    ("cat >/dev/null; exit 0", "20s", 0, "pass", ""),
    ("cat >/dev/null; kill -KILL $$", "20s", 2, "error", "script was killed by SIGKILL"),
    ("cat >/dev/null; kill -TERM $$", "20s", 2, "error", "script was killed by SIGTERM"),
    ("cat >/dev/null; sleep 30", "1s", 2, "error", "timed out after 1 s"),
])
def test_script_outcomes(tmp_path: Path, body: str, timeout: str, code: int, outcome: str,
                         reason: str) -> None:
    repo = script_repo(tmp_path, body, timeout)
    got, report = run_json(cwd=repo)
    check = by_id(report)["scripted/check"]
    assert (got, check["outcome"], check["reason"]) == (code, outcome, reason)


def test_a_script_that_cannot_start_is_an_error(tmp_path: Path) -> None:
    # The interpreter named on the #! line is gone: exec fails, the script never ran.
    repo = make_repo(tmp_path / "repo", {"a.py": "a = 1\n"})
    write_rule(repo / "rules", "scripted", """
description: a script check
checks:
  - id: check
    script: ./check.sh
""", {"check.sh": "#!/no/such/interpreter\nexit 0\n"})
    commit_all(repo, "rules")
    write_files(repo, {"a.py": "a = 'two'\n"})
    res = sj("run", "--format", "json", cwd=repo)
    report = json.loads(res.stdout)
    check = by_id(report)["scripted/check"]
    assert (res.returncode, check["outcome"]) == (2, "error"), check
    assert "could not start" in check["reason"]


# --- every report format tells an error from a refusal ----------------------------------


def mixed_repo(tmp_path: Path) -> tuple[Path, Path]:
    """One refusing script check and one judge check whose runner cannot authenticate."""
    repo = judged_repo(tmp_path)
    write_rule(repo / "rules", "scripted", """
description: a script check
checks:
  - id: check
    script: ./check.sh
""", {"check.sh": sh("cat >/dev/null\n"
                     "echo '{\"reason\": \"TODO left\", \"findings\": "
                     "[{\"path\": \"a.py\", \"line\": 1, \"message\": \"TODO here\"}]}'\nexit 1")})
    commit_all(repo, "rules")
    write_files(repo, {"a.py": "a = 'three'\n"})
    auth = runner(tmp_path, "echo 'sr-agent: harness-failure: authentication' >&2\nexit 1")
    return repo, auth


def test_json_report(tmp_path: Path) -> None:
    repo, auth = mixed_repo(tmp_path)
    code, report = run_json("--runner", str(auth), cwd=repo)
    assert (code, report["outcome"]) == (2, "error")
    checks = by_id(report)
    assert checks["scripted/check"]["outcome"] == "refuse"
    assert checks["judged/ask"]["outcome"] == "error"
    assert checks["judged/ask"]["reason"] == "judge unavailable: authentication"


def test_only_refusals_exit_1(tmp_path: Path) -> None:
    repo, _ = mixed_repo(tmp_path)
    ok = runner(tmp_path, f"echo '{PASS}'")
    code, report = run_json("--runner", str(ok), cwd=repo)
    assert (code, report["outcome"]) == (1, "refuse")


def test_text_report(tmp_path: Path) -> None:
    repo, auth = mixed_repo(tmp_path)
    res = sj("run", "--runner", str(auth), cwd=repo)
    assert res.returncode == 2
    lines = res.stdout.splitlines()
    assert any(ln.split()[:2] == ["ERROR", "judged/ask"]
               and "judge unavailable: authentication" in ln for ln in lines), res.stdout
    assert any(ln.split()[:2] == ["REFUSE", "scripted/check"] for ln in lines), res.stdout
    assert "not a finding in the change" in res.stdout
    assert lines[-1] == "slopjudge: ERROR: 2 checks: 1 errored, 1 refused"


def test_junit_report(tmp_path: Path) -> None:
    repo, auth = mixed_repo(tmp_path)
    res = sj("run", "--runner", str(auth), "--format", "junit", cwd=repo)
    assert res.returncode == 2
    root = ET.fromstring(res.stdout)
    assert (root.get("failures"), root.get("errors")) == ("1", "1")
    cases = {c.get("name"): c for c in root.iter("testcase")}
    judged, scripted = cases["judged/ask"], cases["scripted/check"]
    assert judged.find("failure") is None
    error = judged.find("error")
    assert error is not None and error.get("message") == "judge unavailable: authentication"
    assert scripted.find("error") is None
    failure = scripted.find("failure")
    assert failure is not None and failure.get("message") == "TODO left"


def test_sarif_report(tmp_path: Path) -> None:
    repo, auth = mixed_repo(tmp_path)
    res = sj("run", "--runner", str(auth), "--format", "sarif", cwd=repo)
    assert res.returncode == 2
    [run] = json.loads(res.stdout)["runs"]
    # The refusal is a result about the code; the error is about the tool, not the code.
    assert [(r["ruleId"], r["level"]) for r in run["results"]] == [("scripted/check", "error")]
    [invocation] = run["invocations"]
    assert invocation["executionSuccessful"] is False
    notes = [n["message"]["text"] for n in invocation["toolExecutionNotifications"]]
    assert notes == ["judged/ask: judge unavailable: authentication"]
    assert run["properties"]["outcome"] == "error"


def test_github_report(tmp_path: Path) -> None:
    repo, auth = mixed_repo(tmp_path)
    res = sj("run", "--runner", str(auth), "--format", "github", cwd=repo)
    assert res.returncode == 2
    lines = res.stdout.splitlines()
    assert "::error title=judged/ask (error)::check error: judge unavailable: authentication" \
        in lines
    assert "::error file=a.py,line=1,title=scripted/check::TODO here" in lines
    assert lines[-1].startswith("::notice title=slopjudge::slopjudge: ERROR:")


def test_shadow_error_is_recorded_apart_from_a_shadow_refusal(tmp_path: Path) -> None:
    repo = judged_repo(tmp_path)
    rule = repo / "rules" / "judged" / "rule.yaml"
    rule.write_text("mode: shadow\n" + rule.read_text())
    commit_all(repo, "shadow")
    write_files(repo, {"a.py": "a = 'three'\n"})
    auth = runner(tmp_path, "echo 'sr-agent: harness-failure: authentication' >&2\nexit 1")
    code, report = run_json("--runner", str(auth), cwd=repo)
    assert (code, by_id(report)["judged/ask"]["outcome"]) == (0, "would_refuse")
    [event] = read_jsonl(repo / ".slopjudge" / "events.jsonl")
    assert event["shadow_error"] is True


def test_each_file_error_beats_refusal_and_both_are_named(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.py": "a = 1\n", "b.py": "b = 1\n", "c.py": "c = 1\n"})
    write_rule(repo / "rules", "judged", """
description: asks a judge per file
checks:
  - id: ask
    judge: ./ask.md.j2
    each: file
""", {"ask.md.j2": TEMPLATE})
    commit_all(repo, "rules")
    write_files(repo, {"a.py": "a = 2\n", "b.py": "b = 2\n", "c.py": "c = 2\n"})
    # a.py: the runner cannot authenticate; b.py: a real refusal; c.py: a pass.
    body = sh(f"""
prompt=$(cat)
case "$prompt" in
  *a.py*) echo 'sr-agent: harness-failure: authentication' >&2; exit 1;;
  *b.py*) echo '{REFUSE}';;
  *) echo '{PASS}';;
esac""")
    per_file = executable(tmp_path / "per-file.sh", body)
    code, report = run_json("--runner", str(per_file), "--jobs", "1", cwd=repo)
    check = by_id(report)["judged/ask"]
    assert (code, report["outcome"], check["outcome"]) == (2, "error", "error")
    assert check["reason"] == ("a.py: judge unavailable: authentication; "
                               "refused: b.py: the helper duplicates utils.slugify")
