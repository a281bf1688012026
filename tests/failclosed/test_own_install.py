"""slopjudge installed from its wheel, in the project's own git-ignored ``.venv`` and
in a virtualenv outside the project, judging a session through the real hook
processes: the commands `slopjudge install claude` wrote to .claude/settings.json,
run by a shell as Claude Code runs them.

Its own installed files (the templates and rubric it ships) are not the project's:
a Stop with nothing changed passes, and a Stop with a real finding shows that
finding, not a protected-file block over slopjudge's package.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.failclosed.test_packaging import _venv
from tests.helpers import cli_env, git

# A real finding of the default pack (swallowed-errors), in an ordinary source file.
SWALLOWED = "def load(path):\n    try:\n        return open(path).read()\n" \
            "    except Exception:\n        pass\n"


def _hook(repo: Path, point: str, payload: dict[str, object],
          env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The hook command the settings hold for ``point``, run by a shell in the project."""
    settings = json.loads((repo / ".claude" / "settings.json").read_text())
    [entry] = settings["hooks"][point]
    [hook] = entry["hooks"]
    return subprocess.run(["/bin/sh", "-c", hook["command"]], cwd=repo,
                          input=json.dumps(payload), env=env, capture_output=True,
                          text=True, timeout=300)


def _project(tmp_path: Path) -> Path:
    repo = tmp_path / "project"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "t@example.com")
    git(repo, "config", "user.name", "T")
    (repo / ".gitignore").write_text(".venv/\n.slopjudge/\n")
    (repo / "src").mkdir()
    (repo / "src" / "app.py").write_text("def main():\n    return 1\n")
    return repo


@pytest.mark.parametrize("where", ["project .venv", "outside"])
def test_an_installed_slopjudge_passes_a_quiet_stop_and_shows_a_real_finding(
        tmp_path: Path, slopjudge_wheel: Path, where: str) -> None:
    repo = _project(tmp_path)
    venv = repo / ".venv" if where == "project .venv" else tmp_path / "elsewhere"
    slopjudge = _venv(venv, slopjudge_wheel)
    env = cli_env({"CLAUDE_PROJECT_DIR": str(repo)})
    env.pop("PYTHONPATH", None)
    if where == "outside":
        env["PATH"] = f"{slopjudge.parent}:{env.get('PATH', '')}"
    for args in (["init"], ["install", "claude"]):
        proc = subprocess.run([str(slopjudge), *args], cwd=repo, env=env, capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the rule pack and the hooks")
    assert git(repo, "status", "--porcelain") == ""

    sid = {"session_id": "s1", "cwd": str(repo), "transcript_path": str(tmp_path / "t.jsonl")}
    start = _hook(repo, "SessionStart", {**sid, "hook_event_name": "SessionStart",
                                         "source": "startup"}, env)
    assert start.returncode == 0, start.stderr
    assert "NOT in force" not in start.stdout + start.stderr

    stop = {**sid, "hook_event_name": "Stop", "stop_hook_active": False}
    quiet = _hook(repo, "Stop", stop, env)
    assert quiet.returncode == 0, quiet.stderr
    assert '"block"' not in quiet.stdout, quiet.stdout
    assert "protected" not in quiet.stdout + quiet.stderr

    (repo / "src" / "loader.py").write_text(SWALLOWED)
    found = _hook(repo, "Stop", stop, env)
    assert found.returncode == 0, found.stderr
    answer = json.loads(found.stdout)
    assert answer["decision"] == "block"
    assert "swallowed-errors" in answer["reason"], answer["reason"]
    assert "src/loader.py:4" in answer["reason"], answer["reason"]
    assert "protected" not in answer["reason"] and "site-packages" not in answer["reason"]
    assert os.path.isdir(venv / "lib")
