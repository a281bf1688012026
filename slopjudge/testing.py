"""Rule fixture cases (`slopjudge test`, SPEC §7).

A case is a folder ``tests/rules/<rule-id>/<case>/`` holding ``case.yaml``:
a change (``diff``, a fixture diff) or an agent event (``event``, a hook
payload), the expected outcome, and canned verdicts for the rule's judges.
Templates still render for real; the canned verdict stands in only for the
model. A judge without a stub, or a stub no judge used, fails the case.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any

from .errors import SlopjudgeError
from .hookspec import RunOptions
from .model import Changeset, CheckResult, Event, Rule

HOOK_KINDS = {
    "PreToolUse": "pre-tool",
    "Stop": "stop",
    "SubagentStop": "subagent-stop",
}


@dataclass
class CaseResult:
    rule: str
    case: str
    path: str  # the case folder
    ok: bool
    expected: str
    actual: str
    problems: list[str] = field(default_factory=list)
    checks: list[CheckResult] = field(default_factory=list)
    unreadable: bool = False  # the case's diff or event could not be read: `test` exits 2


@dataclass
class TestReport:
    cases: list[CaseResult]
    lacking_refuse: list[str]  # rules with no refusing case
    lacking_pass: list[str]  # rules with no passing case
    load_errors: list[str]

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.cases) and not self.load_errors


def find_cases(cases_dir: str) -> list[tuple[str, str, str]]:
    """(rule id, case name, case folder) for every case.yaml under ``cases_dir``."""
    found: list[tuple[str, str, str]] = []
    if not os.path.isdir(cases_dir):
        return found
    for rule_id in sorted(os.listdir(cases_dir)):
        rule_path = os.path.join(cases_dir, rule_id)
        if not os.path.isdir(rule_path):
            continue
        for case in sorted(os.listdir(rule_path)):
            folder = os.path.join(rule_path, case)
            if os.path.isfile(os.path.join(folder, "case.yaml")):
                found.append((rule_id, case, folder))
    return found


def read_case(folder: str) -> tuple[dict[str, Any] | None, list[str]]:
    """The case mapping, or problems as ``path:line:col: message`` lines."""
    import jsonschema
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError

    path = os.path.join(folder, "case.yaml")
    shown = os.path.relpath(path)
    try:
        with open(path, encoding="utf-8") as fh:
            data = YAML(typ="rt").load(fh)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        return None, [f"{shown}:{line}:{col}: {exc.problem or 'broken YAML'}"]
    except (OSError, UnicodeDecodeError) as exc:
        return None, [f"{shown}:1:1: {exc}"]
    schema = _case_schema()
    problems: list[str] = []
    for err in sorted(jsonschema.Draft202012Validator(schema).iter_errors(data), key=str):
        key_path = list(err.absolute_path)
        at_key = False
        if err.validator == "additionalProperties" and isinstance(err.instance, dict):
            # Point at the first unknown key, not at the mapping that holds it.
            known = set(err.schema.get("properties") or {})
            extra = [k for k in err.instance if k not in known]
            if extra:
                key_path.append(extra[0])
                at_key = True
        line, col = _position(data, key_path, at_key=at_key)
        where = ".".join(str(p) for p in err.absolute_path) or "case"
        problems.append(f"{shown}:{line}:{col}: {where}: {err.message}")
    if problems:
        return None, problems
    return json.loads(json.dumps(data)), []


def _position(node: Any, path: list[Any], *, at_key: bool = False) -> tuple[int, int]:
    """1-based (line, col) of the value at ``path`` (of the key, for an unknown key)."""
    line, col = 1, 1
    for n, key in enumerate(path):
        lc = getattr(node, "lc", None)
        try:
            if lc is not None:
                if isinstance(key, int):
                    line, col = lc.item(key)[0] + 1, lc.item(key)[1] + 1
                else:
                    last = n == len(path) - 1
                    # A wrong value is shown at the value; a key pointing at a
                    # nested mapping or list at the key, where a reader looks.
                    at = lc.key(key)
                    if last and not at_key and not isinstance(node[key], (dict, list)):
                        at = lc.value(key)
                    line, col = at[0] + 1, at[1] + 1
            node = node[key]
        except (KeyError, IndexError, TypeError):
            break
    return line, col


def _case_schema() -> dict[str, Any]:
    from .schemas import load_schema

    return load_schema("case.schema.json")


def _write_mock(tmp: str, name: str, verdict: dict[str, Any]) -> tuple[str, str]:
    """A judge mock that records the prompt it was given and prints the canned verdict."""
    seen = os.path.join(tmp, f"{name}.prompt")
    script = os.path.join(tmp, f"{name}.mock")
    with open(script, "w", encoding="utf-8") as fh:
        fh.write(
            f"#!{sys.executable}\n"
            "import sys\n"
            f"open({seen!r}, 'wb').write(sys.stdin.buffer.read())\n"
            f"sys.stdout.write({json.dumps(json.dumps(verdict))})\n"
        )
    os.chmod(script, os.stat(script).st_mode | stat.S_IXUSR)
    return script, seen


def _event_and_changeset(
    case: dict[str, Any], folder: str, rule: Rule, workspace: str
) -> tuple[Event, Changeset]:
    from . import changeset as cs

    if "diff" in case:
        with open(os.path.join(folder, case["diff"]), "rb") as fh:
            data = fh.read()
        kind = case.get("kind") or ("ci" if "ci" in rule.on else rule.on[0])
        name = os.path.relpath(os.path.join(folder, case["diff"]))
        return Event(kind=kind, cwd=workspace), cs.read_diff(data, name)
    raw = case["event"]
    if isinstance(raw, str):
        with open(os.path.join(folder, raw), encoding="utf-8") as fh:
            text = fh.read()
    else:
        text = json.dumps(raw)
    # Fixture payloads name the workspace as $WORKSPACE: cases run in a temp copy.
    payload = json.loads(text.replace("$WORKSPACE", workspace.replace("\\", "\\\\")))
    kind = case.get("kind") or HOOK_KINDS.get(str(payload.get("hook_event_name")), "pre-tool")
    from .hooks.common import event_from_payload

    event = event_from_payload(kind, payload)
    if event.cwd is None:
        event.cwd = workspace
    if kind == "pre-tool":
        # Exactly the hook's reading of a tool call, so a case proves what the hook does.
        from .hooks.pre_tool import proposed_changeset

        changeset = proposed_changeset(event, workspace)
        return event, changeset if changeset is not None else Changeset()
    return event, cs.from_working_tree(workspace) if os.path.isdir(
        os.path.join(workspace, ".git")) else Changeset()


def outcome_of(results: list[CheckResult]) -> str:
    """refuse if anything refused, error if anything errored, pass if anything passed, else skip."""
    outcomes = {r.outcome for r in results}
    if "refuse" in outcomes or "would_refuse" in outcomes:
        return "refuse"
    if "error" in outcomes:
        return "error"
    if "pass" in outcomes:
        return "pass"
    return "skip"


def run_case(
    rule_id: str, name: str, folder: str, rules: list[Rule], options: RunOptions
) -> CaseResult:
    from . import engine

    def failed(expected: str, problems: list[str], actual: str = "error") -> CaseResult:
        return CaseResult(rule_id, name, folder, False, expected, actual, problems)

    case, problems = read_case(folder)
    if case is None:
        return failed("?", problems)
    expected = case["expect"]
    selected, unknown = engine.select_rules(rules, [rule_id])
    if unknown:
        return failed(expected, [f"no rule {rule_id} is loaded (missing, or it does not load)"])
    rule = next(r for r in selected if r.id == rule_id)
    stubs: dict[str, Any] = case.get("judges") or {}
    judge_ids = {c.id for r in selected for c in r.checks if c.kind == "judge"}
    for check_id in stubs:
        if check_id.split("/")[-1] not in judge_ids and check_id not in judge_ids:
            problems.append(f"judges: {check_id} is not a judge check of {rule_id}")

    with tempfile.TemporaryDirectory(prefix="slopjudge-case-") as tmp:
        workspace = os.path.join(tmp, "workspace")
        seed = os.path.join(folder, "workspace")
        if os.path.isdir(seed):
            shutil.copytree(seed, workspace, symlinks=True)
        else:
            os.makedirs(workspace)
        mocks: dict[str, str] = {}
        seen_files: dict[str, str] = {}
        for check_id, stub in stubs.items():
            full = check_id if "/" in check_id else f"{rule_id}/{check_id}"
            verdict = {"pass": bool(stub.get("pass")), "reasoning": stub.get("reasoning", "")}
            for key in ("confidence", "findings"):
                if key in stub:
                    verdict[key] = stub[key]
            mocks[full], seen_files[full] = _write_mock(tmp, full.replace("/", "__"), verdict)
        try:
            event, changeset = _event_and_changeset(case, folder, rule, workspace)
        except (OSError, ValueError, SlopjudgeError) as exc:
            res = failed(
                expected, [f"{os.path.relpath(folder)}: cannot read the case input: {exc}"]
            )
            res.unreadable = True
            return res
        case_options = RunOptions(
            jobs=options.jobs, template_dirs=options.template_dirs, rubric=options.rubric,
            judge_mocks=mocks, retries=0, retry_backoff_s=0.0,
        )
        selected = engine.applicable_rules(selected, event, workspace)
        results = engine.run(selected, event, changeset, workspace=workspace, options=case_options)
        results = [r for r in results if r.rule == rule_id]
        actual = outcome_of(results)
        if actual != expected:
            why = "; ".join(f"{r.id}: {r.outcome}: {r.reason}" for r in results if r.reason)
            problems.append(f"expected {expected}, got {actual}" + (f" ({why})" if why else ""))
        wanted = case.get("reason_contains")
        if wanted:
            reasons = "\n".join(
                r.reason + "\n" + "\n".join(f.message for f in r.findings) for r in results
            )
            for piece in [wanted] if isinstance(wanted, str) else wanted:
                if piece not in reasons:
                    problems.append(f"no reason contains {piece!r}")
        for full, seen in seen_files.items():
            if not os.path.exists(seen):
                problems.append(f"judges: the stub for {full} was never used")
                continue
            needle = (stubs.get(full) or stubs.get(full.split("/", 1)[1]) or {}).get(
                "prompt_contains"
            )
            if needle:
                with open(seen, encoding="utf-8", errors="replace") as fh:
                    prompt = fh.read()
                for piece in [needle] if isinstance(needle, str) else needle:
                    if piece not in prompt:
                        problems.append(f"judges: the prompt for {full} lacks {piece!r}")
        for r in results:
            # A judge that ran without a stub errored; say why plainly.
            if r.kind == "judge" and r.id not in mocks and r.outcome not in (
                    "skipped", "not_applicable"):
                problems.append(f"judges: {r.id} has no stub in this case")
    return CaseResult(rule_id, name, folder, not problems, expected, actual, problems, results)


def run_tests(rules: list[Rule], cases_dir: str, options: RunOptions, *,
              load_errors: list[str] | None = None, only: list[str] | None = None) -> TestReport:
    cases = [c for c in find_cases(cases_dir) if not only or c[0] in only]
    results = [run_case(rule_id, name, folder, rules, options) for rule_id, name, folder in cases]
    expected: dict[str, set[str]] = {}
    for res in results:
        expected.setdefault(res.rule, set()).add(res.expected)
    ids = [r.id for r in rules if not only or r.id in only]
    lacking_refuse = [i for i in ids if "refuse" not in expected.get(i, set())]
    lacking_pass = [i for i in ids if "pass" not in expected.get(i, set())]
    return TestReport(results, lacking_refuse, lacking_pass, load_errors or [])
