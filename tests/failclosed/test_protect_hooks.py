"""Protected files and shell guards, through the real hook entry points.

Each test runs ``python -m slopjudge hook pre-tool|start|stop`` as a
subprocess in a temp git repository holding the default rule pack
(``slopjudge init``), as an agent harness would.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import git, make_repo, script_rule, sj

RULE = "rules/protect-rules/rule.yaml"
DESCRIPTION = ('description: "An agent tool call would change the rules, rubric, hooks or '
               'slopjudge state that judge it."')


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "repo", {"README.md": "hello\n",
                                         "pyproject.toml": '[project]\nname = "x"\n'})
    assert sj("init", cwd=repo).returncode == 0
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "slopjudge pack")
    assert DESCRIPTION in (repo / RULE).read_text()  # the text the edits below aim at
    return repo


def pre_tool(repo: Path, tool: str, tool_input: dict[str, Any]) -> tuple[str, str]:
    """The hook's decision (``allow`` when it prints nothing) and its stderr."""
    payload = {"session_id": "s1", "cwd": str(repo), "hook_event_name": "PreToolUse",
               "tool_name": tool, "tool_input": tool_input, "tool_use_id": "t1"}
    out = sj("hook", "pre-tool", cwd=repo, input=json.dumps(payload))
    assert out.returncode == 0, out.stderr
    if not out.stdout.strip():
        return "allow", out.stderr
    spec = json.loads(out.stdout)["hookSpecificOutput"]
    return f"{spec['permissionDecision']}: {spec['permissionDecisionReason']}", out.stderr


def bash(repo: Path, command: str) -> str:
    return pre_tool(repo, "Bash", {"command": command})[0]


# --- edits slopjudge must reproduce as the harness does ----------------------------

def test_curly_quote_edit_of_a_rule_is_denied(project: Path) -> None:
    curly = DESCRIPTION.replace('"An', "\u201cAn").replace('it."', "it.\u201d")
    decision, err = pre_tool(project, "Edit", {
        "file_path": str(project / RULE), "old_string": curly,
        "new_string": "description: \u201cnothing\u201d"})
    assert decision.startswith("deny: protect-rules") and RULE in decision
    assert "cannot be reproduced" not in err  # matched as Claude Code matches it


def test_edit_of_a_rule_that_does_not_apply_is_still_denied(project: Path) -> None:
    decision, err = pre_tool(project, "Edit", {
        "file_path": str(project / RULE), "old_string": "text that is nowhere",
        "new_string": "mode: shadow"})
    assert decision.startswith("deny: protect-rules") and RULE in decision
    assert "cannot be reproduced" in err


def test_curly_quote_apply_patch_of_a_rule_is_denied(project: Path) -> None:
    curly = DESCRIPTION.replace('"An', "\u201cAn").replace('it."', "it.\u201d")
    patch = ("*** Begin Patch\n*** Update File: " + RULE + "\n@@\n-" + curly
             + "\n+description: off\n*** End Patch\n")
    decision, err = pre_tool(project, "apply_patch", {"input": patch})
    assert decision.startswith("deny: protect-rules") and RULE in decision
    assert "cannot be reproduced" not in err


def test_an_honest_edit_elsewhere_is_allowed(project: Path) -> None:
    (project / "notes.md").write_text("It\u2019s \u201cfine\u201d\n")
    decision, err = pre_tool(project, "Edit", {
        "file_path": str(project / "notes.md"), "old_string": "It's \"fine\"",
        "new_string": "It's \"good\""})
    assert decision == "allow", decision


def test_a_rule_with_paths_sees_an_edit_that_cannot_be_reproduced(project: Path) -> None:
    # A pre-tool rule on src/** that refuses a changed file whose diff adds SECRET.
    script_rule(project / "rules", "no-secret",
                "exec python3 -c \"import json, sys; p = json.load(sys.stdin); "
                "sys.exit(any(f['path'] == 'src/app.py' and '+token = ' in f['diff'] "
                "and 'SECRET' in f['diff'] for f in p['changeset']['files']))\"",
                on=["pre-tool"], tools=["Edit"], paths=["src/**"])
    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("x = 1\n")
    decision, err = pre_tool(project, "Edit", {
        "file_path": str(project / "src" / "app.py"), "old_string": "not there",
        "new_string": "token = 'SECRET'"})
    assert decision.startswith("deny: no-secret") and "cannot be reproduced" in err
    decision, _ = pre_tool(project, "Edit", {
        "file_path": str(project / "src" / "app.py"), "old_string": "not there",
        "new_string": "token = None"})
    assert decision == "allow"


# --- shell commands ------------------------------------------------------------------

def test_python_c_write_to_a_rule_is_denied(project: Path) -> None:
    decision = bash(project, "python3 -c \"open('rules/skipped-tests/rule.yaml','w')"
                             ".write('checks: []')\"")
    assert decision.startswith("deny: protect-rules")
    assert "rules/skipped-tests/rule.yaml" in decision


@pytest.mark.parametrize(("command", "why"), [
    ("rm -rf $(pwd)/..", "holds the workspace"),
    ("rm -rf `pwd`/..", "holds the workspace"),
    ("find / -delete", "deletes files across /"),
    ("dd if=/dev/zero of=/dev/sda bs=1M", "overwrites the device /dev/sda"),
    ("git stash clear", "throws away stashed work"),
    ("git checkout -- .", "discards every uncommitted change"),
    ("rm -rf ./*", "matches everything in"),
])
def test_destructive_commands_are_denied(project: Path, command: str, why: str) -> None:
    decision = bash(project, command)
    assert decision.startswith("deny: destructive-shell") and why in decision, decision


@pytest.mark.parametrize("command", [
    "cat rules/*/rule.yaml | grep -n description",
    "rm -rf build/ && find . -name '*.pyc' -delete",
    "git checkout -b topic && git restore --staged README.md",
    "python3 -c \"print(open('rules/protect-rules/rule.yaml').read())\"",
])
def test_honest_look_alikes_are_allowed(project: Path, command: str) -> None:
    assert bash(project, command) == "allow"


# --- the Stop backstop ----------------------------------------------------------------

def hook(repo: Path, point: str, **fields: Any) -> subprocess.CompletedProcess[str]:
    payload = {"session_id": "s1", "cwd": str(repo), **fields}
    return sj("hook", point, cwd=repo, input=json.dumps(payload))


def stop_reason(repo: Path, session: str = "s1") -> str | None:
    out = hook(repo, "stop", hook_event_name="Stop", session_id=session)
    assert out.returncode == 0, out.stderr
    if not out.stdout.strip():
        return None
    answer = json.loads(out.stdout)
    assert answer["decision"] == "block"
    return str(answer["reason"])


def test_backstop_refuses_a_rule_changed_by_bash_even_without_protect_rules(
        project: Path) -> None:
    assert hook(project, "start", source="startup").returncode == 0
    assert stop_reason(project) is None
    # What an agent's Bash call would do, out of the pre-tool hook's sight.
    subprocess.run(["bash", "-c", "python3 -c \"open('rules/skipped-tests/rule.yaml','a')"
                    ".write('# off\\n')\" && rm -rf rules/protect-rules"],
                   cwd=project, check=True)
    reason = stop_reason(project)
    assert reason is not None
    sub = hook(project, "subagent-stop", hook_event_name="SubagentStop", agent_id="a1")
    assert "rules/skipped-tests/rule.yaml (changed)" in json.loads(sub.stdout)["reason"]
    assert "rules/skipped-tests/rule.yaml (changed)" in reason
    assert "rules/protect-rules/rule.yaml (deleted)" in reason
    assert "A person must review the change" in reason
    # The documented way to undo it works, and then the stop passes.
    undo = re.search(r"`(git restore [^`]+)`", reason)
    assert undo is not None
    subprocess.run(undo.group(1), shell=True, cwd=project, check=True)
    assert stop_reason(project) is None


def test_backstop_accepts_the_change_in_a_new_session(project: Path) -> None:
    assert hook(project, "start", source="startup").returncode == 0
    (project / "RUBRIC.md").write_text("# nothing is slop\n")
    assert "RUBRIC.md (changed)" in (stop_reason(project) or "")
    # A person reviewed it and starts a new session: its baseline holds the change.
    assert hook(project, "start", source="startup", session_id="s2").returncode == 0
    assert stop_reason(project, "s2") is None


def test_backstop_without_a_baseline_compares_with_head(project: Path) -> None:
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text("{}\n")
    reason = stop_reason(project, "never-started")
    assert reason is not None and ".claude/settings.json (added)" in reason


def test_backstop_watches_only_the_slopjudge_table_of_pyproject(project: Path) -> None:
    assert hook(project, "start", source="startup").returncode == 0
    with (project / "pyproject.toml").open("a") as fh:
        fh.write('version = "1.0"\n')
    assert stop_reason(project) is None
    with (project / "pyproject.toml").open("a") as fh:
        fh.write("\n[tool.slopjudge]\nrules_dir = \"elsewhere\"\n")
    assert "pyproject.toml [tool.slopjudge] (changed)" in (stop_reason(project) or "")


def test_backstop_refuses_when_the_whole_rules_folder_is_gone(project: Path) -> None:
    assert hook(project, "start", source="startup").returncode == 0
    subprocess.run(["rm", "-rf", "rules"], cwd=project, check=True)
    reason = stop_reason(project)
    assert reason is not None and "rules/protect-rules/rule.yaml (deleted)" in reason


def test_backstop_blocks_when_the_baseline_cannot_be_read(project: Path) -> None:
    assert hook(project, "start", source="startup").returncode == 0
    state = project / ".slopjudge" / "state" / "s1.json"
    record = json.loads(state.read_text())
    record["tree"] = "0" * 40  # a baseline tree git does not have
    state.write_text(json.dumps(record))
    reason = stop_reason(project)
    assert reason is not None and "could not" in reason


def test_a_session_baseline_from_before_git_digests_were_kept_is_still_read(
        project: Path) -> None:
    """A session started by 0.1.0 wrote its baseline without the git folder's digests and
    signed it without them: after an upgrade its Stop compares the files, not nothing."""
    from slopjudge import cachesign

    assert hook(project, "start", source="startup").returncode == 0
    state = project / ".slopjudge" / "state" / "s1.json"
    record = json.loads(state.read_text())
    del record["git"]
    record["mac"] = cachesign.sign(f"s1\0{record['head']}\0{record['tree']}".encode(),
                                   "baseline")
    state.write_text(json.dumps(record) + "\n")
    assert stop_reason(project) is None
    (project / "RUBRIC.md").write_text("# nothing is slop\n")
    assert "RUBRIC.md (changed)" in (stop_reason(project) or "")
    record["tree"] = "0" * 40  # and one changed after it was written still blocks
    state.write_text(json.dumps(record) + "\n")
    assert "signature does not match" in (stop_reason(project) or "")


def test_backstop_follows_the_rules_dir_setting(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "hello\n",
                                         "slopjudge.yaml": "rules_dir: policy\n",
                                         "policy/no-op.yaml": "description: x\non: [ci]\n"
                                                              "checks:\n  - id: t\n"
                                                              "    script: \"true\"\n"})
    assert hook(repo, "start", source="startup").returncode == 0
    (repo / "policy" / "no-op.yaml").unlink()
    (repo / "rules").mkdir()
    (repo / "rules" / "other.txt").write_text("not this repository's rules, still guarded\n")
    reason = stop_reason(repo)
    assert reason is not None
    assert "policy/no-op.yaml (deleted)" in reason and "rules/other.txt (added)" in reason



@pytest.mark.parametrize("flag", ["--assume-unchanged", "--skip-worktree"])
def test_backstop_sees_through_index_flags_that_hide_an_edit(project: Path, flag: str) -> None:
    assert hook(project, "start", source="startup").returncode == 0
    git(project, "update-index", flag, "rules/skipped-tests/rule.yaml")
    with (project / "rules" / "skipped-tests" / "rule.yaml").open("a") as fh:
        fh.write("# off\n")
    assert "rules/skipped-tests/rule.yaml (changed)" in (stop_reason(project) or "")
    # The repository's own index keeps its flag: the snapshot used a copy.
    assert git(project, "ls-files", "-v", "rules/skipped-tests/rule.yaml")[0] in "hS"


def test_a_hidden_protected_file_removed_from_disk_is_a_deletion(project: Path) -> None:
    assert hook(project, "start", source="startup").returncode == 0
    git(project, "update-index", "--skip-worktree", "RUBRIC.md")
    (project / "RUBRIC.md").unlink()
    assert "RUBRIC.md (deleted)" in (stop_reason(project) or "")
    # In a sparse checkout an absent skip-worktree file is only outside the cone. (The
    # person sets it up: a change to .git/config is one only a person may make.)
    git(project, "config", "core.sparseCheckout", "true")
    git(project, "update-index", "--no-skip-worktree", "RUBRIC.md")
    git(project, "checkout", "--", "RUBRIC.md")
    assert hook(project, "start", source="startup").returncode == 0
    git(project, "update-index", "--skip-worktree", "RUBRIC.md")
    (project / "RUBRIC.md").unlink()
    assert stop_reason(project) is None


def test_backstop_message_stays_whole_when_many_files_change(project: Path) -> None:
    assert hook(project, "start", source="startup").returncode == 0
    for n in range(60):
        (project / "rules" / f"extra-{n:02d}.yaml").write_text("description: x\n")
    reason = stop_reason(project) or ""
    # The backstop's part comes first and whole, whatever else the stop says.
    assert "and 40 more" in reason and "A person must review" in reason
    undo = re.search(r"`(git restore [^`]+)`", reason)
    assert undo is not None and undo.group(1).endswith("-- rules")
    assert "leaves added files in place" in reason
