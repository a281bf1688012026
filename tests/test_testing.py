"""`slopjudge test`: rule fixture cases under tests/rules/<rule>/<case>/case.yaml (SPEC §7)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.helpers import make_repo, py, sj, write_files, write_rule

TODO_CHECK = py("""
import json, sys
data = json.load(sys.stdin)
bad = [f["path"] for f in data["changeset"]["files"] if "TODO" in (f["newContent"] or "")]
if bad:
    print(json.dumps({"reason": "TODO found in " + ", ".join(bad)}))
    sys.exit(1)
""")

TEMPLATE = """Judge this change.
{% for f in changeset.files %}<file path="{{ f.path }}">{{ f.newContent or "" }}</file>
{% endfor %}"""


def diff_adding(path: str, line: str) -> str:
    return (f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
            f"@@ -0,0 +1 @@\n+{line}\n")


def case(
    repo: Path, rule: str, name: str, yaml_text: str, files: dict[str, str] | None = None
) -> Path:
    folder = repo / "tests" / "rules" / rule / name
    write_files(folder, {"case.yaml": yaml_text.strip("\n") + "\n", **(files or {})})
    return folder


def build(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "repo")
    write_rule(repo / "rules", "no-todo", """
description: no TODO in new code
on: [ci, pre-tool]
tools: [Write, Edit]
checks:
  - id: scan
    script: ./scan.py
""", {"scan.py": TODO_CHECK})
    write_rule(repo / "rules", "judged", """
description: a judge looks at the change
checks:
  - id: ask
    judge: ./ask.md.j2
""", {"ask.md.j2": TEMPLATE})
    case(repo, "no-todo", "clean", "expect: pass\ndiff: change.diff",
         {"change.diff": diff_adding("src/a.py", "x = 1")})
    case(repo, "no-todo", "dirty", """
description: a TODO refuses
diff: change.diff
expect: refuse
reason_contains: TODO found in src/a.py
""", {"change.diff": diff_adding("src/a.py", "x = 1  # TODO later")})
    case(repo, "no-todo", "write-event", """
expect: refuse
reason_contains: [TODO found, src/new.py]
event:
  hook_event_name: PreToolUse
  session_id: s-1
  cwd: $WORKSPACE
  tool_name: Write
  tool_input:
    file_path: $WORKSPACE/src/new.py
    content: "# TODO: write this\\n"
""")
    case(repo, "no-todo", "edit-event-clean", """
expect: pass
event: payload.json
""", {
        "payload.json": json.dumps({
            "hook_event_name": "PreToolUse", "tool_name": "Edit", "cwd": "$WORKSPACE",
            "tool_input": {"file_path": "$WORKSPACE/src/old.py", "old_string": "TODO",
                           "new_string": "done"}}),
        "workspace/src/old.py": "x = 1  # TODO\n",
    })
    case(repo, "judged", "good", """
diff: change.diff
expect: pass
judges:
  ask: {pass: true, reasoning: fine, prompt_contains: [MARKER-42, src/b.py]}
""", {"change.diff": diff_adding("src/b.py", "value = 'MARKER-42'")})
    case(repo, "judged", "bad", """
diff: change.diff
expect: refuse
reason_contains: sloppy naming
judges:
  judged/ask: {pass: false, reasoning: sloppy naming}
""", {"change.diff": diff_adding("src/b.py", "tmp2 = 1")})
    return repo


def run_test(repo: Path, *args: str) -> tuple[int, dict]:
    res = sj("test", "--format", "json", *args, cwd=repo)
    try:
        return res.returncode, json.loads(res.stdout)
    except ValueError as exc:
        raise AssertionError(f"rc {res.returncode}: {res.stdout!r} {res.stderr!r}") from exc


def cases(report: dict) -> dict[str, dict]:
    return {f"{c['rule']}/{c['case']}": c for c in report["cases"]}


def test_all_kinds_of_case_pass(tmp_path: Path) -> None:
    repo = build(tmp_path)
    code, report = run_test(repo)
    got = cases(report)
    assert {k: (v["ok"], v["actual"], v["problems"]) for k, v in got.items()} == {
        "judged/bad": (True, "refuse", []),
        "judged/good": (True, "pass", []),
        "no-todo/clean": (True, "pass", []),
        "no-todo/dirty": (True, "refuse", []),
        "no-todo/edit-event-clean": (True, "pass", []),
        "no-todo/write-event": (True, "refuse", []),
    }
    assert code == 0 and report["ok"]
    assert report["lacking_refusing_case"] == [] and report["lacking_passing_case"] == []


def test_wrong_expectation_fails_the_case(tmp_path: Path) -> None:
    repo = build(tmp_path)
    case(repo, "no-todo", "mislabelled", "diff: change.diff\nexpect: pass",
         {"change.diff": diff_adding("a.py", "# TODO")})
    case(
        repo,
        "no-todo",
        "wrong-words",
        "diff: change.diff\nexpect: refuse\nreason_contains: FIXME",
        {"change.diff": diff_adding("a.py", "# TODO")},
    )
    code, report = run_test(repo)
    got = cases(report)
    assert code == 1 and not report["ok"]
    assert not got["no-todo/mislabelled"]["ok"]
    assert "expected pass, got refuse" in got["no-todo/mislabelled"]["problems"][0]
    assert got["no-todo/wrong-words"]["problems"] == ["no reason contains 'FIXME'"]


def test_unused_stub_fails_the_case(tmp_path: Path) -> None:
    repo = build(tmp_path)
    # The judged rule only sees src/**: a change elsewhere never asks the judge.
    write_rule(repo / "rules", "judged-src", """
description: a judge on src only
paths: ["src/**"]
checks:
  - id: ask
    judge: ./ask.md.j2
""", {"ask.md.j2": TEMPLATE})
    case(repo, "judged-src", "stub-unused", """
diff: change.diff
expect: skip
judges:
  ask: {pass: true}
""", {"change.diff": diff_adding("docs/readme.md", "hello")})
    case(repo, "judged", "not-a-judge", """
diff: change.diff
expect: pass
judges:
  ask: {pass: true}
  nosuch: {pass: true}
""", {"change.diff": diff_adding("src/c.py", "c = 1")})
    code, report = run_test(repo)
    got = cases(report)
    assert code == 1
    c = got["judged-src/stub-unused"]
    assert not c["ok"] and c["actual"] == "skip"
    assert any("never used" in p for p in c["problems"]), c["problems"]
    c = got["judged/not-a-judge"]
    assert not c["ok"] and any("nosuch" in p for p in c["problems"]), c["problems"]


def test_unstubbed_judge_fails_the_case(tmp_path: Path) -> None:
    repo = build(tmp_path)
    case(repo, "judged", "no-stub", "diff: change.diff\nexpect: pass",
         {"change.diff": diff_adding("src/c.py", "c = 1")})
    code, report = run_test(repo)
    c = cases(report)["judged/no-stub"]
    assert code == 1 and not c["ok"]
    assert c["actual"] == "error"
    assert any("no stub" in p for p in c["problems"]), c["problems"]


def test_bad_case_yaml_is_reported_with_position(tmp_path: Path) -> None:
    repo = build(tmp_path)
    case(repo, "no-todo", "broken-yaml", "expect: pass\ndiff: [unclosed\n")
    case(repo, "no-todo", "control-char", "expect: pass\ndiff: \"a\x07b\"\n")
    case(repo, "no-todo", "tagged", "expect: pass\ndiff: !custom change.diff\n",
         {"change.diff": diff_adding("a.py", "x")})
    case(repo, "no-todo", "bad-field", "expect: pass\ndiff: change.diff\nexpected: refuse\n",
         {"change.diff": diff_adding("a.py", "x")})
    case(repo, "no-todo", "bad-value", "diff: change.diff\nexpect: maybe\n",
         {"change.diff": diff_adding("a.py", "x")})
    res = sj("test", cwd=repo)
    assert res.returncode == 1
    assert "Traceback" not in res.stdout + res.stderr
    where = re.compile(
        r"tests/rules/no-todo/(broken-yaml|control-char|tagged|bad-field|bad-value)/case\.yaml:"
        r"(\d+):(\d+): "
    )
    found = {m.group(1): (int(m.group(2)), int(m.group(3))) for m in where.finditer(res.stdout)}
    assert set(found) == {"broken-yaml", "control-char", "tagged", "bad-field", "bad-value"}, \
        res.stdout
    assert "tagged/case.yaml:2:7: a YAML tag (`!name`) or a date: a case holds plain values" \
        in res.stdout
    # Said as a rule file's broken YAML is (the loader's reader), a character ruamel
    # refuses too.
    assert "broken-yaml/case.yaml:3:1: broken YAML: expected ',' or ']'" in res.stdout
    assert "control-char/case.yaml:1:1: broken YAML: unacceptable character" in res.stdout
    assert found["bad-value"] == (2, 9)  # the value 'maybe'
    assert found["bad-field"] == (3, 1)  # the unknown key
    assert "FAIL no-todo/bad-value" in res.stdout


def test_coverage_lines_for_rules_lacking_cases(tmp_path: Path) -> None:
    repo = build(tmp_path)
    write_rule(repo / "rules", "only-passing", """
description: has only a passing case
checks:
  - script: ./ok.py
""", {"ok.py": py("import sys; sys.stdin.read()")})
    write_rule(repo / "rules", "untested", """
description: has no case at all
checks:
  - script: ./ok.py
""", {"ok.py": py("import sys; sys.stdin.read()")})
    case(repo, "only-passing", "fine", "diff: change.diff\nexpect: pass",
         {"change.diff": diff_adding("a.py", "x")})
    res = sj("test", cwd=repo)
    assert res.returncode == 0, res.stdout + res.stderr  # gaps are reported, not failed...
    assert "rules with no refusing case: only-passing, untested" in res.stdout
    assert "rules with no passing case: untested" in res.stdout
    res = sj("test", "--strict", cwd=repo)
    assert res.returncode == 1  # ...unless --strict


def test_rule_that_does_not_load_fails_its_cases(tmp_path: Path) -> None:
    repo = build(tmp_path)
    (repo / "rules" / "no-todo" / "scan.py").unlink()
    code, report = run_test(repo)
    assert code == 1
    assert report["load_errors"] and any("scan.py" in e for e in report["load_errors"])
    assert not cases(report)["no-todo/clean"]["ok"]


def test_plain_values_are_not_taken_for_tags(tmp_path: Path) -> None:
    """Empty mappings and lists, anchors, block strings, numbers of every spelling are plain;
    a tagged key, a date or a tag deep in a list is not."""
    from slopjudge.testing import _load_case

    plain = ("expect: pass\njudges: {}\nevent: {extra: {}, l: [], n: 0x1f, f: 1_0.5}\n"
             "a: &x [1]\nb: *x\nc: |\n  text\n")
    for n, (text, problem) in enumerate([
            (plain, None), ("{}\n", None),
            ("expect: pass\nevent: {!foo k: 1}\n", ":2:"),
            ("expect: pass\nx: 2024-01-01\n", ":2:4:"),
            ("expect: pass\nx: [1, {a: [b, !t c]}]\n", ":2:")]):
        folder = tmp_path / str(n)
        folder.mkdir()
        (folder / "case.yaml").write_text(text)
        said = _load_case(str(folder))[2]
        assert (said is None) if problem is None else (problem in str(said)), (text, said)
