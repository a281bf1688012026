"""slopjudge's hooks inside a real Codex session.

The real CLI (pinned in package.json) runs `codex exec` in a temporary git repository
whose hooks were installed by `slopjudge install codex`; a fake Responses API plays
the model, turn by turn, and the test reads what the hooks sent back in the next
request (tool outputs, Stop feedback, session context). Codex runs a project's hooks
only when the project and each hook are trusted: the tests trust them the way
`slopjudge doctor` says to.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from slopjudge.resources import DATA_DIR
from tests.codex_cli import codex_bin
from tests.fakeresponses import (
    FakeResponsesAPI,
    call_outputs,
    codex_env,
    codex_home,
    patch,
    say,
    shell,
    user_texts,
)

pytestmark = pytest.mark.codex

SLOPJUDGE = str(Path(sys.executable).parent / "slopjudge")

SCAN = r'''#!/usr/bin/env python3
"""Refuse added lines that contain FORBIDDEN."""
import json, sys
payload = json.load(sys.stdin)
bad = []
for f in payload["changeset"]["files"]:
    for line in f["diff"].splitlines():
        if line.startswith("+") and not line.startswith("+++") and "FORBIDDEN" in line:
            bad.append({"path": f["path"], "message": "FORBIDDEN marker"})
if bad:
    print(json.dumps({"reason": "added lines contain FORBIDDEN; remove the marker",
                      "findings": bad}))
    sys.exit(1)
'''
ADD_RULE = "*** Begin Patch\n*** Add File: rules/evil/rule.yaml\n+description: x\n*** End Patch\n"

Turns = list[list[dict[str, Any]]]


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def sj(cwd: Path, *args: str,
       env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SLOPJUDGE, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env=env)


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    """A committed repository with protect-rules (from the default pack) and a Stop rule
    refusing FORBIDDEN, slopjudge's Codex hooks installed by their absolute path."""
    ws = tmp_path / "repo"
    (ws / "rules" / "no-forbidden").mkdir(parents=True)
    git(ws, "init", "-q", "-b", "main")
    git(ws, "config", "user.email", "t@example.com")
    git(ws, "config", "user.name", "T")
    for name in ("protect-rules", "_lib"):
        shutil.copytree(Path(DATA_DIR) / "rules" / name, ws / "rules" / name)
    scan = ws / "rules" / "no-forbidden" / "scan.py"
    scan.write_text(SCAN)
    scan.chmod(0o755)
    (ws / "rules" / "no-forbidden" / "rule.yaml").write_text(
        "description: No FORBIDDEN markers in added lines\non: [stop]\n"
        "checks:\n  - id: scan\n    script: scan.py\n")
    (ws / "app.py").write_text("x = 1\n")
    proc = sj(ws, "install", "codex", "--absolute")
    assert proc.returncode == 0, proc.stderr
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "init")
    return ws


def codex_dir(ws: Path) -> Path:
    return ws.parent / "codex-home"


def doctor(ws: Path) -> subprocess.CompletedProcess[str]:
    return sj(ws, "doctor", env={**os.environ, "CODEX_HOME": str(codex_dir(ws))})


def trust_lines(doctor_out: str) -> str:
    """The config.toml lines `slopjudge doctor` says to add, as it prints them."""
    lines = doctor_out.splitlines()
    picked = [x for i, x in enumerate(lines) if x.startswith("[hooks.state.")
              or (x.startswith("trusted_hash = ") and lines[i - 1].startswith("[hooks.state."))]
    return "\n".join(picked) + "\n"


def project_trust(ws: Path) -> str:
    return f'[projects.{json.dumps(str(ws))}]\ntrust_level = "trusted"\n'


def trust_all(ws: Path) -> str:
    """Project trust and the hook trust `slopjudge doctor` prints: what a person adds."""
    home = codex_dir(ws)
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text(project_trust(ws))
    return project_trust(ws) + trust_lines(doctor(ws).stdout)


def session(ws: Path, turns: Turns | Callable[[dict[str, Any], int], Any], trust: str,
            extra_env: dict[str, str] | None = None, usage: dict[str, int] | None = None,
            ) -> tuple[FakeResponsesAPI, subprocess.CompletedProcess[str]]:
    """One `codex exec` run in ``ws`` against a fake model playing ``turns``."""
    codex = codex_bin()

    def script(request: dict[str, Any], turn: int) -> Any:
        if callable(turns):
            return turns(request, turn)
        return turns[min(turn, len(turns) - 1)]

    with FakeResponsesAPI(script, usage=usage) as api:
        home = codex_home(codex_dir(ws), api.url, trust)
        env = codex_env(home, str(ws.parent / "home"))
        env.update(extra_env or {})
        proc = subprocess.run([codex, "exec", "--json", "go"], cwd=ws, env=env,
                              capture_output=True, text=True, timeout=240,
                              stdin=subprocess.DEVNULL)
    assert not api.errors, api.errors
    return api, proc


def outputs(api: FakeResponsesAPI) -> list[str]:
    """Every tool output the model read, in order of the requests."""
    seen: dict[str, str] = {}
    for request in api.requests:
        seen.update(call_outputs(request))
    return list(seen.values())


def last_message(proc: subprocess.CompletedProcess[str]) -> str:
    texts = [e["item"]["text"] for e in map(json.loads, proc.stdout.splitlines())
             if e.get("type") == "item.completed" and e["item"].get("type") == "agent_message"]
    return texts[-1] if texts else ""


# --- trust ---------------------------------------------------------------------------


def test_untrusted_hooks_run_nothing_and_doctor_says_how_to_trust_them(repo: Path) -> None:
    codex_dir(repo).mkdir()
    (codex_dir(repo) / "config.toml").write_text(project_trust(repo))
    # The project trusted, the hooks not: Codex runs none of them and says nothing.
    _, proc = session(repo, [[patch(ADD_RULE)], [say("done")]], project_trust(repo))
    assert proc.returncode == 0, proc.stderr
    assert (repo / "rules" / "evil" / "rule.yaml").exists()
    shutil.rmtree(repo / "rules" / "evil")

    report = doctor(repo)
    assert report.returncode == 1, report.stdout
    for event in ("SessionStart", "PreToolUse", "Stop", "SubagentStop"):
        assert f"Codex does not run slopjudge's {event} hook: it is not trusted" in report.stdout
    assert "/hooks" in report.stdout and "for `codex exec`, add these lines" in report.stdout

    # Trusted as doctor says: the same patch is denied, with the reason the agent reads.
    trust = project_trust(repo) + trust_lines(report.stdout)
    (codex_dir(repo) / "config.toml").write_text(trust)
    assert doctor(repo).returncode == 0
    api, proc = session(repo, [[patch(ADD_RULE)], [say("done")]], trust)
    assert proc.returncode == 0, proc.stderr
    assert not (repo / "rules" / "evil").exists()
    (denied,) = outputs(api)
    assert "protect-rules:" in denied and "slopjudge refused this apply_patch" in denied
    assert "rule.." not in denied  # Codex appends ". Command: ..." to the reason

    # A changed hook command is a hook Codex no longer trusts: doctor says so.
    assert sj(repo, "install", "codex", "--command", f"{sys.executable} -m slopjudge"
              ).returncode == 0
    report = doctor(repo)
    assert report.returncode == 1
    assert "PreToolUse hook: it is changed since it was trusted" in report.stdout


def test_the_hash_doctor_computes_is_the_one_codex_computes(repo: Path) -> None:
    """Codex's own hook list (`codex app-server`, `hooks/list`) against slopjudge's reading."""
    from slopjudge.harnesses.codex import our_hooks

    home = codex_dir(repo)
    home.mkdir()
    (home / "config.toml").write_text(project_trust(repo))
    env = codex_env(str(home), str(repo.parent / "home"))
    proc = subprocess.Popen([codex_bin(), "app-server"], cwd=repo, env=env, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        for message in ({"id": 1, "method": "initialize",
                         "params": {"clientInfo": {"name": "test", "version": "1"}}},
                        {"method": "initialized"},
                        {"id": 2, "method": "hooks/list", "params": {"cwds": [str(repo)]}}):
            proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
            proc.stdin.flush()
        while True:
            answer = json.loads(proc.stdout.readline())
            if answer.get("id") == 2:
                break
    finally:
        proc.kill()
        proc.wait()
    theirs = {h["key"]: h["currentHash"] for h in answer["result"]["data"][0]["hooks"]}
    ours = {key: digest for key, _event, digest in our_hooks(str(repo / ".codex/hooks.json"))}
    assert len(ours) == 4 and ours == theirs


def test_every_session_start_that_runs_names_the_hooks_codex_skips(repo: Path) -> None:
    lines = trust_all(repo).split("\n")
    # Only the SessionStart hook trusted: it runs and says loudly that the others do not.
    at = lines.index(next(x for x in lines if ":session_start:" in x))
    trust = project_trust(repo) + "\n".join(lines[at:at + 2]) + "\n"
    (codex_dir(repo) / "config.toml").write_text(trust)
    api, proc = session(repo, [[say("done")]], trust)
    assert proc.returncode == 0, proc.stderr
    context = "\n".join(user_texts(api.requests[0]))
    assert "slopjudge's hooks that do not run" in context
    assert "PreToolUse hook: it is not trusted" in context


# --- tool calls ------------------------------------------------------------------------


def test_a_shell_command_writing_into_rules_is_denied_with_the_reason(repo: Path) -> None:
    trust = trust_all(repo)
    api, proc = session(repo, [[shell("echo x > rules/evil.yaml")], [say("done")]], trust)
    assert proc.returncode == 0, proc.stderr
    assert not (repo / "rules" / "evil.yaml").exists()
    (denied,) = outputs(api)
    assert "protect-rules:" in denied and "slopjudge refused this Bash" in denied
    assert "rule.." not in denied


def test_an_uncertain_judge_asks_and_codex_gets_a_deny_with_the_reason(repo: Path) -> None:
    folder = repo / "rules" / "careful"
    folder.mkdir()
    (folder / "ask.md.j2").write_text("Is this command careful?\n{{ change }}\n")
    (folder / "rule.yaml").write_text(
        "description: commands are careful\non: [pre-tool]\ntools: [Bash]\non_uncertain: ask\n"
        "checks:\n  - id: judge\n    judge: ask.md.j2\n    min_confidence: 0.8\n")
    mock = repo.parent / "mock-judge.sh"
    verdict = {"pass": True, "reasoning": "probably", "confidence": 0.3}
    mock.write_text(f"#!/bin/sh\ncat >/dev/null\necho '{json.dumps(verdict)}'\n")
    mock.chmod(0o755)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "careful")
    mocks = {"SLOPJUDGE_JUDGE_MOCKS": json.dumps({"careful/judge": str(mock)})}
    api, proc = session(repo, [[shell("touch made-it")], [say("done")]], trust_all(repo),
                        extra_env=mocks)
    assert proc.returncode == 0, proc.stderr
    assert not (repo / "made-it").exists()  # an ask Codex would ignore and run: denied
    (denied,) = outputs(api)
    assert "careful: confidence 0.3 below" in denied
    assert "Codex cannot ask the person, so slopjudge denies this call" in denied


# --- stop ---------------------------------------------------------------------------


def test_slop_refused_at_stop_is_fixed_by_the_agent(repo: Path) -> None:
    turns: Turns = [
        [shell("printf 'x = 1  # FORBIDDEN\\n' > app.py")],
        [say("done")],
        [shell("printf 'x = 2\\n' > app.py")],
        [say("fixed")],
    ]
    api, proc = session(repo, turns, trust_all(repo))
    assert proc.returncode == 0, proc.stderr
    assert len(api.requests) == 4
    feedback = "\n".join(user_texts(api.requests[2]))
    assert "no-forbidden/scan: added lines contain FORBIDDEN" in feedback
    assert (repo / "app.py").read_text() == "x = 2\n"
    assert last_message(proc) == "fixed"


def test_at_the_cap_the_agent_is_asked_to_tell_the_person_and_the_turn_ends(
    repo: Path,
) -> None:
    (repo / "slopjudge.yaml").write_text("stop_block_cap: 2\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "cap")

    def stubborn(request: dict[str, Any], turn: int) -> Any:
        if turn == 0:
            return [shell("printf 'x = 1  # FORBIDDEN\\n' > app.py")]
        # A model that does as the last block asks: it starts its reply with the notice.
        asked = [t for t in user_texts(request) if "End your reply by telling the person" in t]
        if not asked:
            return [say("done")]
        notice = asked[-1][asked[-1].index("slopjudge: letting"):]
        return [say(notice.splitlines()[0])]

    api, proc = session(repo, stubborn, trust_all(repo))
    assert proc.returncode == 0, proc.stderr
    # Blocked, then blocked at the cap asking for the notice, then the turn ends: no loop.
    assert len(api.requests) == 4
    assert last_message(proc).startswith(
        "slopjudge: letting the turn end after 2 refusals in a row; the refusal still stands")


def test_without_slopjudge_the_wrapper_blocks_one_stop_per_turn(repo: Path) -> None:
    assert sj(repo, "install", "codex").returncode == 0  # the committed wrapper
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "wrapper")
    trust = trust_all(repo)
    # A machine where the wrapper finds no slopjudge: no venv, none on PATH or importable.
    bare = {"PATH": "/usr/bin:/bin"}
    api, proc = session(repo, [[say("done")]], trust, extra_env=bare)
    assert proc.returncode == 0, proc.stderr
    assert len(api.requests) == 2  # the block, then the retry ends the turn: no loop
    feedback = "\n".join(user_texts(api.requests[1]))
    assert "slopjudge is not installed where this project's hooks can find it" in feedback
    assert "pip install /path/to/slopjudge" in feedback
