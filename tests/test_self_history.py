"""slopjudge's own rule pack over this repository's whole history, as a dry run.

Two runs, so the slow part (rendering judge prompts) does not run over files no judge
check shows: every script check over the whole history (`--base` the empty tree, every
file the history added), and every judge check (prepare, split into parts, prompts
rendered, no model) over the history's code files, the only files those checks show.
The pack's rules are read with the loader, so a rule added later lands in one of them.

Each run is a file of its own (the judge checks' run is in
tests/test_self_history_judges.py), among the longest of the suite: they start early, on
two workers, while the others take the rest (see tests/conftest.py).
"""

from __future__ import annotations

import json
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

