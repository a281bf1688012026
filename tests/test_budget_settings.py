"""Cost settings: budgets, the prompt budget default and model alias overrides, read and
checked like every other setting (one `path:line:col: message` line when wrong)."""

from __future__ import annotations

from pathlib import Path

import pytest

from slopjudge.checks.options import options_from_settings
from slopjudge.judging.budget import Budget
from slopjudge.loading.config import ConfigError, load_settings


def test_budgets_and_aliases_from_slopjudge_yaml(tmp_path: Path) -> None:
    (tmp_path / "slopjudge.yaml").write_text(
        "max_prompt_tokens: 50000\nmax_judge_calls: 10\nmax_tokens: 200000\n"
        "max_cost_usd: 1.5\nsession_max_cost_usd: 4\n"
        "model_aliases:\n  claude:\n    size-sm: claude-haiku-4-5\n  codex:\n    size-xl: gpt-x\n")
    s = load_settings(str(tmp_path))
    assert (s.max_prompt_tokens, s.max_judge_calls, s.max_tokens) == (50000, 10, 200000)
    assert (s.max_cost_usd, s.session_max_cost_usd) == (1.5, 4.0)
    assert s.model_aliases == {"claude": {"size-sm": "claude-haiku-4-5"},
                               "codex": {"size-xl": "gpt-x"}}
    opts = options_from_settings(s)
    assert isinstance(opts.budget, Budget) and opts.max_prompt_tokens == 50000
    assert opts.budget.limits.session_max_cost_usd == 4.0


def test_pyproject_table(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        "[tool.slopjudge]\nmax_judge_calls = 3\n\n[tool.slopjudge.model_aliases.claude]\n"
        "size-md = 'claude-opus-5-1'\n")
    s = load_settings(str(tmp_path))
    assert s.max_judge_calls == 3 and s.model_aliases == {"claude": {"size-md": "claude-opus-5-1"}}


def test_no_budget_settings_means_no_budget(tmp_path: Path) -> None:
    assert options_from_settings(load_settings(str(tmp_path))).budget is None


@pytest.mark.parametrize("text,message", [
    ("max_judge_calls: -1\n", "`max_judge_calls` must be a whole number >= 0"),
    ("max_cost_usd: [1]\n", "`max_cost_usd` must be a number >= 0"),
    ("max_tokenz: 5\n", "unknown setting `max_tokenz`; did you mean `max_tokens`?"),
    ("model_aliases: haiku\n", "`model_aliases` maps a harness (claude, codex)"),
    ("model_aliases:\n  gemini:\n    size-sm: x\n", "not 'gemini'"),
    ("model_aliases:\n  claude:\n    tiny: x\n", "'tiny' is not a size alias"),
    ("model_aliases:\n  claude:\n    size-sm: ''\n", "`model_aliases.claude.size-sm` must name"),
])
def test_bad_cost_settings_are_one_line(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "slopjudge.yaml").write_text(text)
    with pytest.raises(ConfigError) as err:
        load_settings(str(tmp_path))
    assert str(err.value).count("\n") == 0 and message in str(err.value)
    assert ":1:1:" in str(err.value)
