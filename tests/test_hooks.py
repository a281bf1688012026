"""The hook points on recorded payloads: a real git repository, real scripts, and the
hook entry function the console script calls, in this process; the real `slopjudge hook
<point>` process where the process itself is what a test shows (the first calls, the
concurrent calls, the fast path's imports)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from slopjudge.hooks import common, pre_tool
from slopjudge.model import Check, CheckResult, Event, Finding, Rule
from tests.failclosed.hooks_kit import NOTEBOOK, clean_env, make_ws
from tests.helpers import SCAN_RULE, executable, git, hook_in_process

FIXTURES = Path(__file__).parent / "fixtures" / "hook_payloads"
SLOPJUDGE = str(Path(sys.executable).parent / "slopjudge")

SCAN = r'''#!/usr/bin/env python3
"""Refuse added lines that contain FORBIDDEN."""
import json, sys
payload = json.load(sys.stdin)
findings = []
for f in payload["changeset"]["files"]:
    line_no = 0
    for line in f["diff"].splitlines():
        if line.startswith("@@"):
            line_no = int(line.split("+")[1].split(",")[0].split(" ")[0]) - 1
        elif line.startswith("+") and not line.startswith("+++"):
            line_no += 1
            if "FORBIDDEN" in line:
                findings.append({"path": f["path"], "line": line_no, "message": "FORBIDDEN marker"})
        elif not line.startswith("-"):
            line_no += 1
if findings:
    print(json.dumps({"reason": f"{len(findings)} added line(s) contain FORBIDDEN; remove them",
                      "findings": findings}))
    sys.exit(1)
'''

def add_refusing_rule(ws: Path, rule_id: str, reason: str, on: str = "[pre-tool]",
                      tools: str = "[Bash]") -> None:
    folder = ws / "rules" / rule_id
    folder.mkdir(parents=True)
    executable(folder / "refuse.sh", f"#!/bin/sh\necho '{reason}'\nexit 1\n")
    (folder / "rule.yaml").write_text(
        f"description: {rule_id} refuses\non: {on}\ntools: {tools}\n"
        "checks:\n  - script: refuse.sh\n")


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    return make_ws(tmp_path, scan=SCAN, pack=(), files={"nb.ipynb": NOTEBOOK})


def payload(name: str, ws: Path, **changes: Any) -> dict[str, Any]:
    text = (FIXTURES / f"{name}.json").read_text().replace("__WORKSPACE__", str(ws))
    data = json.loads(text.replace("__HOME__", str(ws.parent / "home")))
    data.update(changes)
    return data


def hook(point: str, ws: Path, data: Any, *, raw: str | None = None,
         extra_env: dict[str, str] | None = None, process: bool = False
         ) -> tuple[int, Any, str]:
    """Run `slopjudge hook <point>`: (exit code, parsed stdout or None, stderr).

    In this process by default (the console script's entry function on the same
    bytes); ``process=True`` runs the real console script, as the harness does.
    """
    stdin = raw if raw is not None else json.dumps(data)
    if process:
        proc = subprocess.run([SLOPJUDGE, "hook", point], input=stdin, cwd=ws, text=True,
                              capture_output=True, env=clean_env(**(extra_env or {})), timeout=60)
        rc, stdout, stderr = proc.returncode, proc.stdout, proc.stderr
    else:
        rc, stdout, stderr = hook_in_process(point, stdin.encode(), cwd=ws,
                                             env=clean_env(**(extra_env or {})))
    out = json.loads(stdout) if stdout.strip() else None
    return rc, out, stderr


def deny_reason(out: Any) -> str:
    spec = out["hookSpecificOutput"]
    assert spec["hookEventName"] == "PreToolUse"
    assert spec["permissionDecision"] == "deny"
    return spec["permissionDecisionReason"]


def events(ws: Path) -> list[dict[str, Any]]:
    path = ws / ".slopjudge" / "events.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


# --- pre-tool: every tool shape ---------------------------------------------

def test_write_with_violation_is_denied_naming_rule_check_and_line(ws: Path) -> None:
    data = payload("pre_tool_write", ws)
    data["tool_input"]["content"] = "ok\nFORBIDDEN here\n"
    rc, out, _ = hook("pre-tool", ws, data, process=True)
    assert rc == 0
    reason = deny_reason(out)
    assert reason.startswith("no-forbidden: 1 added line(s) contain FORBIDDEN")
    assert "check no-forbidden/scan" in reason
    assert "new.txt:2: FORBIDDEN marker" in reason
    assert "slopjudge refused this Write" in reason
    assert not (ws / "new.txt").exists()
    assert [e["outcome"] for e in events(ws)] == ["refuse"]


def test_clean_write_is_allowed_silently(ws: Path) -> None:
    rc, out, _ = hook("pre-tool", ws, payload("pre_tool_write", ws), process=True)
    assert (rc, out) == (0, None)
    assert [e["outcome"] for e in events(ws)] == ["pass"]


def test_edit_replace_all_is_judged_on_the_whole_result(ws: Path) -> None:
    (ws / "a.txt").write_text("hello\nworld\nhello\n")
    data = payload("pre_tool_edit", ws)  # hello -> HELLO, replace_all
    data["tool_input"]["new_string"] = "FORBIDDEN"
    reason = deny_reason(hook("pre-tool", ws, data)[1])
    assert "a.txt:1:" in reason and "a.txt:3:" in reason
    # Two matches: not reproducible, so judged on its new text (added at the end).
    data["tool_input"]["replace_all"] = False
    rc, out, err = hook("pre-tool", ws, data)
    assert rc == 0 and "a.txt:4: FORBIDDEN marker" in deny_reason(out)
    assert "Edit cannot be reproduced" in err


def test_multiedit_and_notebookedit(ws: Path) -> None:
    data = payload("pre_tool_multiedit", ws)
    data["tool_input"]["edits"][1]["new_string"] = "FORBIDDEN"
    assert "a.txt:2: FORBIDDEN marker" in deny_reason(hook("pre-tool", ws, data)[1])
    data = payload("pre_tool_notebookedit", ws)
    assert hook("pre-tool", ws, data)[:2] == (0, None)
    data["tool_input"]["new_source"] = "x = 'FORBIDDEN'\n"
    assert "nb.ipynb:" in deny_reason(hook("pre-tool", ws, data)[1])


def test_bash_argument_glob_and_mcp(ws: Path) -> None:
    add_refusing_rule(ws, "no-push", "pushing is for people", tools='["Bash(git push *)"]')
    add_refusing_rule(ws, "no-issues", "no issues from agents", tools="[mcp__github__*]")
    data = payload("pre_tool_bash", ws)
    assert hook("pre-tool", ws, data)[:2] == (0, None)  # echo hi && ls
    data["tool_input"]["command"] = "git add -A && git push origin main"
    reason = deny_reason(hook("pre-tool", ws, data)[1])
    assert reason.startswith("no-push: pushing is for people")
    assert "slopjudge refused this Bash" in reason
    assert deny_reason(hook("pre-tool", ws, payload("pre_tool_mcp", ws))[1]).startswith(
        "no-issues: no issues from agents")


def test_read_and_agent_calls_pass_without_a_rule(ws: Path) -> None:
    for name in ("pre_tool_read", "pre_tool_agent"):
        assert hook("pre-tool", ws, payload(name, ws))[:2] == (0, None)
    assert events(ws) == []  # no rule applied, nothing ran


def test_bash_payload_reaches_the_script(ws: Path) -> None:
    folder = ws / "rules" / "echo-event"
    folder.mkdir()
    executable(folder / "show.py", "#!/usr/bin/env python3\nimport json,sys\n"
                 "p=json.load(sys.stdin)\nkeys=('kind','tool_name','tool_input','session_id')\n"
                 "print(json.dumps({'reason': json.dumps([{k: p['event'][k] for k in keys}, "
                 "p['changeset']['files']])}))\nsys.exit(1)\n")
    (folder / "rule.yaml").write_text("description: shows the event\non: [pre-tool]\n"
                                      "tools: [Bash]\nchecks:\n  - script: show.py\n")
    data = payload("pre_tool_bash", ws)
    reason = deny_reason(hook("pre-tool", ws, data)[1])
    event, files = json.loads(reason.split("echo-event: ", 1)[1].split("\n")[0])
    assert event["kind"] == "pre-tool" and event["tool_name"] == "Bash"
    assert event["tool_input"]["command"] == "echo hi && ls"
    assert event["session_id"] == data["session_id"] and files == []


# --- pre-tool: combined and bounded refusals ---------------------------------

def test_several_refusals_in_one_message(ws: Path) -> None:
    add_refusing_rule(ws, "rule-one", "first reason", tools="[Write]")
    add_refusing_rule(ws, "rule-two", "second reason", tools="[Write]")
    data = payload("pre_tool_write", ws)
    data["tool_input"]["content"] = "FORBIDDEN\n"
    reason = deny_reason(hook("pre-tool", ws, data)[1])
    lines = reason.splitlines()
    assert "no-forbidden: 1 added line(s) contain FORBIDDEN; remove them" in lines
    assert "rule-one: first reason" in lines and "rule-two: second reason" in lines
    assert "(3 rules)" in reason


def test_long_reason_is_bounded_and_kept_whole_in_the_event_log(ws: Path) -> None:
    long = "x" * 9000
    folder = ws / "rules" / "verbose"
    folder.mkdir()
    executable(folder / "r.sh", f"#!/bin/sh\necho '{{\"reason\": \"{long}\"}}'\nexit 1\n")
    (folder / "rule.yaml").write_text("description: verbose\non: [pre-tool]\ntools: [Bash]\n"
                                      "checks:\n  - script: r.sh\n")
    reason = deny_reason(hook("pre-tool", ws, payload("pre_tool_bash", ws))[1])
    assert len(reason) <= common.MAX_MESSAGE_CHARS
    assert "full text in .slopjudge/events.jsonl" in reason
    assert [e["reason"] for e in events(ws)] == [long]


# --- pre-tool: odd inputs -------------------------------------------------------

def test_odd_payloads(ws: Path) -> None:
    # What slopjudge cannot read blocks (exit 2, one line on stderr) ...
    for raw, why in (("", "stdin is empty"), ("{not json", "not JSON"),
                     ("[1, 2]", "a JSON array, not an object")):
        rc, out, err = hook("pre-tool", ws, None, raw=raw)
        assert (rc, out) == (2, None) and why in err
        assert err.startswith("slopjudge: could not read the PreToolUse payload (")
        assert len(err.strip().splitlines()) == 1
    data = payload("pre_tool_write", ws, tool_input="FORBIDDEN")
    rc, out, err = hook("pre-tool", ws, data)
    assert (rc, out) == (2, None) and "`tool_input` of Write is string, not an object" in err
    # ... while odd types of fields slopjudge does not use are ignored.
    data = payload("pre_tool_write", ws, effort=["x"], cwd=7, prompt_id={"a": 1},
                   session_id=5, transcript_path=[1])
    assert hook("pre-tool", ws, data) == (0, None, "")


def test_recorded_extra_fields_are_tolerated(ws: Path) -> None:
    data = payload("pre_tool_write", ws)
    assert isinstance(data["effort"], dict) and data["prompt_id"]
    data["tool_input"]["content"] = "FORBIDDEN\n"
    data["something_new"] = {"nested": [1, 2]}
    assert deny_reason(hook("pre-tool", ws, data)[1])


def test_path_outside_the_workspace_keeps_its_absolute_path(ws: Path, tmp_path: Path) -> None:
    # A rule without `paths` sees the proposed file, named by its absolute path,
    # so a rule can guard where files are written ...
    outside = tmp_path / "elsewhere.txt"
    data = payload("pre_tool_write", ws)
    data["tool_input"] = {"file_path": str(outside), "content": "FORBIDDEN"}
    assert f"{outside}:1:" in deny_reason(hook("pre-tool", ws, data)[1])
    # ... while workspace-relative `paths` never admit a file outside it.
    rule = ws / "rules" / "no-forbidden" / "rule.yaml"
    rule.write_text(rule.read_text().replace("checks:", 'paths: ["*.txt", "**"]\nchecks:'))
    assert hook("pre-tool", ws, data)[:2] == (0, None)
    data["tool_input"]["file_path"] = str(ws / ".." / "sneaky.txt")
    assert hook("pre-tool", ws, data)[:2] == (0, None)
    # A relative path is the workspace's, even from a subfolder cwd.
    (ws / "sub").mkdir()
    data = payload("pre_tool_write", ws, cwd=str(ws / "sub"))
    data["tool_input"] = {"file_path": "sub/x.txt", "content": "FORBIDDEN"}
    assert "sub/x.txt:1:" in deny_reason(hook("pre-tool", ws, data)[1])


def test_reentry_guard_skips_everything(ws: Path) -> None:
    data = payload("pre_tool_write", ws)
    data["tool_input"]["content"] = "FORBIDDEN\n"
    for var in ("SLOPJUDGE_LAUNCHED_BY", "SLOPRAIL_LAUNCHED_BY"):
        for point in ("pre-tool", "stop", "start", "subagent-stop"):
            assert hook(point, ws, data, extra_env={var: "r/c"}) == (0, None, "")
    assert events(ws) == [] and not (ws / ".slopjudge" / "state").exists()


def test_internal_error_blocks_the_tool_with_exit_2(ws: Path) -> None:
    (ws / "slopjudge.yaml").write_text("stop_block_cap: [unclosed\n")
    rc, out, err = hook("pre-tool", ws, payload("pre_tool_read", ws))
    assert rc == 2 and out is None
    assert err.startswith("slopjudge: pre-tool hook failed, so the tool call is blocked:")
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_decide_asks_only_for_uncertain_judge_passes() -> None:
    def rule(rid: str, ask: bool) -> Rule:
        return Rule(id=rid, path="/r", dir="/", description=f"{rid} desc",
                    on_uncertain="ask" if ask else "deny",
                    checks=[Check(id="j", rule=rid, kind="judge", min_confidence=0.8)])

    def judged(rid: str, conf: float | None) -> CheckResult:
        # The judge check marks a pass refused only for its low confidence.
        return CheckResult(id=f"{rid}/j", rule=rid, check="j", kind="judge", outcome="refuse",
                           reason=f"confidence {conf} is under 0.8", confidence=conf,
                           findings=[Finding("src/x.py", 3, "unsure")],
                           uncertain=conf is not None and conf < 0.8)

    ev = Event(kind="pre-tool", tool_name="Write")
    rules = [rule("asks", True), rule("denies", False)]
    out = pre_tool.decide([judged("asks", 0.5)], rules, ev, "/ws", None)
    spec = out["hookSpecificOutput"]
    assert spec["permissionDecision"] == "ask"
    assert "asks: confidence 0.5" in spec["permissionDecisionReason"]
    assert "src/x.py:3: unsure" in spec["permissionDecisionReason"]
    # Default on_uncertain stays deny; a confident refusal or none at all denies; deny wins.
    for results in ([judged("denies", 0.5)], [judged("asks", 0.9)], [judged("asks", None)],
                    [judged("asks", 0.5), judged("denies", 0.5)]):
        spec = pre_tool.decide(results, rules, ev, "/ws", None)["hookSpecificOutput"]
        assert spec["permissionDecision"] == "deny"
    # An error fails closed; passes, skips and shadow refusals let it through.
    err = CheckResult(id="asks/j", rule="asks", check="j", kind="judge", outcome="error",
                      reason="judge unavailable: authentication", confidence=0.1)
    spec = pre_tool.decide([err], rules, ev, "/ws", None)["hookSpecificOutput"]
    assert spec["permissionDecision"] == "deny"
    text = spec["permissionDecisionReason"]
    assert text.startswith("asks: the judge could not run: judge unavailable: authentication; "
                           "this is not a finding in your change")
    assert "slopjudge could not decide on this Write, so it is blocked" in text
    assert "slopjudge refused" not in text and "Change the call" not in text
    quiet = [CheckResult(id="a/j", rule="a", check="j", kind="judge", outcome=o)
             for o in ("pass", "skipped", "not_applicable", "would_refuse", "not_judged")]
    assert pre_tool.decide(quiet, rules, ev, "/ws", None) is None


def test_twenty_concurrent_pre_tool_calls(ws: Path) -> None:
    hook("pre-tool", ws, payload("pre_tool_read", ws), process=True)  # fill the rules cache

    def one(i: int) -> tuple[int, bool, Any]:
        data = payload("pre_tool_write", ws, session_id=f"s{i}")
        data["tool_input"]["file_path"] = str(ws / f"f{i}.txt")
        bad = i % 2 == 0
        data["tool_input"]["content"] = f"line {i}\n" + ("FORBIDDEN\n" if bad else "")
        rc, out, _ = hook("pre-tool", ws, data, process=True)
        return rc, bad, out

    with ThreadPoolExecutor(max_workers=20) as pool:
        answers = list(pool.map(one, range(20)))
    for i, (rc, bad, out) in enumerate(answers):
        assert rc == 0
        if bad:
            assert f"f{i}.txt:2: FORBIDDEN marker" in deny_reason(out)
        else:
            assert out is None
    lines = (ws / ".slopjudge" / "events.jsonl").read_text().splitlines()
    assert len(lines) == 20
    recs = [json.loads(line) for line in lines]
    assert sorted(r["outcome"] for r in recs) == ["pass"] * 10 + ["refuse"] * 10


def test_fast_path_imports_nothing_heavy(ws: Path) -> None:
    for i in range(30):  # rules no pre-tool call can match
        (ws / "rules" / f"stop-only-{i}.yaml").write_text(
            "description: stop only\non: [stop]\nchecks:\n  - script: \"true\"\n")
    check = subprocess.run([SLOPJUDGE, "validate"], cwd=ws, env=clean_env(), capture_output=True,
                           text=True, timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr
    probe = textwrap.dedent("""
        import io, json, sys
        sys.stdin = io.StringIO(sys.argv[1])
        from slopjudge.hooks import main_fast
        rc = main_fast("pre-tool")
        heavy = sorted(m for m in sys.modules if m.split(".")[0] in
                       ("jinja2", "jsonschema", "ruamel", "unidiff", "tenacity"))
        print(json.dumps({"rc": rc, "heavy": heavy}))
    """)
    data = json.dumps(payload("pre_tool_bash", ws))
    for _ in range(2):  # the first run fills the rules cache; the second must stay light
        proc = subprocess.run([sys.executable, "-c", probe, data], cwd=ws, env=clean_env(),
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[-1]) == {"rc": 0, "heavy": []}


# --- pre-tool: Codex's apply_patch ---------------------------------------------------

def with_patch(data: dict[str, Any], patch: str) -> dict[str, Any]:
    key = "command"
    if data["tool_name"] == "Bash":
        data["tool_input"][key] = f"apply_patch <<'EOF'\n{patch}\nEOF\n"
    else:
        data["tool_input"][key] = patch
    return data


def test_apply_patch_adding_a_violation_is_denied_naming_rule_and_file(ws: Path) -> None:
    data = payload("codex_apply_patch", ws)
    patch = data["tool_input"]["command"].replace("+    return 2 * x",
                                                  "+    return 2 * x\n+# FORBIDDEN")
    rc, out, _ = hook("pre-tool", ws, with_patch(data, patch))
    assert rc == 0
    reason = deny_reason(out)
    assert reason.startswith("no-forbidden: 1 added line(s) contain FORBIDDEN")
    assert "src/util.py:3: FORBIDDEN marker" in reason
    assert "slopjudge refused this apply_patch" in reason
    assert not (ws / "src").exists() and (ws / "a.txt").read_text() == "hello\nworld\n"
    # The update hunk is judged on its place in the file: line 2 of a.txt.
    patch = data["tool_input"]["command"].replace("+there", "+FORBIDDEN")
    assert "a.txt:2: FORBIDDEN marker" in deny_reason(
        hook("pre-tool", ws, with_patch(data, patch))[1])


def test_clean_apply_patch_passes_and_the_script_sees_every_file(ws: Path) -> None:
    assert hook("pre-tool", ws, payload("codex_apply_patch", ws))[:2] == (0, None)
    assert [e["outcome"] for e in events(ws)] == ["pass"]
    folder = ws / "rules" / "show-files"
    folder.mkdir()
    executable(folder / "show.py", "#!/usr/bin/env python3\nimport json,sys\n"
                 "p=json.load(sys.stdin)\nprint(json.dumps({'reason': json.dumps("
                 "[[f['path'], f['status'], f['oldPath'], f['newContent']] "
                 "for f in p['changeset']['files']])}))\nsys.exit(1)\n")
    (folder / "rule.yaml").write_text("description: shows files\non: [pre-tool]\n"
                                      "tools: [apply_patch]\nchecks:\n  - script: show.py\n")
    (ws / "gone.txt").write_text("bye\n")
    patch = ("*** Begin Patch\n*** Update File: a.txt\n*** Move to: b.txt\n@@\n-world\n+earth\n"
             "*** Delete File: gone.txt\n*** Add File: n.txt\n+new\n*** End Patch")
    data = with_patch(payload("codex_apply_patch", ws), patch)
    reason = deny_reason(hook("pre-tool", ws, data)[1])
    files = json.loads(reason.split("show-files: ", 1)[1].split("\n")[0])
    assert files == [["b.txt", "R", "a.txt", "hello\nearth\n"], ["gone.txt", "D", None, None],
                     ["n.txt", "A", None, "new\n"]]


def test_apply_patch_respects_paths_and_reaches_outside_rules(ws: Path, tmp_path: Path) -> None:
    rule = ws / "rules" / "no-forbidden" / "rule.yaml"
    rule.write_text(rule.read_text().replace("checks:", 'paths: ["docs/**"]\nchecks:'))
    data = payload("codex_apply_patch", ws)
    patch = data["tool_input"]["command"].replace("+there", "+FORBIDDEN")
    assert hook("pre-tool", ws, with_patch(data, patch))[:2] == (0, None)
    rule.write_text(SCAN_RULE.replace("checks:", 'paths: ["*.txt"]\nchecks:'))
    assert "a.txt:2: FORBIDDEN marker" in deny_reason(
        hook("pre-tool", ws, with_patch(data, patch))[1])
    rule.write_text(SCAN_RULE.replace("checks:", 'paths: ["**"]\nchecks:'))
    # A file outside the workspace keeps its absolute path: `paths` never
    # admit it, a rule without `paths` sees it.
    outside = tmp_path / "elsewhere.txt"
    patch = f"*** Begin Patch\n*** Add File: {outside}\n+FORBIDDEN\n*** End Patch"
    assert hook("pre-tool", ws, with_patch(data, patch))[:2] == (0, None)
    rule.write_text(SCAN_RULE)
    assert f"{outside}:1: FORBIDDEN marker" in deny_reason(
        hook("pre-tool", ws, with_patch(data, patch))[1])
    assert not outside.exists()


def test_bash_apply_patch_heredoc_is_judged_as_an_edit(ws: Path) -> None:
    data = payload("codex_apply_patch_bash", ws)
    assert data["tool_name"] == "Bash"
    assert hook("pre-tool", ws, data)[:2] == (0, None)  # clean
    patch = payload("codex_apply_patch", ws)["tool_input"]["command"].replace(
        "+there", "+FORBIDDEN")
    reason = deny_reason(hook("pre-tool", ws, with_patch(data, patch))[1])
    assert "a.txt:2: FORBIDDEN marker" in reason and "slopjudge refused this Bash" in reason
    # Codex's shell tool spells it as an argv list too.
    data["tool_input"]["command"] = ["apply_patch", patch]
    assert "a.txt:2: FORBIDDEN marker" in deny_reason(hook("pre-tool", ws, data)[1])
    # Any other command mentioning a patch is not an edit.
    data["tool_input"]["command"] = f"cat <<'EOF'\n{patch}\nEOF\n"
    assert hook("pre-tool", ws, data)[:2] == (0, None)


def test_apply_patch_that_cannot_apply_is_judged_on_its_new_lines(ws: Path) -> None:
    data = payload("codex_apply_patch", ws)
    patch = data["tool_input"]["command"].replace("-world", "-no such line").replace(
        "+there", "+FORBIDDEN")
    rc, out, err = hook("pre-tool", ws, with_patch(data, patch))
    assert rc == 0 and "FORBIDDEN marker" in deny_reason(out)
    assert "apply_patch cannot be reproduced" in err and "hunk 1 does not apply" in err
    assert len(err.strip().splitlines()) == 1
    # No envelope: no file is known, and the rules that look at the call still run.
    rc, out, err = hook("pre-tool", ws, with_patch(data, "garbage"))
    assert (rc, out) == (0, None) and "apply_patch cannot be reproduced" in err


def test_pre_tool_output_carries_only_the_fields_codex_accepts(ws: Path) -> None:
    # Codex fails a PreToolUse hook (and runs the tool) on any unknown output field.
    data = payload("codex_apply_patch", ws)
    patch = data["tool_input"]["command"].replace("+there", "+FORBIDDEN")
    out = hook("pre-tool", ws, with_patch(data, patch))[1]
    assert set(out) == {"hookSpecificOutput"}
    assert set(out["hookSpecificOutput"]) == {
        "hookEventName", "permissionDecision", "permissionDecisionReason"}
    mocks = add_judge_rule(ws, "ask", {"pass": True, "reasoning": "maybe", "confidence": 0.3})
    out = hook("pre-tool", ws, payload("pre_tool_write", ws), extra_env=mocks)[1]
    assert out["hookSpecificOutput"]["permissionDecision"] == "ask"
    assert set(out) == {"hookSpecificOutput"}
    assert set(out["hookSpecificOutput"]) == {
        "hookEventName", "permissionDecision", "permissionDecisionReason"}


# --- start ------------------------------------------------------------------------

def test_start_records_the_baseline_and_says_the_count_when_rules_load(ws: Path) -> None:
    data = payload("session_start", ws)
    rc, out, err = hook("start", ws, data)
    count = "slopjudge: 1 rule loaded. This only checked that they load: no rule ran."
    sealing = out["systemMessage"].split("\n")[0]  # tests/test_sealed.py says what it holds
    assert sealing.startswith("slopjudge: this session is NOT sealed")
    assert (rc, out, err) == (0, {"systemMessage": f"{sealing}\n{count}"},
                              f"{sealing}\n{count}\n")
    state = json.loads((ws / ".slopjudge" / "state" / f"{data['session_id']}.json").read_text())
    assert state["head"] == git(ws, "rev-parse", "HEAD").strip()
    assert state["tree"] == git(ws, "rev-parse", "HEAD^{tree}").strip()
    # Standalone use: no stdin at all.
    proc = subprocess.run([SLOPJUDGE, "hook", "start"], stdin=subprocess.DEVNULL, cwd=ws,
                          env=clean_env(), capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stdout) == (0, "")
    assert (ws / ".slopjudge" / "state" / "default.json").exists()


def test_start_reports_rules_that_do_not_load(ws: Path) -> None:
    (ws / "rules" / "broken.yaml").write_text("description: broken\non: [sometimes]\n"
                                             "checks:\n  - script: nope.sh\n")
    rc, out, err = hook("start", ws, payload("session_start", ws))
    assert rc == 0
    text = out["hookSpecificOutput"]["additionalContext"]
    assert out["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert text.startswith("slopjudge load check: these rules are NOT in force until fixed")
    assert "rules/broken.yaml does not load: rules/broken.yaml:" in text
    assert err.startswith("slopjudge load check: these rules are NOT in force") and \
        "rules/broken.yaml" in err


def test_start_never_blocks_even_on_an_internal_error(ws: Path) -> None:
    (ws / "slopjudge.yaml").write_text("stop_block_cap: [unclosed\n")
    rc, out, err = hook("start", ws, payload("session_start", ws))
    assert (rc, out) == (0, None) and err.startswith("slopjudge: session start check failed")


def test_start_outside_a_git_repository(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    rc, out, err = hook("start", plain, {"cwd": str(plain)})
    assert rc == 0 and f"{plain} is not in a git repository, so there is no baseline" in err
    assert "HEAD" not in err


# --- stop ---------------------------------------------------------------------------

def stop_reason(out: Any) -> str:
    assert out["decision"] == "block"
    return out["reason"]


def test_stop_judges_baseline_to_work_tree_including_untracked(ws: Path) -> None:
    (ws / "a.txt").write_text("dirty before the session\nFORBIDDEN old\n")
    start = payload("session_start", ws)
    hook("start", ws, start)
    stop = payload("stop", ws)
    assert hook("stop", ws, stop)[:2] == (0, None)  # what was there at start is not the agent's
    (ws / "made.txt").write_text("fine\nFORBIDDEN new\n")  # untracked, as Bash would leave it
    reason = stop_reason(hook("stop", ws, stop)[1])
    assert "- no-forbidden/scan: 1 added line(s) contain FORBIDDEN" in reason
    assert "made.txt:2: FORBIDDEN marker" in reason and "a.txt" not in reason
    assert "Fix each of these in the work tree" in reason
    assert "No session baseline" not in reason
    (ws / "made.txt").write_text("fine\n")
    assert hook("stop", ws, dict(stop, stop_hook_active=True))[:2] == (0, None)
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ws,
                            capture_output=True, text=True, check=True).stdout
    assert status == " M a.txt\n"  # changed in the work tree only: nothing was staged


def test_stop_without_a_baseline_compares_with_head(ws: Path) -> None:
    (ws / "a.txt").write_text("FORBIDDEN\n")
    reason = stop_reason(hook("stop", ws, payload("stop", ws))[1])
    assert "a.txt:1: FORBIDDEN marker" in reason
    assert "No session baseline was recorded, so this compares HEAD with the work tree" in reason


def test_stop_refuses_while_a_rule_does_not_load(ws: Path) -> None:
    # A person's broken rule, there before the session started.
    (ws / "rules" / "broken.yaml").write_text("description: x\nchecks: []\n")
    hook("start", ws, payload("session_start", ws))
    reason = stop_reason(hook("stop", ws, payload("stop", ws))[1])
    assert "- rules/broken.yaml does not load: rules/broken.yaml:" in reason
    (ws / "rules" / "broken.yaml").unlink()
    hook("start", ws, payload("session_start", ws))  # the person fixed it: a new session
    assert hook("stop", ws, payload("stop", ws, stop_hook_active=True))[:2] == (0, None)


def test_stop_block_cap_counts_refusals_in_a_row(ws: Path) -> None:
    (ws / "slopjudge.yaml").write_text("stop_block_cap: 3\n")
    hook("start", ws, payload("session_start", ws))
    (ws / "b.txt").write_text("FORBIDDEN\n")
    first = payload("stop", ws)
    retry = payload("stop", ws, stop_hook_active=True)
    assert stop_reason(hook("stop", ws, first)[1])
    assert stop_reason(hook("stop", ws, retry)[1])
    rc, out, err = hook("stop", ws, retry)
    assert rc == 0 and "decision" not in out
    assert out["systemMessage"].startswith(
        "slopjudge: letting the turn end after 3 refusals in a row; the refusal still stands:")
    assert "b.txt:1: FORBIDDEN marker" in out["systemMessage"]
    assert "letting the turn end after 3 refusals" in err
    # The count starts again: the next turn is blocked again.
    assert stop_reason(hook("stop", ws, first)[1])
    # stop_hook_active false resets the count even after blocks.
    assert stop_reason(hook("stop", ws, retry)[1])
    assert stop_reason(hook("stop", ws, first)[1])
    assert stop_reason(hook("stop", ws, retry)[1])
    assert "systemMessage" in hook("stop", ws, retry)[1]
    assert [e["outcome"] for e in events(ws)].count("refuse") == 8  # every stop was judged


def test_stop_internal_error_blocks(ws: Path) -> None:
    (ws / "slopjudge.yaml").write_text("stop_block_cap: [unclosed\n")
    reason = stop_reason(hook("stop", ws, payload("stop", ws))[1])
    assert reason.startswith("slopjudge could not check this session's changes, so the stop is "
                             "blocked:\n- slopjudge could not check this session's changes: "
                             "ConfigError")
    assert "a person must fix the cause" in reason and "Fix each of these" not in reason


def test_subagent_stop_blocks_with_its_own_counter(ws: Path) -> None:
    (ws / "slopjudge.yaml").write_text("stop_block_cap: 2\n")
    hook("start", ws, payload("session_start", ws))
    (ws / "b.txt").write_text("FORBIDDEN\n")
    sub = payload("subagent_stop", ws)
    assert "b.txt:1:" in stop_reason(hook("subagent-stop", ws, sub)[1])
    assert stop_reason(hook("stop", ws, payload("stop", ws))[1])  # main agent: own count
    out = hook("subagent-stop", ws, dict(sub, stop_hook_active=True))[1]
    assert "letting the turn end after 2 refusals" in out["systemMessage"]
    assert {e["event"] for e in events(ws)} >= {"subagent-stop", "stop"}


# --- judges: on_uncertain and fail-closed errors -------------------------------------

def add_judge_rule(ws: Path, on_uncertain: str, verdict: dict[str, Any]) -> dict[str, str]:
    """A pre-tool judge rule on Write, with a mock judge answering ``verdict``."""
    folder = ws / "rules" / "careful"
    folder.mkdir()
    (folder / "ask.md.j2").write_text("Is this change careful?\n{{ change }}\n")
    (folder / "rule.yaml").write_text(
        "description: changes are careful\non: [pre-tool]\ntools: [Write]\n"
        f"on_uncertain: {on_uncertain}\n"
        "checks:\n  - id: judge\n    judge: ask.md.j2\n    min_confidence: 0.8\n")
    mock = ws.parent / "mock-judge.sh"
    executable(mock, f"#!/bin/sh\ncat >/dev/null\necho '{json.dumps(verdict)}'\n")
    return {"SLOPJUDGE_JUDGE_MOCKS": json.dumps({"careful/judge": str(mock)})}


def test_uncertain_judge_pass_asks_the_person(ws: Path) -> None:
    mocks = add_judge_rule(ws, "ask", {"pass": True, "reasoning": "probably", "confidence": 0.3})
    rc, out, _ = hook("pre-tool", ws, payload("pre_tool_write", ws), extra_env=mocks)
    spec = out["hookSpecificOutput"]
    assert (rc, spec["permissionDecision"]) == (0, "ask")
    assert spec["permissionDecisionReason"].startswith("careful: confidence 0.3 below")
    assert "not confident enough about this Write" in spec["permissionDecisionReason"]


def test_uncertain_judge_pass_denies_by_default(ws: Path) -> None:
    mocks = add_judge_rule(ws, "deny", {"pass": True, "reasoning": "probably", "confidence": 0.3})
    assert "careful: confidence 0.3" in deny_reason(
        hook("pre-tool", ws, payload("pre_tool_write", ws), extra_env=mocks)[1])


def test_confident_judge_refusal_denies_even_when_asking(ws: Path) -> None:
    mocks = add_judge_rule(ws, "ask", {"pass": False, "reasoning": "sloppy", "confidence": 0.3})
    assert deny_reason(hook("pre-tool", ws, payload("pre_tool_write", ws),
                            extra_env=mocks)[1]).startswith("careful: sloppy")
    # And a confident pass lets the call through.
    mocks = {"SLOPJUDGE_JUDGE_MOCKS": mocks["SLOPJUDGE_JUDGE_MOCKS"]}
    executable(ws.parent / "mock-judge.sh", "#!/bin/sh\ncat >/dev/null\n"
                 "echo '{\"pass\": true, \"reasoning\": \"fine\", \"confidence\": 0.95}'\n")
    assert hook("pre-tool", ws, payload("pre_tool_write", ws), extra_env=mocks)[:2] == (0, None)


def test_a_judge_that_errors_denies(ws: Path) -> None:
    add_judge_rule(ws, "ask", {"pass": True})
    # Mocks on, none for this judge: an error, never a pass.
    reason = deny_reason(hook("pre-tool", ws, payload("pre_tool_write", ws),
                              extra_env={"SLOPJUDGE_JUDGE_MOCKS": "{}"})[1])
    assert reason.startswith("careful: the judge could not run: no judge mock for careful/judge")
    assert "this is not a finding in your change" in reason
    assert "slopjudge could not decide on this Write, so it is blocked" in reason


def test_slopjudge_state_never_counts_as_a_change(ws: Path) -> None:
    hook("start", ws, payload("session_start", ws))
    data = payload("pre_tool_write", ws)
    data["tool_input"]["content"] = "FORBIDDEN\n"
    deny_reason(hook("pre-tool", ws, data)[1])  # the event log now quotes FORBIDDEN
    assert "FORBIDDEN" in (ws / ".slopjudge" / "events.jsonl").read_text()
    assert hook("stop", ws, payload("stop", ws))[:2] == (0, None)
    assert git(ws, "status", "--porcelain") == ""


def test_without_a_rules_folder_start_says_so_and_stop_passes(ws: Path) -> None:
    git(ws, "rm", "-rq", "rules")
    rc, out, _ = hook("start", ws, payload("session_start", ws))
    assert "rules folder not found" in out["hookSpecificOutput"]["additionalContext"]
    (ws / "x.txt").write_text("FORBIDDEN\n")
    assert hook("stop", ws, payload("stop", ws))[:2] == (0, None)
    assert hook("pre-tool", ws, payload("pre_tool_write", ws))[:2] == (0, None)


def test_messages_name_files_from_the_workspace_root_in_a_subfolder_session(ws: Path) -> None:
    (ws / "sub").mkdir()
    (ws / "rules" / "broken.yaml").write_text("description: x\nchecks: []\n")
    rc, out, _ = hook("start", ws / "sub", payload("session_start", ws, cwd=str(ws / "sub")))
    assert "- rules/broken.yaml does not load: rules/broken.yaml:" in out[
        "hookSpecificOutput"]["additionalContext"]
    (ws / "sub" / "y.txt").write_text("FORBIDDEN\n")
    reason = stop_reason(hook("stop", ws / "sub", payload("stop", ws, cwd=str(ws / "sub")))[1])
    assert "sub/y.txt:1: FORBIDDEN marker" in reason
    assert "- rules/broken.yaml does not load: rules/broken.yaml:" in reason


def test_the_file_tools_a_payload_must_name_a_file_for_are_toolmatchs() -> None:
    from slopjudge.changes import toolmatch, tools

    assert common.PATH_TOOLS is tools.PATH_FIELDS  # one definition, not a copy
    assert toolmatch.PATH_TOOLS is tools.PATH_TOOLS == set(tools.PATH_FIELDS)


def test_a_hook_past_its_deadline_in_process_ends_the_call_not_the_test_run(
        tmp_path: Path) -> None:
    """The hook's deadline ends its process with ``os._exit``; called in this process (the
    suite's helper), it ends the call with that code, and counts from the call's start
    however long the test process has run (before, a hook called in a young test process
    inherited its age, and its deadline ended the whole test run with exit 0)."""
    import os

    from tests.failclosed.hooks_kit import pre_tool

    ws = make_ws(tmp_path, files={"slopjudge.yaml": "hook_timeout: 3\n"})  # deadline: 1 s
    (ws / "rules" / "slow").mkdir()
    (ws / "rules" / "slow" / "rule.yaml").write_text(
        "description: a check that never answers\non: [pre-tool]\ntools: [Write]\n"
        "checks:\n  - id: wait\n    script: ./wait.sh\n")
    executable(ws / "rules" / "slow" / "wait.sh", "#!/bin/sh\nexec sleep 300\n")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "a slow rule")
    call = pre_tool(ws, "Write", {"file_path": str(ws / "b.txt"), "content": "x\n"})
    exit_before = os._exit
    rc, out, _ = hook("pre-tool", ws, call)
    assert (rc, out) == (2, None), out
    assert os._exit is exit_before
