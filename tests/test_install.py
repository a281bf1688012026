"""`slopjudge install claude`: merging hooks into .claude/settings.json."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from slopjudge.commands.install import merge

SLOPJUDGE = str(Path(sys.executable).parent / "slopjudge")
POINTS = {"SessionStart": "start", "PreToolUse": "pre-tool", "Stop": "stop",
          "SubagentStop": "subagent-stop"}


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "sub").mkdir()
    return tmp_path


def install(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``install claude --absolute``: the wrapper is tested in test_install_wrapper.py."""
    args = args if "--command" in args else ("--absolute", *args)
    return subprocess.run([SLOPJUDGE, "install", "claude", *args], cwd=cwd, text=True,
                          capture_output=True, timeout=60)


def ours(settings: dict, event: str) -> list[dict]:
    return [h for g in settings["hooks"][event] for h in g["hooks"]
            if h["command"].removesuffix(" --harness codex").endswith(f" hook {POINTS[event]}")]


def test_fresh_install_writes_the_four_hooks(repo: Path) -> None:
    proc = install(repo / "sub")  # from a subfolder: the repository root is used
    assert proc.returncode == 0, proc.stderr
    settings = json.loads((repo / ".claude" / "settings.json").read_text())
    assert set(settings["hooks"]) == set(POINTS)
    for event, point in POINTS.items():
        (group,) = settings["hooks"][event]
        (handler,) = group["hooks"]
        assert handler == {"type": "command", "command": f"{SLOPJUDGE} hook {point}",
                           "timeout": handler["timeout"]}
        assert handler["timeout"] >= (60 if point == "start" else 660)
        assert group.get("matcher") == ("*" if event == "PreToolUse" else None)
    # The command is absolute and works without PATH.
    assert os.path.isabs(SLOPJUDGE) and os.access(SLOPJUDGE, os.X_OK)


def test_merge_keeps_everything_else_and_is_idempotent(repo: Path) -> None:
    path = repo / ".claude" / "settings.json"
    path.parent.mkdir()
    original = {
        "model": "opus",
        "permissions": {"allow": ["Bash(ls:*)"]},
        "hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [
                {"type": "command", "command": "./guard.sh", "timeout": 5}]}],
            "PostToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "fmt"}]}],
        },
    }
    path.write_text(json.dumps(original))
    assert install(repo).returncode == 0
    first = path.read_text()
    assert install(repo).returncode == 0
    assert path.read_text() == first
    settings = json.loads(first)
    assert settings["model"] == "opus" and settings["permissions"] == original["permissions"]
    assert settings["hooks"]["PostToolUse"] == original["hooks"]["PostToolUse"]
    assert settings["hooks"]["PreToolUse"][0] == original["hooks"]["PreToolUse"][0]
    for event in POINTS:
        assert len(ours(settings, event)) == 1


def test_another_command_replaces_ours_in_place(repo: Path) -> None:
    assert install(repo).returncode == 0
    assert install(repo, "--command", "/opt/slopjudge/bin/slopjudge").returncode == 0
    settings = json.loads((repo / ".claude" / "settings.json").read_text())
    for event, point in POINTS.items():
        assert [h["command"] for h in ours(settings, event)] == [
            f"/opt/slopjudge/bin/slopjudge hook {point}"]


def test_merge_drops_duplicates_and_empty_groups() -> None:
    settings = {"hooks": {"Stop": [
        {"hooks": [{"type": "command", "command": "slopjudge hook stop"}]},
        {"hooks": [{"type": "command", "command": "/x/slopjudge hook stop"},
                   {"type": "command", "command": "other"}]},
    ]}}
    merged = merge(settings, "sj")
    assert merged["hooks"]["Stop"] == [
        {"hooks": [{"type": "command", "command": "sj hook stop", "timeout": 660}]},
        {"hooks": [{"type": "command", "command": "other"}]},
    ]


def test_print_writes_nothing(repo: Path) -> None:
    proc = install(repo, "--print", "--command", "sj")
    assert proc.returncode == 0
    snippet = json.loads(proc.stdout)
    assert snippet["hooks"]["PreToolUse"] == [{"matcher": "*", "hooks": [
        {"type": "command", "command": "sj hook pre-tool", "timeout": 660}]}]
    assert not (repo / ".claude").exists()


@pytest.mark.parametrize("text", ['{"hooks": {,}}', "[1]", '{"hooks": []}'])
def test_unusable_settings_are_left_untouched(repo: Path, text: str) -> None:
    path = repo / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(text)
    proc = install(repo)
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("slopjudge: ")
    assert path.read_text() == text
    if text.startswith('{"hooks": {,'):
        assert ".claude/settings.json:1:12: not valid JSON" in proc.stderr


# --- codex ----------------------------------------------------------------------------

def install_codex(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    args = args if "--command" in args else ("--absolute", *args)
    return subprocess.run([SLOPJUDGE, "install", "codex", *args], cwd=cwd, text=True,
                          capture_output=True, timeout=60)


def test_codex_install_writes_hooks_json_and_says_how_to_trust_them(repo: Path) -> None:
    proc = install_codex(repo / "sub")
    assert proc.returncode == 0, proc.stderr
    assert "codex_hooks" not in proc.stdout  # the feature key of old builds: hooks are on now
    # Codex runs none of them until the project and each hook are trusted: said, with how.
    assert f"Codex does not trust the project {repo.resolve()}" in proc.stdout
    assert "/hooks" in proc.stdout and 'trusted_hash = "sha256:' in proc.stdout
    assert not (repo / ".codex" / "config.toml").exists()  # noted, never edited
    assert not (repo / ".claude").exists()
    hooks = json.loads((repo / ".codex" / "hooks.json").read_text())
    assert set(hooks) == {"hooks"} and set(hooks["hooks"]) == set(POINTS)
    for event, point in POINTS.items():
        (group,) = hooks["hooks"][event]
        assert group.get("matcher") == ("*" if event == "PreToolUse" else None)
        assert group["hooks"] == [{"type": "command",
                                   "command": f"{SLOPJUDGE} hook {point} --harness codex",
                                   "timeout": 60 if point == "start" else 660}]


def test_codex_merge_keeps_other_hooks_and_is_idempotent(repo: Path) -> None:
    path = repo / ".codex" / "hooks.json"
    path.parent.mkdir()
    (repo / ".codex" / "config.toml").write_text("model = 'x'\n")
    original = {"hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "python3 .codex/hooks/guard.py", "timeout": 5}]}],
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "scan-secrets"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "/old/slopjudge hook stop"}]}],
    }}
    path.write_text(json.dumps(original))
    assert install_codex(repo).returncode == 0
    first = path.read_text()
    assert install_codex(repo).returncode == 0
    assert path.read_text() == first
    hooks = json.loads(first)["hooks"]
    assert hooks["UserPromptSubmit"] == original["hooks"]["UserPromptSubmit"]
    assert hooks["PreToolUse"][0] == original["hooks"]["PreToolUse"][0]
    assert [h["command"] for h in ours({"hooks": hooks}, "Stop")] == [
        f"{SLOPJUDGE} hook stop --harness codex"]
    for event in POINTS:
        assert len(ours({"hooks": hooks}, event)) == 1
    assert (repo / ".codex" / "config.toml").read_text() == "model = 'x'\n"


def test_codex_print_writes_nothing(repo: Path) -> None:
    proc = install_codex(repo, "--print", "--command", "sj")
    assert proc.returncode == 0
    assert json.loads(proc.stdout)["hooks"]["Stop"] == [
        {"hooks": [{"type": "command", "command": "sj hook stop --harness codex",
                    "timeout": 660}]}]
    assert "slopjudge doctor" in proc.stderr  # the snippet on stdout stays pure JSON
    assert not (repo / ".codex").exists()


@pytest.mark.parametrize("text", ['{"hooks": {,}}', '{"hooks": {"Stop": {}}}'])
def test_codex_unusable_hooks_json_is_left_untouched(repo: Path, text: str) -> None:
    path = repo / ".codex" / "hooks.json"
    path.parent.mkdir()
    path.write_text(text)
    proc = install_codex(repo)
    assert proc.returncode == 2 and proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("slopjudge: .codex/hooks.json")
    assert path.read_text() == text
