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


def test_init_from_a_subfolder_starts_the_repository_at_its_top(tmp_path: Path) -> None:
    """Where `validate`, `run` and the hooks look for the rules: the repository's top."""
    repo = tmp_path / "repo"
    (repo / "src" / "pkg").mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    proc = slopjudge(repo / "src" / "pkg", "init")
    assert proc.returncode == 0, proc.stderr
    assert f"into {repo}\n" in proc.stdout
    assert (repo / "rules" / "placeholder-code" / "rule.yaml").is_file()
    assert not (repo / "src" / "pkg" / "rules").exists()
    assert "note:" not in proc.stdout
    explicit = slopjudge(repo / "src", "init", "--dir", ".")
    assert f"look for the rules at the repository's top, {repo} " in explicit.stdout
    loaded = slopjudge(repo / "src", "validate")
    assert loaded.returncode == 0 and "rule(s) loaded" in loaded.stdout, loaded.stdout


def test_the_docs_count_the_rules_init_copies(tmp_path: Path) -> None:
    from slopjudge.resources import DATA_DIR

    rules = Path(DATA_DIR) / "rules"
    count = sum(1 for p in rules.glob("*/rule.yaml") if not p.parent.name.startswith("_"))
    docs = Path(__file__).resolve().parent.parent / "docs"
    line = f"slopjudge: {count} rules loaded"
    assert line in (docs / "first-hour.md").read_text(encoding="utf-8")
    assert f"slopjudge: {count} rules loaded" in " ".join(
        (docs / "hooks.md").read_text(encoding="utf-8").split())
    assert f"the {count} packaged rules" in (docs / "first-hour.md").read_text(encoding="utf-8")
