"""The rule loader: every seeded mistake reported at its place, good rules still loaded."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from slopjudge.loading import loader
from slopjudge.loading.loader import find_rule_files, load_rules, parse_duration
from slopjudge.loading.toolrules import split_tool_rules, tool_rule_problem
from slopjudge.model import LoadError, LoadResult

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"
BAD = FIXTURES / "bad_rules"
GOOD_RULES = ["good-judge", "good-needs", "good-script"]


@pytest.fixture(scope="module")
def bad() -> LoadResult:
    """The seeded folder, loaded from tests/fixtures so paths print as bad_rules/...."""
    old = os.getcwd()
    os.chdir(FIXTURES)
    try:
        return load_rules("bad_rules", workspace=str(FIXTURES), template_dirs=[])
    finally:
        os.chdir(old)


def errors_for(result: LoadResult, path: str) -> list[str]:
    return [str(e) for e in result.errors if e.path == path]


# (file, line, col, words the message must hold), one row per seeded mistake.
MISTAKES = {
    "broken-yaml": ("broken-yaml.yaml", 3, 3, ["broken YAML", "expected the node content"]),
    "duplicate-yaml-key": (
        "duplicate-key.yaml",
        2,
        1,
        ["broken YAML", 'duplicate key "description"'],
    ),
    "top-level-not-mapping": (
        "not-a-mapping.yaml",
        1,
        1,
        ["top level must be a mapping", "not a list"],
    ),
    "wrong-type-string": (
        "wrong-types.yaml",
        1,
        14,
        ["`description` must be a string, not an integer"],
    ),
    "wrong-type-list": (
        "wrong-types.yaml",
        2,
        5,
        ["`on` must be a list, not a string", "`[stop]`"],
    ),
    "missing-required-field": (
        "missing-description.yaml",
        1,
        1,
        ["missing the required field `description`"],
    ),
    "unknown-field-near-miss": (
        "unknown-field.yaml",
        4,
        5,
        ["unknown field `timout`", "did you mean `timeout`?"],
    ),
    "judge-field-on-script": (
        "judge-field-on-script.yaml",
        4,
        5,
        ["`model` applies to judge checks only", "script check"],
    ),
    "both-script-and-judge": ("both-script-and-judge.yaml", 4, 5, ["both `script` and `judge`"]),
    "neither-script-nor-judge": (
        "neither-script-nor-judge.yaml",
        3,
        5,
        ["needs one of `script` or `judge`"],
    ),
    "duplicate-check-id": (
        "duplicate-check-id.yaml",
        5,
        9,
        ["duplicate check id `lint`", "first at line 3"],
    ),
    "unknown-need-same-file": (
        "unknown-need.yaml",
        6,
        13,
        ["unknown need `lnt`", "did you mean `lint`?"],
    ),
    "unknown-need-other-rule": (
        "unknown-rule-need.yaml",
        4,
        13,
        ["no rule `good-scrpt`", "did you mean `good-script`?"],
    ),
    "cycle-first-half": (
        "cycle-a.yaml",
        5,
        13,
        ["cycle in needs: cycle-a/x -> cycle-b/y -> cycle-a/x"],
    ),
    "cycle-second-half": (
        "cycle-b.yaml",
        5,
        13,
        ["cycle in needs: cycle-a/x -> cycle-b/y -> cycle-a/x"],
    ),
    "need-on-broken-rule": (
        "needs-broken.yaml",
        4,
        13,
        ["`wrong-types/check-1`", "rule `wrong-types` does not load", "disabled too"],
    ),
    "missing-script": (
        "missing-script.yaml",
        3,
        13,
        ["script `./scripts/nope.sh` not found", "bad_rules/scripts/nope.sh"],
    ),
    "script-not-executable": (
        "not-executable.yaml",
        3,
        13,
        ["not executable", "chmod +x bad_rules/scripts/not-exec.sh"],
    ),
    "missing-prepare": (
        "missing-prepare.yaml",
        4,
        14,
        ["prepare `./scripts/prepare-nope.sh` not found"],
    ),
    "missing-judge-template": (
        "missing-template.yaml",
        3,
        12,
        ["judge template `nope.md.j2` not found", "bad_rules/"],
    ),
    "bare-number-duration": ("bad-duration.yaml", 4, 14, ["`30` has no unit", "`30s`"]),
    "unreadable-duration": ("bad-duration.yaml", 6, 14, ["`5 minutes` is not a duration"]),
    "zero-duration": ("bad-duration.yaml", 8, 14, ["`0s` is zero", "> 0"]),
    "day-long-duration": ("bad-duration.yaml", 10, 14, ["`25h` is longer than a day", "`24h`"]),
    "blank-subjects": ("blank-files.yaml", 2, 11, ["`subjects` is blank", "on PATH"]),
    "blank-script": ("blank-files.yaml", 4, 13, ["`checks[0].script` is blank", "on PATH"]),
    "blank-judge": ("blank-files.yaml", 5, 12, ["`checks[1].judge` is blank"]),
    "blank-prepare": ("blank-files.yaml", 6, 14, ["`checks[1].prepare` is blank"]),
    "unbalanced-tool-rule": (
        "unbalanced-tool.yaml",
        4,
        27,
        ["allowed_tools[1]", "unbalanced parentheses in `Bash(git show:*`"],
    ),
    "two-tool-rules-in-one": (
        "two-tools-in-one.yaml",
        5,
        9,
        ["two rules in one item (`Read Grep`)", "`Read`, `Grep`"],
    ),
    "bad-tools-pattern": ("bad-tools-pattern.yaml", 3, 9, ["`tools[0]`", "unbalanced parentheses"]),
    "denies-verdict-write": (
        "denies-verdict.yaml",
        4,
        30,
        ["disallowed_tools[1]", "`Write` denies the judge writing its verdict"],
    ),
    "tools-without-pre-tool": (
        "tools-without-pre-tool.yaml",
        3,
        1,
        ["`tools` has no effect", "lacks `pre-tool`"],
    ),
    "invalid-rule-id": ("Bad_Name.yaml", 1, 1, ["invalid rule id `Bad_Name`", "`bad-name`"]),
    "same-id-file-and-folder": (
        "twin.yaml",
        1,
        1,
        ["rule id `twin` is defined twice", "twin/rule.yaml"],
    ),
    "same-id-folder-and-file": (
        "twin/rule.yaml",
        1,
        1,
        ["rule id `twin` is defined twice", "twin.yaml"],
    ),
    "min-confidence-out-of-range": (
        "bad-confidence.yaml",
        4,
        21,
        ["`checks[0].min_confidence` must be between 0 and 1", "1.5"],
    ),
    "each-not-changeset-or-file": (
        "bad-each.yaml",
        4,
        11,
        ["`files` is not one of changeset, file", "did you mean `file`?"],
    ),
    "empty-model": ("empty-model.yaml", 4, 12, ["`checks[0].model` must not be empty"]),
    "unknown-event": (
        "bad-event.yaml",
        2,
        6,
        ["`pretool` is not one of", "did you mean `pre-tool`?"],
    ),
}


@pytest.mark.parametrize("name", sorted(MISTAKES))
def test_each_seeded_mistake_is_reported_at_its_place(bad: LoadResult, name: str) -> None:
    file, line, col, words = MISTAKES[name]
    path = f"bad_rules/{file}"
    prefix = f"{path}:{line}:{col}: "
    matching = [e for e in errors_for(bad, path) if e.startswith(prefix)]
    assert matching, f"no error at {prefix!r}; got {errors_for(bad, path)}"
    assert any(all(w in m for w in words) for m in matching), matching
    rule_id = Path(file).stem if not file.endswith("/rule.yaml") else Path(file).parent.name
    assert rule_id not in [r.id for r in bad.rules]


def test_the_good_rules_beside_the_mistakes_still_load(bad: LoadResult) -> None:
    assert [r.id for r in bad.rules] == GOOD_RULES
    assert not [e for e in bad.errors if e.rule in GOOD_RULES]


def test_every_mistake_is_reported_and_nothing_else(bad: LoadResult) -> None:
    expected = {(f"bad_rules/{f}", line, col) for f, line, col, _ in MISTAKES.values()}
    got = {(e.path, e.line, e.col) for e in bad.errors}
    assert got == expected
    assert len({e.path for e in bad.errors}) >= 15
    assert bad.errors == sorted(bad.errors, key=lambda e: (e.path, e.line, e.col, e.message))
    assert all(e.rule for e in bad.errors)
    assert all("\n" not in str(e) for e in bad.errors)


def test_files_lists_every_rule_file_and_nothing_else(bad: LoadResult) -> None:
    names = sorted(os.path.relpath(p, BAD) for p in bad.files)
    assert "twin/rule.yaml" in names and "good-judge/rule.yaml" in names
    assert not [n for n in names if not n.endswith(".yaml")]
    assert "README.md" not in names and "judge.md.j2" not in names
    assert all(os.path.isabs(p) for p in bad.files)


def test_validate_cli_prints_every_problem_and_exits_1(tmp_path: Path) -> None:
    # A copy outside the repository: the cache lands in the copy, not in the tree.
    work = tmp_path / "ws"
    shutil.copytree(BAD, work / "bad_rules", symlinks=True)
    proc = subprocess.run(
        [sys.executable, "-m", "slopjudge", "validate", "--rules", "bad_rules"],
        cwd=work, capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    for file, line, col, _ in MISTAKES.values():
        assert f"bad_rules/{file}:{line}:{col}: " in proc.stdout
    assert "3 rule(s) loaded" in proc.stdout


# ---- a good rule folder: every default --------------------------------------


def write(path: Path, text: str, mode: int | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    if mode is not None:
        path.chmod(mode)
    return path


def make_good_workspace(root: Path) -> Path:
    rules = root / "rules"
    write(rules / "ok.sh", "#!/bin/sh\nexit 0\n", 0o755)
    write(rules / "basic.yaml", """\
        description: Basic script rule
        checks:
          - script: ./ok.sh
          - script: ./ok.sh
            needs: [check-1]
        """)
    write(rules / "wise" / "prep.sh", "#!/bin/sh\necho '{}'\n", 0o755)
    write(root / "templates" / "shared.md.j2", "Judge:\n{{ change }}\n")
    write(rules / "wise" / "rule.yaml", """\
        # yaml-language-server: $schema=../../schemas/rule.schema.json
        description: A judge with everything set
        doc: |
          What it does: asks.
          Fix: answer.
        on: [pre-tool, stop]
        tools: [Write, "Bash(git push *)", "mcp__*"]
        paths: ["src/**"]
        exclude: ["**/*.lock"]
        mode: shadow
        on_uncertain: ask
        checks:
          - id: plain
            judge: shared.md.j2
          - id: full
            needs: [plain, basic/check-2]
            prepare: ./prep.sh
            judge: shared.md.j2
            model: size-lg,opus
            allowed_tools: [Read, Grep, "Bash(git show:*)"]
            disallowed_tools: ["Write(src/**)", WebFetch]
            each: file
            min_confidence: 0.75
            timeout: 1m30s
          - script: sh
            timeout: 500ms
        """)
    return rules


def test_good_rules_load_with_every_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    make_good_workspace(tmp_path)
    result = load_rules(
        "rules", workspace=str(tmp_path), template_dirs=[str(tmp_path / "templates")]
    )
    assert result.errors == []
    basic, wise = result.rules
    assert (basic.id, wise.id) == ("basic", "wise")
    assert basic.path == str(tmp_path / "rules" / "basic.yaml") and basic.dir == str(
        tmp_path / "rules"
    )
    assert basic.on == ["stop", "ci"] and basic.mode == "enforce" and basic.on_uncertain == "deny"
    assert basic.tools == [] and basic.paths == [] and basic.exclude == [] and basic.doc == ""
    c1, c2 = basic.checks
    assert (c1.id, c2.id) == ("check-1", "check-2")
    assert (
        c1.kind == "script"
        and c1.timeout == 120.0
        and c1.script == str(tmp_path / "rules" / "ok.sh")
    )
    assert c2.needs == ["basic/check-1"] and c1.needs == []
    assert (c1.line, c1.col, c2.line) == (3, 5, 4)

    assert wise.dir == str(tmp_path / "rules" / "wise")
    assert wise.on == ["pre-tool", "stop"] and wise.mode == "shadow" and wise.on_uncertain == "ask"
    assert wise.tools == ["Write", "Bash(git push *)", "mcp__*"]
    assert wise.paths == ["src/**"] and wise.exclude == ["**/*.lock"]
    assert wise.doc == "What it does: asks.\nFix: answer.\n"
    plain, full, third = wise.checks
    template = str(tmp_path / "templates" / "shared.md.j2")
    assert plain.kind == "judge" and plain.judge == template
    assert (plain.timeout, plain.model, plain.each, plain.min_confidence) == (
        600.0,
        "size-md",
        "changeset",
        None,
    )
    assert plain.allowed_tools == [] and plain.disallowed_tools == [] and plain.prepare is None
    assert full.needs == ["wise/plain", "basic/check-2"]
    assert full.prepare == str(tmp_path / "rules" / "wise" / "prep.sh")
    assert full.model == "size-lg,opus" and full.each == "file" and full.min_confidence == 0.75
    assert full.allowed_tools == ["Read", "Grep", "Bash(git show:*)"]
    assert full.disallowed_tools == ["Write(src/**)", "WebFetch"]
    assert full.timeout == 90.0
    # A bare name not beside the rule is a command on PATH, kept bare.
    assert third.id == "check-3" and third.script == "sh" and third.timeout == 0.5
    # Everything survives the JSON round trip the cache uses.
    from slopjudge.loading import rulecache

    row = json.loads(json.dumps(rulecache._encode_rule(wise)))
    assert rulecache._decode_rule(row) == wise


def test_rule_file_in_folder_prefers_its_own_template(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "rules" / "r" / "rule.yaml", "description: d\nchecks:\n  - judge: t.md.j2\n")
    write(tmp_path / "rules" / "r" / "t.md.j2", "local {{ change }}")
    write(tmp_path / "templates" / "t.md.j2", "shared {{ change }}")
    result = load_rules(
        "rules", workspace=str(tmp_path), template_dirs=[str(tmp_path / "templates")]
    )
    assert result.rules[0].checks[0].judge == str(tmp_path / "rules" / "r" / "t.md.j2")


def test_find_rule_files_takes_yaml_and_yml_files_and_rule_folders_only(tmp_path: Path) -> None:
    write(tmp_path / "a.yaml", "x: 1\n")
    write(tmp_path / "b" / "rule.yaml", "x: 1\n")
    write(tmp_path / "c" / "other.yaml", "x: 1\n")  # a folder without rule.yaml
    write(tmp_path / "d.yml", "x: 1\n")
    write(tmp_path / "f" / "rule.yml", "x: 1\n")
    write(tmp_path / "e.sh", "#!/bin/sh\n")
    write(tmp_path / ".hidden.yaml", "x: 1\n")
    found = find_rule_files(str(tmp_path))
    assert found == [
        ("a", str(tmp_path / "a.yaml")), ("b", str(tmp_path / "b" / "rule.yaml")),
        ("d", str(tmp_path / "d.yml")), ("f", str(tmp_path / "f" / "rule.yml")),
    ]


def test_missing_rules_folder_is_one_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = load_rules("nope", workspace=str(tmp_path))
    assert [str(e) for e in result.errors] == ["nope:1:1: rules folder not found"]
    assert result.rules == []


def test_each_missing_required_field_is_named_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "x.yaml").write_text("on: [stop]\n")
    result = load_rules("rules", workspace=str(tmp_path))
    assert sorted(str(e) for e in result.errors) == [
        "rules/x.yaml:1:1: the rule is missing the required field `checks`",
        "rules/x.yaml:1:1: the rule is missing the required field `description`"]


@pytest.mark.parametrize("written, taken", [("50000", 50000), ("50000.0", 50000),
                                            ("5e4", 50000), ("1.5", None), ("0", None)])
def test_a_prompt_budget_is_taken_as_the_whole_number_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, written: str, taken: int | None) -> None:
    # 50000.0 is an integer to the JSON schema: the rule loads, and its budget is that number
    # (it was dropped for the settings' default); 1.5 and 0 are load errors.
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "rules" / "x" / "t.md.j2", "{{ changeset.files | length }}\n")
    write(tmp_path / "rules" / "x" / "rule.yaml",
          f"description: d\nchecks:\n  - judge: t.md.j2\n    max_prompt_tokens: {written}\n")
    result = load_rules("rules", workspace=str(tmp_path))
    if taken is None:
        assert [e.message for e in result.errors if "max_prompt_tokens" in e.message]
    else:
        assert result.errors == []
        budget = result.rules[0].checks[0].max_prompt_tokens
        assert (budget, type(budget)) == (taken, int)


def test_a_rule_file_under_another_name_or_a_folder_deeper_is_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    rules = tmp_path / "rules"
    rule = "description: d\nchecks:\n  - script: ./ok.sh\n"
    for path in ("a/rules.yaml", "b/Rule.yaml", "grp/c/rule.yml", "lang/python/no-print.yaml",
                 "up/rule.YAML", "top.YML", "_lib/shared.yaml", "ok/rule.yaml",
                 "ok/cases/one/case.yaml", "one.yaml", "one/words.yaml"):
        (rules / path).parent.mkdir(parents=True, exist_ok=True)
        (rules / path).write_text(rule)
    for folder in ("ok", "one"):
        (rules / folder / "ok.sh").write_text("#!/bin/sh\n")
        (rules / folder / "ok.sh").chmod(0o755)
    (rules / "one.yaml").write_text(rule.replace("./ok.sh", "one/ok.sh"))
    (rules / "dl").mkdir()
    (rules / "dl" / "rule.yaml").symlink_to("nowhere")
    (rules / "dir" / "rule.yaml").mkdir(parents=True)
    # Not taken for rules: what a removed rule's `git rm` leaves (ignored files), a hidden
    # folder, a data folder named like YAML, links to rules that are read where they are.
    for left in ("gone/node_modules/pkg/pnpm-lock.yaml", "gone/node_modules/x.yml",
                 "gone/.venv/x.yml", "drafts/.wip/rule.yaml", "helpers/specs.yaml/x.txt",
                 "data/a/b/c/d/e/f/g/rule.yaml"):
        (rules / left).parent.mkdir(parents=True, exist_ok=True)
        (rules / left).write_text("a: 1\n")
    (rules / "by-team" / "alice").mkdir(parents=True)
    (rules / "by-team" / "alice" / "ok").symlink_to(rules / "ok")
    (rules / "docs").mkdir()
    (rules / "docs" / "all-rules").symlink_to(rules)
    (rules / "all").symlink_to(".")
    (rules / "kept-elsewhere").symlink_to(tmp_path / "missing")  # a rule folder not there
    (rules / "notes.md").symlink_to(tmp_path / "missing.md")  # not a rule's name
    (rules / "team" / "backend" / "x").mkdir(parents=True)
    (rules / "team" / "backend" / "x" / "rule.yaml").write_text(rule)
    (rules / "org" / "python" / "security").mkdir(parents=True)
    (rules / "org" / "python" / "security" / "no-eval.yaml").write_text(rule)
    (tmp_path / "shared" / "sec").mkdir(parents=True)  # a folder of rules linked in
    (tmp_path / "shared" / "sec" / "no-eval.yaml").write_text(rule)
    (rules / "sec").symlink_to(tmp_path / "shared" / "sec")
    for kept in ("node_modules/pkg/appveyor.yml", "off/rule.yaml.off", "off/cases.yaml",
                 "aside.yaml.off", "aside/fixtures/sample.yaml"):
        (rules / kept).parent.mkdir(parents=True, exist_ok=True)  # not rules, nor strays
        (rules / kept).write_text("a: 1\n")
    result = load_rules("rules", workspace=str(tmp_path))
    assert loader.stray_rule_files(str(rules)) == sorted(  # one answer, however it is asked
        str(tmp_path / e.path) for e in result.errors)
    assert [r.id for r in result.rules] == ["ok", "one"]
    assert [(e.path, e.on) for e in result.errors] == [(f"rules/{p}", None) for p in (
        "a/rules.yaml", "b/Rule.yaml", "dir/rule.yaml", "dl/rule.yaml", "grp/c/rule.yml",
        "kept-elsewhere", "lang/python/no-print.yaml", "org/python/security/no-eval.yaml",
        "sec/no-eval.yaml", "team/backend/x/rule.yaml", "top.YML", "up/rule.YAML")]
    said = {e.path: e.message for e in result.errors}
    assert said["rules/a/rules.yaml"].startswith(
        "not read as a rule: slopjudge reads rules/<id>.yaml and rules/<id>/rule.yaml only")
    assert said["rules/dl/rule.yaml"] == said["rules/dir/rule.yaml"] == said[
        "rules/kept-elsewhere"] == (
        "not read as a rule: it is not a file (a link to nothing, or a folder)")


# ---- never a traceback -------------------------------------------------------


def test_odd_files_are_errors_not_crashes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "binary.yaml").write_bytes(b"\xff\xfe\x00garbage")
    write(rules / "empty.yaml", "")
    write(rules / "tabs.yaml", "description: x\nchecks:\n\t- script: sh\n")
    write(rules / "scalar.yaml", "just a string\n")
    write(rules / "checkstr.yaml", "description: x\nchecks: [./ok.sh, 3]\n")
    write(rules / "nullcheck.yaml", "description: x\nchecks:\n  -\n")
    write(rules / "anchors.yaml", "description: &d x\nchecks:\n  - &c {script: sh}\n  - *c\n")
    write(
        rules / "self.yaml", "description: x\nchecks:\n  - id: a\n    script: sh\n    needs: [a]\n"
    )
    write(rules / "multi.yaml", "description: |\n  two\n  lines\nchecks:\n  - script: sh\n")
    result = load_rules("rules", workspace=str(tmp_path))
    by_file = {}
    for e in result.errors:
        by_file.setdefault(e.path, []).append(str(e))
    assert "not UTF-8" in by_file["rules/binary.yaml"][0]
    assert by_file["rules/empty.yaml"] == [
        "rules/empty.yaml:1:1: the file is empty; a rule needs `description` and `checks`"
    ]
    assert by_file["rules/tabs.yaml"][0].startswith("rules/tabs.yaml:3:1: broken YAML")
    assert "not a string" in by_file["rules/scalar.yaml"][0]
    assert any(
        ":2:10: `checks[0]` must be a mapping, not a string" in m
        for m in by_file["rules/checkstr.yaml"]
    )
    assert any(
        ":2:19: `checks[1]` must be a mapping, not an integer" in m
        for m in by_file["rules/checkstr.yaml"]
    )
    assert "`checks[0]` must be a mapping, not empty (null)" in by_file["rules/nullcheck.yaml"][0]
    # An alias repeats the same check, so its default id differs: check-1, check-2.
    assert "rules/anchors.yaml" not in by_file
    assert by_file["rules/self.yaml"] == ["rules/self.yaml:5:13: cycle in needs: self/a -> self/a"]
    assert "must be one line" in by_file["rules/multi.yaml"][0]
    assert [r.id for r in result.rules] == ["anchors"]


def test_an_unexpected_exception_disables_only_that_rule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "rules" / "a.yaml", "description: a\nchecks:\n  - script: sh\n")
    write(tmp_path / "rules" / "b.yaml", "description: b\nchecks:\n  - script: sh\n")
    real = loader._read_rule

    def explode(fr: loader._FileRule, data: object) -> None:
        if fr.id == "a":
            raise RuntimeError("boom")
        real(fr, data)

    monkeypatch.setattr(loader, "_read_rule", explode)
    result = load_rules("rules", workspace=str(tmp_path))
    assert [str(e) for e in result.errors] == [
        "rules/a.yaml:1:1: internal error while loading this rule: RuntimeError: boom"
    ]
    assert [r.id for r in result.rules] == ["b"]


def test_a_failure_linking_the_rules_loads_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "rules" / "a.yaml", "description: a\nchecks:\n  - script: sh\n")
    write(tmp_path / "rules" / "b.yaml", "description: [b\n")

    def explode(loaded: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(loader, "_link", explode)
    result = load_rules("rules", workspace=str(tmp_path))
    assert result.rules == []
    assert "rules:1:1: internal error linking rules: boom" in [str(e) for e in result.errors]
    assert any(e.path == "rules/b.yaml" for e in result.errors)
    # Every problem applies to every event: nothing is known to be out of its reach.
    assert all(e.on is None for e in result.errors)


def test_a_need_on_a_rule_that_does_not_parse_disables_the_dependent_chain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "rules" / "base.yaml", "description: [broken\n")
    write(
        tmp_path / "rules" / "mid.yaml",
        "description: m\nchecks:\n  - script: sh\n    needs: [base/check-1]\n",
    )
    write(
        tmp_path / "rules" / "top.yaml",
        "description: t\nchecks:\n  - script: sh\n    needs: [mid/check-1]\n",
    )
    write(tmp_path / "rules" / "free.yaml", "description: f\nchecks:\n  - script: sh\n")
    result = load_rules("rules", workspace=str(tmp_path))
    msgs = [str(e) for e in result.errors]
    assert (
        "rules/mid.yaml:4:13: needs `base/check-1`, but rule `base` does not load (rules/base.yaml)"
        in msgs
    )
    assert (
        "rules/top.yaml:4:13: needs `mid/check-1`, "
        "but rule `mid` does not load, so this rule is disabled too"
        in msgs
    )
    assert [r.id for r in result.rules] == ["free"]


def test_three_rule_cycle_names_the_whole_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for name, nxt in (("a", "b"), ("b", "c"), ("c", "a")):
        write(tmp_path / "rules" / f"{name}.yaml",
              f"description: {name}\nchecks:\n  - id: x\n    script: sh\n    needs: [{nxt}/x]\n")
    write(
        tmp_path / "rules" / "d.yaml", "description: d\nchecks:\n  - script: sh\n    needs: [a/x]\n"
    )
    result = load_rules("rules", workspace=str(tmp_path))
    cyc = "cycle in needs: a/x -> b/x -> c/x -> a/x"
    assert [str(e) for e in result.errors if "cycle" in e.message] == [
        f"rules/{n}.yaml:5:13: {cyc}" for n in "abc"
    ]
    assert any(e.path == "rules/d.yaml" and "disabled too" in e.message for e in result.errors)
    assert result.rules == []


def test_two_loops_through_one_check_are_each_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for name, needs in (("a", "[b/x, c/x]"), ("b", "[a/x]"), ("c", "[a/x]")):
        write(tmp_path / "rules" / f"{name}.yaml",
              f"description: {name}\nchecks:\n  - id: x\n    script: sh\n    needs: {needs}\n")
    result = load_rules("rules", workspace=str(tmp_path))
    assert sorted(str(e) for e in result.errors if "cycle" in e.message) == [
        "rules/a.yaml:5:13: cycle in needs: a/x -> b/x -> a/x",
        "rules/a.yaml:5:18: cycle in needs: a/x -> c/x -> a/x",
        "rules/b.yaml:5:13: cycle in needs: a/x -> b/x -> a/x",
        "rules/c.yaml:5:13: cycle in needs: a/x -> c/x -> a/x",
    ]


def test_template_validation_errors_join_the_rule_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "rules" / "j.yaml", "description: j\nchecks:\n  - judge: t.md.j2\n")
    write(tmp_path / "rules" / "k.yaml", "description: k\nchecks:\n  - judge: u.md.j2\n")
    write(tmp_path / "rules" / "t.md.j2", "{{ nope }}")
    write(tmp_path / "rules" / "u.md.j2", "fine")
    calls = []

    def validate_template(path: str, *, rule_dir: str, template_dirs: list[str]) -> list[LoadError]:
        calls.append((path, rule_dir, template_dirs))
        if path.endswith("u.md.j2"):
            raise ValueError("checker bug")
        return [LoadError("rules/t.md.j2", 1, 4, "`nope` is not in the template context")]

    monkeypatch.setattr(loader, "validate_template", validate_template)
    result = load_rules("rules", workspace=str(tmp_path), template_dirs=[])
    assert calls[0] == (str(tmp_path / "rules" / "t.md.j2"), str(tmp_path / "rules"), [])
    msgs = {(e.rule, str(e)) for e in result.errors}
    assert ("j", "rules/t.md.j2:1:4: `nope` is not in the template context") in msgs
    assert any(
        r == "k" and "cannot check template rules/u.md.j2: checker bug" in m for r, m in msgs
    )
    assert result.rules == []


def test_check_and_rule_fields_in_the_wrong_place_say_where_they_belong(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "rules" / "w.yaml", """\
        description: w
        script: sh
        checks:
          - script: sh
            paths: ["a"]
        """)
    msgs = [str(e) for e in load_rules("rules", workspace=str(tmp_path)).errors]
    assert msgs == [
        "rules/w.yaml:2:1: `script` is a check field; put it under `checks:`",
        "rules/w.yaml:5:5: `paths` is a rule field, not a check field; move it to the top level",
    ]


def test_on_uncertain_without_pre_tool_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write(
        tmp_path / "rules" / "u.yaml",
        "description: u\non_uncertain: ask\nchecks:\n  - script: sh\n",
    )
    msgs = [str(e) for e in load_rules("rules", workspace=str(tmp_path)).errors]
    assert msgs == ["rules/u.yaml:2:1: `on_uncertain` has no effect: `on` lacks `pre-tool` "
                    "(it is stop, ci); add `pre-tool` or remove `on_uncertain`"]


def test_bare_command_missing_from_path_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write(
        tmp_path / "rules" / "p.yaml", "description: p\nchecks:\n  - script: no-such-command-xyz\n"
    )
    msgs = [str(e) for e in load_rules("rules", workspace=str(tmp_path)).errors]
    assert msgs == [
        "rules/p.yaml:3:13: script `no-such-command-xyz` not found: "
        "not in rules/ and not a command on PATH"
    ]


def test_paths_outside_the_cwd_print_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "ws" / "rules" / "x.yaml", "description: x\nchecks: []\n")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    result = load_rules(str(tmp_path / "ws" / "rules"), workspace=str(tmp_path / "ws"))
    assert [str(e) for e in result.errors] == [
        f"{tmp_path}/ws/rules/x.yaml:2:9: `checks` must not be empty"
    ]


def test_the_schema_is_valid_2020_12_and_describes_the_fixture() -> None:
    import jsonschema
    from ruamel.yaml import YAML

    schema = json.loads((REPO / "schemas" / "rule.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    good = YAML(typ="safe").load((BAD / "good-judge" / "rule.yaml").read_text())
    assert list(validator.iter_errors(good)) == []
    # Editors flag a judge-only field on a script check from the schema alone.
    script_with_model = {"description": "d", "checks": [{"script": "x", "model": "m"}]}
    assert list(validator.iter_errors(script_with_model))
    both = {"description": "d", "checks": [{"script": "x", "judge": "y"}]}
    assert list(validator.iter_errors(both))


# ---- durations and tool rules ------------------------------------------------


@pytest.mark.parametrize("text,seconds", [
    ("30s", 30), ("2m", 120), ("1m30s", 90), ("500ms", 0.5), ("1h", 3600), ("1.5h", 5400),
    ("1h2m3s", 3723), ("250us", 0.00025),
])
def test_durations_read_like_go(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    "value,words",
    [
        (30, "write `30s`"),
        ("30", "write `30s`"),
        (2.5, "write `2.5s`"),
        ("0s", "> 0"),
        ("-5s", "negative"),
        ("5 m", "not a duration"),
        ("", "empty duration"),
        ("1d", "not a duration"),
        (True, "not a duration"),
        (None, "not a duration"),
        ("s", "not a duration"),
    ],
)
def test_bad_durations_say_how_to_write_them(value: object, words: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_duration(value)
    assert words in str(info.value)


@pytest.mark.parametrize("item,problem", [
    ("Read", None), ("Bash(git show:*)", None), ("mcp__github__*", None), ("Bash(echo (a))", None),
    ("", "empty"), ("  ", "empty"), (" Read", "surrounding spaces"), ("Read Grep", "two rules"),
    ("Read,Grep", "two rules"), ("Bash(git show:*", "never closed"), ("Bash)", "closes nothing"),
    ("Bash(x)y", "after `)`"), ("Bash()", "empty parentheses"), ("(x)", "no tool name"),
    ("Bad$Name", "not a tool name"), (3, "must be a string"),
])
def test_tool_rule_problems(item: object, problem: str | None) -> None:
    found = tool_rule_problem(item)
    assert (found is None) if problem is None else (found is not None and problem in found)


@pytest.mark.parametrize("item,denies", [
    ("Write", True), ("Edit", True), ("*", True), ("Write(*)", True), ("Edit(//**)", True),
    ("Edit(/**)", True), ("Wr*", True), ("Write(src/**)", False), ("Bash", False),
    ("MultiEdit", False), ("Read", False), ("Edit(docs/*.md)", False),
])
def test_denying_the_verdict_write(item: str, denies: bool) -> None:
    problem = tool_rule_problem(item, deny=True)
    assert (problem is not None and "denies the judge writing its verdict" in problem) is denies
    assert tool_rule_problem(item) is None


def test_split_tool_rules_keeps_parenthesised_rules_whole() -> None:
    assert split_tool_rules("Read, Grep Bash(git show:*)") == ["Read", "Grep", "Bash(git show:*)"]
    with pytest.raises(ValueError):
        split_tool_rules("Bash(git")


# ---- property: whatever the file holds, loading answers with one-line errors ----

_YAMLISH = st.text(
    alphabet=st.sampled_from(list("abcdeikmnoprstuvy-_:/[]{},.'\"&*!|>#%@` \n\t0123456789")),
    max_size=120,
)
_FIELDS = st.sampled_from(
    [
        "description: d\n",
        "checks:\n",
        "  - script: sh\n",
        "  - judge: t.md.j2\n",
        "    needs: [x]\n",
        "    timeout: 3\n",
        "on: [pre-tool]\n",
        "tools: [Bash(\n",
        "    id: x\n",
        "    model:\n",
        "    allowed_tools: [Read Grep]\n",
        "    each: file\n",
        "    min_confidence: 2\n",
        "- \n",
        "  x: [\n",
    ]
)


@hsettings(
    max_examples=80, deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(noise=_YAMLISH, parts=st.lists(_FIELDS, max_size=8))
def test_loading_never_raises_and_every_error_is_one_located_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, noise: str, parts: list[str]
) -> None:
    import re
    import tempfile

    with tempfile.TemporaryDirectory(dir=tmp_path) as root:
        monkeypatch.chdir(root)
        os.mkdir("rules")
        Path("rules/fuzz.yaml").write_text("".join(parts) + noise)
        Path("rules/other.yaml").write_text("".join(reversed(parts)))
        result = load_rules("rules", workspace=root)
        for e in result.errors:
            assert re.fullmatch(r"rules/(fuzz|other)\.yaml:[1-9]\d*:[1-9]\d*: \S.*", str(e)), str(e)
        loaded = {r.id for r in result.rules}
        assert not loaded & {e.rule for e in result.errors}


def test_rule_files_are_found_in_a_folder_whose_path_holds_glob_characters(
        tmp_path: Path) -> None:
    rules = tmp_path / "job[42]*?" / "rules"
    (rules / "y").mkdir(parents=True)
    (rules / "x.yaml").write_text("description: x\n")
    (rules / "y" / "rule.yaml").write_text("description: y\n")
    assert loader.find_rule_files(str(rules)) == [
        ("x", str(rules / "x.yaml")), ("y", str(rules / "y" / "rule.yaml"))]
    assert loader.stray_rule_files(str(rules)) == []
