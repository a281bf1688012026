"""The rule fields of judge cost: `max_prompt_tokens` and a `model` preference list."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from slopjudge.loading.loader import load_rules


def _load(tmp_path: Path, check: str) -> tuple[list[str], list[str]]:
    rules = tmp_path / "rules"
    rules.mkdir(exist_ok=True)
    (rules / "j.md.j2").write_text("{{ change }} part {{ unit.index }}/{{ unit.count }}\n")
    (rules / "r.yaml").write_text(f"description: d\nchecks:\n  - id: c\n{check}")
    result = load_rules(str(rules), workspace=str(tmp_path), template_dirs=[])
    errors = [str(e).replace(str(rules) + os.sep, "").replace("rules/", "") for e in result.errors]
    return [f"{c.model}|{c.max_prompt_tokens}" for r in result.rules for c in r.checks], errors


def test_a_preference_list_and_a_prompt_budget_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    checks, errors = _load(tmp_path, "    judge: j.md.j2\n    model: [size-sm, sonnet]\n"
                                     "    max_prompt_tokens: 5000\n")
    assert errors == [] and checks == ["size-sm,sonnet|5000"]


@pytest.mark.parametrize("field,message", [
    ("    judge: j.md.j2\n    model: []\n", "model"),
    ("    judge: j.md.j2\n    model: ['a,b']\n", "model"),
    ("    judge: j.md.j2\n    max_prompt_tokens: 0\n", "max_prompt_tokens"),
    ("    judge: j.md.j2\n    max_prompt_tokens: lots\n", "max_prompt_tokens"),
    ("    script: /bin/true\n    max_prompt_tokens: 10\n", "max_prompt_tokens"),
])
def test_bad_cost_fields_are_load_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, field: str, message: str
) -> None:
    monkeypatch.chdir(tmp_path)
    checks, errors = _load(tmp_path, field)
    assert checks == [] and errors, checks
    assert any(e.startswith("r.yaml:") and message in e for e in errors), errors
