"""`slopjudge init`: a repository starts with the default pack, and nothing is overwritten."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def slopjudge(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLOPJUDGE_", "SLOPRAIL_"))}
    return subprocess.run([sys.executable, "-m", "slopjudge", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_init_copies_a_pack_that_loads_and_refuses_slop(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    (repo / "RUBRIC.md").write_text("# ours\nkeep me\n")
    proc = slopjudge(repo, "init")
    assert proc.returncode == 0, proc.stderr
    assert "left 1 existing file(s)" in proc.stdout and "RUBRIC.md" in proc.stdout
    assert (repo / "RUBRIC.md").read_text() == "# ours\nkeep me\n"
    script = repo / "rules" / "placeholder-code" / "check.py"
    assert os.access(script, os.X_OK)
    assert (repo / "schemas" / "rule.schema.json").is_file()
    assert not list(repo.rglob("__pycache__"))
    assert slopjudge(repo, "validate").returncode == 0

    example = Path(__file__).resolve().parent.parent / "examples" / "agent-change.diff"
    run = slopjudge(repo, "run", "--diff", str(example), "--dry-run")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "placeholder-code/scan" in run.stdout and "src/billing/invoice.py:14" in run.stdout

    again = slopjudge(repo, "init")
    assert again.returncode == 0 and "copied 0 file(s)" in again.stdout


def test_init_into_a_missing_folder_is_a_one_line_error(tmp_path: Path) -> None:
    proc = slopjudge(tmp_path, "init", "--dir", str(tmp_path / "nope"))
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "no folder at" in proc.stderr
