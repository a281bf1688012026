"""slopjudge's own rule pack over this repository's whole history, as a dry run.

Two runs, so the slow part (rendering judge prompts) does not run over files no judge
check shows: every script check over the whole history (`--base` the empty tree, every
file the history added), and every judge check (prepare, split into parts, prompts
rendered, no model) over the history's code files, the only files those checks show.
The pack's rules are read with the loader, so a rule added later lands in one of them.

A file of its own, among the longest of the suite: it starts early, on one worker,
while the others take the rest (see tests/conftest.py).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from slopjudge.loading.loader import load_rules
from tests.test_self import EMPTY_TREE, REPO, slopjudge

pytestmark = pytest.mark.skipif(not (REPO / ".git").exists(),
                                reason="needs this repository's git history")


def _pack() -> tuple[list[str], list[str], list[str]]:
    """The pack's CI rules without a judge check, those with one, and the paths of the latter."""
    loaded = load_rules(str(REPO / "rules"), workspace=str(REPO),
                        template_dirs=[str(REPO / "templates")])
    assert loaded.errors == []
    ci = [r for r in loaded.rules if "ci" in r.on]  # what `slopjudge run` runs
    scripts = [r.id for r in ci if all(c.kind != "judge" for c in r.checks)]
    judged = [r for r in ci if any(c.kind == "judge" for c in r.checks)]
    paths = sorted({p for r in judged for p in r.paths or []})
    return scripts, [r.id for r in judged], paths


def _dry_run(tmp_path: Path, source: list[str], rules: list[str]) -> dict[str, Any]:
    selected = [arg for rule in rules for arg in ("--rule", rule)]
    proc = slopjudge("run", *source, *selected, "--dry-run", "--format", "json",
                     tmp_path=tmp_path)
    report: dict[str, Any] = json.loads(proc.stdout)
    refused = [c for c in report["checks"] if c["outcome"] in ("refuse", "error")]
    assert not refused, json.dumps(refused, indent=2)
    assert report["outcome"] == "pass" and proc.returncode == 0
    assert {c["rule"] for c in report["checks"]} == set(rules)  # every selected rule ran
    return report


def test_every_script_check_passes_this_repositorys_whole_history(tmp_path: Path) -> None:
    scripts, _, _ = _pack()
    report = _dry_run(tmp_path, ["--base", EMPTY_TREE], scripts)
    ran = {c["id"] for c in report["checks"] if c["outcome"] == "pass"}
    assert len(ran) >= 8  # the script checks really looked at the history


def test_every_judge_check_renders_its_prompts_over_the_historys_code(tmp_path: Path) -> None:
    # The diff the history adds, limited to the judge rules' paths (all `*.ext`, which a git
    # pathspec matches in every folder) and README.md: the checks see the same files as over
    # the whole history, but each per-file prompt the split renders lists a handful of files
    # it does not show, not ~1000 (about 25 s per judge check; see the report's notes).
    # README.md stays in so the prompts still name a file they leave out.
    _, judged, paths = _pack()
    assert judged and paths and all(p.startswith("*.") for p in paths)
    diff = subprocess.run(
        ["git", "diff", "--no-color", EMPTY_TREE, "HEAD", "--", *paths, "README.md"],
        cwd=REPO, capture_output=True, text=True, check=True).stdout
    (tmp_path / "code.diff").write_text(diff, encoding="utf-8")
    prompts = tmp_path / "prompts"
    report = _dry_run(tmp_path, ["--diff", str(tmp_path / "code.diff"),
                                 "--prompts-dir", str(prompts)], judged)
    # A check its prepare did not skip rendered every part of the change: a prompt a part
    # (one, when its hunks fit), each naming the file the checks do not show.
    rendered = [c for c in report["checks"] if c["outcome"] == "not_judged"]
    assert rendered and all(c["usage"]["units"] >= 1 for c in rendered), report["checks"]
    written = sorted(prompts.glob("*__*.md"))  # <rule>__<check>[__<part>].md
    assert len(written) == sum(c["usage"]["units"] for c in rendered)
    assert all("README.md (A)" in p.read_text(encoding="utf-8") for p in written)
