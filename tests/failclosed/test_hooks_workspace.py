"""Fail-closed contract, where the hooks think they are: the workspace is the project
(``CLAUDE_PROJECT_DIR``, else the git top level of the hook's working folder), never the
payload's ``cwd``; paths are resolved (symlinks, ``..``, case) before any rule matches."""

from __future__ import annotations

import os
from pathlib import Path

from slopjudge.changes import toolmatch
from tests.failclosed.hooks_kit import (
    RULE_FILE,
    block_reason,
    clean_env,
    deny_reason,
    git,
    hook,
    pre_tool,
    start,
    stop,
)


def write(ws: Path, path: str | Path, content: str = "FORBIDDEN\n", **fields: object
          ) -> dict[str, object]:
    return pre_tool(ws, "Write", {"file_path": str(path), "content": content}, **fields)


def test_payload_cwd_outside_the_project_turns_no_rule_off(ws: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    git(elsewhere, "init", "-q")  # a repository with no rules at all
    data = write(ws, ws / "n.txt", cwd=str(elsewhere))
    assert "n.txt:1: FORBIDDEN marker" in deny_reason(hook("pre-tool", ws, data)[1])
    # protect-rules too.
    data = write(ws, ws / RULE_FILE, "x\n", cwd=str(elsewhere))
    assert RULE_FILE in deny_reason(hook("pre-tool", ws, data)[1])
    # And at stop: the project's changes are judged by the project's rules.
    (ws / "b.txt").write_text("FORBIDDEN\n")
    out = hook("stop", ws, stop(ws, cwd=str(elsewhere)))[1]
    assert "b.txt:1: FORBIDDEN marker" in block_reason(out)


def test_payload_cwd_in_a_nested_repository_turns_no_rule_off(ws: Path) -> None:
    nested = ws / "vendor" / "lib"
    nested.mkdir(parents=True)
    git(nested, "init", "-q")
    (nested / "lib.txt").write_text("vendored\n")
    git(nested, "add", "-A")
    git(nested, "-c", "user.email=t@example.com", "-c", "user.name=T", "commit", "-qm", "v")
    data = write(ws, nested / "x.txt", cwd=str(nested))
    assert "vendor/lib/x.txt:1: FORBIDDEN marker" in deny_reason(
        hook("pre-tool", ws, data)[1])
    data = write(ws, ws / RULE_FILE, "x\n", cwd=str(nested))
    assert RULE_FILE in deny_reason(hook("pre-tool", ws, data)[1])
    hook("start", ws, start(ws, cwd=str(nested)))
    (ws / "b.txt").write_text("FORBIDDEN\n")
    assert "b.txt:1:" in block_reason(hook("stop", ws, stop(ws, cwd=str(nested)))[1])


def test_claude_project_dir_is_the_workspace_wherever_the_hook_runs(ws: Path,
                                                                  tmp_path: Path) -> None:
    away = tmp_path / "away"
    away.mkdir()
    env = clean_env(CLAUDE_PROJECT_DIR=str(ws))
    data = write(ws, ws / "n.txt", cwd=str(away))
    assert "n.txt:1:" in deny_reason(hook("pre-tool", ws, data, cwd=away, env=env)[1])
    # Without it, the hook's own working folder decides: a folder without rules
    # has nothing to enforce (and start says so).
    assert hook("pre-tool", ws, data, cwd=away)[:2] == (0, None)
    out = hook("start", ws, start(ws), cwd=away)[1]
    assert "rules folder not found" in out["hookSpecificOutput"]["additionalContext"]


def test_hook_run_from_a_subfolder_uses_the_git_top_level(ws: Path) -> None:
    (ws / "src").mkdir()
    data = write(ws, "src/x.txt", cwd=str(ws / "src"))  # relative: the workspace's
    assert "src/x.txt:1: FORBIDDEN marker" in deny_reason(
        hook("pre-tool", ws, data, cwd=ws / "src")[1])


def test_a_symlinked_alias_of_the_rules_folder_is_the_rules_folder(ws: Path,
                                                                   tmp_path: Path) -> None:
    (ws / "alias").symlink_to(ws / "rules")
    for path in (ws / "alias" / "protect-rules" / "rule.yaml",  # alias -> rules
                 ws / "a" / ".." / RULE_FILE,  # `..`
                 ws / "alias" / ".." / "alias" / "protect-rules" / "x.yaml"):
        reason = deny_reason(hook("pre-tool", ws, write(ws, path, "x\n"))[1])
        assert "rules/protect-rules/" in reason and "alias" not in reason
    # A link from outside the workspace into it, and a file linked into the rules.
    (tmp_path / "outside-link").symlink_to(ws / "rules")
    reason = deny_reason(hook("pre-tool", ws, write(
        ws, tmp_path / "outside-link" / "protect-rules" / "rule.yaml", "x\n"))[1])
    assert RULE_FILE in reason
    (ws / "innocent.yaml").symlink_to(ws / RULE_FILE)
    assert RULE_FILE in deny_reason(hook("pre-tool", ws, write(ws, "innocent.yaml", "x\n"))[1])
    # Edit through the alias, too (old content read through the real file).
    edit = pre_tool(ws, "Edit", {"file_path": str(ws / "alias" / "protect-rules" / "rule.yaml"),
                                 "old_string": "pre-tool", "new_string": "ci"})
    assert RULE_FILE in deny_reason(hook("pre-tool", ws, edit)[1])


def test_tools_path_globs_match_the_resolved_path(ws: Path) -> None:
    folder = ws / "rules" / "src-only"
    folder.mkdir()
    (folder / "rule.yaml").write_text(
        "description: nothing is written under src\non: [pre-tool]\ntools: [Write(src/**)]\n"
        "checks:\n  - script: refuse.sh\n")
    (folder / "refuse.sh").write_text("#!/bin/sh\necho 'no writes under src'\nexit 1\n")
    (folder / "refuse.sh").chmod(0o755)
    (ws / "src").mkdir()
    (ws / "link").symlink_to(ws / "src")
    reason = deny_reason(hook("pre-tool", ws, write(ws, ws / "link" / "y.py", "ok\n"))[1])
    assert reason.startswith("src-only: no writes under src")
    assert hook("pre-tool", ws, write(ws, ws / "elsewhere.py", "ok\n"))[:2] == (0, None)


def test_case_is_resolved_as_the_file_system_stores_it(tmp_path: Path) -> None:
    # Linux file systems keep case apart, so no end-to-end case here: the part that
    # spells a path as stored is checked on its own.
    (tmp_path / "Rules" / "Protect-Rules").mkdir(parents=True)
    (tmp_path / "Rules" / "Protect-Rules" / "rule.yaml").write_text("x")
    asked = os.path.join(str(tmp_path), "RULES", "protect-rules", "RULE.YAML")
    assert toolmatch.true_case(asked) == str(tmp_path / "Rules" / "Protect-Rules" / "rule.yaml")
    # A name not there keeps its spelling; so does everything under it.
    assert toolmatch.true_case(str(tmp_path / "rules" / "NEW" / "x")) == str(
        tmp_path / "Rules" / "NEW" / "x")
    assert toolmatch.folds_case(str(tmp_path)) is False  # this file system keeps case
