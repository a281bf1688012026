"""Errors a newcomer meets in the first hour point at the real cause, in one line."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from tests.helpers import (
    commit_all,
    executable,
    fake_runner,
    make_repo,
    py,
    sj,
    write_files,
    write_rule,
)


def test_a_script_with_arguments_is_told_scripts_take_none(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "ws")
    write_rule(repo / "rules", "prints", "description: no prints\nchecks:\n"
               "  - id: grep\n    script: grep -n print\n")
    proc = sj("validate", cwd=repo)
    assert proc.returncode == 1
    line = next(x for x in proc.stdout.splitlines() if x.startswith("rules/prints/"))
    assert line.startswith("rules/prints/rule.yaml:4:13: script `grep -n print` is a command "
                           "line, but a script names one file or command and takes no arguments")
    assert "put the command in a script beside the rule" in line
    assert "PATH" not in line


def test_a_file_named_with_a_space_beside_the_rule_still_loads(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "ws")
    folder = write_rule(repo / "rules", "spaced", "description: spaced\nchecks:\n"
                        "  - id: s\n    script: my check.sh\n")
    executable(folder / "my check.sh", "#!/bin/sh\nexit 0\n")
    proc = sj("validate", cwd=repo)
    assert proc.returncode == 0, proc.stdout


def yaml_error(tmp_path: Path, text: str) -> str:
    repo = make_repo(tmp_path / "ws")
    (repo / "rules").mkdir()
    (repo / "rules" / "r.yaml").write_text(text)
    proc = sj("validate", cwd=repo)
    assert proc.returncode == 1
    lines = [x for x in proc.stdout.splitlines() if x.startswith("rules/r.yaml:")]
    assert len(lines) == 1, proc.stdout
    return lines[0]


def test_yaml_indented_too_deep_is_one_clear_line(tmp_path: Path) -> None:
    line = yaml_error(tmp_path, "description: r\nchecks:\n  - id: x\n     script: a.sh\n")
    assert line == ("rules/r.yaml:4:12: broken YAML: a `key:` where none can be: this line is "
                    "indented deeper than the keys it belongs with, or a value containing `: ` "
                    "needs quotes")


def test_yaml_indented_between_blocks_is_one_clear_line(tmp_path: Path) -> None:
    line = yaml_error(tmp_path, "description: r\nchecks:\n  - id: x\n    script: a.sh\n"
                      "   timeout: 3s\n")
    assert line == ("rules/r.yaml:5:4: broken YAML: this line's indentation matches no "
                    "enclosing block: indent it exactly like the keys (or `- ` items) it "
                    "belongs with")


def test_yaml_tab_is_named(tmp_path: Path) -> None:
    line = yaml_error(tmp_path, "description: r\nchecks:\n  - id: x\n\tscript: a.sh\n")
    assert line == "rules/r.yaml:4:1: broken YAML: a tab character: YAML indents with spaces only"


def test_a_string_where_a_list_belongs_is_told_a_list_that_loads(tmp_path: Path) -> None:
    """The fix the message gives is itself valid YAML: `*.py` unquoted is an alias."""
    rule = "description: r\non: {on}\npaths: {paths}\nchecks:\n  - id: x\n    script: ls\n"
    line = yaml_error(tmp_path, rule.format(on="[ci]", paths='"*.py"'))
    assert line.endswith('`paths` must be a list, not a string; write `["*.py"]`'), line
    assert yaml_error(tmp_path / "2", rule.format(on="ci", paths="[src/]")).endswith(
        "`on` must be a list, not a string; write `[ci]`")
    repo = make_repo(tmp_path / "3" / "ws")
    write_rule(repo / "rules", "r", rule.format(on="[ci]", paths='["*.py"]'))
    assert sj("validate", cwd=repo).returncode == 0


PREPARE = py("""
import json
print(json.dumps({"additionalContext": {"module": {"functions_found": ["a", "b"]}}}))
""")


def test_a_missing_prepare_key_names_the_key_not_a_class(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "ws", {"a.py": "x = 1\n"})
    write_rule(repo / "rules", "funcs", """
description: funcs
checks:
  - id: judge
    prepare: prepare.py
    judge: judge.md.j2
""", {"prepare.py": PREPARE,
      "judge.md.j2": "{{ change }}\n{% for f in additionalContext.module.functions %}{{ f }}"
                     "{% endfor %}\n"})
    commit_all(repo, "rule")
    (repo / "a.py").write_text("x = 2\n")
    runner = fake_runner(tmp_path / "runner.sh")
    proc = sj("run", "--working-tree", "--format", "json", "--runner", str(runner), cwd=repo)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    result = json.loads(proc.stdout)["checks"][0]
    assert result["outcome"] == "error"
    assert "_Prepared" not in result["reason"] and "slopjudge." not in result["reason"]
    assert ("prepare's output has no additionalContext.module.functions (it has "
            "functions_found; did you mean additionalContext.module.functions_found?)"
            in result["reason"])


def git_free(tmp_path: Path) -> Path:
    folder = tmp_path / "plain"
    folder.mkdir()
    return folder


def test_init_outside_git_fails_and_copies_nothing(tmp_path: Path) -> None:
    folder = git_free(tmp_path)
    proc = sj("init", cwd=folder, process=True)
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"slopjudge: {folder} is not in a git repository.")
    assert "Run `git init` there" in proc.stderr and "nothing was copied" in proc.stderr
    assert list(folder.iterdir()) == []


def test_install_outside_git_fails_and_writes_nothing(tmp_path: Path) -> None:
    folder = git_free(tmp_path)
    proc = sj("install", "claude", cwd=folder, process=True)
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"slopjudge: {folder} is not in a git repository.")
    assert "no hooks were installed" in proc.stderr
    assert list(folder.iterdir()) == []


def test_hook_start_outside_git_promises_no_head(tmp_path: Path) -> None:
    folder = git_free(tmp_path)
    proc = sj("hook", "start", cwd=folder, process=True)
    assert proc.returncode == 0
    assert "HEAD" not in proc.stderr
    assert f"{folder} is not in a git repository" in proc.stderr
    assert "the stop check cannot judge this session's changes" in proc.stderr
    assert proc.stderr.splitlines()[-1].startswith("slopjudge: 0 rules loaded")


def test_test_after_init_does_not_call_the_packaged_rules_untested(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "ws")
    assert sj("init", cwd=repo).returncode == 0
    proc = sj("test", cwd=repo)
    assert proc.returncode == 0, proc.stdout
    assert "rules with no refusing case" not in proc.stdout
    assert "rules with no passing case" not in proc.stdout
    pack = len(list((Path(__file__).resolve().parents[1] / "rules").glob("*/rule.yaml")))
    assert f"{pack} rule(s) are unchanged copies of the default pack" in proc.stdout
    # A changed rule is the person's own again: its missing cases are listed.
    check = repo / "rules" / "sleep-waits" / "check.py"
    check.write_text(check.read_text() + "\n# ours now\n")
    proc = sj("test", cwd=repo)
    assert "rules with no refusing case: sleep-waits" in proc.stdout
    assert f"{pack - 1} rule(s) are unchanged copies" in proc.stdout


def test_junit_says_not_judged_once(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "ws", {"a.py": "x = 1\n"})
    write_rule(repo / "rules", "j", "description: j\nchecks:\n  - id: judge\n"
               "    judge: j.md.j2\n", {"j.md.j2": "{{ change }}\n"})
    commit_all(repo, "rule")
    write_files(repo, {"a.py": "x = 2\n"})
    proc = sj("run", "--working-tree", "--dry-run", "--format", "junit", cwd=repo)
    skipped = ET.fromstring(proc.stdout).find(".//skipped")
    assert skipped is not None
    assert skipped.get("message") == "not judged (dry run)"


def test_report_help_names_every_report(tmp_path: Path) -> None:
    proc = sj("report", "-h", cwd=tmp_path, process=True)
    assert proc.returncode == 0
    for name in ("events", "agreement", "flips", "cost", "html"):
        assert name in proc.stdout, name


def test_a_list_suggestion_quotes_what_a_flow_list_would_misread(tmp_path: Path) -> None:
    for n, (given, told) in enumerate([('"src/[ab].py"', '["src/[ab].py"]'),
                                       ('"src/a,b.py"', '["src/a,b.py"]'),
                                       ("src/app.py", "[src/app.py]"),
                                       ('"null"', '["null"]'), ('"2024"', '["2024"]')]):
        rule = f"description: r\non: [ci]\npaths: {given}\nchecks:\n  - id: x\n    script: ls\n"
        assert yaml_error(tmp_path / str(n), rule).endswith(f"write `{told}`")
