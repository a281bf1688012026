"""The load check run by hand (`slopjudge hook start < /dev/null`) and `validate --format json`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SLOPJUDGE = str(Path(sys.executable).parent / "slopjudge")


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    for rule in ("placeholder-code", "debug-leftovers"):
        shutil.copytree(ROOT / "rules" / rule, tmp_path / "rules" / rule)
    return tmp_path


def run(ws: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLOPJUDGE_", "CLAUDE_"))}
    return subprocess.run([SLOPJUDGE, *args], cwd=ws, env=env, input=stdin,
                          stdin=subprocess.DEVNULL if stdin is None else None,
                          capture_output=True, text=True, timeout=60)


def break_one(ws: Path) -> None:
    (ws / "rules" / "broken.yaml").write_text("description: broken\non: [sometimes]\n")


COUNT_TAIL = ". This only checked that they load: no rule ran."


def run_to_files(ws: Path, tmp: Path, stdin: str | None) -> tuple[int, str, str]:
    """The real hook process, its output in files read the moment it has exited: what
    it says after returning (or leaves to a process it started) is not in them."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLOPJUDGE_", "CLAUDE_"))}
    with open(tmp / "out", "w+b") as out, open(tmp / "err", "w+b") as err:
        proc = subprocess.Popen([SLOPJUDGE, "hook", "start"], cwd=ws, env=env, stdout=out,
                                stderr=err, stdin=subprocess.PIPE)
        proc.communicate(None if stdin is None else stdin.encode(), timeout=60)
        out.seek(0)
        err.seek(0)
        return proc.returncode, out.read().decode(), err.read().decode()


def session_payload(ws: Path) -> str:
    return json.dumps({"hook_event_name": "SessionStart", "session_id": "s",
                       "source": "startup", "cwd": str(ws)})


def test_the_standalone_load_check_says_it_ran(ws: Path, tmp_path_factory) -> None:
    code, out, err = run_to_files(ws, tmp_path_factory.mktemp("o"), "")
    assert (code, out) == (0, "")
    assert err == f"slopjudge: 2 rules loaded{COUNT_TAIL}\n"


def test_the_standalone_load_check_counts_what_did_not_load(ws: Path, tmp_path_factory) -> None:
    break_one(ws)
    code, out, err = run_to_files(ws, tmp_path_factory.mktemp("o"), "")
    assert code == 0
    lines = err.splitlines()
    assert lines[0] == "slopjudge load check: these rules are NOT in force until fixed:"
    assert not any(line.startswith("slopjudge: slopjudge") for line in lines)
    broken = [line for line in lines if line.startswith("- rules/broken.yaml does not load: ")]
    assert broken == [
        "- rules/broken.yaml does not load: rules/broken.yaml:1:1: the rule is missing the "
        "required field `checks`",
        "- rules/broken.yaml does not load: rules/broken.yaml:2:6: `on[0]`: `sometimes` is "
        "not one of pre-tool, stop, subagent-stop, ci"]
    assert "A person must fix these rule files (`slopjudge validate` checks them)" in err
    assert lines[-1] == f"slopjudge: 2 rules loaded, 1 could not load (above){COUNT_TAIL}"
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert context.startswith("slopjudge load check: these rules are NOT in force")
    assert context.endswith(lines[-1])


def test_a_session_start_always_says_the_count(ws: Path, tmp_path_factory) -> None:
    code, out, err = run_to_files(ws, tmp_path_factory.mktemp("o"), session_payload(ws))
    assert code == 0
    # A session also hears whether it is sealed (tests/test_sealed.py), then the count.
    sealing, count = json.loads(out)["systemMessage"].split("\n")
    assert sealing.startswith("slopjudge: this session is NOT sealed")
    assert count == f"slopjudge: 2 rules loaded{COUNT_TAIL}"
    assert err == f"{sealing}\n{count}\n"


def test_a_session_start_with_a_broken_rule(ws: Path, tmp_path_factory) -> None:
    break_one(ws)
    code, out, err = run_to_files(ws, tmp_path_factory.mktemp("o"), session_payload(ws))
    assert code == 0
    answer = json.loads(out)
    count = f"slopjudge: 2 rules loaded, 1 could not load (above){COUNT_TAIL}"
    assert answer["systemMessage"].endswith("\n" + count)
    context = answer["hookSpecificOutput"]["additionalContext"]
    assert "- rules/broken.yaml does not load: rules/broken.yaml:2:" in context
    assert context.endswith(count) and err.endswith(count + "\n")


def test_one_rule_loaded_is_said_in_the_singular(ws: Path, tmp_path_factory) -> None:
    shutil.rmtree(ws / "rules" / "debug-leftovers")
    code, _, err = run_to_files(ws, tmp_path_factory.mktemp("o"), None)
    assert (code, err) == (0, f"slopjudge: 1 rule loaded{COUNT_TAIL}\n")


def test_an_unreadable_payload_is_said_and_the_count_still_comes(ws: Path,
                                                                 tmp_path_factory) -> None:
    code, out, err = run_to_files(ws, tmp_path_factory.mktemp("o"), "{not json")
    assert (code, out) == (0, "")
    lines = err.splitlines()
    assert lines[0].startswith("slopjudge: could not read the SessionStart payload (not JSON")
    assert lines[-1] == f"slopjudge: 2 rules loaded{COUNT_TAIL}"


def test_validate_json_for_tools(ws: Path) -> None:
    proc = run(ws, "validate", "--format", "json")
    assert proc.returncode == 0
    data = json.loads(proc.stdout)
    assert data | {"status": None, "preview_off": None} == {
        "ok": True, "loaded": 2, "not_loaded": 0,
        "rules": ["debug-leftovers", "placeholder-code"], "preview_off": None, "errors": [],
        "status": None}
    assert sorted(data["status"]) == ["debug-leftovers", "placeholder-code"]
    assert data["preview_off"] == [r for r, s in data["status"].items() if s["preview"]]
    break_one(ws)
    proc = run(ws, "validate", "--format", "json")
    assert proc.returncode == 1
    data = json.loads(proc.stdout)
    assert (data["ok"], data["loaded"], data["not_loaded"]) == (False, 2, 1)
    assert {e["path"] for e in data["errors"]} == {"rules/broken.yaml"}
    for error in data["errors"]:
        assert set(error) == {"path", "line", "col", "message", "rule", "text", "on", "tools"}
        assert error["text"] == f"{error['path']}:{error['line']}:{error['col']}: " \
                                f"{error['message']}"
    # The text summary says the same.
    assert run(ws, "validate").stdout.splitlines()[-1] == (
        f"slopjudge: 2 rule(s) loaded; {len(data['errors'])} problem(s) in 1 file(s)")
