"""The default rule pack's scripts, run as real subprocesses on hand-built payloads.

What a case folder under tests/rules/ cannot show: empty and broken input, the
prepare scripts' context, and tool calls that need a workspace of a given shape.
The payloads follow SPEC §3; diffs are real unified diffs made with difflib.
"""

from __future__ import annotations

import difflib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Literal

import pytest

from slopjudge.model import Changeset, Event, FileChange, Rule
from slopjudge.payload import for_rule

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "rules"

# Secret-shaped values are assembled at run time so this file holds none.
AWS_KEY_ID = "AKIA" + "Q3XHZ7LMN4P2R8TV"
STRIPE_LIVE = "sk_" + "live_51Hx7Ue2eZvKYlo2C8xQm3Tn9"
PEM_HEADER = "-----BEGIN " + "RSA PRIVATE KEY-----"
ROCKET = "\U0001F680"


def file_change(path: str, old: str | None, new: str | None) -> FileChange:
    a = (old or "").splitlines(keepends=True)
    b = (new or "").splitlines(keepends=True)
    head = f"diff --git a/{path} b/{path}\n" + ("new file mode 100644\n" if old is None else "")
    body = "".join(
        difflib.unified_diff(a, b, "/dev/null" if old is None else f"a/{path}", f"b/{path}")
    )
    status: Literal["A", "M", "D"] = "A" if old is None else "D" if new is None else "M"
    return FileChange(path=path, status=status, old_content=old, new_content=new,
                      diff=head + body)


def payload(files: list[FileChange], *, workspace: str = "/nonexistent-ws", rule: str = "x",
            event: Event | None = None) -> dict[str, Any]:
    """The payload slopjudge's own builder makes (hunks parsed by slopjudge included)."""
    the_rule = Rule(id=rule, path=str(RULES / rule / "rule.yaml"), dir=str(RULES / rule),
                    description="")
    _, data = for_rule(event=event or Event(kind="ci"), workspace=workspace,
                       changeset=Changeset(files=files), rule=the_rule, check_id="scan")
    return data


def run(rule: str, data: dict[str, Any], script: str = "check.py") -> tuple[int, dict[str, Any]]:
    exe = RULES / rule / script
    # As slopjudge runs a Python check: on its own interpreter (the pack imports slopjudge).
    proc = subprocess.run([sys.executable, str(exe)], input=json.dumps(data),
                          capture_output=True, text=True, cwd=exe.parent, timeout=60)
    assert proc.returncode in (0, 1), f"{rule}: exit {proc.returncode}: {proc.stdout}{proc.stderr}"
    out = json.loads(proc.stdout) if proc.stdout.strip() else {}
    return proc.returncode, out


def added(path: str, text: str) -> list[FileChange]:
    return [file_change(path, None, text)]


def modified(path: str, old: str, new: str) -> list[FileChange]:
    """A modification seen from a bare diff: no newContent, so scripts read the hunks only."""
    fc = file_change(path, old, new)
    fc.new_content = None
    fc.old_content = None
    return [fc]


# The pack's refuse/pass cases live in one format, tests/rules/<rule>/<case>/ (run by
# `slopjudge test` in test_self.py); this file keeps what a case folder cannot show:
# empty input, crashes, the prepare scripts' context, and workspace-shaped tool calls.


CONTENT_RULES = sorted(p.parent.name for p in RULES.glob("*/check.py"))
PREPARES = sorted(p.parent.name for p in RULES.glob("*/prepare.py"))


@pytest.mark.parametrize("rule", CONTENT_RULES)
def test_every_script_passes_an_empty_changeset(rule: str) -> None:
    assert run(rule, payload([], rule=rule)) == (0, {})


@pytest.mark.parametrize("rule", CONTENT_RULES + PREPARES)
def test_every_script_is_executable_with_a_python_shebang(rule: str) -> None:
    for name in ("check.py", "prepare.py"):
        exe = RULES / rule / name
        if exe.exists():
            assert os.access(exe, os.X_OK)
            assert exe.read_text().startswith("#!/usr/bin/env python3\n")


def test_every_script_passes_empty_stdin() -> None:
    for exe in sorted(RULES.glob("*/check.py")):
        proc = subprocess.run([sys.executable, str(exe)], input="", capture_output=True,
                              text=True, cwd=exe.parent, timeout=60)
        assert proc.returncode == 0, f"{exe}: {proc.stdout}{proc.stderr}"


def test_a_crashing_script_refuses_with_one_line() -> None:
    exe = RULES / "placeholder-code" / "check.py"
    proc = subprocess.run([sys.executable, str(exe)], input="{not json", capture_output=True,
                          text=True, cwd=exe.parent, timeout=60)
    assert proc.returncode == 2
    reason = json.loads(proc.stdout)["reason"]
    assert reason.startswith("the check crashed: JSONDecodeError") and "\n" not in reason
    assert "Traceback" not in proc.stderr


# ----------------------------------------------------------------------------- prepares


def prepare(
    rule: str, files: list[FileChange], workspace: str = "/nonexistent-ws"
) -> dict[str, Any]:
    code, out = run(rule, payload(files, rule=rule, workspace=workspace), script="prepare.py")
    assert code == 0
    return out


def test_weakened_tests_prepare_skips_without_removed_assertions() -> None:
    assert prepare(
        "weakened-tests", added("tests/test_a.py", "def test_a():\n    assert f() == 1\n")
    ) == {"skip": True}


def test_weakened_tests_prepare_lists_a_loosened_assertion() -> None:
    files = modified(
        "tests/test_a.py",
        "def test_a():\n    assert f() == 5400\n",
        "def test_a():\n    assert f() is not None\n",
    )
    ctx = prepare("weakened-tests", files)["additionalContext"]["removed_assertions"]
    assert ctx == [{"path": "tests/test_a.py", "removed_or_changed": ["assert f() == 5400"],
                    "looser": ["assert f() is not None"]}]


def test_weakened_tests_prepare_skips_an_expected_value_rewritten_with_the_code() -> None:
    test = modified(
        "tests/test_a.py",
        "def test_a():\n    assert f() == 5400\n",
        "def test_a():\n    assert f() == 5401\n",
    )
    code = modified("src/a.py", "def f():\n    return 5400\n", "def f():\n    return 5401\n")
    assert prepare("weakened-tests", test + code) == {"skip": True}
    assert "additionalContext" in prepare("weakened-tests", test)  # no code changed: ask


def test_weakened_tests_prepare_ignores_a_moved_assertion() -> None:
    old = "def test_a():\n    x = 1\n    assert f() == 1\n"
    new = "def test_a():\n    assert f() == 1\n    x = 1\n"
    assert prepare("weakened-tests", modified("tests/test_a.py", old, new)) == {"skip": True}


def test_hardcoded_results_prepare_sees_a_literal_shared_with_tests() -> None:
    files = added(
        "src/ship.py", "def cost(w):\n    if w == 2.5:\n        return 22.75\n    return 0\n"
    )
    files += added("tests/test_ship.py", "def test_cost():\n    assert cost(2.5) == 22.75\n")
    out = prepare("hardcoded-results", files)
    lines = out["additionalContext"]["suspicious_lines"]
    assert any("22.75" in s.get("literals", []) for s in lines)


def test_hardcoded_results_prepare_sees_test_detection(tmp_path: Path) -> None:
    files = added(
        "src/a.py",
        "import os\n\ndef f():\n    if os.environ.get('PYTEST_CURRENT_TEST'):\n        return 1\n",
    )
    out = prepare("hardcoded-results", files, workspace=str(tmp_path))
    assert out["additionalContext"]["suspicious_lines"][0]["signal"] == "detects a test run"


def test_hardcoded_results_prepare_skips_plain_code(tmp_path: Path) -> None:
    files = added("src/a.py", "def area(w, h):\n    return w * h\n")
    assert prepare("hardcoded-results", files, workspace=str(tmp_path)) == {"skip": True}


def test_narration_prepare_flags_restating_comments() -> None:
    src = (
        "def f(items):\n    # Initialize the count\n    count = 0\n"
        "    # Loop through the items\n    for i in items:\n"
        "        # Increment the count\n        count += 1\n    return count\n"
    )
    out = prepare("narration-comments", added("src/a.py", src))
    assert len(out["additionalContext"]["suspicious_comments"]) >= 2


def test_narration_prepare_flags_edit_narration() -> None:
    out = prepare(
        "narration-comments", added("src/a.py", "# Added retry logic as requested\nx = retry(f)\n")
    )
    assert out["additionalContext"]["suspicious_comments"][0]["kind"] == "narrates the edit"


def test_narration_prepare_skips_why_comments() -> None:
    src = (
        "def f(v):\n    # CDN overwrites the header, so take the last hop it added.\n"
        "    return v.split(',')[-1]\n"
    )
    assert prepare("narration-comments", added("src/a.py", src)) == {"skip": True}


# ----------------------------------------------------------------------------- pre-tool


def bash(command: str, ws: Path, cwd: Path | None = None) -> dict[str, Any]:
    ev = Event(kind="pre-tool", tool_name="Bash", tool_input={"command": command},
               session_id="s", cwd=str(cwd or ws))
    return payload([], workspace=str(ws), event=ev)


def file_tool(tool: str, path: str, ws: Path) -> dict[str, Any]:
    key = "notebook_path" if tool == "NotebookEdit" else "file_path"
    ev = Event(kind="pre-tool", tool_name=tool, tool_input={key: path, "content": "x"},
               session_id="s", cwd=str(ws))
    return payload([], workspace=str(ws), event=ev)


def test_destructive_shell_follows_cd_out_of_the_workspace(tmp_path: Path) -> None:
    inside = tmp_path / "ws"
    inside.mkdir()
    assert run("destructive-shell", bash("rm -rf build", inside))[0] == 0
    code, out = run("destructive-shell", bash("cd .. && rm -rf build", inside))
    assert code == 1 and "outside the workspace" in out["reason"]


def test_write_through_a_symlink_out_of_the_workspace_is_refused(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "outside").mkdir()
    (ws / "link").symlink_to(tmp_path / "outside")
    code, _ = run("write-outside-workspace", file_tool("Edit", str(ws / "link" / "x.txt"), ws))
    assert code == 1


def test_notebook_edit_outside_is_refused(tmp_path: Path) -> None:
    assert (
        run("write-outside-workspace", file_tool("NotebookEdit", "/opt/nb.ipynb", tmp_path))[0] == 1
    )


@pytest.mark.parametrize("tool,arg,refuses", [
    ("Write", "{ws}/rules/skipped-tests/rule.yaml", True),
    ("Edit", "{ws}/rules/_lib/slopscan.py", True),
    ("Write", "{ws}/slopjudge.yaml", True),
    ("Edit", "{ws}/.claude/settings.json", True),
    ("Write", "{ws}/RUBRIC.md", True),
    ("Write", "{ws}/src/rules.py", False),
    ("Write", "{ws}/docs/rules.md", False),
    ("Bash", "sed -i 's/a/b/' rules/x/rule.yaml", True),
    ("Bash", "echo x >> rules/x.yaml", True),
    ("Bash", "rm -rf rules", True),
    ("Bash", "mv rules/x.yaml /tmp/", True),
    ("Bash", "git checkout -- rules/x.yaml", True),
    ("Bash", "cat rules/x/rule.yaml", False),
    ("Bash", "grep -rn description rules", False),
    ("Bash", "cp rules/x/rule.yaml /tmp/review.yaml", False),
])
def test_protect_rules(tmp_path: Path, tool: str, arg: str, refuses: bool) -> None:
    ws = tmp_path
    (ws / "rules" / "protect-rules").mkdir(parents=True)
    data = bash(arg, ws) if tool == "Bash" else file_tool(tool, arg.format(ws=ws), ws)
    data["rule"]["dir"] = str(ws / "rules" / "protect-rules")
    code, out = run("protect-rules", data)
    assert code == (1 if refuses else 0), out
    if refuses:
        assert "agents may not change them" in out["reason"]


# ----------------------------------------------------------------------------- added vs touched


def test_moved_and_reformatted_lines_are_not_added() -> None:
    old = ("def dump(g):\n    for r in g:\n        print(r, '->', g[r])\n\n\n"
           "def push(c, items):\n    try:\n        c.put(items)\n    except Exception:\n        pass\n")
    new = ("def push(c, items):\n    with c.session():\n        try:\n            c.put(items)\n"
           "        except Exception:\n            pass\n\n\n"
           "def dump(g):\n    for r in g:\n        print(\n            r,\n            \"->\",\n"
           "            g[r],\n        )\n")
    files = modified("app/grammar.py", old, new)
    assert run("swallowed-errors", payload(files))[0] == 0
    assert run("debug-leftovers", payload(files))[0] == 0
    # the same handler written anew is still found
    fresh = modified("app/grammar.py", old, old + "\n\ndef f():\n    try:\n        g()\n"
                     "    except Exception:\n        pass\n")
    assert run("swallowed-errors", payload(fresh))[0] == 1


def test_a_repository_names_its_test_data(monkeypatch: pytest.MonkeyPatch) -> None:
    files = added("regress/inputs/ignores.py", "x = call()  # type: ignore\n")
    assert run("blanket-suppressions", payload(files))[0] == 1
    monkeypatch.setenv("SLOPJUDGE_TEST_DATA", "regress/inputs/**")
    assert run("blanket-suppressions", payload(files))[0] == 0
