"""A pack's shared helpers (``rules/_lib``) are imported by each Python check, in its
own process. Whatever a helper does while it loads (exits, hangs), the hook still
decides on every rule, and a check imports what ``python script`` would."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.failclosed.hooks_kit import deny_reason, hook, make_ws, pre_tool
from tests.helpers import commit_all, executable, sj

USES_HELPER = """\
description: Uses a helper of the pack's shared folder
on: [pre-tool]
tools: [Bash]
checks:
  - id: check
    script: check.py
    timeout: 2s
"""

CHECK = """\
#!/usr/bin/env python3
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_lib"))
import needsdep  # noqa: E402
"""

# A Bash call protect-rules refuses: whatever the helper does, that refusal stands.
WRITES_RULES = {"command": "echo x > rules/a.yaml"}


def _ws_with_helper(tmp_path: Path, helper: str, *, protect: bool = True) -> Path:
    ws = make_ws(tmp_path, pack=("protect-rules", "_lib") if protect else ("_lib",))
    (ws / "rules" / "_lib" / "needsdep.py").write_text(helper)
    (ws / "rules" / "uses-helper").mkdir()
    (ws / "rules" / "uses-helper" / "rule.yaml").write_text(USES_HELPER)
    executable(ws / "rules" / "uses-helper" / "check.py", CHECK)
    commit_all(ws)
    return ws


@pytest.mark.parametrize("code", [0, 1])
def test_a_helper_that_exits_while_loading_does_not_end_the_hook(tmp_path: Path,
                                                                  code: int) -> None:
    ws = _ws_with_helper(tmp_path, f"import sys\nsys.exit({code})\n")
    rc, out, err = hook("pre-tool", ws, pre_tool(ws, "Bash", WRITES_RULES), process=True)
    assert rc == 0, err
    assert "protect-rules" in deny_reason(out)


def test_a_helper_that_hangs_while_loading_is_an_error_at_the_check_timeout(
        tmp_path: Path) -> None:
    ws = _ws_with_helper(tmp_path, "import time\ntime.sleep(60)\n", protect=False)
    started = time.monotonic()
    rc, out, err = hook("pre-tool", ws, pre_tool(ws, "Bash", {"command": "ls"}),
                        process=True, timeout=50)
    assert time.monotonic() - started < 30
    assert rc == 0, err
    reason = deny_reason(out)
    assert "uses-helper" in reason and "timed out after 2 s" in reason
    assert "could not decide" in reason


def test_a_module_beside_the_script_wins_over_a_preloaded_helper(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    folder = ws / "rules" / "own-module"
    folder.mkdir()
    (folder / "rule.yaml").write_text(USES_HELPER.replace("Uses a helper", "Own module"))
    # Same name as the pack's helper rules/_lib/shellparse.py (as under `python script.py`).
    (folder / "shellparse.py").write_text('BANNED = ("danger",)\n')
    executable(folder / "check.py", """\
#!/usr/bin/env python3
import json, os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_lib"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import shellparse  # noqa: E402
command = json.load(sys.stdin)["event"]["tool_input"]["command"]
if any(word in command for word in getattr(shellparse, "BANNED", ())):
    print(json.dumps({"reason": "a banned word"}))
    sys.exit(1)
""")
    commit_all(ws)
    rc, out, err = hook("pre-tool", ws, pre_tool(ws, "Bash", {"command": "echo danger"}),
                        process=True)
    assert rc == 0, err
    assert "a banned word" in deny_reason(out)


def test_a_ci_run_with_a_helper_that_hangs_ends_in_an_error(tmp_path: Path) -> None:
    ws = _ws_with_helper(tmp_path, "import time\ntime.sleep(60)\n")
    rule = ws / "rules" / "uses-helper" / "rule.yaml"
    rule.write_text(rule.read_text().replace("on: [pre-tool]\ntools: [Bash]\n", "on: [ci]\n"))
    commit_all(ws, "on ci")
    (ws / "a.txt").write_text("changed\n")
    commit_all(ws, "a change")
    started = time.monotonic()
    # A process of its own: the import left hanging must not stay in this one.
    res = sj("run", "--base", "HEAD~1", cwd=ws, timeout=50, process=True)
    assert time.monotonic() - started < 30
    assert res.returncode not in (0, 1), res.stdout  # not a pass, not the code's refusal
    assert "timed out after 2 s" in res.stdout + res.stderr


def test_a_slow_helper_fails_only_the_checks_whose_own_timeout_it_outlives(
        tmp_path: Path) -> None:
    # Two rules share a helper that takes ~1.5 s to load: the one with 1 s to run is an
    # error, the one with 20 s waits its own time on the same load and passes.
    ws = make_ws(tmp_path, pack=("_lib",))
    (ws / "rules" / "_lib" / "slowhelper.py").write_text("import time\ntime.sleep(1.5)\n")
    for rid, timeout in (("quick", "1s"), ("patient", "20s")):
        (ws / "rules" / rid).mkdir()
        (ws / "rules" / rid / "rule.yaml").write_text(
            f"description: Uses a slow helper\non: [ci]\nchecks:\n  - id: check\n"
            f"    script: check.py\n    timeout: {timeout}\n")
        executable(ws / "rules" / rid / "check.py",
                   CHECK.replace("import needsdep", "import slowhelper"))
    commit_all(ws, "rules")
    (ws / "a.txt").write_text("changed\n")
    commit_all(ws, "a change")
    res = sj("run", "--base", "HEAD~1", "--format", "json", cwd=ws, timeout=60, process=True)
    outcomes = {c["id"]: (c["outcome"], c["reason"]) for c in json.loads(res.stdout)["checks"]}
    assert outcomes["quick/check"][0] == "error", outcomes
    assert "timed out after 1 s" in outcomes["quick/check"][1]
    assert outcomes["patient/check"] == ("pass", ""), outcomes
