"""Rule fixture cases (`slopjudge test`, SPEC §7): templates render for real, a canned
verdict stands in only for the model; a judge without a stub, or a stub no judge used,
fails the case."""

from __future__ import annotations

import functools
import glob
import json
import operator
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema

from slopjudge import procs
from slopjudge.changes import changeset as cs
from slopjudge.changes.agentevent import event_from_payload, proposed_changeset
from slopjudge.checks import engine
from slopjudge.checks.options import RunOptions
from slopjudge.checks.selection import applicable_rules, select_rules
from slopjudge.errors import SlopjudgeError
from slopjudge.fsutil import write_atomic
from slopjudge.harnesses.base import HOOKS
from slopjudge.loading.loader import _pos, read_yaml
from slopjudge.loading.schemas import load_schema
from slopjudge.model import Changeset, Event, Rule

# A fixture payload's hook_event_name as the event kind; a case has no session start.
HOOK_KINDS = {name: point for name, point, _, _ in HOOKS if point != "start"}


@dataclass
class CaseResult:
    rule: str
    case: str
    ok: bool = False
    expected: str = "?"
    actual: str = "error"
    problems: list[str] = field(default_factory=list)
    unreadable: bool = False  # the case's diff or event could not be read: `test` exits 2
    skipped: bool = False  # a sloprail case whose fields mean something else here


def find_cases(cases_dir: str) -> list[tuple[str, str, str]]:
    """(rule id, case name, case folder) of each ``<rule>/<case>/case.yaml`` in ``cases_dir``."""
    paths = glob.glob(os.path.join(glob.escape(cases_dir), "*", "*", "case.yaml"))
    return sorted((Path(p).parent.parent.name, Path(p).parent.name, os.path.dirname(p))
                  for p in paths if os.path.isfile(p))


def _load_case(folder: str) -> tuple[Any, str, str | None]:
    """``case.yaml`` in ``folder``, its path as shown, and why it could not be read."""
    shown = os.path.relpath(os.path.join(folder, "case.yaml"))
    data, (line, col), problem = read_yaml(os.path.join(folder, "case.yaml"))
    if problem is not None:
        return None, shown, f"{shown}:{line}:{col}: {problem}"
    if (odd := _tagged(data, [])) is not None:  # the round-trip reader keeps `!name` values
        line, col = _position(data, odd)
        return None, shown, (f"{shown}:{line}:{col}: a YAML tag (`!name`) or a date: a case "
                             "holds plain values (quote it)")
    return data, shown, None


def _tagged(data: Any, path: list[Any]) -> list[Any] | None:
    """The path to the first value or key of ``data`` that is not plain JSON (a tag, a date)."""
    if getattr(getattr(data, "tag", None), "value", None):
        return path
    if isinstance(data, (dict, list)):
        # A list's keys are its indexes: plain.
        for key, value in data.items() if isinstance(data, dict) else enumerate(data):
            if _tagged(key, path) is not None:
                return [*path, key]
            if (found := _tagged(value, [*path, key])) is not None:
                return found
    return None if isinstance(data, (dict, list, str, int, float, type(None))) else path


def read_case(folder: str) -> tuple[dict[str, Any] | None, list[str]]:
    """The case mapping, or problems as ``path:line:col: message`` lines."""
    data, shown, problem = _load_case(folder)
    if problem is not None:
        return None, [problem]
    problems: list[str] = []
    validator = jsonschema.Draft202012Validator(load_schema("case.schema.json"))
    for err in sorted(validator.iter_errors(data), key=str):
        # Point at the first unknown key, not at the mapping that holds it.
        extra = [k for k in err.instance if k not in (err.schema.get("properties") or {})][:1] \
            if err.validator == "additionalProperties" and isinstance(err.instance, dict) else []
        line, col = _position(data, [*err.absolute_path, *extra], at_key=bool(extra))
        where = ".".join(str(p) for p in err.absolute_path) or "case"
        problems.append(f"{shown}:{line}:{col}: {where}: {err.message}")
    return (None, problems) if problems else (json.loads(json.dumps(data)), [])


def _position(data: Any, path: list[Any], *, at_key: bool = False) -> tuple[int, int]:
    """1-based (line, col) of the value at ``path`` (of the key, for an unknown key)."""
    if not path:
        return 1, 1
    parent = functools.reduce(operator.getitem, path[:-1], data)
    # A key holding a nested mapping or list is shown at the key, where a reader looks.
    return _pos(parent, path[-1], of_key=at_key or isinstance(parent[path[-1]], (dict, list)))


def _write_mock(tmp: str, full_id: str, stub: dict[str, Any]) -> tuple[str, str]:
    """A judge mock that records the prompt it was given and prints the stub's verdict."""
    verdict = {"pass": bool(stub.get("pass")), "reasoning": stub.get("reasoning", "")}
    verdict.update((k, stub[k]) for k in ("confidence", "findings") if k in stub)
    base = os.path.join(tmp, full_id.replace("/", "__"))
    script, seen = base + ".mock", base + ".prompt"
    write_atomic(script, f"#!{sys.executable}\nimport sys\n"
                 f"open({seen!r}, 'wb').write(sys.stdin.buffer.read())\n"
                 f"sys.stdout.write({json.dumps(json.dumps(verdict))})\n", mode=0o755)
    return script, seen


def _event_and_changeset(
    case: dict[str, Any], folder: str, rule: Rule, workspace: str
) -> tuple[Event, Changeset]:
    if "diff" in case:
        diff = Path(folder, case["diff"])
        kind = case.get("kind") or ("ci" if "ci" in rule.on else rule.on[0])
        return Event(kind=kind, cwd=workspace), cs.read_diff(diff.read_bytes(),
                                                              os.path.relpath(diff))
    raw = case["event"]
    text = Path(folder, raw).read_text(encoding="utf-8") if isinstance(raw, str) \
        else json.dumps(raw)
    # Fixture payloads name the workspace as $WORKSPACE: cases run in a temp copy.
    payload = json.loads(text.replace("$WORKSPACE", workspace.replace("\\", "\\\\")))
    kind = case.get("kind") or HOOK_KINDS.get(str(payload.get("hook_event_name")), "pre-tool")
    event = event_from_payload(kind, payload)
    if event.cwd is None:
        event.cwd = workspace
    if kind == "pre-tool":
        # Exactly the hook's reading of a tool call, so a case proves what the hook does.
        return event, proposed_changeset(event, workspace) or Changeset()
    return event, cs.from_working_tree(workspace) if os.path.isdir(
        os.path.join(workspace, ".git")) else Changeset()


def run_case(
    rule_id: str, name: str, folder: str, rules: list[Rule], options: RunOptions
) -> CaseResult:
    case, problems = read_case(folder)
    res = CaseResult(rule_id, name, problems=problems)
    if case is None:
        return res
    res.expected = case["expect"]
    selected, unknown = select_rules(rules, [rule_id])
    if unknown:
        res.problems.append(f"no rule {rule_id} is loaded (missing, or it does not load)")
        return res
    rule = next(r for r in selected if r.id == rule_id)
    stubs: dict[str, Any] = case.get("judges") or {}
    judge_ids = {c.id for r in selected for c in r.checks if c.kind == "judge"}
    res.problems += [f"judges: {k} is not a judge check of {rule_id}" for k in stubs
                     if k.split("/")[-1] not in judge_ids]
    stubs = {(k if "/" in k else f"{rule_id}/{k}"): v for k, v in stubs.items()}
    with tempfile.TemporaryDirectory(prefix="slopjudge-case-") as tmp:
        workspace = os.path.join(tmp, "workspace")
        seed = os.path.join(folder, "workspace")
        if os.path.isdir(seed):
            shutil.copytree(seed, workspace, symlinks=True)
        else:
            os.makedirs(workspace)
        try:
            event, changeset = _event_and_changeset(case, folder, rule, workspace)
        except (OSError, ValueError, SlopjudgeError) as exc:
            res.unreadable = True
            res.problems = [f"{os.path.relpath(folder)}: cannot read the case input: {exc}"]
            return res
        return _execute(res, case.get("reason_contains"), selected, event, changeset,
                        workspace, tmp, stubs, options)


def _execute(
    res: CaseResult, wanted: Any, selected: list[Rule], event: Event, changeset: Changeset,
    workspace: str, tmp: str, stubs: dict[str, dict[str, Any]], options: RunOptions,
) -> CaseResult:
    """Run the rule with canned judges; ``res`` with the outcome and each expectation unmet."""
    mocks = {full: _write_mock(tmp, full, stub) for full, stub in stubs.items()}
    case_options = RunOptions(
        jobs=options.jobs, template_dirs=options.template_dirs, rubric=options.rubric,
        judge_mocks={full: script for full, (script, _) in mocks.items()}, retries=0,
        retry_backoff_s=0.0,
    )
    selected = applicable_rules(selected, event, workspace)
    results = engine.run(selected, event, changeset, workspace=workspace, options=case_options)
    results = [r for r in results if r.rule == res.rule]
    outcomes = {"refuse" if r.outcome == "would_refuse" else r.outcome for r in results}
    res.actual = next((o for o in ("refuse", "error", "pass") if o in outcomes), "skip")
    problems = res.problems
    if res.actual != res.expected:
        why = "; ".join(f"{r.id}: {r.outcome}: {r.reason}" for r in results if r.reason)
        problems.append(f"expected {res.expected}, got {res.actual}"
                        + (f" ({why})" if why else ""))
    if wanted:
        reasons = "\n".join(
            r.reason + "\n" + "\n".join(f.message for f in r.findings) for r in results
        )
        problems += [f"no reason contains {p!r}" for p in
                     ([wanted] if isinstance(wanted, str) else wanted) if p not in reasons]
    for full, (_, seen) in mocks.items():
        if not os.path.exists(seen):
            if not stubs[full].get("optional"):  # a sloprail stub may be left unused
                problems.append(f"judges: the stub for {full} was never used")
        elif needle := stubs[full].get("prompt_contains"):
            prompt = Path(seen).read_text(encoding="utf-8", errors="replace")
            problems += [f"judges: the prompt for {full} lacks {p!r}" for p in
                         ([needle] if isinstance(needle, str) else needle) if p not in prompt]
    # A judge that ran without a stub errored; say why plainly.
    problems += [f"judges: {r.id} has no stub in this case" for r in results if r.kind == "judge"
                 and r.id not in mocks and r.outcome not in ("skipped", "not_applicable")]
    res.ok = not problems
    return res


# --- sloprail's own cases: <rule>/tests/<case>/{case.yaml, setup.sh} ----------------

# Fields of sloprail's case.yaml that mean here what they mean there.
SLOPRAIL_SAME = ("description", "expect", "reason_contains", "base", "judges")
# Fields that do not: a case using one is listed, not run.
SLOPRAIL_OTHER = {
    "with": "loads other sloprail rules alongside",
    "user_says": "resolves citations against a session record",
    "contexts": "asserts context states after a trajectory",
}
_STUB_KEYS = {"pass", "reasoning", "prompt_contains", "optional"}
SETUP_TIMEOUT_S = 120.0


def find_rule_cases(rules: list[Rule]) -> list[tuple[Rule, str, str]]:
    """(rule, case, folder) for every ``tests/<case>/case.yaml`` inside a rule's own folder."""
    return [(rule, os.path.basename(os.path.dirname(p)), os.path.dirname(p))
            for rule in rules if os.path.basename(rule.path) == "rule.yaml"
            for p in sorted(glob.glob(os.path.join(glob.escape(rule.dir), "tests", "*",
                                                   "case.yaml"))) if os.path.isfile(p)]


def _read_sloprail_case(rule: Rule, folder: str) -> tuple[dict[str, Any] | None, str | None]:
    """(case, None) to run it; (None, what is wrong with it); (case, why it is not run)."""
    data, shown, problem = _load_case(folder)
    if problem is not None:
        return None, problem
    if not isinstance(data, dict):
        return None, f"{shown}: not a mapping"
    if unknown := [k for k in data if k not in SLOPRAIL_SAME and k not in SLOPRAIL_OTHER]:
        return None, f"{shown}: unknown field {unknown[0]!r}"
    if other := [k for k in data if k in SLOPRAIL_OTHER and data[k]]:
        return data, f"`{other[0]}` {SLOPRAIL_OTHER[other[0]]}, which slopjudge does not"
    if os.path.exists(os.path.join(folder, "trajectory.yaml")):
        return data, "trajectory.yaml replays sloprail's own events, which slopjudge does not"
    if not os.path.isfile(os.path.join(folder, "setup.sh")):
        return None, f"{os.path.relpath(folder)}: no setup.sh"
    if data.get("expect") not in ("refuse", "permit"):
        return None, f"{shown}: expect is {data.get('expect')!r}, want refuse or permit"
    judges = data.get("judges") or {}
    if not isinstance(judges, dict):
        return None, f"{shown}: judges is not a mapping"
    for file, stub in judges.items():
        if not isinstance(stub, dict) or set(stub) - _STUB_KEYS:
            return None, f"{shown}: judges.{file}: want {sorted(_STUB_KEYS)}"
    return data, None if "ci" in rule.on else (
        "a case without a trajectory judges a commit range; this rule does not run on ci")


def _git_env(tmp: str) -> dict[str, str]:
    home = os.path.join(tmp, "home")
    config = os.path.join(home, ".gitconfig")
    write_atomic(config, "[user]\n\tname = Rule Test\n\temail = rule-test@example.invalid\n"
                 "[init]\n\tdefaultBranch = main\n[commit]\n\tgpgsign = false\n"
                 "[tag]\n\tgpgsign = false\n")
    return {**{k: v for k, v in os.environ.items()
               if not k.startswith(("GIT_", "SLOPJUDGE_", "SLOPRAIL_", "SR_", "CLAUDE_"))},
            "HOME": home, "GIT_CONFIG_GLOBAL": config, "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_TERMINAL_PROMPT": "0"}


def run_sloprail_case(rule: Rule, name: str, folder: str, options: RunOptions) -> CaseResult:
    """A case imported from sloprail: setup.sh builds a repository, base..HEAD is judged."""
    data, why = _read_sloprail_case(rule, folder)
    if data is None:
        return CaseResult(rule.id, name, problems=[str(why)])
    expected = {"refuse": "refuse", "permit": "pass"}.get(str(data.get("expect")), "?")
    if why is not None:
        return CaseResult(rule.id, name, True, expected, "not run", [f"not run: {why}"],
                          skipped=True)
    res = CaseResult(rule.id, name, expected=expected)
    stubs: dict[str, dict[str, Any]] = {}
    by_template = {os.path.relpath(c.judge, rule.dir): c for c in rule.checks
                   if c.kind == "judge" and c.judge}
    for file, stub in (data.get("judges") or {}).items():
        if (check := by_template.get(os.path.normpath(str(file)))) is not None:
            stubs[check.full_id] = stub
        else:
            res.problems.append(f"judges: no judge check of {rule.id} renders {file}")
    with tempfile.TemporaryDirectory(prefix="slopjudge-case-") as tmp:
        workspace = os.path.join(tmp, "repo")
        os.makedirs(workspace)
        env = _git_env(tmp)
        for argv in (["git", "init", "-q", "-b", "main"],
                     ["git", "commit", "-q", "--allow-empty", "-m", "the rules under test"],
                     ["git", "tag", "rules"], ["bash", os.path.join(folder, "setup.sh")]):
            done = procs.run(argv, cwd=workspace, env=env, timeout=SETUP_TIMEOUT_S)
            if done.start_error or done.timed_out or done.returncode != 0:
                tail = (done.stderr or done.stdout or b"").decode("utf-8", "replace").strip()
                what = done.start_error or ("timed out" if done.timed_out
                                            else f"exit {done.returncode}")
                res.problems = [f"{' '.join(argv[:2])} failed ({what}): {tail[-300:]}"]
                return res
        base = str(data.get("base") or "")
        if not base:
            tags = procs.run(["git", "tag", "--list", "base"], cwd=workspace, env=env, timeout=30)
            base = "base" if tags.stdout.strip() else "HEAD~1"
        try:
            changeset = cs.from_git_range(workspace, base, "HEAD")
        except cs.ChangesetError as exc:
            res.problems = [f"cannot read {base}..HEAD: {exc}"]
            return res
        return _execute(res, data.get("reason_contains"), [rule], Event(kind="ci", cwd=workspace),
                        changeset, workspace, tmp, stubs, options)


def run_tests(rules: list[Rule], cases_dir: str, options: RunOptions,
              only: list[str] | None = None) -> list[CaseResult]:
    """The cases of ``rules`` (those in ``only``) in ``cases_dir``, then in their ``tests/``."""
    results = [run_case(rule_id, name, folder, rules, options)
               for rule_id, name, folder in find_cases(cases_dir) if not only or rule_id in only]
    return results + [run_sloprail_case(rule, name, folder, options)
                      for rule, name, folder in find_rule_cases(rules)
                      if not only or rule.id in only]
