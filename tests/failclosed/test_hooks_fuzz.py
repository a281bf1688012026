"""Fuzz ``hook pre-tool`` stdin: generated payloads (recorded tool calls with fields swapped
for other types, dropped or added; serialised, then truncated, re-encoded, wrapped, salted
with stray bytes; random bytes; deep nesting; large sizes). Every one must end in a block
(exit 2 with one line, or a deny/ask) or in a documented allow, never an unhandled path.

Most examples drive the in-process entry (:func:`slopjudge.hooks.run_point`, what
``main_fast`` runs after reading stdin) to stay fast; a sample runs the real
``python -m slopjudge hook pre-tool`` process."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from slopjudge.hooks import run_point
from tests.failclosed.hooks_kit import NOTEBOOK, REPO_ROOT, executable, git

FIXTURES = REPO_ROOT / "tests" / "fixtures" / "hook_payloads"
BASES = ["pre_tool_write", "pre_tool_edit", "pre_tool_multiedit", "pre_tool_notebookedit",
         "pre_tool_read", "pre_tool_bash", "pre_tool_mcp", "pre_tool_agent",
         "codex_apply_patch", "codex_apply_patch_bash"]
# A rule on every Write: refuses when the payload it gets mentions FORBIDDEN.
GREP = "#!/bin/sh\nif grep -q FORBIDDEN; then echo 'FORBIDDEN seen'; exit 1; fi\n"
# The contract's fields: what slopjudge reads, per tool (see README, Fail-closed contract).
PATH_KEYS = {"Write": "file_path", "Edit": "file_path", "MultiEdit": "file_path",
             "Read": "file_path", "NotebookEdit": "notebook_path"}


@pytest.fixture(scope="module")
def fuzz_ws(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("fuzz")
    ws = root / "repo"
    ws.mkdir()
    git(ws, "init", "-q", "-b", "main")
    (ws / "a.txt").write_text("hello\nworld\n")
    (ws / "nb.ipynb").write_text(NOTEBOOK)
    folder = ws / "rules" / "no-forbidden"
    executable(folder / "grep.sh", GREP)
    (folder / "rule.yaml").write_text(
        "description: no FORBIDDEN\non: [pre-tool]\ntools: [Write]\n"
        "checks:\n  - script: grep.sh\n")
    saved = dict(os.environ)
    for key in list(os.environ):
        if key.startswith(("SLOPJUDGE_", "SLOPRAIL_", "CLAUDE_")):
            del os.environ[key]
    os.environ["CLAUDE_PROJECT_DIR"] = str(ws)
    try:
        yield ws
    finally:
        os.environ.clear()
        os.environ.update(saved)


def base(name: str, ws: Path) -> dict[str, Any]:
    text = (FIXTURES / f"{name}.json").read_text().replace("__WORKSPACE__", str(ws))
    data: dict[str, Any] = json.loads(text.replace("__HOME__", str(ws.parent / "home")))
    return data


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True)
    | st.text(max_size=12) | st.sampled_from(["", "\ud800", "FORBIDDEN", "../rules/x", "/"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                max_size=3),
    max_leaves=6,
)


@st.composite
def payload_objects(draw: st.DrawFn, ws: Path) -> dict[str, Any]:
    # Writes weigh more: they are what the rule here can refuse.
    data = base(draw(st.sampled_from(BASES + ["pre_tool_write"] * 4)), ws)
    if data["tool_name"] == "Write" and draw(st.booleans()):
        data["tool_input"]["content"] = draw(st.sampled_from(
            ["FORBIDDEN\n", "ok FORBIDDEN ok\n", "fine\n", ""]))
    for _ in range(draw(st.integers(0, 3))):
        target = data
        if isinstance(data.get("tool_input"), dict) and draw(st.booleans()):
            target = data["tool_input"]
        keys = sorted(target)
        what = draw(st.sampled_from(["swap", "drop", "add"]))
        if what == "add" or not keys:
            target[draw(st.text(min_size=1, max_size=8))] = draw(json_values)
        elif what == "drop":
            del target[draw(st.sampled_from(keys))]
        else:
            target[draw(st.sampled_from(keys))] = draw(json_values)
    if draw(st.integers(0, 9)) == 0 and isinstance(data.get("tool_input"), dict):
        # Large: a Write of up to 2 MiB.
        data["tool_input"]["content"] = "line of text\n" * draw(st.integers(1, 160_000))
    return data


@st.composite
def payload_bytes(draw: st.DrawFn, ws: Path) -> bytes:
    form = draw(st.sampled_from(["json"] * 6 + ["truncate"] * 3 + [
        "utf16", "latin1", "stray", "bom", "array", "random", "nested", "scalar"]))
    if form == "random":
        return draw(st.binary(max_size=300))
    if form == "nested":
        n = draw(st.integers(1, 60_000))
        return b"[" * n + b"]" * n
    if form == "scalar":
        return json.dumps(draw(json_values)).encode()
    obj = draw(payload_objects(ws))
    obj["note"] = "café ✓"  # something outside ASCII, so re-encodings differ from UTF-8
    text = json.dumps(obj, ensure_ascii=draw(st.booleans()))
    raw = text.encode("utf-8", "surrogatepass")
    if form == "truncate":
        return raw[:draw(st.integers(0, max(0, len(raw) - 1)))]
    if form == "utf16":
        return text.encode("utf-16", "surrogatepass")
    if form == "latin1":
        return text.encode("latin-1", "replace")
    if form == "stray":
        at = draw(st.integers(0, len(raw)))
        return raw[:at] + draw(st.binary(min_size=1, max_size=8)) + raw[at:]
    if form == "bom":
        return b"\xef\xbb\xbf" + raw
    if form == "array":
        return b"[" + raw + b"]"
    return raw


def readable(raw: bytes) -> dict[str, Any] | None:
    """The contract, independently: the payload object when slopjudge can judge it."""
    try:
        obj = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(obj, dict):
        return None
    name, tool_input = obj.get("tool_name"), obj.get("tool_input")
    if not isinstance(name, str) or not name.strip() or not isinstance(tool_input, dict):
        return None
    if name in PATH_KEYS:
        path = tool_input.get(PATH_KEYS[name], tool_input.get("file_path"))
        if not isinstance(path, str) or not path:
            return None
    if name == "Bash":
        command = tool_input.get("command")
        if not (isinstance(command, str) or (isinstance(command, list)
                                             and all(isinstance(c, str) for c in command))):
            return None
    return obj


def check_outcome(raw: bytes, rc: int, out: str, err: str) -> str:
    """'block' or 'allow', after asserting the outcome is one the contract allows."""
    assert "Traceback" not in err, err
    assert "hook failed" not in err, f"an internal error, not a handled case: {err}"
    obj = readable(raw)
    if rc == 2:
        lines = err.strip().splitlines()
        assert out == "" and len(lines) == 1, (out, err)
        assert lines[0].startswith("slopjudge: could not read the PreToolUse payload ("), err
        assert obj is None, f"a readable payload was refused as unreadable: {err}"
        return "block"
    assert rc == 0, (rc, err)
    assert obj is not None, f"an unreadable payload was not blocked: {raw[:200]!r}"
    if out.strip():
        answer = json.loads(out)
        assert answer["hookSpecificOutput"]["permissionDecision"] in ("deny", "ask")
        return "block"
    # An allow: documented only for a call no rule refuses, or an edit that cannot apply.
    tool_input = obj["tool_input"]
    if obj["tool_name"] == "Write" and "FORBIDDEN" in json.dumps(tool_input):
        assert "cannot apply" in err, f"a Write carrying FORBIDDEN was let through: {err}"
    return "allow"


# 1000 fixed examples (derandomized: the same ones each run): the rarest of the 17 weighted
# forms of payload_bytes still comes about 60 times, each outcome kind (exit 2, deny/ask,
# allow) 90 times or more; test_the_fuzzer_reaches_both_blocks_and_allows below pins
# that the oracle sees both sides.
@settings(max_examples=1000, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzzed_pre_tool_payloads_in_process(fuzz_ws: Path, data: st.DataObject) -> None:
    raw = data.draw(payload_bytes(fuzz_ws))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = run_point("pre-tool", raw)
    kind = check_outcome(raw, rc, out.getvalue(), err.getvalue())
    event(f"{kind}: {'exit 2' if rc == 2 else out.getvalue()[:60] or 'no output'}")


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzzed_pre_tool_payloads_through_the_real_process(fuzz_ws: Path,
                                                          data: st.DataObject) -> None:
    raw = data.draw(payload_bytes(fuzz_ws))
    proc = subprocess.run([sys.executable, "-m", "slopjudge", "hook", "pre-tool"], input=raw,
                          cwd=fuzz_ws, capture_output=True, env=dict(os.environ), timeout=60)
    check_outcome(raw, proc.returncode, proc.stdout.decode(), proc.stderr.decode())


def test_the_fuzzer_reaches_both_blocks_and_allows(fuzz_ws: Path) -> None:
    # The oracle above must see both kinds, or the fuzz proves nothing.
    seen: dict[str, int] = {}
    for name in BASES:
        for raw in (json.dumps(base(name, fuzz_ws)).encode(), b"{"):
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                rc = run_point("pre-tool", raw)
            kind = check_outcome(raw, rc, out.getvalue(), err.getvalue())
            seen[kind] = seen.get(kind, 0) + 1
    assert seen.get("allow", 0) >= 5 and seen.get("block", 0) >= len(BASES)
