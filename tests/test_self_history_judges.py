"""slopjudge's own rule pack over this repository's history: every judge check renders its
prompts (no model). The script checks' run, and why the two are apart, are in
tests/test_self_history.py; this one is a file of its own so the two run at once.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.test_self import EMPTY_TREE, REPO
from tests.test_self_history import _dry_run, _pack

pytestmark = pytest.mark.skipif(not (REPO / ".git").exists(),
                                reason="needs this repository's git history")


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
