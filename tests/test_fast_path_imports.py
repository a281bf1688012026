"""The PreToolUse fast path (no rule applies) imports only what it needs.

Measured with ``python -X importtime``: the template engine, the schema
validator, the YAML parser, the argument parser and the process machinery cost
more than the whole answer; none of them may load when no rule applies. Rule
loading is cached, so the second call is the one every tool call pays for.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from slopjudge.payload import CHECK_ENV
from tests.helpers import PY, REPO_ROOT, cli_env, commit_all, make_repo, sj

# Module roots the no-rule path must never import (first dotted part).
HEAVY = {
    "jinja2", "markupsafe", "jsonschema", "referencing", "ruamel", "unidiff", "tenacity",
    "argparse", "subprocess", "concurrent", "logging", "asyncio", "email", "tempfile",
    "hashlib", "hmac", "ssl", "uuid", "pathlib", "difflib", "pickle", "decimal", "zipfile",
    "typing", "dataclasses", "inspect", "signal", "json.decoder", "slopjudge.changes.edits",
    "slopjudge.changes.changeset", "slopjudge.changes.diffparse", "slopjudge.procs",
    "slopjudge.payload", "slopjudge.records.record", "slopjudge.checks.graph",
    "slopjudge.checks.engine", "slopjudge.checks.script", "slopjudge.checks.judge",
    "slopjudge.commands",
    # `re` and the enum it loads cost about 0.8x a whole `python -c pass`; functools
    # (and collections with it) about a fifth.
    "re", "enum", "fnmatch", "functools", "collections",
}

def _product_env() -> dict[str, str]:
    """The hook's environment as a user has it: without the suite's payload validation,
    which loads the schema validator on purpose."""
    env = cli_env()
    env.pop(CHECK_ENV, None)
    return env


PROBE = r"""
import sys
before = set(sys.modules)
from slopjudge.cli import main
code = main(["hook", "pre-tool"])  # given: run as the program, the hook would exit at once
new = sorted(set(sys.modules) - before)
import json  # after: the hook must not have needed it

json.dump({"code": code, "new": new}, sys.stderr)
"""


def test_no_rule_applies_imports_nothing_heavy(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"src/app.py": "x = 1\n"})
    res = sj("init", cwd=repo)
    assert res.returncode == 0, res.stderr
    commit_all(repo, "init")
    event = json.dumps({"session_id": "s", "cwd": str(repo), "hook_event_name": "PreToolUse",
                        "tool_name": "Read",
                        "tool_input": {"file_path": str(repo / "src" / "app.py")}})
    first = sj("hook", "pre-tool", cwd=repo, input=event)  # loads the rules, fills the cache
    assert (first.returncode, first.stdout) == (0, ""), first.stderr
    import subprocess

    # -S: without site, whose editable-install finder imports `re` before the hook does
    # (a regular install has none); the checkout is found through PYTHONPATH instead.
    env = dict(_product_env(), PYTHONPATH=str(REPO_ROOT))
    res = subprocess.run([PY, "-S", "-X", "importtime", "-c", PROBE], cwd=repo, env=env,
                         input=event, capture_output=True, text=True, timeout=60)
    got = json.loads(res.stderr[res.stderr.rindex("{\"code\""):])
    assert got["code"] == 0 and res.stdout == ""
    new = set(got["new"])
    heavy = sorted(m for m in new if m in HEAVY or m.split(".")[0] in HEAVY
                   or any(m.startswith(h + ".") for h in HEAVY))
    lines = [ln for ln in res.stderr.splitlines() if ln.startswith("import time:")]
    total_us = sum(int(ln.split("|")[0].split(":")[1]) for ln in lines[1:]
                   if ln.split("|")[0].split(":")[1].strip().isdigit())
    assert heavy == [], f"heavy imports on the fast path: {heavy} (imports {total_us} us)"
    assert "slopjudge.loading.rulecache" in new  # the probe really took the hook path


# The same probe for a call the pack's checks judge: they run in the hook process
# (checks/inproc.py), so what they import is theirs, kept apart from slopjudge's own.
PROBE_CHECKS = r"""
import sys
before = set(sys.modules)
from slopjudge.checks import inproc

by_scripts = set()
run = inproc.Runner.run
def counted(self, ctx, installed):
    started = set(sys.modules)
    try:
        return run(self, ctx, installed)
    finally:
        by_scripts.update(set(sys.modules) - started)
inproc.Runner.run = counted
from slopjudge.cli import main
code = main(["hook", "pre-tool"])
new = sorted(set(sys.modules) - before - by_scripts)
import json

json.dump({"code": code, "new": new, "scripts": sorted(by_scripts)}, sys.stderr)
"""


# A Bash call that the pack's checks judge: they run, but a command carries no file
# change, so no changeset, diff or snapshot code loads, nor anything for judges; the
# pack's helpers are the checks' own.
NOT_FOR_A_COMMAND = {
    "jinja2", "markupsafe", "jsonschema", "referencing", "ruamel", "unidiff", "argparse",
    "tempfile", "shutil", "datetime", "hashlib", "slopjudge.changes.changeset",
    "slopjudge.changes.diffparse", "typing", "dataclasses", "inspect", "slopscan", "hookio",
    "slopjudge.loading.templates", "slopjudge.checks.judge", "slopjudge.commands", "difflib",
    # json's import compiles six regular expressions: its C scanner and encoder serve.
    "json", "importlib", "warnings",
}


def _imports_of_a_judged_call(tmp_path: Path, tool: str, tool_input: dict[str, str]
                               ) -> set[str]:
    """The modules a second pre-tool call (the rules cached) imports, after init, less
    those the pack's scripts imported while they ran in the hook process."""
    repo = make_repo(tmp_path / "repo", {"src/app.py": "x = 1\n"})
    res = sj("init", cwd=repo)
    assert res.returncode == 0, res.stderr
    commit_all(repo, "init")
    event = json.dumps({"session_id": "s", "cwd": str(repo), "hook_event_name": "PreToolUse",
                        "tool_name": tool, "tool_input": tool_input})
    first = sj("hook", "pre-tool", cwd=repo, input=event)
    assert (first.returncode, first.stdout) == (0, ""), first.stderr
    import subprocess

    res = subprocess.run([PY, "-c", PROBE_CHECKS], cwd=repo, env=_product_env(),
                         input=event, capture_output=True, text=True, timeout=60)
    got = json.loads(res.stderr[res.stderr.rindex("{\"code\""):])
    assert got["code"] == 0 and res.stdout == ""
    assert "hookio" in got["scripts"]  # the pack's checks really ran, in the hook process
    return set(got["new"])


def test_a_judged_command_imports_no_change_machinery(tmp_path: Path) -> None:
    new = _imports_of_a_judged_call(tmp_path, "Bash", {"command": "ls"})
    found = sorted(m for m in new if m in NOT_FOR_A_COMMAND
                   or m.split(".")[0] in NOT_FOR_A_COMMAND)
    assert found == [], f"imported for a Bash call: {found}"


# A Write the pack's checks judge: its change is built and the checks run, but the
# proposed edit's hunks come without the diff parser, and nothing loads that only
# git changesets, judges, typing or dataclasses need (the pack's helpers are the
# checks' own); a new file's diff is one hunk, without difflib.
NOT_FOR_A_FILE_TOOL = {
    "jinja2", "markupsafe", "jsonschema", "referencing", "ruamel", "unidiff", "argparse",
    "tempfile", "shutil", "hashlib", "typing", "dataclasses", "inspect", "hookio",
    "slopjudge.changes.changeset", "slopjudge.changes.diffparse", "slopjudge.changes.gitio",
    "slopjudge.judging", "slopjudge.checks.judge",
    "slopjudge.commands", "slopscan", "difflib", "json", "importlib", "warnings",
}


def test_a_judged_file_edit_imports_no_diff_parser_nor_typing(tmp_path: Path) -> None:
    new = _imports_of_a_judged_call(tmp_path, "Write", {
        "file_path": str(tmp_path / "repo" / "src" / "prices.py"),
        "content": "def total(x: int) -> int:\n    return x\n"})
    assert {"slopjudge.checks.inproc", "slopjudge.changes.proposed"} <= new
    found = sorted(m for m in new if m in NOT_FOR_A_FILE_TOOL
                   or any(m.startswith(h + ".") for h in NOT_FOR_A_FILE_TOOL))
    assert found == [], f"imported for a Write call: {found}"


def test_an_edit_that_does_not_apply_imports_no_patch_parser(tmp_path: Path) -> None:
    # Judged on its new text added to the file as it is (edits.unapplied_changeset).
    new = _imports_of_a_judged_call(tmp_path, "Edit", {
        "file_path": str(tmp_path / "repo" / "src" / "app.py"),
        "old_string": "not in the file", "new_string": "y = 2\n"})
    found = sorted(m for m in new if m in {*NOT_FOR_A_FILE_TOOL, "slopjudge.changes.applypatch"}
                   or any(m.startswith(h + ".") for h in NOT_FOR_A_FILE_TOOL))
    assert found == [], f"imported for an Edit that does not apply: {found}"


# The whole hook process of a Write the pack's checks judge, its scripts included (they
# run in it): none of these loads. Each cost the call a measured share of a whole
# `python -c pass` (docs/performance.md): the checks run in the hook's one thread, read
# and write JSON through json's C code, and walk syntax trees through `_ast`.
NOT_IN_A_WRITE_HOOK = {
    "threading", "select", "array", "importlib", "warnings", "ast", "contextlib", "json",
    "inspect", "shlex", "slopjudge.loading.matchexpr", "slopjudge.changes.citations",
    "slopjudge.changes.shell", "slopjudge.harnesses.codex",
}

WRITE_PY = '''"""Small helpers for prices."""


def total(prices: list[float], tax: float) -> float:
    """The sum of ``prices`` with ``tax`` added (0.2 for 20 %)."""
    return round(sum(prices) * (1 + tax), 2)
'''


SLOP_PY = WRITE_PY + "\ntry:\n    x = 1\nexcept:\n    pass\n"


@pytest.mark.parametrize(("tool", "tool_input"), [
    ("Write", {"file_path": "src/prices.py", "content": WRITE_PY}),
    ("Write", {"file_path": "src/prices.py", "content": SLOP_PY}),
    ("Edit", {"file_path": "src/app.py", "old_string": "x = 1", "new_string": "x = 2"}),
], ids=["clean", "denied", "edit"])
def test_a_file_tools_hook_with_its_checks_imports_none_of_the_costly_modules(
        tmp_path: Path, tool: str, tool_input: dict[str, str]) -> None:
    repo = make_repo(tmp_path / "repo", {"src/app.py": "x = 1\n"})
    assert sj("init", cwd=repo).returncode == 0
    commit_all(repo, "init")
    event = json.dumps({"session_id": "s", "cwd": str(repo), "hook_event_name": "PreToolUse",
                        "tool_name": tool, "tool_input": dict(
                            tool_input, file_path=str(repo / tool_input["file_path"]))})
    first = sj("hook", "pre-tool", cwd=repo, input=event)  # fills the rules and pattern caches
    assert first.returncode == 0, first.stderr
    import subprocess

    # -S as above: an editable install's finder would load some of them before the hook.
    env = dict(_product_env(), PYTHONPATH=str(REPO_ROOT))
    res = subprocess.run([PY, "-S", "-c", PROBE], cwd=repo, env=env, input=event,
                         capture_output=True, text=True, timeout=60)
    got = json.loads(res.stderr[res.stderr.rindex("{\"code\""):])
    assert got["code"] == 0 and res.stdout == first.stdout
    assert ("swallowed-errors" in res.stdout) == ("except:" in tool_input.get("content", ""))
    new = set(got["new"])
    # The pack's checks ran in this process (their modules are forgotten after the run).
    assert "slopjudge.checks.inproc" in new and "subprocess" not in new
    found = sorted(m for m in new if m in NOT_IN_A_WRITE_HOOK
                   or any(m.startswith(h + ".") for h in NOT_IN_A_WRITE_HOOK))
    assert found == [], f"imported by the hook of a {tool}: {found}"
    # None of these calls reaches a pattern of the pack (the slop's are found by its
    # syntax tree and plain words), its path globs are answered by their text, and an
    # edit in one place is diffed without difflib: no `re`, nor the enum, functools and
    # collections it loads (together about half a `python -c pass`, docs/performance.md).
    costly = sorted(new & {"re", "enum", "functools", "collections", "operator", "difflib"})
    assert costly == [], f"imported by the hook of a {tool}: {costly}"
    # No script parses a file without slop in it: the syntax tree's node classes, which
    # `_ast` builds as it is imported (0.7 ms), are not loaded for it.
    assert ("_ast" in new) == ("except:" in tool_input.get("content", ""))
