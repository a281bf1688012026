"""Sealed sessions without the agent: what `slopjudge install claude --sealed` writes, what
`uninstall` takes out again, and what `hook start` says about the settings in effect,
through the real `slopjudge` processes on real repositories. The session itself, with the
real Claude Code and bubblewrap, is tests/test_sealed_claude_e2e.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.failclosed.hooks_kit import clean_env, hook, make_ws, start

VENV = os.path.realpath(sys.prefix)  # the virtualenv running the tests, and so slopjudge


@pytest.fixture()
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    return clean_env(HOME=str(home), XDG_STATE_HOME=str(home / ".local" / "state"))


def slopjudge(ws: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "slopjudge", *args], cwd=ws, env=env,
                          capture_output=True, text=True, timeout=120)


def settings(ws: Path) -> dict[str, Any]:
    return json.loads((ws / ".claude" / "settings.json").read_text())


def start_says(ws: Path, env: dict[str, str]) -> str:
    rc, out, err = hook("start", ws, start(ws), env=env, process=True)
    assert rc == 0, err
    said = out["systemMessage"]
    assert said in err  # the person at a terminal reads the same
    return str(said)


def test_install_sealed_writes_the_sandbox_and_the_deny_rules(tmp_path: Path,
                                                              env: dict[str, str]) -> None:
    ws = make_ws(tmp_path)
    proc = slopjudge(ws, env, "install", "claude", "--sealed")
    assert proc.returncode == 0, proc.stderr
    assert "this session is sealed" in proc.stdout
    sandbox = settings(ws)["sandbox"]
    assert (sandbox["enabled"], sandbox["failIfUnavailable"],
            sandbox["allowUnsandboxedCommands"]) == (True, True, False)
    deny_write = sandbox["filesystem"]["denyWrite"]
    for path in ("rules", ".slopjudge", "RUBRIC.md", "slopjudge.yaml", ".claude", ".codex",
                 ".git/config", ".git/hooks", ".git/info", "~/.local/state/slopjudge",
                 "~/.claude", VENV):
        assert path in deny_write, path
    assert sandbox["filesystem"]["denyRead"] == ["~/.local/state/slopjudge/key"]
    deny = settings(ws)["permissions"]["deny"]
    for entry in ("Edit(/rules/**)", "Edit(/.git/config)", "Edit(/.git/hooks/**)",
                  f"Edit(/{VENV}/**)", "Edit(~/.claude/**)",
                  "Read(~/.local/state/slopjudge/key)"):
        assert entry in deny, entry
    key = tmp_path / "home" / ".local" / "state" / "slopjudge" / "key"
    assert key.stat().st_mode & 0o777 == 0o600  # made now, for the sandbox to hide
    before = (ws / ".claude" / "settings.json").read_bytes()
    assert slopjudge(ws, env, "install", "claude", "--sealed").returncode == 0
    assert (ws / ".claude" / "settings.json").read_bytes() == before  # nothing twice


def test_a_claude_folder_that_is_a_link_is_sealed_as_a_folder(tmp_path: Path,
                                                               env: dict[str, str]) -> None:
    """The agent's folder is guarded whole, as the workspace names it: when it is a link,
    the files of its target are not listed one by one as well."""
    lists = []
    for kind in ("folder", "link"):
        ws = make_ws(tmp_path / kind)
        if kind == "link":
            (tmp_path / "elsewhere").mkdir()
            (ws / ".claude").symlink_to(tmp_path / "elsewhere")
        assert slopjudge(ws, env, "install", "claude", "--sealed").returncode == 0
        lists.append((settings(ws)["sandbox"]["filesystem"]["denyWrite"],
                      settings(ws)["permissions"]["deny"]))
    assert lists[1] == lists[0]
    assert not any("elsewhere" in entry for entries in lists[1] for entry in entries)


def test_uninstall_takes_out_what_sealed_wrote_and_nothing_of_the_persons(
        tmp_path: Path, env: dict[str, str]) -> None:
    ws = make_ws(tmp_path)
    theirs = {"model": "opus",
              "permissions": {"deny": ["Bash(rm -rf *)", "Edit(/rules/**)"]},
              "sandbox": {"enabled": False, "network": {"allowedDomains": ["example.com"]}}}
    (ws / ".claude").mkdir()
    (ws / ".claude" / "settings.json").write_text(json.dumps(theirs))
    assert slopjudge(ws, env, "install", "claude", "--sealed").returncode == 0
    assert settings(ws)["sandbox"]["enabled"] is True
    proc = slopjudge(ws, env, "uninstall", "claude")
    assert proc.returncode == 0, proc.stderr
    assert settings(ws) == theirs  # their own Edit(/rules/**) and enabled: false included
    assert not (ws / ".claude" / "slopjudge-sealed.json").exists()
    assert not (ws / ".claude" / "hooks").exists()


def test_uninstall_removes_a_settings_file_sealed_made(tmp_path: Path,
                                                       env: dict[str, str]) -> None:
    ws = make_ws(tmp_path)
    assert slopjudge(ws, env, "install", "claude", "--sealed").returncode == 0
    assert slopjudge(ws, env, "uninstall", "claude").returncode == 0
    assert not (ws / ".claude" / "settings.json").exists()
    assert not (ws / ".claude" / "slopjudge-sealed.json").exists()


def test_install_codex_sealed_is_refused_in_one_line(tmp_path: Path,
                                                     env: dict[str, str]) -> None:
    ws = make_ws(tmp_path)
    proc = slopjudge(ws, env, "install", "codex", "--sealed")
    assert proc.returncode == 2
    [line] = proc.stderr.splitlines()
    assert line.startswith("slopjudge: codex cannot be sealed: its sandbox settings")
    assert "cannot keep its shell from writing the rules" in line
    assert not (ws / ".codex").exists()


def test_hook_start_reports_an_unsealed_session_and_each_gap(tmp_path: Path,
                                                             env: dict[str, str]) -> None:
    ws = make_ws(tmp_path)
    assert slopjudge(ws, env, "install", "claude").returncode == 0  # hooks, no sandbox
    said = start_says(ws, env)
    head = "slopjudge: this session is NOT sealed (`slopjudge install claude --sealed` seals it): "
    assert said.startswith(head), said
    parts = said[len(head):].split("\n")[0].split("; ")
    assert parts[:3] == ["sandbox.enabled is not true", "sandbox.failIfUnavailable is not true",
                         "sandbox.allowUnsandboxedCommands is not false"]
    reach = dict(p.split(": ", 1) for p in parts[3:])
    assert reach.keys() == {"its shell can write", "its file tools can write",
                            "its shell can read", "its file tools can read"}
    for who in ("its shell can write", "its file tools can write"):
        written = reach[who].split(", ")
        for path in ("rules", ".git/hooks", ".git/config", ".git/info", ".slopjudge",
                     ".claude", VENV, "~/.local/state/slopjudge", "~/.claude"):
            assert path in written, (who, path, written)
    assert reach["its shell can read"] == reach["its file tools can read"] == (
        "~/.local/state/slopjudge/key")


def test_hook_start_names_the_one_path_a_sealed_setup_leaves_open(
        tmp_path: Path, env: dict[str, str]) -> None:
    ws = make_ws(tmp_path)
    assert slopjudge(ws, env, "install", "claude", "--sealed").returncode == 0
    assert "this session is sealed" in start_says(ws, env)
    data = settings(ws)
    data["sandbox"]["filesystem"]["denyWrite"].remove(".git/hooks")
    (ws / ".claude" / "settings.json").write_text(json.dumps(data))
    # The Edit rule still keeps the shell out: Claude Code adds it to the sandbox's list.
    assert "this session is sealed" in start_says(ws, env)
    data["permissions"]["deny"].remove("Edit(/.git/hooks/**)")
    (ws / ".claude" / "settings.json").write_text(json.dumps(data))
    said = start_says(ws, env).split("\n")[0]
    assert said.endswith("seals it): its shell can write: .git/hooks; "
                         "its file tools can write: .git/hooks"), said
    # A user setting that runs commands outside the sandbox opens every path to the shell.
    user = tmp_path / "home" / ".claude"
    user.mkdir()
    (user / "settings.json").write_text(json.dumps({"sandbox": {"excludedCommands": ["make"]}}))
    said = start_says(ws, env)
    assert "seals it): sandbox.excludedCommands runs these outside the sandbox: make; " \
        "its shell can write: .slopjudge, rules," in said, said


def test_settings_that_cannot_be_read_are_never_sealed(tmp_path: Path,
                                                       env: dict[str, str]) -> None:
    ws = make_ws(tmp_path)
    assert slopjudge(ws, env, "install", "claude", "--sealed").returncode == 0
    (ws / ".claude" / "settings.local.json").write_text("{not json")
    said = start_says(ws, env)
    assert "this session is NOT known to be sealed" in said
    assert "settings.local.json cannot be read" in said


def test_a_settings_file_sealed_cannot_take_is_left_untouched(tmp_path: Path,
                                                              env: dict[str, str]) -> None:
    ws = make_ws(tmp_path)
    (ws / ".claude").mkdir()
    (ws / ".claude" / "settings.json").write_text('{"sandbox": []}')
    proc = slopjudge(ws, env, "install", "claude", "--sealed")
    assert proc.returncode == 2
    assert proc.stderr == ('slopjudge: .claude/settings.json: "sandbox" is not an object; '
                           "left untouched\n")
    assert (ws / ".claude" / "settings.json").read_text() == '{"sandbox": []}'  # no hooks either
