"""sloprail's rule shapes, moved over by `slopjudge import sloprail` and run for real.

The fixture `.sloprail/` (tests/fixtures/sloprail/shapes) holds rules written for
this project in each shape sloprail has: a regular-expression match, marker
matches over new and old content, and/or/not with parentheses, `require` of each
kind (a citation with a `when` script, a skill with its pages, a citation on a
command), `subjects`, `preventive`, a per-file `prepare`, gates on
PreFileCreate, PreFileDelete and PreCommandInvoke, and config.yaml's `disabled:`
and `enabled:`. Each test imports it, validates, and runs the converted rules
end to end through slopjudge's CLI and hooks, judges answered by a scripted
runner that speaks sr-agent's command line and calls slopjudge's real verifier.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import commit_all, executable, make_repo, py, sj, write_files

SHAPES = Path(__file__).parent / "fixtures" / "sloprail" / "shapes" / ".sloprail"
DOCS = Path(__file__).parent.parent / "docs" / "sloprail.md"

# The runner contract (SPEC §5): prompt on stdin, answer file checked by --verify.
RUNNER = py("""
import json, os, subprocess, sys, tempfile
args = sys.argv[1:]
verify = args[args.index("--verify") + 1]
prompt = sys.stdin.read()
log = os.environ["SCRIPTED_LOG"]
n = len(os.listdir(log))
while True:  # judges of one check run at once: each takes the next free number
    try:
        fd = os.open(os.path.join(log, "%03d.txt" % n), os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        break
    except FileExistsError:
        n += 1
os.write(fd, prompt.encode())
os.close(fd)
verdict = {"pass": False, "reasoning": "no scripted answer for this prompt"}
for needle, ok, why in json.load(open(os.environ["SCRIPTED_ANSWERS"])):
    if needle in prompt:
        verdict = {"pass": ok, "reasoning": why}
        break
fd, path = tempfile.mkstemp(prefix="answer-")
os.write(fd, json.dumps(verdict).encode())
os.close(fd)
done = subprocess.run([verify, path], input=json.dumps(verdict).encode(), capture_output=True)
os.unlink(path)
sys.stderr.write(done.stderr.decode())
if done.returncode == 0:
    print(json.dumps(verdict))
    sys.exit(0)
sys.exit(2)
""")


class Project:
    """A git repository with the fixture imported and committed, and a scripted runner."""

    def __init__(self, tmp: Path, files: dict[str, str]) -> None:
        self.tmp = tmp
        self.ws = make_repo(tmp / "repo", files)
        shutil.copytree(SHAPES, self.ws / ".sloprail")
        self.imported = sj("import", "sloprail", cwd=self.ws)
        self.base = commit_all(self.ws, "rules")
        self.log = tmp / "prompts"
        self.log.mkdir()
        self.answers = tmp / "answers.json"
        self.answer([])
        self.runner = executable(tmp / "runner.py", RUNNER)
        self.transcript = tmp / "transcript.jsonl"
        self.transcript.write_text("")

    def answer(self, rules: list[tuple[str, bool, str]]) -> None:
        self.answers.write_text(json.dumps(rules))

    def env(self) -> dict[str, str]:
        return {"SLOPJUDGE_RUNNER": str(self.runner), "SCRIPTED_LOG": str(self.log),
                "SCRIPTED_ANSWERS": str(self.answers), "SLOPJUDGE_NO_CACHE": "1"}

    def prompts(self) -> list[str]:
        return [p.read_text() for p in sorted(self.log.iterdir())]

    def run(self) -> dict[str, dict[str, Any]]:
        proc = sj("run", "--base", self.base, "--head", "HEAD", "--format", "json",
                  "--no-cache", cwd=self.ws, env=self.env())
        try:
            report = json.loads(proc.stdout)
        except ValueError as exc:
            raise AssertionError(proc.stdout + proc.stderr) from exc
        return {c["id"]: c for c in report["checks"]}

    def session(self, *entries: dict[str, Any]) -> None:
        """The session's transcript, as Claude Code writes it (one JSON entry a line)."""
        self.transcript.write_text("".join(json.dumps(e) + "\n" for e in entries))

    def hook(self, point: str, **fields: Any) -> Any:
        data = {"session_id": "s1", "transcript_path": str(self.transcript),
                "cwd": str(self.ws), "hook_event_name": point, **fields}
        hook = {"SessionStart": "start", "PreToolUse": "pre-tool", "Stop": "stop"}[point]
        proc = sj("hook", hook, cwd=self.ws, input=json.dumps(data), env=self.env())
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return json.loads(proc.stdout) if proc.stdout.strip() else None

    def pre_tool(self, tool: str, tool_input: dict[str, Any]) -> str | None:
        """The deny reason, or None when the call may run."""
        out = self.hook("PreToolUse", tool_name=tool, tool_input=tool_input,
                        tool_use_id="toolu_x")
        if out is None:
            return None
        spec = out["hookSpecificOutput"]
        assert spec["permissionDecision"] == "deny", out
        return str(spec["permissionDecisionReason"])

    def stop(self) -> str | None:
        out = self.hook("Stop", stop_hook_active=False)
        return None if out is None else str(out["reason"])


def user(text: str) -> dict[str, Any]:
    return {"type": "user", "message": {"role": "user", "content": text}}


def tool_use(tid: str, name: str, data: dict[str, Any]) -> dict[str, Any]:
    return {"type": "assistant", "message": {"role": "assistant", "content": [
        {"type": "tool_use", "id": tid, "name": name, "input": data}]}}


def tool_result(tid: str, text: str, error: bool = False) -> dict[str, Any]:
    return {"type": "user", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": tid, "content": text, "is_error": error}]}}


@pytest.fixture()
def project(tmp_path: Path) -> Project:
    return Project(tmp_path, {"README.md": "hello\n"})


def test_every_shape_converts_validates_and_off_rules_stay_off(project: Project) -> None:
    out = project.imported.stdout
    assert project.imported.returncode == 0, out + project.imported.stderr
    converted = ["api-docs", "grounded-notes", "invariant-keeper", "prepared", "skill-whole",
                 "style-now", "task-files", "cited-commit", "keep-memories", "skill-first"]
    for rid in converted:
        assert f"{rid}: passes slopjudge validate" in out
    assert "gate/opt-in: off, not converted" in out and "gate/retired: off, not converted" in out
    assert "config.yaml:3: disabled in config.yaml" in out
    validate = sj("validate", cwd=project.ws)
    assert validate.returncode == 0 and "10 rule(s) loaded" in validate.stdout, validate.stdout

    def rule(rid: str) -> str:
        return (project.ws / "rules" / rid / "rule.yaml").read_text()

    assert 'match: "(path matches \\"^tasks/[^/]+/[^/]+/TASK\\\\\\\\.md$\\")' in rule("task-files")
    assert 'on: ["stop", "ci", "pre-tool"]' in rule("style-now")
    assert '{"citation": {"source_types": ["user"]}, "when": "body-changed.sh"}' in rule(
        "grounded-notes")
    assert 'subjects: "by-skill.sh"' in rule("skill-whole")
    assert "each: file" not in rule("skill-whole")
    assert '[\\"PreFileDelete\\", \\"PostFileDelete\\"]' in rule("keep-memories")
    assert os.access(project.ws / "rules" / "skill-first" / "requirements-met.sh", os.X_OK)


def test_regex_marker_and_or_not_matches_pick_the_files_sloprail_picks(
        project: Project) -> None:
    ws = project.ws
    write_files(ws, {"src/core.py": "# sr:invariant core.Total\nx = 1\n",
                     "lib/old.py": "// sr:invariant lib.Old\ny = 1\n",
                     "api/CHANGELOG.md": "v1\n"})
    project.base = commit_all(ws, "base")
    write_files(ws, {
        "tasks/a/b/TASK.md": "do it\n", "tasks/a/TASK.md": "TODO shallow\n",
        "tasks/a/b/c/TASK.md": "TODO deep\n", "tasks/a/b/TASK.mdx": "TODO\n",
        "api/v1.md": "v1\n", "api/x/reference/notes.txt": "n\n", "api/CHANGELOG.md": "v2\n",
        "docs/api/v.md": "no\n", "src/core.py": "x = 2\n", "src/plain.py": "z = 1\n",
    })
    (ws / "lib" / "old.py").unlink()
    commit_all(ws)
    project.answer([("INVARIANT CHECK", True, "kept")])
    checks = project.run()
    # A regular expression: exactly two folders under tasks/, exactly TASK.md.
    assert checks["task-files/no-todo"]["outcome"] == "pass"
    assert checks["task-files/no-todo"]["reason"] == "checked tasks/a/b/TASK.md"
    # and / || / not, parentheses: the changelog and docs/api are left out; the script
    # runs on each file and stops at its first refusal.
    assert checks["api-docs/list"]["reason"] == "api pages: api/v1.md"
    shown = json.loads(sj("payload", "--base", project.base, "--rule", "api-docs",
                          cwd=ws).stdout)
    assert [f["path"] for f in shown["changeset"]["files"]] == [
        "api/v1.md", "api/x/reference/notes.txt"]
    # Markers over new and old content: a marker that leaves, and a deleted pinned file.
    assert checks["invariant-keeper/keeps"]["outcome"] == "pass"
    judged = [p for p in project.prompts() if "INVARIANT CHECK" in p]
    assert len(judged) == 2, judged
    assert any("for src/core.py (PostFileUpdate).\nwas pinned: core.Total\nDoes" in p
               for p in judged)
    assert any("for lib/old.py (PostFileDelete).\nwas pinned: lib.Old\nDoes" in p
               for p in judged)
    assert not any("src/plain.py" in p.split("\n", 1)[0] for p in judged)


def test_a_match_that_cannot_be_decided_blocks_and_a_bad_one_is_a_load_error_at_its_column(
        tmp_path: Path) -> None:
    ws = make_repo(tmp_path / "repo", {"a.py": "x\n"})
    write_files(ws / "rules" / "odd", {"rule.yaml": (
        "description: odd\nmatch: 'event.raw startsWith \"x\"'\n"
        "checks:\n  - script: ./ok.sh\n")})
    executable(ws / "rules" / "odd" / "ok.sh", "#!/bin/sh\nexit 0\n")
    base = commit_all(ws, "rules")
    write_files(ws, {"a.py": "y\n"})
    commit_all(ws)
    proc = sj("run", "--base", base, "--head", "HEAD", "--format", "json", cwd=ws)
    check = json.loads(proc.stdout)["checks"][0]
    assert proc.returncode == 2 and check["outcome"] == "error", check
    assert "could not decide this rule's `match`: a.py: `startsWith` at 11 needs a string, " \
        "got nil" in check["reason"]
    write_files(ws / "rules" / "odd", {"rule.yaml": (
        "description: odd\nmatch: 'path matches \"[\" or path == 1'\n"
        "checks:\n  - script: ./ok.sh\n")})
    proc = sj("validate", cwd=ws)
    assert proc.returncode == 1
    assert "rules/odd/rule.yaml:2:14: `match`: bad regular expression '['" in proc.stdout


def test_a_citation_grounds_a_file_guard_judge_and_its_when_script_decides(
        project: Project) -> None:
    ws = project.ws
    project.hook("SessionStart")
    write_files(ws, {"notes/db.md": "# Database\n\nWe use Postgres for storage.\n"})
    project.answer([('CITED (user) "go with Postgres for storage"', True, "grounded")])
    reason = project.stop()
    assert reason is not None
    assert ("requirement not met: notes/db.md: no citation (user) grounds this change"
            in reason), reason
    assert project.prompts() == []  # no judge asked while the requirement is unmet
    said = "Let's go with Postgres for storage, it is what ops knows."
    cite = "slopjudge cite --user 'go with Postgres for storage' --path notes/db.md"
    project.session(user(said), tool_use("t1", "Bash", {"command": cite}),
                    tool_result("t1", "slopjudge: 1 citation(s) for notes/db.md noted"))
    assert project.stop() is None
    prompt = project.prompts()[-1]
    assert f'CITED (user) "go with Postgres for storage" FROM "{said}"' in prompt.replace(
        "&#39;", "'")
    # A quote the person never wrote is no citation, and the refusal does not repeat it.
    project.session(user(said), tool_use("t1", "Bash", {
        "command": "slopjudge cite --user 'use MongoDB' --path notes/db.md"}),
        tool_result("t1", "noted"))
    reason = project.stop() or ""
    assert "a citation (user) of notes/db.md is not in the session word for word" in reason
    assert "MongoDB" not in reason
    # The `when` script waives the requirement for a title-only note.
    write_files(ws, {"notes/db.md": "# Database\n"})
    project.session()
    project.answer([("NO CITATION", True, "a title")])
    assert project.stop() is None
    assert "NOTE notes/db.md\nNO CITATION" in project.prompts()[-1]


def test_a_command_gate_needs_its_chained_citation_and_its_judge_reads_it(
        project: Project) -> None:
    assert project.pre_tool("Bash", {"command": "git status"}) is None
    reason = project.pre_tool("Bash", {"command": "git commit -m wip"}) or ""
    assert "cited-commit" in reason and "needs a citation (tool_result)" in reason
    project.session(tool_use("t1", "Bash", {"command": "pytest -q"}),
                    tool_result("t1", "............\n12 passed in 0.31s"))
    project.answer([('CITED "12 passed" FROM CALL Bash: pytest -q', True, "tests ran")])
    command = "slopjudge cite --tool-result '12 passed' && git commit -m wip"
    assert project.pre_tool("Bash", {"command": command}) is None
    prompt = project.prompts()[-1]
    assert "COMMAND slopjudge cite --tool-result" in prompt and "git commit -m wip" in prompt
    # A quote from the cite call's own output, or from nowhere, grounds nothing.
    command = "slopjudge cite --tool-result '13 passed' && git commit -m wip"
    assert "needs a citation" in (project.pre_tool("Bash", {"command": command}) or "")


def test_a_create_gate_is_not_an_update_gate_and_its_skill_must_be_loaded_and_read(
        project: Project) -> None:
    write_files(project.ws, {"skills/old.md": "old\n"})
    commit_all(project.ws)
    new = {"file_path": str(project.ws / "skills" / "new.md"), "content": "new\n"}
    old = {"file_path": str(project.ws / "skills" / "old.md"), "content": "changed\n"}
    assert "load the `authoring` skill first" in (project.pre_tool("Write", new) or "")
    assert project.pre_tool("Write", old) is None  # PreFileUpdate: not this gate's
    loaded = (tool_use("t1", "Skill", {"skill": "authoring"}), tool_result("t1", "loaded"))
    project.session(*loaded)
    assert "read guide.md of the `authoring` skill first" in (
        project.pre_tool("Write", new) or "")
    project.session(*loaded, tool_use(
        "t2", "Read", {"file_path": "/home/u/.claude/skills/authoring/guide.md"}),
        tool_result("t2", "the guide"))
    assert project.pre_tool("Write", new) is None


def test_a_delete_gate_refuses_an_apply_patch_deletion_and_a_shell_rm_at_stop(
        project: Project) -> None:
    write_files(project.ws, {"memories/m.md": "remember\n"})
    commit_all(project.ws)
    patch = "*** Begin Patch\n*** Delete File: memories/m.md\n*** End Patch"
    reason = project.pre_tool("apply_patch", {"input": patch}) or ""
    assert "memories are kept: memories/m.md stays" in reason
    new = {"file_path": str(project.ws / "memories" / "n.md"), "content": "more\n"}
    assert project.pre_tool("Write", new) is None
    project.hook("SessionStart")
    (project.ws / "memories" / "m.md").unlink()
    assert "memories are kept: memories/m.md stays" in (project.stop() or "")


def test_subjects_judge_each_skill_as_one_unit(project: Project) -> None:
    write_files(project.ws, {"skills/a/SKILL.md": "A\n", "skills/a/ref.md": "ref\n",
                             "skills/b/SKILL.md": "B\n"})
    commit_all(project.ws)
    project.answer([("SKILL a FILES", True, "coherent"), ("SKILL b FILES", False, "thin")])
    check = project.run()["skill-whole/skill"]
    assert check["outcome"] == "refuse" and check["reason"] == "b: thin", check
    heads = sorted(p.split("\n", 1)[0] for p in project.prompts() if p.startswith("SKILL"))
    assert heads == ["SKILL a FILES skills/a/SKILL.md skills/a/ref.md",
                     "SKILL b FILES skills/b/SKILL.md"]


def test_a_preventive_guard_refuses_the_write_before_it_lands(project: Project) -> None:
    bad = {"file_path": str(project.ws / "src" / "app.py"), "content": "print('hi')\n"}
    reason = project.pre_tool("Write", bad) or ""
    assert "style-now" in reason and "print() in a source file" in reason
    assert not (project.ws / "src" / "app.py").exists()
    good = {"file_path": str(project.ws / "src" / "app.py"), "content": "log('hi')\n"}
    assert project.pre_tool("Write", good) is None


def test_a_prepare_reads_its_own_files_event(project: Project) -> None:
    write_files(project.ws, {"pages/c.md": "c\n"})
    project.base = commit_all(project.ws)
    write_files(project.ws, {"pages/a.md": "a\n", "pages/b.skip.md": "b\n"})
    (project.ws / "pages" / "c.md").unlink()
    commit_all(project.ws)
    project.answer([("PAGE ", True, "fine")])
    assert project.run()["prepared/page"]["outcome"] == "pass"
    pages = sorted(p.split("\n", 1)[0] for p in project.prompts() if p.startswith("PAGE"))
    assert pages == [
        "PAGE pages/a.md PREPARED FOR pages/a.md KNOWN True AS PostFileCreate",
        "PAGE pages/c.md PREPARED FOR pages/c.md KNOWN False AS PostFileDelete",
    ]


def test_cite_checks_a_quote_against_a_transcript(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("".join(json.dumps(e) + "\n" for e in (
        user("ship it on   Friday"), user("Friday is fine"))))
    ok = sj("cite", "--user", "ship it on Friday", "--transcript", str(transcript),
            cwd=tmp_path)
    assert ok.returncode == 0 and "citation 1: resolves in user at line 1" in ok.stdout
    twice = sj("cite", "--user", "Friday", "--transcript", str(transcript), cwd=tmp_path)
    assert twice.returncode == 1 and "matches 2 entries (transcript lines 1, 2)" in twice.stderr
    assert "Friday" not in twice.stdout + twice.stderr  # a tool's output is a citable pool
    assert sj("cite", cwd=tmp_path).returncode == 2


# --- what is refused, and why ---------------------------------------------------------


def _sloprail(ws: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        target = ws / ".sloprail" / rel
        if rel.endswith(".sh"):
            executable(target, text)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)


OK = "#!/bin/sh\nexit 0\n"


@pytest.mark.parametrize(("files", "reason", "documented"), [
    ({"file-guard/r/file-guard.yaml": "match: 'context[\"x\"].active'\nchecks:\n"
      "  - script: ./ok.sh\n"}, "reads contexts (`context[...]`): slopjudge has no contexts",
     "reads contexts (`context[...]`): slopjudge has no contexts"),
    ({"file-guard/r/file-guard.yaml": "match: 'any(trailers, .key == \"x\")'\nchecks:\n"
      "  - script: ./ok.sh\n"}, "reads commit trailers", "reads commit trailers"),
    ({"gate/r/gate.yaml": "on: [{event: PreFileCreate, match: 'event.tags != nil'}]\n"
      "checks:\n  - script: ./ok.sh\n"}, "reads `event.tags`, a field slopjudge's events do "
     "not carry", "a field slopjudge's events do not carry"),
    ({"gate/r/gate.yaml": "on: [{event: PreFileCreate, match: 'path == \"x\"'}]\n"
      "checks:\n  - script: ./ok.sh\n"}, "a gate reads `event.<field>`",
     "a gate reads `event.<field>`"),
    ({"gate/r/gate.yaml": "on: [{event: PostTagWrite}]\nchecks:\n  - script: ./ok.sh\n"},
     "event PostTagWrite: not a sloprail gate event", "not a sloprail gate event"),
    ({"gate/r/gate.yaml": "on: [{event: Stop}]\nrequire:\n  - context: refactoring\n"
      "checks:\n  - script: ./ok.sh\n"}, "require context `refactoring`: slopjudge has no "
     "contexts", "require context: slopjudge has no contexts"),
    ({"file-guard/r/file-guard.yaml": "match: '*.py'\nchecks:\n  - judge: ./j.md.j2\n"
      "    response_schema: ./s.json\n"}, "response_schema: slopjudge's judges answer",
     "response_schema: slopjudge's judges answer"),
    ({"file-guard/r/file-guard.yaml": "match: '*.py'\nchecks:\n  - script: ./sr.sh\n",
      "file-guard/r/sr.sh": "#!/bin/sh\nsr-file validate x\n"},
     "calls sloprail's own `sr-file`", "calls sloprail's own command"),
    ({"file-guard/r/file-guard.yaml": "match: '*.py'\nchecks:\n  - script: ./lib.sh\n",
      "file-guard/r/lib.sh": "#!/bin/sh\n. \"$SR_GUARDRAIL_DIR/../../lib/x.sh\"\n"},
     "reads a file outside its rule folder", "reads a file outside its rule folder"),
    ({"file-guard/r/file-guard.yaml": "match: '*.py'\nchecks:\n  - script: ./env.sh\n",
      "file-guard/r/env.sh": "#!/bin/sh\ntest -n \"$SR_AGENT_ID\"\n"},
     "reads an environment variable slopjudge does not set",
     "reads an environment variable slopjudge does not set"),
    ({"file-guard/r/file-guard.yaml": "match: '*.py'\ncontext: x\nchecks:\n"
      "  - script: ./ok.sh\n"}, "field `context` has no slopjudge form",
     "field `context` has no slopjudge form"),
    ({"file-guard/r/file-guard.yaml": "match: 'path matches \"(\"'\nchecks:\n"
      "  - script: ./ok.sh\n"}, "bad regular expression", "bad regular expression"),
    ({"file-guard/r/file-guard.yaml": "match: '*.py'\nchecks:\n  - script: ./ok.sh\n"
      "    prepare: ./ok.sh\n"}, "prepare on a script check",
     "prepare on a script check"),
])
def test_a_rule_that_would_behave_differently_is_refused_with_a_documented_reason(
        tmp_path: Path, files: dict[str, str], reason: str, documented: str) -> None:
    ws = make_repo(tmp_path / "repo", {"README.md": "x\n"})
    nature = next(iter(files)).split("/")[0]
    _sloprail(ws, {**files, f"{nature}/r/ok.sh": OK, f"{nature}/r/j.md.j2": "x\n"})
    proc = sj("import", "sloprail", cwd=ws)
    assert proc.returncode == 1 and f"{nature}/r: NOT converted" in proc.stdout, proc.stdout
    assert reason in proc.stdout, proc.stdout
    assert not (ws / "rules" / "r").exists()
    assert documented in DOCS.read_text(), "docs/sloprail.md lists the reason"


def test_symlinks_leading_out_of_the_sloprail_folder_are_never_followed(
        tmp_path: Path) -> None:
    ws = make_repo(tmp_path / "repo", {"README.md": "x\n"})
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("not yours\n")
    _sloprail(ws, {"file-guard/docs/file-guard.yaml": "match: '*.md'\nchecks:\n"
                   "  - script: ./ok.sh\n", "file-guard/docs/ok.sh": OK,
                   "file-guard/docs/tests/c/case.yaml": "expect: permit\n",
                   "file-guard/docs/fixture.txt": "inside\n"})
    tests = ws / ".sloprail" / "file-guard" / "docs" / "tests" / "c"
    (tests / "leak.txt").symlink_to(secret)
    (tests / "shared.txt").symlink_to(ws / ".sloprail" / "file-guard" / "docs" / "fixture.txt")
    (tests / "up").symlink_to(secret.parent, target_is_directory=True)
    elsewhere = tmp_path / "outside" / "gate"
    elsewhere.mkdir()
    (elsewhere / "gate.yaml").write_text("on: [{event: PreToolUse}]\nchecks:\n"
                                         "  - script: ./ok.sh\n")
    executable(elsewhere / "ok.sh", OK)
    (ws / ".sloprail" / "gate").mkdir()
    (ws / ".sloprail" / "gate" / "linked").symlink_to(elsewhere, target_is_directory=True)
    proc = sj("import", "sloprail", cwd=ws)
    assert "gate/linked: NOT converted" in proc.stdout
    assert "a symlink leading out of the sloprail folder: not followed" in proc.stdout
    assert not (ws / "rules" / "linked").exists()
    assert (ws / "rules" / "docs" / "fixture.txt").read_text() == "inside\n"  # a sibling
    copied = ws / "rules" / "docs" / "tests" / "c"
    assert (copied / "case.yaml").is_file()
    assert (copied / "shared.txt").read_text() == "inside\n"
    assert not (copied / "shared.txt").is_symlink()
    assert not os.path.lexists(copied / "leak.txt") and not os.path.lexists(copied / "up")
    assert "file-guard/docs/tests/c/leak.txt: not copied: a symlink leading out" in proc.stdout
    found = [p for p in (ws / "rules").rglob("*") if p.is_file()]
    assert not any("not yours" in p.read_text(errors="replace") for p in found)
    assert secret.read_text() == "not yours\n"


def test_a_per_file_script_reads_its_own_files_event(tmp_path: Path) -> None:
    ws = make_repo(tmp_path / "repo", {"README.md": "x\n"})
    write_files(ws / "rules" / "each", {"rule.yaml": (
        "description: each file on its own\nchecks:\n  - script: ./one.sh\n    each: file\n")})
    executable(ws / "rules" / "each" / "one.sh", (
        "#!/bin/sh\np=$(cat)\nprintf '%s\\n' \"$p\" >> \"$SLOPJUDGE_WORKSPACE/../seen.jsonl\"\n"
        "path=$(printf '%s' \"$p\" | jq -r .event.path)\n"
        "kind=$(printf '%s' \"$p\" | jq -r .event.kind)\n"
        "case \"$path\" in *.bad) echo \"{\\\"reason\\\": \\\"$kind $path\\\"}\"; exit 1;; esac\n"))
    base = commit_all(ws, "rules")
    write_files(ws, {"a.txt": "a\n", "b.bad": "b\n", "c.txt": "c\n"})
    commit_all(ws)
    proc = sj("run", "--base", base, "--head", "HEAD", "--format", "json", cwd=ws)
    check = json.loads(proc.stdout)["checks"][0]
    assert check["outcome"] == "refuse" and check["reason"] == "PostFileCreate b.bad", check
    seen = [json.loads(line) for line in (tmp_path / "seen.jsonl").read_text().splitlines()]
    assert [s["event"]["path"] for s in seen] == ["a.txt", "b.bad"]  # stops at a refusal
    assert all(len(s["changeset"]["files"]) == 1 and s["event"]["newContentKnown"]
               for s in seen)


@pytest.mark.parametrize(("command", "expected"), [
    ("dd if=a of=/dev/sda", [("dd", ["dd", "if=a", "of=/dev/sda"], {})]),
    ("FOO=1 sudo -u x curl -o out https://e", [
        ("sudo", ["sudo", "-u", "x", "curl", "-o", "out", "https://e"], {"FOO": "1"}),
        ("curl", ["curl", "-o", "out", "https://e"], {"FOO": "1"})]),
    ("git commit -m 'a b' && ls", [("git", ["git", "commit", "-m", "a b"], {}),
                                   ("ls", ["ls"], {})]),
])
def test_invocations_list_each_program_as_sloprail_does(
        command: str, expected: list[tuple[str, list[str], dict[str, str]]]) -> None:
    from slopjudge.payload import invocations

    got = invocations(command, "/w")
    assert [(i["bin"], i["argv"], i["env"]) for i in got] == expected
    assert got[0]["cwd"] == "/w"


# --- nothing passes but an explicit pass ------------------------------------------------


@pytest.mark.parametrize(("script", "reason"), [
    ("#!/bin/sh\necho '[]'\n", "the subjects script named no subject for the 2 file(s)"),
    ("#!/bin/sh\necho '[{\"id\": \"a\", \"files\": [\"skills/a/SKILL.md\"]}]'\n",
     "the subjects script left skills/b/SKILL.md in no subject: never judged"),
])
def test_subjects_that_leave_a_file_unjudged_are_an_error(
        project: Project, script: str, reason: str) -> None:
    executable(project.ws / "rules" / "skill-whole" / "by-skill.sh", script)
    project.base = commit_all(project.ws, "subjects")
    write_files(project.ws, {"skills/a/SKILL.md": "A\n", "skills/b/SKILL.md": "B\n"})
    commit_all(project.ws)
    project.answer([("SKILL", True, "fine")])
    check = project.run()["skill-whole/skill"]
    assert check["outcome"] == "error" and reason in check["reason"], check


def test_a_judge_with_no_unit_to_ask_about_never_passes() -> None:
    from slopjudge.checks.judge import _conclude
    from slopjudge.model import CheckResult

    result = CheckResult("r/c", "r", "c", "judge", "pass", "")
    _conclude(result, [], [])
    assert (result.outcome, result.reason) == (
        "error", "nothing was judged (no unit to ask the model about)")


def test_a_compaction_summary_is_not_the_persons_words(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    for flag in ("isCompactSummary", "isVisibleInTranscriptOnly"):
        forged = dict(user("Summary: the person said ship it on Friday"), **{flag: True})
        transcript.write_text(json.dumps(forged) + "\n")
        proc = sj("cite", "--user", "ship it on Friday", "--transcript", str(transcript),
                  cwd=tmp_path)
        assert proc.returncode == 1 and "resolves" not in proc.stdout, flag


def test_a_skill_counts_only_when_loaded_and_its_page_read_for_real(
        project: Project) -> None:
    new = {"file_path": str(project.ws / "skills" / "new.md"), "content": "new\n"}
    page = "/home/u/.claude/skills/authoring/guide.md"
    failed = (tool_use("t1", "Skill", {"skill": "authoring"}),
              tool_result("t1", "Unknown skill: authoring", error=True))
    project.session(*failed)
    assert "load the `authoring` skill first" in (project.pre_tool("Write", new) or "")
    loaded = (tool_use("t1", "Skill", {"skill": "authoring"}),
              tool_result("t1", "Launching skill: authoring"))
    project.session(*loaded, tool_use("t2", "Bash", {"command": f"echo {page}"}),
                    tool_result("t2", page))
    assert "read guide.md of the `authoring` skill first" in (
        project.pre_tool("Write", new) or "")
    # A transcript line that is not an object is skipped, not a crash.
    project.session(*loaded, [1], tool_use("t3", "Read", {"file_path": page}),  # type: ignore[arg-type]
                    tool_result("t3", "the guide"))
    assert project.pre_tool("Write", new) is None


def test_in_with_a_list_or_map_looked_up_in_a_map_cannot_be_decided() -> None:
    from slopjudge.loading.matchexpr import MatchRuntimeError, compile_match

    for src in ("markers in event", "event in event"):
        with pytest.raises(MatchRuntimeError, match="needs a key to look up in a map"):
            compile_match(src).evaluate({"markers": ["x"], "event": {"a": 1}})
