"""action.yml, the composite GitHub Action, run here the way a runner runs it.

The file is parsed with ruamel.yaml; each step's ``if:`` and ``${{ }}``
expressions are evaluated for the handful of contexts the action uses;
``run:`` steps run with ``bash --noprofile --norc -eo pipefail`` (GitHub's
``shell: bash``) against a scratch repository with the GITHUB_* variables a
pull_request job has. ``uses:`` steps need GitHub itself: they are skipped,
and the test records why.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import venv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parent.parent
SLOPJUDGE = str(Path(sys.executable).parent / "slopjudge")
SERVER, REPO = "https://github.com", "acme/widgets"

PLACEHOLDER = "def area(width: float, height: float) -> float:\n    raise NotImplementedError\n"
CLEAN = "def area(width: float, height: float) -> float:\n    return width * height\n"


def load_action() -> dict[str, Any]:
    data = YAML(typ="safe").load((ROOT / "action.yml").read_text())
    assert isinstance(data, dict)
    return data


# A step id -> the outputs it wrote.
Steps = dict[str, dict[str, str]]

# --- expressions -------------------------------------------------------------------

_CONTEXT = re.compile(r"\b(inputs|steps|github|runner)((?:\.[A-Za-z_][A-Za-z0-9_-]*)+)")


@dataclass
class Run:
    """One run of the action: its inputs, contexts and what each step did."""

    inputs: dict[str, str]
    github: dict[str, str]
    runner: dict[str, str]
    outputs: dict[str, dict[str, str]] = field(default_factory=dict)
    log: list[tuple[str, str]] = field(default_factory=list)  # (step name, what happened)
    stdout: dict[str, str] = field(default_factory=dict)
    failed: bool = False

    def lookup(self, path: str) -> str:
        kind, *rest = path.split(".")
        if kind == "inputs":
            return self.inputs[rest[0]]
        if kind == "steps":
            step, what, name = rest
            assert what == "outputs", path
            return self.outputs.get(step, {}).get(name, "")
        table = self.github if kind == "github" else self.runner
        return table[rest[0]]

    def value(self, text: str) -> str:
        """``text`` with each ``${{ context.path }}`` replaced by its value."""
        def one(m: re.Match[str]) -> str:
            inner = m.group(1).strip()
            assert _CONTEXT.fullmatch(inner), f"unsupported expression {inner!r}"
            return self.lookup(inner)
        return re.sub(r"\$\{\{(.*?)\}\}", one, str(text))

    def condition(self, expr: str) -> bool:
        """An ``if:`` of the forms the action uses: comparisons, &&, ||, always()."""
        python = _CONTEXT.sub(lambda m: repr(self.lookup(m.group(0))), expr)
        python = python.replace("always()", "True").replace("&&", " and ").replace("||", " or ")
        assert re.fullmatch(r"[\s'\w./-]*(?:(?:==|!=|and|or|True)[\s'\w./-]*)*", python), python
        if "always()" not in expr and self.failed:
            return False  # success() is implied
        return bool(eval(python, {"__builtins__": {}}, {}))  # noqa: S307 - checked above


def run_action(inputs: dict[str, str], env: dict[str, str], cwd: Path, *,
               reuse: Steps | None = None, only: str | None = None) -> Run:
    """Run the action's steps in order. ``reuse`` maps a step id to the outputs an earlier
    run of that step gave for the same inputs (the step is not run again); ``only`` runs
    the one step with that id."""
    action = load_action()
    declared = action["inputs"]
    unknown = set(inputs) - set(declared)
    assert not unknown, unknown
    values = {name: str(spec.get("default", "")) for name, spec in declared.items()}
    values.update(inputs)
    run = Run(values, {"action_path": str(ROOT), "workspace": str(cwd)},
              {"temp": env["RUNNER_TEMP"]})
    for step in action["runs"]["steps"]:
        name = step.get("name", step.get("id", "?"))
        if only is not None and step.get("id") != only:
            continue
        if reuse and step.get("id") in reuse:
            run.outputs[step["id"]] = reuse[step["id"]]
            run.log.append((name, "exit 0 (an earlier run's, reused)"))
            continue
        if "if" in step and not run.condition(step["if"]):
            run.log.append((name, "skipped: its condition is false"))
            continue
        if "uses" in step:
            run.log.append((name, f"skipped: `uses: {step['uses']}` needs GitHub"))
            continue
        assert step["shell"] == "bash"
        step_env = {**env, **{k: run.value(v) for k, v in step.get("env", {}).items()}}
        output = Path(env["RUNNER_TEMP"]) / f"output-{len(run.log)}"
        output.write_text("")
        step_env["GITHUB_OUTPUT"] = str(output)
        script = Path(env["RUNNER_TEMP"]) / f"step-{len(run.log)}.sh"
        script.write_text(run.value(step["run"]))
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                              cwd=cwd, env=step_env, capture_output=True, text=True, timeout=900)
        run.stdout[name] = proc.stdout + proc.stderr
        if step.get("id"):
            pairs = [ln.partition("=") for ln in output.read_text().splitlines() if "=" in ln]
            run.outputs[step["id"]] = {k: v for k, _, v in pairs}
        run.log.append((name, f"exit {proc.returncode}"))
        if proc.returncode != 0:
            run.failed = True
    return run


# --- the scratch repository ------------------------------------------------------------

def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=T", "-c", "user.email=t@example.com", *args],
                          cwd=cwd, check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def python_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv, standing in for actions/setup-python: slopjudge is not in it.
    Without pip of its own: the action never runs this python's pip (its install step
    makes a venv, which gets pip from the standard library's ensurepip), and installing
    pip here is 8 CPU-s."""
    where = tmp_path_factory.mktemp("runner-python")
    venv.create(where, with_pip=False, symlinks=True)
    bin_dir = where / "bin"
    assert not (bin_dir / "slopjudge").exists()
    return bin_dir


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory, python_bin: Path) -> Steps:
    """The "Install slopjudge" step run once as a workflow runs it, with no `install` input:
    pip builds and installs the action's own copy into a new venv. The runs of this file
    reuse its outputs (its venv) instead of building the same venv again, as a cached step
    would; the PEP 668 test runs the step itself (the wheel, with the system python)."""
    where = tmp_path_factory.mktemp("install-once")
    env = github_env(where, python_bin, None, "x")
    run = run_action({}, env, where, only="install")
    assert run.log == [("Install slopjudge", "exit 0")], run.stdout
    bin_dir = Path(run.outputs["install"]["bin"])
    assert (bin_dir / "slopjudge").is_file() and bin_dir.is_relative_to(env["RUNNER_TEMP"])
    return {"install": run.outputs["install"]}


@pytest.fixture()
def pr(tmp_path: Path) -> tuple[Path, str]:
    return pull_request_repo(tmp_path)


def pull_request_repo(tmp_path: Path) -> tuple[Path, str]:
    """A repository with the rule pack on main, ready for a pull-request commit; base sha."""
    ws = tmp_path / "checkout"
    ws.mkdir()
    git(ws, "init", "-q", "-b", "main")
    subprocess.run([SLOPJUDGE, "init"], cwd=ws, check=True, capture_output=True)
    (ws / "src dir").mkdir()
    (ws / "src dir" / "base.py").write_text("X = 1\n")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "main")
    return ws, git(ws, "rev-parse", "HEAD").strip()


def commit(ws: Path, files: dict[str, str]) -> str:
    for rel, text in files.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "pull request")
    return git(ws, "rev-parse", "HEAD").strip()


def github_env(tmp_path: Path, python_bin: Path, base: str | None,
               head_sha: str) -> dict[str, str]:
    temp = tmp_path / "runner-temp"
    temp.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SLOPJUDGE_", "GITHUB_", "VIRTUAL_ENV", "CLAUDE_"))}
    env.update(PATH=f"{python_bin}:/usr/bin:/bin", RUNNER_TEMP=str(temp),
               GITHUB_SERVER_URL=SERVER, GITHUB_REPOSITORY=REPO, GITHUB_SHA=head_sha,
               GITHUB_STEP_SUMMARY=str(temp / "step-summary.md"),
               GITHUB_ACTION_PATH=str(ROOT), GITHUB_EVENT_NAME="pull_request")
    if base is not None:
        event = temp / "event.json"
        event.write_text(json.dumps({"pull_request": {"base": {"sha": base}}}))
        env.update(GITHUB_EVENT_PATH=str(event), GITHUB_BASE_REF="main")
    Path(env["GITHUB_STEP_SUMMARY"]).write_text("")
    return env


# --- the tests -------------------------------------------------------------------------

def test_the_action_is_a_composite_that_fails_closed() -> None:
    action = load_action()
    assert action["runs"]["using"] == "composite"
    steps = action["runs"]["steps"]
    uses = [s["uses"] for s in steps if "uses" in s]
    assert uses == ["actions/setup-python@v5", "github/codeql-action/upload-sarif@v3"]
    judge = next(s for s in steps if s.get("id") == "judge")
    assert "--format github" in judge["run"] and "--write \"sarif=" in judge["run"]
    assert "--write \"markdown=" in judge["run"] and "GITHUB_STEP_SUMMARY" in judge["run"]
    assert steps[-1]["name"] == "Verdict" and steps[-1]["if"] == "always()"
    # Every expression names an input that exists or a step output the action writes.
    text = (ROOT / "action.yml").read_text()
    for name in re.findall(r"inputs\.([A-Za-z0-9_-]+)", text):
        assert name in action["inputs"], name
    written = set(re.findall(r'echo "([a-z-]+)=', judge["run"]))
    for name in re.findall(r"steps\.judge\.outputs\.([A-Za-z0-9_-]+)", text):
        assert name in written, name
    # Inputs reach the shell through env, never pasted into a script.
    for step in steps:
        assert "${{" not in step.get("run", "")


def test_a_refusing_pull_request(tmp_path: Path, python_bin: Path, installed: Steps,
                                 pr: tuple[Path, str]) -> None:
    ws, base = pr
    head = commit(ws, {"src dir/wïdget.py": PLACEHOLDER})
    env = github_env(tmp_path, python_bin, base, "merge-commit-sha")
    run = run_action({"dry-run": "true", "shard": "1/1"}, env, ws, reuse=installed)
    steps = dict(run.log)
    assert steps["Set up Python"].startswith("skipped: `uses: actions/setup-python@v5`")
    assert steps["Install slopjudge"] == "exit 0 (an earlier run's, reused)"
    assert steps["Install Claude Code"] == "skipped: its condition is false"  # a dry run
    assert steps["Judge"] == "exit 0", run.stdout["Judge"]
    assert steps["Upload SARIF"].startswith(
        "skipped: `uses: github/codeql-action/upload-sarif@v3` needs GitHub")
    assert steps["Verdict"] == "exit 1"
    out = run.outputs["judge"]
    assert (out["exit-code"], out["outcome"], out["category"]) == ("1", "refuse",
                                                                   "slopjudge-1-of-1")
    # Annotations on the changed line, SARIF for code scanning, the summary on the job page.
    assert "::error file=src dir/wïdget.py,line=2," in run.stdout["Judge"]
    sarif = json.loads(Path(out["sarif-file"]).read_text())
    (found,) = [r for r in sarif["runs"][0]["results"] if r["ruleId"] == "placeholder-code/scan"]
    location = found["locations"][0]["physicalLocation"]
    assert (location["artifactLocation"]["uri"], location["region"]["startLine"]) == (
        "src%20dir/w%C3%AFdget.py", 2)
    summary = Path(env["GITHUB_STEP_SUMMARY"]).read_text()
    assert summary == Path(out["summary-file"]).read_text()
    assert summary.startswith("## slopjudge: refused\n")
    assert (f"[`src dir/wïdget.py:2`]({SERVER}/{REPO}/blob/{head}/src%20dir/w%C3%AFdget.py#L2)"
            in summary)  # the commit judged, not the event's
    assert "::error title=slopjudge::a check refused the change" in run.stdout["Verdict"]


def test_a_clean_pull_request_passes(tmp_path: Path, python_bin: Path,
                                     installed: Steps, pr: tuple[Path, str]) -> None:
    ws, base = pr
    commit(ws, {"src dir/wïdget.py": CLEAN})
    env = github_env(tmp_path, python_bin, base, "x")
    run = run_action({"dry-run": "true", "upload-sarif": "false"}, env, ws,
                     reuse=installed)
    steps = dict(run.log)
    assert steps["Judge"] == "exit 0" and steps["Verdict"] == "exit 0", run.stdout
    assert steps["Upload SARIF"] == "skipped: its condition is false"
    assert run.outputs["judge"]["outcome"] == "pass"
    assert Path(env["GITHUB_STEP_SUMMARY"]).read_text().startswith("## slopjudge: passed\n")
    assert "every applicable check passed" in run.stdout["Verdict"]


def test_an_error_fails_the_job_as_an_error(tmp_path: Path, python_bin: Path,
                                            installed: Steps, pr: tuple[Path, str]) -> None:
    ws, _ = pr
    # A rule of the base branch that does not load (the rules are the base's).
    base = commit(ws, {"rules/broken.yaml": "description: x\non: [ci]\n"})
    commit(ws, {"src dir/wïdget.py": CLEAN})
    env = github_env(tmp_path, python_bin, base, "x")
    run = run_action({"dry-run": "true"}, env, ws, reuse=installed)
    assert dict(run.log)["Verdict"] == "exit 1"
    assert run.outputs["judge"]["outcome"] == "error"
    assert "slopjudge could not decide (exit status 2)" in run.stdout["Verdict"]
    summary = Path(env["GITHUB_STEP_SUMMARY"]).read_text()
    assert summary.startswith("## slopjudge: error (could not decide)\n")
    assert "Rules that did not load" in summary


def deleting_a_rule(ws: Path) -> None:
    """A pull request that deletes the rule its slop would meet, and adds the slop."""
    git(ws, "rm", "-r", "-q", "rules/placeholder-code")
    commit(ws, {"src dir/wïdget.py": PLACEHOLDER})


def test_a_pull_request_that_deletes_a_rule_needs_a_person(
        tmp_path: Path, python_bin: Path, installed: Steps,
        pr: tuple[Path, str]) -> None:
    ws, base = pr
    deleting_a_rule(ws)
    env = github_env(tmp_path, python_bin, base, "x")
    run = run_action({"dry-run": "true"}, env, ws, reuse=installed)
    out = run.outputs["judge"]
    assert (out["outcome"], out["exit-code"]) == ("needs_person", "1"), run.stdout["Judge"]
    assert dict(run.log)["Verdict"] == "exit 1"
    assert "::error title=slopjudge::rule changes need a person" in run.stdout["Verdict"]
    judge_log = run.stdout["Judge"]
    assert ("::error file=rules/placeholder-code/rule.yaml,title=slopjudge%3A rule changes "
            "need a person::") in judge_log
    # The base branch's rules judged the code: the deleted rule still refused the slop.
    assert "::error file=src dir/wïdget.py,line=2,title=placeholder-code/scan::" in judge_log
    summary = Path(env["GITHUB_STEP_SUMMARY"]).read_text()
    assert summary.startswith("## slopjudge: rule changes need a person\n")


def test_rules_from_checkout_judges_with_the_pull_requests_own_rules(
        tmp_path: Path, python_bin: Path, installed: Steps,
        pr: tuple[Path, str]) -> None:
    ws, base = pr
    deleting_a_rule(ws)
    env = github_env(tmp_path, python_bin, base, "x")
    run = run_action({"dry-run": "true", "rules-from": "checkout"}, env, ws,
                     reuse=installed)
    assert (run.outputs["judge"]["outcome"], dict(run.log)["Verdict"]) == ("pass", "exit 0")


def test_without_a_base_the_job_fails_saying_so(tmp_path: Path, python_bin: Path,
                                                installed: Steps, pr: tuple[Path, str]) -> None:
    ws, _base = pr
    env = github_env(tmp_path, python_bin, None, "x")
    run = run_action({"dry-run": "true"}, env, ws, reuse=installed)
    assert "::error title=slopjudge::no revision to compare with" in run.stdout["Judge"]
    assert run.outputs["judge"]["outcome"] == "error"
    assert dict(run.log)["Verdict"] == "exit 1"


def test_judges_get_the_pinned_claude_code_unless_a_dry_run() -> None:
    env = {"RUNNER_TEMP": "/tmp"}
    for dry_run, wanted in (("false", True), ("true", False)):
        run = Run({"dry-run": dry_run, "claude-code": "auto"}, {}, env)
        step = next(s for s in load_action()["runs"]["steps"] if s["name"] == "Install Claude Code")
        assert run.condition(step["if"]) is wanted
    assert "package.json" in step["run"] and "@anthropic-ai/claude-code@$version" in step["run"]


def with_judge_rule(ws: Path) -> str:
    """A judge the pull request cannot skip, added on main; the new base commit."""
    folder = ws / "rules" / "reviewed"
    folder.mkdir()
    (folder / "rule.yaml").write_text("description: every change is reviewed\nchecks:\n"
                                      "  - id: judge\n    judge: review.md.j2\n")
    (folder / "review.md.j2").write_text("Review this change.\n{{ change }}\n")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "a judge")
    return git(ws, "rev-parse", "HEAD").strip()


def fork_event(env: dict[str, str], base: str) -> None:
    """The event of a pull request from a fork: its head lives in another repository."""
    Path(env["GITHUB_EVENT_PATH"]).write_text(json.dumps({"pull_request": {
        "base": {"sha": base, "repo": {"full_name": REPO, "fork": False}},
        "head": {"sha": "f" * 40, "repo": {"full_name": "someone/widgets", "fork": True}}}}))
    for key in ("ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_AUTH_TOKEN"):
        env.pop(key, None)


@pytest.mark.parametrize("setting", ["fail", "pass"])
def test_a_fork_without_a_key_runs_scripts_and_says_judges_were_not_judged(
        tmp_path: Path, python_bin: Path, installed: Steps, pr: tuple[Path, str],
        setting: str) -> None:
    ws, _ = pr
    base = with_judge_rule(ws)
    commit(ws, {"src dir/wïdget.py": CLEAN})
    env = github_env(tmp_path, python_bin, base, "x")
    fork_event(env, base)
    run = run_action({"claude-code": "false", "upload-sarif": "false",
                      "unjudged-forks": setting}, env, ws, reuse=installed)
    out = run.outputs["judge"]
    judge_log = run.stdout["Judge"]
    notices = [ln for ln in judge_log.splitlines() if "comes from a fork" in ln]
    assert notices == [
        "::notice title=slopjudge::This pull request comes from a fork, which gets no secrets "
        "and so no model key: the script checks ran, and 1 judge check(s) were not judged; "
        + ("the job fails on that (unjudged-forks: fail)" if setting == "fail"
           else "unjudged-forks: pass lets it by")
        + ". A maintainer can judge it by running slopjudge with a key on the branch."]
    assert out["not-judged"] == "1"
    assert "::error" not in judge_log  # no judge errored for want of a key
    report = json.loads((Path(env["RUNNER_TEMP"]) / "slopjudge" / "report.json").read_text())
    scripts = [c for c in report["checks"] if c["kind"] == "script"]
    assert scripts and {c["outcome"] for c in scripts} <= {"pass", "not_applicable"}
    judges = {c["id"]: c["outcome"] for c in report["checks"] if c["kind"] == "judge"}
    assert judges["reviewed/judge"] == "not_judged"
    assert set(judges.values()) <= {"not_judged", "skipped"}  # the pack's prepare skips some
    if setting == "fail":
        assert (out["outcome"], out["exit-code"]) == ("not_judged", "3")
        assert dict(run.log)["Verdict"] == "exit 1"
        assert "were not judged (no model key)" in run.stdout["Verdict"]
    else:
        assert (out["outcome"], out["exit-code"]) == ("pass", "0")
        assert dict(run.log)["Verdict"] == "exit 0"


def test_a_fork_with_a_refusing_script_still_refuses(tmp_path: Path, python_bin: Path,
                                                      installed: Steps,
                                                      pr: tuple[Path, str]) -> None:
    ws, base = pr
    commit(ws, {"src dir/wïdget.py": PLACEHOLDER})
    env = github_env(tmp_path, python_bin, base, "x")
    fork_event(env, base)
    run = run_action({"claude-code": "false", "upload-sarif": "false",
                      "unjudged-forks": "pass"}, env, ws, reuse=installed)
    assert (run.outputs["judge"]["outcome"], dict(run.log)["Verdict"]) == ("refuse", "exit 1")

