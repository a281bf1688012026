"""slopjudge's own rule pack over this repository's whole history, as a dry run.

A file of its own, the longest test of the suite: it starts first and runs on one
worker while the others take the rest (see tests/conftest.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.test_self import EMPTY_TREE, REPO, slopjudge


@pytest.mark.skipif(not (REPO / ".git").exists(), reason="needs this repository's git history")
def test_the_pack_passes_this_repositorys_history_as_a_dry_run(tmp_path: Path) -> None:
    proc = slopjudge("run", "--base", EMPTY_TREE, "--dry-run", "--format", "json",
                     tmp_path=tmp_path)
    report = json.loads(proc.stdout)
    refused = [c for c in report["checks"] if c["outcome"] in ("refuse", "error")]
    assert not refused, json.dumps(refused, indent=2)
    assert report["outcome"] == "pass" and proc.returncode == 0
    ran = {c["id"] for c in report["checks"] if c["outcome"] == "pass"}
    assert len(ran) >= 8  # the script checks really looked at the history
