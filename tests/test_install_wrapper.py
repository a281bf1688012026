"""The committed hook wrapper `slopjudge install claude|codex` writes by default.

Each test runs the wrapper as the agent would (through ``sh -c`` and the
command in the settings), with an environment that decides what it can find:
no slopjudge at all, the project's .venv, ``python3 -m slopjudge``, PATH, or
a slopjudge that crashes.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

SLOPJUDGE = str(Path(sys.executable).parent / "slopjudge")
SYSTEM_PATH = "/usr/bin:/bin"

SCAN = r'''#!/usr/bin/env python3
import json, sys
payload = json.load(sys.stdin)
for f in payload["changeset"]["files"]:
    if "FORBIDDEN" in (f["newContent"] or ""):
        print(json.dumps({"reason": "FORBIDDEN marker in " + f["path"]}))
        sys.exit(1)
'''


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout


def write_forbidden_rule(ws: Path) -> None:
    rule = ws / "rules" / "no-forbidden"
    rule.mkdir(parents=True)
    (rule / "scan.py").write_text(SCAN)
    (rule / "scan.py").chmod(0o755)
    (rule / "rule.yaml").write_text(
        "description: No FORBIDDEN markers\non: [pre-tool]\ntools: [Write]\n"
        "checks:\n  - id: scan\n    script: scan.py\n")


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    ws = tmp_path / "repo"
    ws.mkdir()
    git(ws, "init", "-q")
    write_forbidden_rule(ws)
    (ws / "sub").mkdir()
    return ws


def install(ws: Path, harness: str = "claude", *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SLOPJUDGE, "install", harness, *args], cwd=ws, text=True,
                          capture_output=True, timeout=60)


def hook_command(ws: Path, event: str, harness: str = "claude") -> str:
    name = ".claude/settings.json" if harness == "claude" else ".codex/hooks.json"
    settings = json.loads((ws / name).read_text())
    (group,) = settings["hooks"][event]
    (handler,) = group["hooks"]
    return str(handler["command"])


def bare_env(ws: Path, **extra: str) -> dict[str, str]:
    """An agent's environment on a machine where slopjudge is not installed."""
    home = ws.parent / "home"
    home.mkdir(exist_ok=True)
    return {"PATH": SYSTEM_PATH, "HOME": str(home), "CLAUDE_PROJECT_DIR": str(ws), **extra}


def run_hook(ws: Path, event: str, payload: Any, env: dict[str, str], *,
             harness: str = "claude", cwd: Path | None = None) -> tuple[int, str, str]:
    """The settings' command for ``event`` run as the agent runs it: ``sh -c``."""
    data = payload if isinstance(payload, str) else json.dumps(payload)
    proc = subprocess.run(["sh", "-c", hook_command(ws, event, harness)], input=data,
                          cwd=cwd or ws, env=env, capture_output=True, text=True, timeout=60)
    return proc.returncode, proc.stdout, proc.stderr


def write(ws: Path, content: str = "x = 1\n") -> dict[str, Any]:
    return {"hook_event_name": "PreToolUse", "session_id": "s1", "cwd": str(ws),
            "tool_name": "Write",
            "tool_input": {"file_path": str(ws / "a.py"), "content": content}}


def tool_call(ws: Path, name: str, **tool_input: Any) -> dict[str, Any]:
    return {"hook_event_name": "PreToolUse", "session_id": "s1", "cwd": str(ws),
            "tool_name": name, "tool_input": tool_input}


INSTALL_HINT = ".venv/bin/pip install /path/to/slopjudge (a slopjudge checkout or wheel)"


# --- what install writes --------------------------------------------------------------

def test_install_writes_an_executable_wrapper_and_points_the_settings_at_it(repo: Path) -> None:
    proc = install(repo / "sub")
    assert proc.returncode == 0, proc.stderr
    assert "commit .claude/hooks/slopjudge" in proc.stdout
    wrapper = repo / ".claude" / "hooks" / "slopjudge"
    assert wrapper.stat().st_mode & stat.S_IXUSR
    assert wrapper.read_text().startswith("#!/bin/sh\n")
    for event, point in (("SessionStart", "start"), ("PreToolUse", "pre-tool"),
                         ("Stop", "stop"), ("SubagentStop", "subagent-stop")):
        assert hook_command(repo, event) == (
            f'"$CLAUDE_PROJECT_DIR"/.claude/hooks/slopjudge hook {point}')
    # No machine's path is in what gets committed.
    committed = (repo / ".claude" / "settings.json").read_text() + wrapper.read_text()
    assert str(Path(sys.executable).parent) not in committed and str(repo) not in committed


def test_install_is_idempotent_and_keeps_other_settings(repo: Path) -> None:
    settings = repo / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"model": "opus", "hooks": {"PreToolUse": [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh"}]}]}}))
    assert install(repo).returncode == 0
    wrapper = repo / ".claude" / "hooks" / "slopjudge"
    first = (settings.read_text(), wrapper.read_text(), wrapper.stat().st_mtime_ns)
    assert install(repo).returncode == 0
    assert (settings.read_text(), wrapper.read_text(), wrapper.stat().st_mtime_ns) == first
    data = json.loads(first[0])
    assert data["model"] == "opus"
    assert data["hooks"]["PreToolUse"][0] == {
        "matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh"}]}
    # --absolute replaces the wrapper's entries in place, and back again.
    assert install(repo, "claude", "--absolute").returncode == 0
    assert hook_command(repo, "Stop") == f"{SLOPJUDGE} hook stop"
    assert install(repo).returncode == 0
    assert settings.read_text() == first[0]


def test_a_file_slopjudge_did_not_write_is_left_alone(repo: Path) -> None:
    wrapper = repo / ".claude" / "hooks" / "slopjudge"
    wrapper.parent.mkdir(parents=True)
    wrapper.write_text("#!/bin/sh\necho mine\n")
    proc = install(repo)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip() == (
        "slopjudge: .claude/hooks/slopjudge: exists and was not written by slopjudge; "
        "left untouched (move it away, or use --absolute)")
    assert wrapper.read_text() == "#!/bin/sh\necho mine\n"
    assert not (repo / ".claude" / "settings.json").exists()
    # An older wrapper of slopjudge's own is replaced.
    wrapper.write_text("#!/bin/sh\n# slopjudge hook wrapper (written by `slopjudge install "
                       "claude`; commit it with the settings).\nexit 0\n")
    assert install(repo).returncode == 0
    assert "python3 -P -m slopjudge" in wrapper.read_text()


def test_print_names_the_wrapper_and_writes_nothing(repo: Path) -> None:
    proc = install(repo, "claude", "--print")
    assert proc.returncode == 0
    snippet = json.loads(proc.stdout)
    assert snippet["hooks"]["Stop"][0]["hooks"][0]["command"] == (
        '"$CLAUDE_PROJECT_DIR"/.claude/hooks/slopjudge hook stop')
    assert "`slopjudge install claude` writes" in proc.stderr
    assert not (repo / ".claude").exists()


def test_absolute_and_command_do_not_go_together(repo: Path) -> None:
    proc = install(repo, "claude", "--absolute", "--command", "sj")
    assert proc.returncode == 2 and "not allowed with argument" in proc.stderr


# --- slopjudge missing: fail closed -----------------------------------------------------

@pytest.mark.parametrize("harness", ["claude", "codex"])
def test_missing_slopjudge_blocks_writes_and_shell_with_the_install_message(
        repo: Path, harness: str) -> None:
    assert install(repo, harness).returncode == 0
    env = bare_env(repo)
    for payload in (write(repo), tool_call(repo, "Bash", command="ls"),
                    tool_call(repo, "Edit", file_path="a", old_string="x", new_string="y"),
                    tool_call(repo, "apply_patch", command="*** Begin Patch"),
                    tool_call(repo, "mcp__github__create_file", path="x")):
        rc, out, err = run_hook(repo, "PreToolUse", payload, env, harness=harness,
                                cwd=repo / "sub")
        assert rc == 2, (payload["tool_name"], err)
        assert err.startswith(f"BLOCKED by slopjudge: {payload['tool_name']} could change")
        assert INSTALL_HINT in err and f"in a terminal at {repo}" in err
        assert out == ""


def test_missing_slopjudge_lets_read_only_tools_run_with_a_warning(repo: Path) -> None:
    assert install(repo).returncode == 0
    for name in ("Read", "Grep", "Glob", "WebSearch"):
        rc, out, err = run_hook(repo, "PreToolUse", tool_call(repo, name, pattern="x"),
                                bare_env(repo))
        assert (rc, out) == (0, ""), name
        assert err.startswith("slopjudge: WARNING: slopjudge is not installed")
        assert "writes are blocked" in err


@pytest.mark.parametrize("payload", [
    "",  # no payload at all
    "not json",
    '{"tool_name": 3}',
    # A nested key of the same name must not pass for the tool.
    '{"tool_name": "mcp__x__run", "tool_input": {"tool_name": "Read"}}',
])
def test_missing_slopjudge_blocks_what_it_cannot_name(repo: Path, payload: str) -> None:
    assert install(repo).returncode == 0
    rc, out, err = run_hook(repo, "PreToolUse", payload, bare_env(repo))
    assert rc == 2 and "BLOCKED by slopjudge" in err and INSTALL_HINT in err


def test_a_quoted_tool_name_inside_the_content_does_not_pass_for_the_tool(repo: Path) -> None:
    assert install(repo).returncode == 0
    payload = write(repo, content='{"tool_name": "Read"}\n')
    rc, _out, err = run_hook(repo, "PreToolUse", payload, bare_env(repo))
    assert rc == 2 and err.startswith("BLOCKED by slopjudge: Write could change")


def test_missing_slopjudge_blocks_the_stop_and_warns_at_start(repo: Path) -> None:
    assert install(repo).returncode == 0
    for event in ("Stop", "SubagentStop"):
        rc, out, err = run_hook(repo, event, {"hook_event_name": event}, bare_env(repo))
        assert rc == 0
        answer = json.loads(out)
        assert answer["decision"] == "block"
        assert answer["reason"].startswith("BLOCKED by slopjudge: the changes of this turn")
        assert INSTALL_HINT in answer["reason"]
    rc, out, err = run_hook(repo, "SessionStart", "", bare_env(repo))
    assert rc == 0
    context = json.loads(out)["hookSpecificOutput"]
    assert context["hookEventName"] == "SessionStart"
    assert context["additionalContext"].startswith("slopjudge is NOT running in this session")
    assert INSTALL_HINT in err


def test_a_project_path_with_quotes_still_gives_valid_json(tmp_path: Path) -> None:
    ws = tmp_path / 'we "quote" \\ and ünï'
    ws.mkdir()
    git(ws, "init", "-q")
    assert install(ws).returncode == 0
    rc, out, _err = run_hook(ws, "Stop", "{}", bare_env(ws))
    assert rc == 0 and str(ws) in json.loads(out)["reason"]


# --- slopjudge found --------------------------------------------------------------------

def link_venv(ws: Path, name: str = ".venv") -> None:
    (ws / name / "bin").mkdir(parents=True)
    (ws / name / "bin" / "slopjudge").symlink_to(SLOPJUDGE)


def fake_slopjudge(folder: Path, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "slopjudge"
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


@pytest.mark.parametrize("venv", [".venv", "venv"])
def test_the_projects_virtualenv_is_used_and_judges(repo: Path, venv: str) -> None:
    assert install(repo).returncode == 0
    link_venv(repo, venv)
    # A python beside it that is not the launcher's (a link into another install): the
    # wrapper runs the launcher itself, not that python.
    (repo / venv / "bin" / "python").write_text("#!/bin/sh\nexit 1\n")
    (repo / venv / "bin" / "python").chmod(0o755)
    # A slopjudge on PATH comes after the project's own.
    other = fake_slopjudge(repo.parent / "elsewhere", "echo wrong one >&2; exit 2")
    env = bare_env(repo, PATH=f"{other.parent}:{SYSTEM_PATH}")
    rc, out, err = run_hook(repo, "PreToolUse", write(repo, "FORBIDDEN\n"), env)
    assert rc == 0, err
    decision = json.loads(out)["hookSpecificOutput"]
    assert decision["permissionDecision"] == "deny"
    assert "FORBIDDEN marker in a.py" in decision["permissionDecisionReason"]
    assert run_hook(repo, "PreToolUse", write(repo), env)[:2] == (0, "")


def test_a_virtualenv_python_runs_slopjudge_even_in_a_folder_with_spaces(
        tmp_path: Path) -> None:
    """With the project virtualenv's python beside its slopjudge, the wrapper runs
    slopjudge through that python (pip's launcher would import `re` first), and quotes
    a project path with spaces."""
    ws = tmp_path / "my projects" / "app"
    ws.mkdir(parents=True)
    git(ws, "init", "-q")
    write_forbidden_rule(ws)
    assert install(ws).returncode == 0
    bin_dir = ws / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    # The virtualenv's launcher, as pip writes it: its first line names that python
    # (here in a folder with a space, where the kernel cannot run it at all).
    launcher = bin_dir / "slopjudge"
    launcher.write_text(f"#!{bin_dir}/python\nimport sys\nsys.exit('launcher run')\n")
    launcher.chmod(0o755)
    (bin_dir / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    (bin_dir / "python").chmod(0o755)
    rc, out, err = run_hook(ws, "PreToolUse", write(ws, "FORBIDDEN\n"), bare_env(ws))
    assert rc == 0, err
    assert "launcher run" not in err
    assert json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert run_hook(ws, "PreToolUse", write(ws), bare_env(ws))[:2] == (0, "")


def test_a_linked_virtualenv_runs_slopjudge_through_its_launchers_python(repo: Path) -> None:
    """A launcher whose first line names a python outside the project (the virtualenv is
    a link, or was made at another path to the project): the wrapper runs slopjudge
    through that python, not through the launcher (pip's imports `re` first)."""
    assert install(repo).returncode == 0
    bin_dir = repo / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    launcher = bin_dir / "slopjudge"
    launcher.write_text(f"#!{sys.executable}\nimport sys\nsys.exit('launcher run')\n")
    launcher.chmod(0o755)
    rc, out, err = run_hook(repo, "PreToolUse", write(repo, "FORBIDDEN\n"), bare_env(repo))
    assert rc == 0, err
    assert "launcher run" not in err
    assert json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "deny"
    # A line that is no plain python (arguments after it) is left to the launcher.
    launcher.write_text(f"#!{sys.executable} -E\nimport sys\nsys.exit('launcher run')\n")
    rc, _out, err = run_hook(repo, "PreToolUse", write(repo), bare_env(repo))
    assert rc == 2 and "launcher run" in err, err


def test_python_dash_m_is_used_when_python3_can_import_slopjudge(repo: Path) -> None:
    assert install(repo).returncode == 0
    bin_dir = repo.parent / "pybin"
    bin_dir.mkdir()
    (bin_dir / "python3").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    (bin_dir / "python3").chmod(0o755)
    rc, out, err = run_hook(repo, "PreToolUse", write(repo, "FORBIDDEN\n"),
                            bare_env(repo, PATH=f"{bin_dir}:{SYSTEM_PATH}"))
    assert rc == 0, err
    assert json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "deny"
    # A package named slopjudge written into the project is not what the wrapper runs.
    planted = repo / "slopjudge"
    planted.mkdir()
    for name in ("__init__.py", "cli.py"):
        (planted / name).write_text("")
    (planted / "__main__.py").write_text("import sys\nsys.exit(0)\n")
    rc, out, err = run_hook(repo, "PreToolUse", write(repo, "FORBIDDEN\n"),
                            bare_env(repo, PATH=f"{bin_dir}:{SYSTEM_PATH}"))
    assert rc == 0, err
    assert json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_slopjudge_on_path_and_in_home_local_bin(repo: Path) -> None:
    assert install(repo).returncode == 0
    on_path = fake_slopjudge(repo.parent / "onpath", 'echo "on PATH: $*"')
    rc, out, _ = run_hook(repo, "Stop", "{}",
                          bare_env(repo, PATH=f"{on_path.parent}:{SYSTEM_PATH}"))
    assert (rc, out) == (0, "on PATH: hook stop\n")
    env = bare_env(repo)
    fake_slopjudge(Path(env["HOME"]) / ".local" / "bin", 'echo "in ~/.local/bin: $*"')
    assert run_hook(repo, "Stop", "{}", env)[:2] == (0, "in ~/.local/bin: hook stop\n")
    # SLOPJUDGE_BIN beats them all.
    chosen = fake_slopjudge(repo.parent / "chosen", 'echo "chosen: $*"')
    env["SLOPJUDGE_BIN"] = str(chosen)
    assert run_hook(repo, "Stop", "{}", env)[:2] == (0, "chosen: hook stop\n")


def test_stdin_reaches_slopjudge_unchanged(repo: Path) -> None:
    assert install(repo).returncode == 0
    echo = fake_slopjudge(repo.parent / "echo", "cat")
    payload = json.dumps(write(repo, "é\n" * 50_000))  # larger than a pipe buffer
    rc, out, _ = run_hook(repo, "PreToolUse", payload, bare_env(repo, SLOPJUDGE_BIN=str(echo)))
    assert rc == 0 and out == payload


@pytest.mark.parametrize("body", ["exit 1", "exit 127", "kill -KILL $$"])
def test_a_slopjudge_that_ends_without_a_verdict_blocks(repo: Path, body: str) -> None:
    assert install(repo).returncode == 0
    broken = fake_slopjudge(repo.parent / "broken", body)
    env = bare_env(repo, SLOPJUDGE_BIN=str(broken))
    for event in ("PreToolUse", "Stop", "SubagentStop"):
        rc, _out, err = run_hook(repo, event, write(repo), env)
        assert rc == 2, (event, body)
        assert "slopjudge: the hook ended without a verdict (exit status" in err
    # The session start never blocks: its status goes through as it is.
    assert run_hook(repo, "SessionStart", "{}", env)[0] not in (0, 2)


def test_codex_hooks_find_the_wrapper_from_a_subfolder(repo: Path) -> None:
    assert install(repo, "codex").returncode == 0
    assert (repo / ".codex" / "hooks" / "slopjudge").exists()
    assert hook_command(repo, "Stop", "codex").endswith(
        "/.codex/hooks/slopjudge hook stop --harness codex")
    link_venv(repo)
    env = bare_env(repo)
    del env["CLAUDE_PROJECT_DIR"]  # Codex does not export it
    rc, out, err = run_hook(repo, "PreToolUse", write(repo, "FORBIDDEN\n"), env,
                            harness="codex", cwd=repo / "sub")
    assert rc == 0, err
    assert json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "deny"


@pytest.mark.skipif(shutil.which("dash") is None and shutil.which("busybox") is None,
                    reason="no second POSIX shell here")
def test_the_wrapper_is_plain_posix_sh(repo: Path) -> None:
    assert install(repo).returncode == 0
    shell = ["dash"] if shutil.which("dash") else ["busybox", "sh"]
    wrapper = str(repo / ".claude" / "hooks" / "slopjudge")
    proc = subprocess.run([*shell, "-n", wrapper], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    proc = subprocess.run([*shell, wrapper, "hook", "pre-tool"], input=json.dumps(write(repo)),
                          cwd=repo, env=bare_env(repo), capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2 and INSTALL_HINT in proc.stderr
    proc = subprocess.run([*shell, wrapper], capture_output=True, text=True, timeout=60,
                          cwd=repo, env=bare_env(repo))
    assert proc.returncode == 2 and "usage:" in proc.stderr
    assert os.access(wrapper, os.X_OK)


def test_slopjudge_runs_in_the_folder_the_agent_started_the_hook_in(repo: Path) -> None:
    """The wrapper enters the project's folder to read its real path, and leaves it."""
    assert install(repo).returncode == 0
    sub = repo / "src" / "deep"
    sub.mkdir(parents=True)
    linked = repo.parent / "linked-src"
    linked.symlink_to(sub)
    where = fake_slopjudge(repo.parent / "where", 'pwd -P; echo "$@"')
    for cwd in (sub, linked, repo):
        rc, out, _ = run_hook(repo, "Stop", "{}", bare_env(repo, SLOPJUDGE_BIN=str(where)),
                              cwd=cwd)
        assert (rc, out) == (0, f"{cwd.resolve()}\nhook stop\n"), cwd
    link_venv(repo)
    (repo / ".venv" / "bin" / "slopjudge").unlink()
    fake_slopjudge(repo / ".venv" / "bin", 'pwd -P; echo "venv $@"')
    rc, out, _ = run_hook(repo, "Stop", "{}", bare_env(repo), cwd=linked)
    assert (rc, out) == (0, f"{sub.resolve()}\nvenv hook stop\n")


def test_a_start_folder_that_is_gone_still_runs_slopjudge(repo: Path) -> None:
    """The folder the hook was started in was removed: slopjudge still runs there (and
    decides), not in another folder."""
    assert install(repo).returncode == 0
    said = fake_slopjudge(repo.parent / "said",
                          'echo "ran in [$(pwd -P 2>/dev/null)]: $*"')
    command = hook_command(repo, "Stop")
    proc = subprocess.run(["sh", "-c", f'mkdir gone && cd gone && rmdir ../gone && {command}'],
                          input="{}", cwd=repo, env=bare_env(repo, SLOPJUDGE_BIN=str(said)),
                          capture_output=True, text=True, timeout=60)
    # A removed folder has no path to print; the project's would mean it ran elsewhere.
    assert (proc.returncode, proc.stdout) == (0, "ran in []: hook stop\n"), proc.stderr
