"""``run --rules-from REV``: a pull request judged by its base commit's rules.

Real git repositories in temporary folders and the real CLI process
(``python -m slopjudge``). The base commit holds a small rule pack whose
script refuses added lines with FORBIDDEN; each pull request commits on top.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import PY, commit_all, git, make_repo, py, read_jsonl, sj, write_files

SCAN = py("""
import json, os, sys
payload = json.load(sys.stdin)
marker = os.environ.get("RULES_FROM_MARKER")
if marker:  # where this script ran from, for the tests that ask
    with open(marker, "a") as fh:
        fh.write(os.getcwd() + "\\n")
bad = [f["path"] for f in payload["changeset"]["files"]
       if "FORBIDDEN" in (f.get("newContent") or "")]
if bad:
    print(json.dumps({"reason": "FORBIDDEN in " + ", ".join(bad),
                      "findings": [{"path": p, "line": 1, "message": "FORBIDDEN"} for p in bad]}))
    sys.exit(1)
""")
RULE = "description: no forbidden marker\nchecks:\n  - id: scan\n    script: scan.py\n"
SLOP = "FORBIDDEN = True\n"
CLEAN = "def area(w: float, h: float) -> float:\n    return w * h\n"


def rule_files(folder: str = "rules", rule_id: str = "no-forbidden",
               script: str = SCAN, rule: str = RULE) -> dict[str, str]:
    return {f"{folder}/{rule_id}/rule.yaml": rule, f"{folder}/{rule_id}/scan.py": script}


@pytest.fixture()
def repo(tmp_path: Path) -> tuple[Path, str]:
    """A repository whose main commit holds the rule pack; its sha."""
    ws = make_repo(tmp_path / "ws", {"src/base.py": "X = 1\n", "rules/README.md": "rules\n",
                                     **rule_files()})
    (ws / "rules/no-forbidden/scan.py").chmod(0o755)
    base = commit_all(ws, "executable scan")
    return ws, base


def pull_request(ws: Path, files: dict[str, str], delete: tuple[str, ...] = ()) -> str:
    git(ws, "checkout", "-q", "-b", "pr")
    write_files(ws, files)
    for rel in delete:
        git(ws, "rm", "-r", "-q", rel)
    return commit_all(ws, "pull request")


def run(ws: Path, *args: str, env: dict[str, str] | None = None
        ) -> tuple[int, dict[str, Any], str]:
    res = sj("run", "--format", "json", *args, cwd=ws, env=env, process=True)
    try:
        return res.returncode, json.loads(res.stdout), res.stderr
    except ValueError as exc:
        raise AssertionError(f"rc {res.returncode}: {res.stdout!r} {res.stderr!r}") from exc


def outcomes(report: dict[str, Any]) -> dict[str, str]:
    return {c["id"]: c["outcome"] for c in report["checks"]}


# --- a pull request that weakens the rules ---------------------------------------------


@pytest.mark.parametrize("weakening", ["delete the rule", "shadow", "move rules_dir",
                                       "move rules_dir in pyproject", "replace the script"])
def test_a_pr_that_weakens_the_rules_needs_a_person_and_the_base_rules_refuse_its_slop(
        repo: tuple[Path, str], weakening: str) -> None:
    ws, base = repo
    slop = {"src/new.py": SLOP}
    delete: tuple[str, ...] = ()
    if weakening == "delete the rule":
        delete, touched = ("rules/no-forbidden",), "rules/no-forbidden/rule.yaml"
    elif weakening == "shadow":
        slop["rules/no-forbidden/rule.yaml"] = "mode: shadow\n" + RULE
        touched = "rules/no-forbidden/rule.yaml"
    elif weakening == "move rules_dir":
        slop.update({"slopjudge.yaml": "rules_dir: lenient\n", "lenient/README.md": "none\n"})
        touched = "slopjudge.yaml"
    elif weakening == "move rules_dir in pyproject":
        slop.update({"pyproject.toml": "[tool.slopjudge]\nrules_dir = \"lenient\"\n",
                     "lenient/README.md": "none\n"})
        touched = "pyproject.toml"
    else:
        slop["rules/no-forbidden/scan.py"] = py("import sys; sys.exit(0)")
        touched = "rules/no-forbidden/scan.py"
    pull_request(ws, slop, delete)

    # Judged by its own rules, the pull request passes: the hole --rules-from closes.
    rc, own, _ = run(ws, "--base", base)
    assert (rc, own["outcome"]) == (0, "pass"), own

    rc, report, err = run(ws, "--base", base, "--rules-from", base)
    assert (rc, report["outcome"]) == (1, "needs_person"), (report, err)
    checks = {c["id"]: c for c in report["checks"]}
    person = checks["slopjudge/rule-changes"]
    assert person["outcome"] == "needs_person"
    assert person["reason"].startswith("rule changes need a person")
    assert touched in {f["path"] for f in person["findings"]}
    # The base rules judged the code and refused its slop.
    assert checks["no-forbidden/scan"]["outcome"] == "refuse"
    assert checks["no-forbidden/scan"]["findings"][0]["path"] == "src/new.py"


def test_a_pr_that_changes_nothing_of_the_rules_is_judged_as_before(
        repo: tuple[Path, str]) -> None:
    ws, base = repo
    pull_request(ws, {"src/clean.py": CLEAN, "pyproject.toml": "[project]\nname = 'x'\n"})
    before = run(ws, "--base", base)
    after = run(ws, "--base", base, "--rules-from", base)
    assert before[0] == after[0] == 0
    assert outcomes(before[1]) == outcomes(after[1]) == {"no-forbidden/scan": "pass"}
    assert after[1]["outcome"] == "pass"

    write_files(ws, {"src/slop.py": SLOP})
    commit_all(ws, "slop")
    before = run(ws, "--base", base)
    after = run(ws, "--base", base, "--rules-from", base)
    assert before[0] == after[0] == 1
    assert outcomes(before[1]) == outcomes(after[1]) == {"no-forbidden/scan": "refuse"}
    assert before[1]["checks"][0]["reason"] == after[1]["checks"][0]["reason"]


# --- what runs, and where ----------------------------------------------------------------


def test_the_pr_rule_scripts_never_run_and_the_base_ones_run_outside_the_workspace(
        repo: tuple[Path, str], tmp_path: Path) -> None:
    ws, base = repo
    ran = tmp_path / "pr-script-ran"
    pull_request(ws, {"rules/no-forbidden/scan.py": py(f"""
open({str(ran)!r}, "w").write("the pull request's script ran")
"""), "src/clean.py": CLEAN})
    temp = tmp_path / "temp"
    temp.mkdir()
    marker = tmp_path / "base-script-ran-in"
    env = {"TMPDIR": str(temp), "RULES_FROM_MARKER": str(marker)}
    rc, report, _ = run(ws, "--base", base, "--rules-from", base, env=env)
    assert report["outcome"] == "needs_person" and rc == 1
    assert not ran.exists()
    (where,) = marker.read_text().splitlines()
    assert where.startswith(str(temp.resolve()) + os.sep) and not where.startswith(str(ws))
    assert list(temp.iterdir()) == []  # the base's files are removed after the run
    # Without --rules-from the pull request's script runs: the test can tell.
    run(ws, "--base", base, env=env)
    assert ran.exists()


def test_a_bad_revision_is_a_one_line_error(repo: tuple[Path, str], tmp_path: Path) -> None:
    ws, base = repo
    temp = tmp_path / "temp"
    temp.mkdir()
    for rev, said in (("no-such-branch", "--rules-from no-such-branch: not a commit in this "
                       "repository"),
                      (f"{base}:src", f"--rules-from {base}:src: not a commit in this repository"),
                      ("", "--rules-from was given an empty value")):
        res = sj("run", "--base", base, "--rules-from", rev, cwd=ws, process=True,
                 env={"TMPDIR": str(temp)})
        assert res.returncode == 2, res
        assert res.stderr == f"slopjudge: {said}\n" and res.stdout == ""
    res = sj("run", "--rules-from", base, "--rules", "rules", cwd=ws, process=True)
    assert res.returncode == 2 and res.stderr.count("\n") == 1
    assert "--rules and --rules-from do not go together" in res.stderr
    assert list(temp.iterdir()) == []


def test_the_base_settings_decide_and_a_broken_base_rule_is_an_error(
        repo: tuple[Path, str]) -> None:
    ws, base = repo
    # rule_changes: warn on the base: the rule change is shown, the code decides.
    write_files(ws, {"slopjudge.yaml": "rule_changes: warn\n"})
    base = commit_all(ws, "warn only")
    pull_request(ws, {"rules/no-forbidden/rule.yaml": "mode: shadow\n" + RULE,
                      "src/clean.py": CLEAN})
    rc, report, _ = run(ws, "--base", base, "--rules-from", base)
    assert (rc, report["outcome"]) == (0, "pass")
    assert outcomes(report)["slopjudge/rule-changes"] == "needs_person"
    # A pull request cannot turn the setting on for itself.
    git(ws, "checkout", "-q", "main")
    write_files(ws, {"slopjudge.yaml": "rule_changes: block\n"})
    strict = commit_all(ws, "block")
    git(ws, "checkout", "-q", "-b", "pr2")
    write_files(ws, {"slopjudge.yaml": "rule_changes: warn\n", "src/clean.py": CLEAN})
    commit_all(ws, "warn, says the pull request")
    rc, report, _ = run(ws, "--base", strict, "--rules-from", strict)
    assert (rc, report["outcome"]) == (1, "needs_person")
    # A rule of the base that does not load is an error, named as the base's file.
    git(ws, "checkout", "-q", "main")
    write_files(ws, {"rules/broken.yaml": "description: x\nchecks: []\n"})
    broken = commit_all(ws, "a broken rule")
    rc, report, _ = run(ws, "--base", broken, "--rules-from", broken)
    assert (rc, report["outcome"]) == (2, "error")
    assert report["load_errors"] and all(
        e.startswith(f"{broken}:rules/broken.yaml:") for e in report["load_errors"])


def test_every_report_format_and_the_event_log_show_it(
        repo: tuple[Path, str], tmp_path: Path) -> None:
    ws, base = repo
    pull_request(ws, {"src/new.py": SLOP}, delete=("rules/no-forbidden",))
    out = tmp_path / "out"
    out.mkdir()
    writes = [f"--write={fmt}={out / fmt}" for fmt in ("json", "sarif", "junit", "markdown",
                                                       "github")]
    res = sj("run", "--base", base, "--rules-from", base, *writes, cwd=ws, process=True)
    assert res.returncode == 1
    assert "NEEDS A PERSON" in res.stdout and "slopjudge/rule-changes" in res.stdout
    assert json.loads((out / "json").read_text())["outcome"] == "needs_person"
    sarif = json.loads((out / "sarif").read_text())["runs"][0]
    (found,) = [r for r in sarif["results"] if r["ruleId"] == "slopjudge/rule-changes"
                and r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                == "rules/no-forbidden/rule.yaml"]
    assert found["level"] == "error" and sarif["properties"]["outcome"] == "needs_person"
    junit = (out / "junit").read_text()
    assert '<failure message="rule changes need a person' in junit
    assert 'type="needs_person"' in junit
    assert (out / "markdown").read_text().startswith("## slopjudge: rule changes need a person\n")
    github = (out / "github").read_text()
    assert ("::error file=rules/no-forbidden/rule.yaml,title=slopjudge%3A rule changes need a "
            "person::") in github
    assert "::error file=src/new.py,line=1,title=no-forbidden/scan::FORBIDDEN" in github
    events = read_jsonl(ws / ".slopjudge" / "events.jsonl")
    assert {(e["id"], e["outcome"]) for e in events} == {
        ("slopjudge/rule-changes", "needs_person"), ("no-forbidden/scan", "refuse")}


def test_only_the_first_shard_reports_it(repo: tuple[Path, str]) -> None:
    ws, base = repo
    pull_request(ws, {"src/new.py": CLEAN}, delete=("rules/no-forbidden",))
    first = run(ws, "--base", base, "--rules-from", base, "--shard", "1/2")
    second = run(ws, "--base", base, "--rules-from", base, "--shard", "2/2")
    assert first[1]["outcome"] == "needs_person"
    assert "slopjudge/rule-changes" not in outcomes(second[1])


# --- the base's files, written out -----------------------------------------------------------


def test_links_in_the_base_tree_never_lead_out_of_it(tmp_path: Path) -> None:
    from slopjudge.changes import revtree

    outside = tmp_path / "outside.txt"
    outside.write_text("secret\n")
    ws = make_repo(tmp_path / "ws", {"rules/r/rule.yaml": RULE, "rules/r/scan.py": SCAN,
                                     "rules/r/data/x.txt": "x\n"})
    (ws / "rules/r/scan.py").chmod(0o755)
    links = {"rules/r/inside": "data/x.txt", "rules/r/up": "../..",
             "rules/r/abs": str(outside), "rules/r/escape": "../../../outside.txt",
             "rules/r/through": "up/../outside.txt", "rules/r/dir": "data"}
    for name, target in links.items():
        os.symlink(target, ws / name)
    sha = commit_all(ws, "links")
    dest = tmp_path / "dest"
    dest.mkdir()
    written = revtree.materialise(str(ws), sha, ["rules"], str(dest))
    real = str(dest.resolve())
    for name in links:
        path = dest / name
        if os.path.lexists(path):
            assert os.path.realpath(path).startswith(real), name
    assert sorted(written) == ["rules/r/data/x.txt", "rules/r/dir", "rules/r/inside",
                               "rules/r/rule.yaml", "rules/r/scan.py", "rules/r/up"]
    assert (dest / "rules/r/inside").read_text() == "x\n"
    assert os.access(dest / "rules/r/scan.py", os.X_OK)
    assert not os.path.lexists(dest / "rules/r/through")


def test_git_config_of_the_repository_runs_nothing(repo: tuple[Path, str],
                                                   tmp_path: Path) -> None:
    """The base's files are read from git's objects with the repository's executable
    configuration off: a filter or fsmonitor set in .git/config runs nothing."""
    ws, base = repo
    ran = tmp_path / "ran"
    hook = tmp_path / "hook.sh"
    hook.write_text(f"#!/bin/sh\necho ran >> {ran}\ncat\n")
    hook.chmod(0o755)
    git(ws, "config", "core.fsmonitor", str(hook))
    git(ws, "config", "filter.x.smudge", str(hook))
    git(ws, "config", "filter.x.clean", str(hook))
    write_files(ws, {".gitattributes": "* filter=x\n"})
    pull_request(ws, {"src/clean.py": CLEAN})
    ran.unlink(missing_ok=True)
    rc, report, _ = run(ws, "--base", base, "--rules-from", base)
    assert (rc, report["outcome"]) == (0, "pass"), report
    assert not ran.exists()


def test_run_help_names_the_option() -> None:
    res = subprocess.run([PY, "-m", "slopjudge", "run", "--help"], capture_output=True,
                         text=True, check=True)
    assert "--rules-from REV" in res.stdout
