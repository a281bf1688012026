"""`slopjudge import sloprail`: a real .sloprail folder converted, validated and run.

The fixture holds a file-guard (glob match, a script, a prepare and a judge), a
gate on a Bash command, a file-guard whose match is a marker expression and a
context. The first three become rules that load and run on a diff, on hook
payloads and on their own sloprail test cases; the context is named with why.
(tests/test_sloprail_shapes.py covers every other shape.)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from slopjudge.cli import main
from tests.helpers import commit_all, executable, in_process, make_repo, py

FIXTURE = Path(__file__).parent / "fixtures" / "sloprail" / "project" / ".sloprail"
SLOPJUDGE = os.path.join(os.path.dirname(sys.executable), "slopjudge")


def env(**extra: str) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items()
           if not k.startswith(("SLOPJUDGE_", "SLOPRAIL_", "CLAUDE_"))}
    out.update(extra)
    return out


def cli(ws: Path, *args: str, stdin: str = "", **extra: str) -> subprocess.CompletedProcess[str]:
    """``slopjudge ARGS`` through the console script's main, in this process."""
    rc, out, err = in_process(lambda: main(list(args)), stdin.encode(), cwd=ws, env=env(**extra))
    return subprocess.CompletedProcess([SLOPJUDGE, *args], rc, out, err)


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    ws = make_repo(tmp_path / "repo", {"README.md": "hello\n"})
    shutil.copytree(FIXTURE, ws / ".sloprail", symlinks=True)
    return ws


@pytest.fixture()
def imported(ws: Path) -> tuple[Path, str]:
    proc = cli(ws, "import", "sloprail")
    assert proc.returncode == 1, proc.stderr  # the context could not be converted
    return ws, proc.stdout


def mock(tmp: Path, verdict: dict[str, Any]) -> tuple[Path, Path]:
    """A judge mock that keeps what it was shown and answers ``verdict``."""
    seen = tmp / "judge-saw.txt"
    script = executable(tmp / "judge-mock.py", py(f"""
import sys
open({str(seen)!r}, "a").write(sys.stdin.read() + "\\n=====\\n")
print({json.dumps(json.dumps(verdict))})
"""))
    return script, seen


def test_the_convertible_rules_are_written_and_validate(imported: tuple[Path, str]) -> None:
    ws, out = imported
    assert "file-guard/doc-quality -> rules/doc-quality/" in out
    assert "gate/no-curl -> rules/no-curl/" in out
    assert "doc-quality: passes slopjudge validate" in out
    assert "no-curl: passes slopjudge validate" in out
    proc = cli(ws, "validate")
    assert proc.returncode == 0 and "3 rule(s) loaded" in proc.stdout, proc.stdout
    rule = (ws / "rules" / "doc-quality" / "rule.yaml").read_text()
    assert 'paths: ["docs/**/*.md"]' in rule and 'on: ["stop", "ci"]' in rule
    assert 'match: "status != \\"D\\""' in rule  # deletions: skip
    assert "needs: [no-todo]" in rule and "each: file" in rule and 'timeout: "2m"' in rule
    assert 'allowed_tools: ["Read", "Grep"]' in rule and 'model: "size-sm"' in rule
    gate = (ws / "rules" / "no-curl" / "rule.yaml").read_text()
    assert 'on: ["pre-tool"]' in gate and 'tools: ["Bash"]' in gate
    assert 'any(event.invocations, .bin == \\"curl\\")' in gate
    for script in ("doc-quality/no-todo.sh", "doc-quality/prepare.sh", "no-curl/refuse.sh"):
        assert os.access(ws / "rules" / script, os.X_OK)
    assert (ws / "rules" / "doc-quality" / "tests" / "permit-clean" / "case.yaml").is_file()


def test_what_cannot_convert_is_named_with_its_line(imported: tuple[Path, str]) -> None:
    ws, out = imported
    assert "file-guard/invariants -> rules/invariants/" in out
    assert "context/refactoring: NOT converted" in out and "slopjudge has no contexts" in out
    assert "why: .sloprail/context/refactoring:1:" in out
    assert not (ws / "rules" / "refactoring").exists()


def test_nothing_is_overwritten(imported: tuple[Path, str]) -> None:
    ws, _ = imported
    rule = ws / "rules" / "no-curl" / "rule.yaml"
    rule.write_text(rule.read_text() + "# edited by hand\n")
    proc = cli(ws, "import", "sloprail")
    assert proc.returncode == 1
    assert "gate/no-curl: NOT converted: rules/no-curl already exists" in proc.stdout
    assert rule.read_text().endswith("# edited by hand\n")


def test_file_guard_runs_on_a_diff_with_a_judge_mock(
        imported: tuple[Path, str], tmp_path: Path) -> None:
    ws, _ = imported
    diff = tmp_path / "change.diff"
    diff.write_text(
        "diff --git a/docs/guide.md b/docs/guide.md\nnew file mode 100644\n"
        "--- /dev/null\n+++ b/docs/guide.md\n@@ -0,0 +1,3 @@\n+# Guide\n+\n+Run make.\n")
    script, seen = mock(tmp_path, {"pass": False, "reasoning": "the title is vague"})
    mocks = json.dumps({"doc-quality/judge-doc": str(script)})
    proc = cli(ws, "run", "--diff", str(diff), "--format", "json", SLOPJUDGE_JUDGE_MOCKS=mocks)
    report = json.loads(proc.stdout)
    assert proc.returncode != 0 and report["outcome"] == "refuse", proc.stdout + proc.stderr
    by_id = {c["id"]: c for c in report["checks"]}
    assert by_id["doc-quality/no-todo"]["outcome"] == "pass"
    assert by_id["doc-quality/judge-doc"]["outcome"] == "refuse"
    assert "the title is vague" in by_id["doc-quality/judge-doc"]["reason"]
    prompt = seen.read_text()
    # The sloprail template rendered with its file's event and the prepare's context.
    assert "Review the documentation page docs/guide.md (PostFileCreate) in docs/." in prompt
    assert '<file path="docs/guide.md">\n# Guide\n\nRun make.\n' in prompt
    assert "Style guide from docs-team: Short sentences." in prompt
    # A TODO is refused by the script, and the judge is not asked.
    seen.unlink()
    diff.write_text(diff.read_text().replace("+Run make.", "+TODO: write"))
    report = json.loads(cli(ws, "run", "--diff", str(diff), "--format", "json",
                            SLOPJUDGE_JUDGE_MOCKS=mocks).stdout)
    by_id = {c["id"]: c for c in report["checks"]}
    assert by_id["doc-quality/no-todo"]["reason"] == "TODO left in docs/guide.md"
    assert by_id["doc-quality/judge-doc"]["outcome"] == "skipped" and not seen.exists()


def test_file_guard_runs_on_a_stop_hook_payload(
        imported: tuple[Path, str], tmp_path: Path) -> None:
    ws, _ = imported
    commit_all(ws, "rules")
    script, seen = mock(tmp_path, {"pass": True, "reasoning": "plain"})
    mocks = json.dumps({"doc-quality/judge-doc": str(script)})
    base = {"session_id": "s1", "transcript_path": str(tmp_path / "t.jsonl"), "cwd": str(ws)}
    start = cli(ws, "hook", "start", stdin=json.dumps(dict(base, hook_event_name="SessionStart")))
    assert start.returncode == 0, start.stderr
    (ws / "docs").mkdir()
    (ws / "docs" / "guide.md").write_text("# Guide\n\n// sr:owner docs.Team\nRun make.\n")
    stop = dict(base, hook_event_name="Stop", stop_hook_active=False)
    proc = cli(ws, "hook", "stop", stdin=json.dumps(stop), SLOPJUDGE_JUDGE_MOCKS=mocks)
    assert proc.returncode == 0 and proc.stdout.strip() == "", proc.stdout + proc.stderr
    prompt = seen.read_text()
    assert "docs/guide.md (PostFileCreate)" in prompt
    assert "It declares owner Team on line 3." in prompt  # newMarkers | funcname
    (ws / "docs" / "guide.md").write_text("# Guide\n\nTODO\n")
    proc = cli(ws, "hook", "stop", stdin=json.dumps(stop), SLOPJUDGE_JUDGE_MOCKS=mocks)
    out = json.loads(proc.stdout)
    assert out["decision"] == "block" and "TODO left in docs/guide.md" in out["reason"]


def test_gate_runs_on_a_pre_tool_hook_payload(imported: tuple[Path, str]) -> None:
    ws, _ = imported

    def pre_tool(command: str) -> subprocess.CompletedProcess[str]:
        data = {"session_id": "s1", "transcript_path": "/tmp/t.jsonl", "cwd": str(ws),
                "hook_event_name": "PreToolUse", "tool_name": "Bash",
                "tool_input": {"command": command}, "tool_use_id": "toolu_1"}
        return cli(ws, "hook", "pre-tool", stdin=json.dumps(data))

    proc = pre_tool("cd vendor && curl -sSLo lib.tgz https://example.com/lib.tgz")
    spec = json.loads(proc.stdout)["hookSpecificOutput"]
    assert spec["permissionDecision"] == "deny"
    assert "no-curl" in spec["permissionDecisionReason"]
    assert "downloads go through scripts/fetch.sh" in spec["permissionDecisionReason"]
    for harmless in ("git status", "echo curl", "curlie get example.com"):
        proc = pre_tool(harmless)
        assert proc.returncode == 0 and proc.stdout.strip() == "", (harmless, proc.stdout)


def test_converted_cases_run_under_slopjudge_test(imported: tuple[Path, str]) -> None:
    ws, _ = imported
    proc = cli(ws, "test", "--rule", "doc-quality")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ok   doc-quality/permit-clean (expect pass, got pass)" in proc.stdout
    assert "ok   doc-quality/refuse-todo (expect refuse, got refuse)" in proc.stdout
    assert "skip doc-quality/cites-user" in proc.stdout and "`user_says`" in proc.stdout
    # A case whose expectation is wrong fails: the cases really run.
    case = ws / "rules" / "doc-quality" / "tests" / "permit-clean" / "case.yaml"
    case.write_text(case.read_text().replace('"Run make."', '"Run ninja."'))
    proc = cli(ws, "test", "--rule", "doc-quality")
    assert proc.returncode == 1
    assert "judges: the prompt for doc-quality/judge-doc lacks 'Run ninja.'" in proc.stdout
    # A case.yaml that does not parse is said where, as a rule file's broken YAML is.
    case.write_text("expect: [\n")
    proc = cli(ws, "test", "--rule", "doc-quality")
    assert proc.returncode == 1 and "Traceback" not in proc.stdout + proc.stderr
    assert "tests/permit-clean/case.yaml:2:1: broken YAML: expected the node content" \
        in proc.stdout, proc.stdout


def test_an_unused_stub_fails_a_sloprail_case_unless_optional(
        imported: tuple[Path, str]) -> None:
    ws, _ = imported
    case = ws / "rules" / "doc-quality" / "tests" / "refuse-todo" / "case.yaml"
    # The script refuses first: the judge is never asked.
    case.write_text(case.read_text() + "judges:\n  judge-doc.md.j2:\n    pass: true\n")
    proc = cli(ws, "test", "--rule", "doc-quality")
    assert proc.returncode == 1
    assert "judges: the stub for doc-quality/judge-doc was never used" in proc.stdout
    case.write_text(case.read_text() + "    optional: true\n")
    proc = cli(ws, "test", "--rule", "doc-quality")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_broken_sloprail_file_is_named_not_a_traceback(ws: Path) -> None:
    (ws / ".sloprail" / "gate" / "no-curl" / "gate.yaml").write_text("on: [\n")
    proc = cli(ws, "import", "sloprail")
    assert "Traceback" not in proc.stderr + proc.stdout
    assert "gate/no-curl: NOT converted" in proc.stdout
    # Said where, as a rule file's broken YAML is.
    assert "why: .sloprail/gate/no-curl/gate.yaml:2: cannot read: broken YAML: " in proc.stdout
    assert cli(ws, "import", "sloprail", "nowhere").returncode == 2


def _guard(ws: Path, name: str, yaml_text: str, files: dict[str, str]) -> Path:
    folder = ws / ".sloprail" / "file-guard" / name
    folder.mkdir(parents=True)
    (folder / "file-guard.yaml").write_text(yaml_text)
    for rel, text in files.items():
        executable(folder / rel, text)
    return folder


def test_matches_become_paths_that_admit_what_sloprail_admitted(ws: Path) -> None:
    shutil.rmtree(ws / ".sloprail")
    ok = "#!/bin/sh\nexit 0\n"
    _guard(ws, "root-md", 'match: "*.md"\nchecks:\n  - script: ./ok.sh\n', {"ok.sh": ok})
    _guard(ws, "exprs", "match: 'path endsWith \"RULE.md\" or path startsWith \"docs/\"'\n"
           "checks:\n  - script: ./ok.sh\n", {"ok.sh": ok})
    proc = cli(ws, "import", "sloprail")
    assert proc.returncode == 0, proc.stdout
    rules = cli(ws, "payload", "--help")  # the command line still builds with import added
    assert rules.returncode == 0

    def admits(rule: str, path: str) -> bool:
        from slopjudge.changes.rulefilter import split
        from slopjudge.loading.loader import load_rules
        from slopjudge.model import Changeset, FileChange
        from slopjudge.payload import by_match

        found = load_rules(str(ws / "rules"), workspace=str(ws))
        r = next(x for x in found.rules if x.id == rule)
        files, others = split(Changeset(files=[FileChange(path, "A", new_content="x")]),
                              r.paths, r.exclude)
        if r.match:
            files, others, problems = by_match(r.match, files, others,
                                               {"kind": "ci", "on": "ci"})
            assert problems == []
        return bool(files)

    assert admits("root-md", "README.md") and not admits("root-md", "docs/a.md")
    assert not admits("root-md", "x.md/inner.txt")
    assert admits("exprs", "RULE.md") and admits("exprs", "a/b/MYRULE.md")
    assert admits("exprs", "docs/deep/x.txt") and not admits("exprs", "src/docs/x.txt")
    assert not admits("exprs", "a/RULE.md/x")


def test_scripts_from_outside_the_rule_folder_are_refused(ws: Path, tmp_path: Path) -> None:
    shutil.rmtree(ws / ".sloprail")
    outside = executable(tmp_path / "outside.sh", "#!/bin/sh\nexit 0\n")
    _guard(ws, "dotdot", "match: '*.py'\nchecks:\n  - script: ../../../../outside.sh\n", {})
    linked = _guard(ws, "linked", "match: '*.py'\nchecks:\n  - script: ./s.sh\n", {})
    (linked / "s.sh").symlink_to(outside)
    _guard(ws, "calls-sr", "match: '*.py'\nchecks:\n  - script: ./s.sh\n",
           {"s.sh": "#!/bin/sh\n# sr-agent is not called here\nsr-agent --model size-sm\n"})
    proc = cli(ws, "import", "sloprail")
    assert "file-guard/dotdot: NOT converted" in proc.stdout
    assert "file-guard/linked: NOT converted" in proc.stdout
    assert "is not a file inside the rule folder" in proc.stdout
    assert ".sloprail/file-guard/calls-sr/s.sh:3: calls sloprail's own `sr-agent`" in proc.stdout
    assert "s.sh:2" not in proc.stdout  # a comment calls nothing
    assert not (ws / "rules" / "linked").exists()


def test_a_rule_disabled_in_config_is_not_converted(ws: Path) -> None:
    (ws / ".sloprail" / "config.yaml").write_text("disabled:\n  - gate/no-curl\n")
    proc = cli(ws, "import", "sloprail")
    assert "why: .sloprail/config.yaml:2: disabled in config.yaml" in proc.stdout
    assert "gate/no-curl: off, not converted" in proc.stdout
    assert not (ws / "rules" / "no-curl").exists() and (ws / "rules" / "doc-quality").is_dir()


@pytest.mark.parametrize(("trigger", "on", "tools", "fatal_note"), [
    ("{event: PreToolUse}", 'on: ["pre-tool"]', None, None),
    ("{event: Stop}", 'on: ["stop"]', None, None),
    ("{event: PreToolUse, match: 'event.tool == \"Bash\"'}", 'on: ["pre-tool"]', None, None),
    ("{event: Stop, match: 'x'}", 'on: ["stop"]', None, "match `x` at column 1: unknown name"),
    ("{event: PreCommandInvoke}", 'on: ["pre-tool"]', 'tools: ["Bash"]', None),
    ("{event: PreFileWrite}", 'on: ["pre-tool"]',
     'tools: ["Write", "Edit", "MultiEdit", "NotebookEdit", "apply_patch"]', None),
    ("{event: Nope}", "on: []", None, "event Nope: not a sloprail gate event"),
])
def test_gate_events(tmp_path: Path, trigger: str, on: str, tools: str | None,
                     fatal_note: str | None) -> None:
    from slopjudge.commands.import_sloprail import convert

    folder = tmp_path / "gate" / "g"
    folder.mkdir(parents=True)
    executable(folder / "ok.sh", "#!/bin/sh\nexit 0\n")
    (folder / "gate.yaml").write_text(f"on: [{trigger}]\nchecks:\n  - script: ./ok.sh\n")
    conv = convert("gate", str(folder), "g", ".sloprail")
    notes = conv.notes
    assert conv.fatal == (fatal_note is not None), notes
    if fatal_note is not None:
        assert any(".sloprail/gate/g/gate.yaml:1" in n and fatal_note in n for n in notes), notes
    lines = conv.yaml.splitlines()
    assert lines[0] == ("# Converted from sloprail's .sloprail/gate/g/gate.yaml by "
                        "`slopjudge import sloprail`.")
    assert on in lines
    assert (tools in lines) if tools else not any(ln.startswith("tools:") for ln in lines)
