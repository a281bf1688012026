"""Loading never hangs and never skips a rule file in silence.

- A judge template that loops for ever or builds a huge number is a load error
  at its line within a few seconds, for `validate` and for `hook pre-tool`.
- The same limit holds when a judge renders a real, larger payload at run time.
- ``.yml`` rule files load like ``.yaml`` ones.
"""

from __future__ import annotations

import json
import resource
from pathlib import Path

import pytest

from slopjudge.loading import templates
from tests.helpers import commit_all, executable, make_repo, sj, write_files

NESTED_LOOPS = (
    "Judge this change.\n"
    "{% for a in range(10**5) %}{% for b in range(10**5) %}{% endfor %}{% endfor %}\n"
)


def cpu_s() -> float:
    """CPU seconds of this process and its finished children: a runaway burns CPU, and
    unlike wall time the figure does not grow with the machine's load (a hang that burns
    none is caught by the subprocess timeout)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


HUGE_POWER = "Judge this change.\n\n{{ 10 ** 100000000 }}\n"
LEFT_POWER = "Judge this change.\n{{ (10 ** 10) ** (10 ** 8) }}\n"
# A template whose loops are harmless on the small load-time sample and
# endless on a real change of some size.
DATA_LOOPS = (
    "Judge this change.\n"
    "{% for a in range(change|length) %}{% for b in range(change|length) %}"
    "{% endfor %}{% endfor %}\n"
)

# The inner loop runs inside a filter, called from a loop's test: no block is entered.
FILTER_LOOPS = (
    "Judge this change.\n"
    "{% set big = range(10**5)|list %}{% for a in big if big|sum < 0 %}{% endfor %}\n"
)

CASES = {
    "nested-loops": (NESTED_LOOPS, 2, "ran longer than"),
    "filter-loops": (FILTER_LOOPS, 2, "ran longer than"),
    "huge-power": (HUGE_POWER, 3, "too large a number"),
    "left-power": (LEFT_POWER, 2, "too large a number"),
}


def repo_with_template(tmp_path: Path, template: str, on: str = "[stop, ci]") -> Path:
    repo = make_repo(tmp_path / "repo")
    folder = repo / "rules" / "slow"
    folder.mkdir(parents=True)
    extra = "tools: [Write]\n" if "pre-tool" in on else ""
    (folder / "rule.yaml").write_text(
        f"description: a slow template\non: {on}\n{extra}"
        "checks:\n  - id: judge\n    judge: t.md.j2\n", encoding="utf-8")
    (folder / "t.md.j2").write_text(template, encoding="utf-8")
    (repo / "templates").mkdir()
    commit_all(repo, "rules")
    return repo


@pytest.mark.parametrize("case", sorted(CASES))
def test_validate_stops_a_runaway_template_at_its_line(tmp_path: Path, case: str) -> None:
    template, line, words = CASES[case]
    repo = repo_with_template(tmp_path, template)
    started = cpu_s()
    res = sj("validate", cwd=repo, timeout=60, process=True)
    took = cpu_s() - started
    assert res.returncode != 0, res.stdout
    out = res.stdout + res.stderr
    assert f"t.md.j2:{line}:" in out and words in out, out
    assert took < 15, f"validate used {took:.1f} s of CPU"


@pytest.mark.parametrize("case", sorted(CASES))
def test_hook_pre_tool_does_not_hang_on_a_runaway_template(tmp_path: Path, case: str) -> None:
    template, _line, _words = CASES[case]
    repo = repo_with_template(tmp_path, template, on="[pre-tool]")
    payload = {
        "hook_event_name": "PreToolUse", "session_id": "s", "cwd": str(repo),
        "tool_name": "Write",
        "tool_input": {"file_path": str(repo / "app.py"), "content": "x = 1\n"},
    }
    started = cpu_s()
    res = sj("hook", "pre-tool", cwd=repo, input=json.dumps(payload), timeout=60,
             process=True)
    took = cpu_s() - started
    assert took < 15, f"hook pre-tool used {took:.1f} s of CPU"
    assert "Traceback" not in res.stderr, res.stderr


def test_a_render_past_the_limit_at_run_time_is_an_error_not_a_hang(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # In this process with the render limit cut from 10 s to 1 s: the same stop at the
    # limit (the reason names the limit in force), without burning 10 s of CPU on it.
    monkeypatch.setattr(templates, "RENDER_TIME_LIMIT_S", 1.0)
    repo = repo_with_template(tmp_path, DATA_LOOPS)
    verdict = json.dumps({"pass": True, "reasoning": "ok"})
    runner = executable(tmp_path / "runner.sh", f"#!/bin/sh\ncat >/dev/null\necho '{verdict}'\n")
    assert sj("validate", cwd=repo).returncode == 0  # harmless on the load-time sample
    write_files(repo, {"big.txt": "".join(f"line {n}\n" for n in range(3_000))})
    started = cpu_s()
    res = sj("run", "--working-tree", "--format", "json", cwd=repo,
             env={"SLOPJUDGE_RUNNER": str(runner)})
    took = cpu_s() - started
    [check] = json.loads(res.stdout)["checks"]
    assert check["outcome"] in ("error", "refuse"), check
    assert "ran longer than 1 s" in check["reason"], check
    assert res.returncode != 0
    assert took < 30, f"run used {took:.1f} s of CPU"


def test_yml_rule_files_load(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    rules = repo / "rules"
    (rules / "folder-rule").mkdir(parents=True)
    (rules / "folder-rule" / "rule.yml").write_text(
        "description: spelled .yml in a folder\ncheckz: []\n", encoding="utf-8")
    (rules / "flat-rule.yml").write_text(
        "description: spelled .yml\nchecks:\n  - script: /bin/false\n", encoding="utf-8")
    res = sj("validate", cwd=repo)
    out = res.stdout + res.stderr
    # The broken one is reported (so it was read), the good one counted.
    assert "folder-rule/rule.yml:2:1" in out, out
    assert "1 rule(s) loaded" in out, out
    assert res.returncode != 0


def test_a_yml_rule_is_enforced(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "rules").mkdir()
    (repo / "rules" / "no-todo.yml").write_text(
        "description: refuses every change\nchecks:\n  - script: /bin/false\n",
        encoding="utf-8")
    commit_all(repo, "rules")
    write_files(repo, {"README.md": "changed\n"})
    res = sj("run", "--working-tree", cwd=repo)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "no-todo" in res.stdout


def alias_bomb() -> str:
    """1.2 KB of nested aliases: nine lists of nine of the one before, ~10^10 values."""
    body = ["description: a rule whose paths repeat themselves", "paths:",
            "  - &a0 [x, x, x, x, x, x, x, x, x]"]
    body += [f"  - &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 12)]
    return "\n".join([*body, "checks:", "  - script: ok.sh", ""])


def test_a_rule_file_of_nested_aliases_is_refused_at_its_line_and_others_load(
        tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    bomb = alias_bomb()
    assert len(bomb) < 1300
    write_files(repo, {"rules/bomb/rule.yaml": bomb,
                       "rules/fine/rule.yaml": "description: fine\nchecks:\n  - script: ok.sh\n"})
    executable(repo / "rules" / "fine" / "ok.sh", "#!/bin/sh\nexit 0\n")
    executable(repo / "rules" / "bomb" / "ok.sh", "#!/bin/sh\nexit 0\n")
    started = cpu_s()
    res = sj("validate", cwd=repo, timeout=60, process=True)
    took = cpu_s() - started
    out = res.stdout + res.stderr
    assert "rules/bomb/rule.yaml:" in out and "expands to more than 100000 values" in out, out
    assert "1 rule(s) loaded; 1 problem(s) in 1 file(s)" in out, out
    assert took < 15, f"validate used {took:.1f} s of CPU"


def test_a_rule_file_past_the_size_limit_is_refused(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    write_files(repo, {"rules/big/rule.yaml": "description: big\nchecks:\n  - script: ok.sh\n"
                       + "# padding\n" * 120_000})
    res = sj("validate", cwd=repo)
    assert "rules/big/rule.yaml:1:1: the rule file is larger than 1024 KiB" in res.stdout \
        + res.stderr
