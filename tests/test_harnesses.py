"""The agents slopjudge plugs into: one module each, one registry (slopjudge/harnesses).

A harness written in a module of its own and registered is the whole of a new agent:
`slopjudge install` writes its settings and `slopjudge hook ... --harness NAME` answers
in its form. `uninstall` takes out exactly what install wrote; `doctor` says what keeps
an agent from running the hooks.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from slopjudge.cli import main
from slopjudge.harnesses import codex
from slopjudge.harnesses import registry as harnesses
from tests.helpers import cli_env, commit_all, executable, in_process, make_repo, sj

# A new agent, as someone adding one would write it: this module and nothing else.
GEMINI = '''
"""Gemini CLI (for the test): hooks in .gemini/settings.json, its own answer shape."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from slopjudge.harnesses import base
from slopjudge.hookspec import Harness


class Gemini:
    name: str = "gemini"
    settings_relpath: tuple[str, ...] = (".gemini", "settings.json")
    hooks: tuple[base.Hook, ...] = base.HOOKS
    root: str = "$GEMINI_PROJECT_DIR"

    def read_payload(self, point: str, payload: dict[str, Any]) -> dict[str, Any]:
        if "tool_args" in payload:  # its own field name, read into Claude Code's shape
            payload = {**payload, "tool_input": payload.pop("tool_args")}
        return payload

    def pre_tool_answer(self, decision: str, reason: str) -> dict[str, Any]:
        return {"gemini_decision": decision, "gemini_reason": reason}

    def stop_block(self, reason: str) -> dict[str, Any]:
        return {"gemini_decision": "block", "gemini_reason": reason}

    def start_answer(self, notice: str | None, context: str | None) -> dict[str, Any]:
        return {"gemini_notice": notice, "gemini_context": context}

    def end_notice(self, notice: str) -> tuple[dict[str, Any], bool]:
        return {"gemini_notice": notice}, True

    def install_notes(self, workspace: str) -> list[str]:
        return ["slopjudge: restart Gemini CLI to load the hooks"]

    def trust_problems(self, workspace: str) -> list[str]:
        return []

    def judge(self, env: Mapping[str, str]) -> tuple[Harness, bool]:
        raise NotImplementedError("no judge for the test agent")


GEMINI = Gemini()
'''

DENY_ALL = '''#!/usr/bin/env python3
import json, sys
json.load(sys.stdin)
print(json.dumps({"reason": "no shell commands here"}))
sys.exit(1)
'''


@pytest.fixture
def gemini(tmp_path: Path) -> Iterator[object]:
    path = tmp_path / "gemini_agent.py"
    path.write_text(GEMINI)
    spec = importlib.util.spec_from_file_location("gemini_agent", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gemini_agent"] = module
    spec.loader.exec_module(module)
    harnesses.HARNESSES["gemini"] = module.GEMINI
    yield module.GEMINI
    del harnesses.HARNESSES["gemini"]
    del sys.modules["gemini_agent"]


def test_a_harness_from_one_new_module_installs_and_answers_hooks(
    tmp_path: Path, gemini: object, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = make_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    executable(ws / "rules" / "no-shell" / "check.py", DENY_ALL)
    (ws / "rules" / "no-shell" / "rule.yaml").write_text(
        "description: no shell\non: [pre-tool]\ntools: [Bash]\n"
        "checks:\n  - id: scan\n    script: check.py\n")
    commit_all(ws)

    assert main(["install", "gemini", "--command", "sj", "--workspace", str(ws)]) == 0
    assert "restart Gemini CLI" in capsys.readouterr().out
    settings = json.loads((ws / ".gemini" / "settings.json").read_text())
    (group,) = settings["hooks"]["PreToolUse"]
    assert group["hooks"][0]["command"] == "sj hook pre-tool --harness gemini"

    payload = json.dumps({"session_id": "s", "cwd": str(ws), "hook_event_name": "PreToolUse",
                          "tool_name": "Bash", "tool_args": {"command": "ls"}})
    rc, out, err = in_process(lambda: main(["hook", "pre-tool", "--harness", "gemini"]),
                              payload.encode(), cwd=ws, env=cli_env())
    assert rc == 0, err
    answer = json.loads(out)
    assert answer["gemini_decision"] == "deny"
    assert "no-shell: no shell commands here" in answer["gemini_reason"]


def test_a_stop_that_cannot_decide_blocks_in_the_new_harness_form(
    tmp_path: Path, gemini: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    from slopjudge.hooks import stop

    def broken(*_args: object) -> None:
        raise OSError("the state folder is gone")

    ws = make_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    monkeypatch.setattr(stop, "_verdict", broken)
    payload = json.dumps({"session_id": "s", "cwd": str(ws), "hook_event_name": "Stop"})
    rc, out, err = in_process(lambda: main(["hook", "stop", "--harness", "gemini"]),
                              payload.encode(), cwd=ws, env=cli_env())
    assert rc == 0, err
    answer = json.loads(out)
    assert answer["gemini_decision"] == "block", answer
    assert "could not check this session's changes" in answer["gemini_reason"]


@pytest.mark.parametrize("agent", ["gemini", "codex"])
def test_a_stop_retry_past_its_deadline_ends_the_turn(
    tmp_path: Path, gemini: object, monkeypatch: pytest.MonkeyPatch, agent: str
) -> None:
    """In the agent's own form when that ends the turn (the test's Gemini); Codex's own
    form blocks once more to relay the notice, which a deadline would repeat at every stop,
    so it gets the notice that ends it."""
    from slopjudge import hooks
    from slopjudge.hooks import stop

    said: list[tuple[str, int, str]] = []
    monkeypatch.setattr(hooks, "_exit_now", lambda *args: said.append(args))
    monkeypatch.setattr(stop, "main", lambda *args: hooks._on_deadline(14, None) or 0)
    hooks._CALL.update(point="stop", timeout=60.0, retry=True, started=0.0)
    ws = make_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    payload = json.dumps({"session_id": "s", "cwd": str(ws), "hook_event_name": "Stop",
                          "stop_hook_active": True})
    in_process(lambda: hooks.run_point("stop", payload.encode(), None, agent), b"", cwd=ws,
               env=cli_env())
    hooks._CALL.clear()
    message, code, answer = said[0]  # the real one exits the process there
    assert code == 0 and "did not decide within 54 s" in message
    key = "gemini_notice" if agent == "gemini" else "systemMessage"
    assert json.loads(answer)[key].startswith("slopjudge: hook stop did not decide"), answer


def test_a_session_start_answers_in_the_new_harness_form(tmp_path: Path, gemini: object) -> None:
    ws = make_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    (ws / "rules" / "broken").mkdir(parents=True)
    (ws / "rules" / "broken" / "rule.yaml").write_text("description: [\n")
    commit_all(ws)
    payload = json.dumps({"session_id": "s", "cwd": str(ws), "hook_event_name": "SessionStart",
                          "source": "startup"})
    rc, out, err = in_process(lambda: main(["hook", "start", "--harness", "gemini"]),
                              payload.encode(), cwd=ws, env=cli_env())
    assert rc == 0, err
    answer = json.loads(out)
    assert "1 could not load" in answer["gemini_notice"], answer
    assert "rules/broken/rule.yaml" in answer["gemini_context"]


def test_an_unknown_harness_blocks_the_call(tmp_path: Path) -> None:
    ws = make_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    res = sj("hook", "pre-tool", "--harness", "nope", cwd=ws, input="{}")
    assert res.returncode == 2 and "unknown harness 'nope'" in res.stderr


# --- uninstall ----------------------------------------------------------------------


OTHERS = {
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "python3 guard.py", "timeout": 5}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-done"}]}],
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "scan-secrets"}]}],
    },
    "permissions": {"allow": ["Bash(ls:*)"]},
}


@pytest.mark.parametrize("agent", ["claude", "codex"])
def test_uninstall_removes_exactly_what_install_wrote(tmp_path: Path, agent: str) -> None:
    ws = make_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    folder = ".claude" if agent == "claude" else ".codex"
    settings = ws / folder / ("settings.json" if agent == "claude" else "hooks.json")
    settings.parent.mkdir()
    settings.write_text(json.dumps(OTHERS, indent=2))
    (ws / folder / "hooks").mkdir()
    (ws / folder / "hooks" / "guard.py").write_text("# another tool's\n")
    assert sj("install", agent, cwd=ws).returncode == 0
    assert (ws / folder / "hooks" / "slopjudge").exists()

    res = sj("uninstall", agent, cwd=ws)
    assert res.returncode == 0, res.stderr
    assert "removed 4 hooks" in res.stdout
    assert json.loads(settings.read_text()) == OTHERS  # every other hook and setting kept
    assert not (ws / folder / "hooks" / "slopjudge").exists()
    assert (ws / folder / "hooks" / "guard.py").exists()
    again = sj("uninstall", agent, cwd=ws)
    assert again.returncode == 0 and "nothing changed" in again.stdout


def test_uninstall_of_a_fresh_install_leaves_no_file_behind(tmp_path: Path) -> None:
    ws = make_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    assert sj("install", "claude", cwd=ws).returncode == 0
    assert sj("uninstall", "claude", cwd=ws).returncode == 0
    assert not (ws / ".claude" / "settings.json").exists()
    assert not (ws / ".claude" / "hooks").exists()


def test_uninstall_leaves_a_wrapper_it_did_not_write_and_an_unreadable_file(
    tmp_path: Path,
) -> None:
    ws = make_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    (ws / ".claude" / "hooks").mkdir(parents=True)
    (ws / ".claude" / "hooks" / "slopjudge").write_text("#!/bin/sh\n# mine\n")
    (ws / ".claude" / "settings.json").write_text('{"hooks": {,}')
    res = sj("uninstall", "claude", cwd=ws)
    assert res.returncode == 2 and ".claude/settings.json:1:12: not valid JSON" in res.stderr
    assert (ws / ".claude" / "settings.json").read_text() == '{"hooks": {,}'
    (ws / ".claude" / "settings.json").write_text("{}")
    assert sj("uninstall", "claude", cwd=ws).returncode == 0
    assert (ws / ".claude" / "hooks" / "slopjudge").read_text() == "#!/bin/sh\n# mine\n"


# --- doctor -------------------------------------------------------------------------


def test_doctor_without_hooks_says_how_to_install_them(tmp_path: Path) -> None:
    ws = make_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    res = sj("doctor", cwd=ws)
    assert res.returncode == 1 and "slopjudge install claude|codex" in res.stdout


def test_doctor_finds_a_missing_wrapper_and_a_missing_hook(tmp_path: Path) -> None:
    ws = make_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    assert sj("install", "claude", cwd=ws).returncode == 0
    assert sj("doctor", cwd=ws).returncode == 0
    (ws / ".claude" / "hooks" / "slopjudge").unlink()
    settings = json.loads((ws / ".claude" / "settings.json").read_text())
    del settings["hooks"]["Stop"]
    (ws / ".claude" / "settings.json").write_text(json.dumps(settings))
    res = sj("doctor", cwd=ws)
    assert res.returncode == 1
    assert "lacks slopjudge's Stop hook" in res.stdout
    assert ".claude/hooks/slopjudge, which is missing or not executable" in res.stdout


def test_codex_trust_state_read_from_config(tmp_path: Path) -> None:
    """Untrusted, then trusted with doctor's lines, then a changed command: modified."""
    ws = make_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    home = tmp_path / "codex"
    home.mkdir()
    env = {"CODEX_HOME": str(home)}
    assert sj("install", "codex", "--command", "/opt/slopjudge", cwd=ws).returncode == 0
    problems = codex.CODEX.trust_problems(str(ws), env)
    assert any("does not trust the project" in p for p in problems)
    assert sum("it is not trusted" in p for p in problems) == 4
    ours = codex.our_hooks(str(ws / ".codex" / "hooks.json"))
    (home / "config.toml").write_text(
        f'[projects.{json.dumps(str(ws))}]\ntrust_level = "trusted"\n' + "".join(
            f'[hooks.state.{json.dumps(key)}]\ntrusted_hash = "{digest}"\n'
            for key, _event, digest in ours))
    assert codex.CODEX.trust_problems(str(ws), env) == []
    assert sj("install", "codex", "--command", "/opt/new/slopjudge", cwd=ws).returncode == 0
    problems = codex.CODEX.trust_problems(str(ws), env)
    assert sum("changed since it was trusted" in p for p in problems) == 4
    (home / "config.toml").write_text("not = [toml")
    (problem,) = codex.CODEX.trust_problems(str(ws), env)
    assert "cannot be read" in problem and "cannot tell whether Codex trusts" in problem


def test_uninstall_and_install_keep_a_hook_whose_name_merely_holds_slopjudge(
    tmp_path: Path,
) -> None:
    ws = make_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    theirs = {"hooks": {
        "Stop": [{"hooks": [{"type": "command",
                             "command": "~/bin/notify-slopjudge-dashboard hook stop"}]}],
        "SubagentStop": [],  # written so by the person: not slopjudge's to delete
    }}
    (ws / ".claude").mkdir()
    settings = ws / ".claude" / "settings.json"
    settings.write_text(json.dumps(theirs))
    assert sj("install", "claude", cwd=ws).returncode == 0
    stop_commands = [h["command"] for g in json.loads(settings.read_text())["hooks"]["Stop"]
                     for h in g["hooks"]]
    assert "~/bin/notify-slopjudge-dashboard hook stop" in stop_commands
    assert len(stop_commands) == 2
    res = sj("uninstall", "claude", cwd=ws)
    assert res.returncode == 0 and "removed 4 hooks" in res.stdout, res.stdout
    assert json.loads(settings.read_text())["hooks"]["Stop"] == theirs["hooks"]["Stop"]
    # With none of slopjudge's hooks in it, the file is left as the person wrote it.
    settings.write_text(json.dumps(theirs))
    assert sj("uninstall", "claude", cwd=ws).returncode == 0
    assert json.loads(settings.read_text()) == theirs


def test_doctor_reports_a_narrowed_matcher_a_short_timeout_and_another_agents_hooks(
    tmp_path: Path,
) -> None:
    ws = make_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    assert sj("install", "claude", "--absolute", cwd=ws).returncode == 0
    path = ws / ".claude" / "settings.json"
    settings = json.loads(path.read_text())
    (group,) = settings["hooks"]["PreToolUse"]
    group["matcher"] = "Read"
    group["hooks"][0]["timeout"] = 1
    for event in ("Stop", "SubagentStop"):
        for handler in settings["hooks"][event][0]["hooks"]:
            handler["command"] += " --harness codex"
    path.write_text(json.dumps(settings))
    res = sj("doctor", cwd=ws)
    assert res.returncode == 1, res.stdout
    assert 'PreToolUse hook has matcher "Read", not "*"' in res.stdout
    assert "PreToolUse hook has timeout 1, below 660 s" in res.stdout
    assert "Stop hook answers as codex, not claude" in res.stdout
    assert "SubagentStop hook answers as codex, not claude" in res.stdout
    assert "nothing known keeps" not in res.stdout

    assert sj("install", "codex", "--command", "/opt/slopjudge", cwd=ws).returncode == 0
    hooks_json = ws / ".codex" / "hooks.json"
    hooks_json.write_text(hooks_json.read_text().replace(" --harness codex", ""))
    assert "Stop hook answers as claude, not codex" in sj("doctor", cwd=ws).stdout


@pytest.mark.parametrize("agent", ["claude", "codex"])
def test_install_gives_each_judging_hook_the_timeout_its_deadline_follows(
    tmp_path: Path, agent: str
) -> None:
    """A `hook_timeout` longer than the agent's timeout would let a call through between
    the two: install writes the setting, and doctor says when they part."""
    ws = make_repo(tmp_path / "repo", {"app.py": "x = 1\n",
                                       "slopjudge.yaml": "hook_timeout: 1200\n"})
    assert sj("install", agent, cwd=ws).returncode == 0
    relpath = harnesses.HARNESSES[agent].settings_relpath
    written = json.loads(ws.joinpath(*relpath).read_text())["hooks"]
    assert {e: g[0]["hooks"][0]["timeout"] for e, g in written.items()} == {
        "SessionStart": 60, "PreToolUse": 1200, "Stop": 1200, "SubagentStop": 1200}
    assert "timeout" not in sj("doctor", cwd=ws).stdout  # (codex: its trust is said too)
    (ws / "slopjudge.yaml").write_text("hook_timeout: 2000\n")
    res = sj("doctor", cwd=ws)
    assert res.returncode == 1
    assert "Stop hook has timeout 1200, below 2000 s" in res.stdout
    # A broken settings file is said, and the hooks are still looked at.
    (ws / "slopjudge.yaml").write_text("hook_timeout: [\n")
    res = sj("doctor", cwd=ws)
    assert res.returncode == 1 and "PROBLEM: slopjudge.yaml:2:1: broken YAML" in res.stdout
    assert f"{agent}: 4 hooks in" in res.stdout


def test_doctor_reports_a_codex_config_that_is_not_utf8(tmp_path: Path) -> None:
    ws = make_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    home = tmp_path / "codex"
    home.mkdir()
    (home / "config.toml").write_bytes(b'model = "\xff"\n')
    assert sj("install", "codex", "--command", "/opt/slopjudge", cwd=ws).returncode == 0
    res = sj("doctor", cwd=ws, env={"CODEX_HOME": str(home)})
    assert res.returncode == 1
    assert "config.toml: cannot be read" in res.stdout, res.stdout + res.stderr
    assert "internal error" not in res.stdout + res.stderr
