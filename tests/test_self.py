"""slopjudge's own rule pack, held to its own standard on this repository."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from slopjudge.checks.options import RunOptions, options_from_settings
from slopjudge.loading.config import load_settings
from slopjudge.loading.rulecache import load_rules_cached
from slopjudge.model import Rule
from slopjudge.testing import find_cases, read_case, run_case

REPO = Path(__file__).resolve().parent.parent
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


def slopjudge(*args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLOPJUDGE_", "SLOPRAIL_"))}
    env["SLOPJUDGE_EVENTS_FILE"] = str(tmp_path / "events.jsonl")
    return subprocess.run([sys.executable, "-m", "slopjudge", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)


def test_the_rule_pack_loads(tmp_path: Path) -> None:
    proc = slopjudge("validate", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr


CASES = REPO / "tests" / "rules"


@pytest.fixture(scope="module")
def pack() -> tuple[list[Rule], RunOptions]:
    """The repository's own rules, loaded once, and the options `slopjudge test` uses."""
    settings = load_settings(str(REPO))
    loaded = load_rules_cached(settings)
    assert loaded.errors == []
    # as `slopjudge test` does: a preview rule's cases run too
    return [*loaded.rules, *loaded.preview_off], options_from_settings(settings)


@pytest.mark.parametrize(("rule", "case", "folder"), [
    pytest.param(rule, case, folder, id=f"{rule}/{case}")
    for rule, case, folder in find_cases(str(CASES))
])
def test_rule_case(rule: str, case: str, folder: str,
                   pack: tuple[list[Rule], RunOptions]) -> None:
    """One case folder under tests/rules/<rule>/<case>/, as `slopjudge test` runs it
    (``pytest -k <rule>`` runs one rule's cases)."""
    rules, options = pack
    result = run_case(rule, case, folder, rules, options)
    assert result.ok, (f"{rule}/{case}: expected {result.expected}, got {result.actual}: "
                       + "; ".join(result.problems))


def test_every_rule_has_a_refusing_and_a_passing_case() -> None:
    expected: dict[str, set[str]] = {}
    for rule, _case, folder in find_cases(str(CASES)):
        data, problems = read_case(folder)
        assert data is not None, problems
        expected.setdefault(rule, set()).add(data["expect"])
    rules = sorted(p.name for p in (REPO / "rules").iterdir() if (p / "rule.yaml").is_file())
    assert [r for r in rules if "refuse" not in expected.get(r, set())] == []
    assert [r for r in rules if "pass" not in expected.get(r, set())] == []


def test_the_readme_rule_list_is_generated_from_the_rule_files() -> None:
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "gen_rule_docs.py"), "--check"],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
