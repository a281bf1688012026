"""The payload object (SPEC §3): every key present, Bash calls parsed for scripts."""

from __future__ import annotations

from slopjudge.model import Changeset, Event, FileChange, Rule
from slopjudge.payload import build_payload

KEYS = {"event", "rule", "check", "workspace", "changeset", "change", "additionalContext", "rubric"}
EVENT_KEYS = {"kind", "tool_name", "tool_input", "session_id", "transcript_path", "cwd", "argv"}


def payload(event: Event, files: list[FileChange] | None = None) -> dict:
    return build_payload(event=event, workspace="/ws", changeset=Changeset(), files=files or [],
                         others=[], change="", rule=Rule("r", "/ws/rules/r.yaml", "/ws/rules", "d"),
                         check_id="c")


def test_every_key_is_present_even_when_unknown() -> None:
    data = payload(Event(kind="ci"))
    assert set(data) == KEYS and set(data["event"]) == EVENT_KEYS
    assert set(data["changeset"]) == {"base", "head", "commits", "files", "others"}
    assert data["event"]["argv"] is None and data["changeset"]["base"] is None


def test_a_bash_call_carries_each_simple_command_as_argv() -> None:
    cmd = "cd build && sudo rm -rf '/var/lib/my app' ; git push --force origin main | tee log"
    data = payload(Event(kind="pre-tool", tool_name="Bash", tool_input={"command": cmd}))
    assert data["event"]["tool_input"]["command"] == cmd
    assert data["event"]["argv"] == [
        ["cd", "build"],
        ["sudo", "rm", "-rf", "/var/lib/my app"],
        ["git", "push", "--force", "origin", "main"],
        ["tee", "log"],
    ]


def test_other_tools_have_no_argv_and_files_use_spec_names() -> None:
    f = FileChange(path="a.py", status="R", old_path="b.py", old_content="x\n", new_content="y\n",
                   diff="diff --git a/b.py b/a.py\n")
    data = payload(Event(kind="pre-tool", tool_name="Write", tool_input={"file_path": "/ws/a.py"}),
                   [f])
    assert data["event"]["argv"] is None
    assert data["changeset"]["files"] == [{
        "path": "a.py", "status": "R", "oldPath": "b.py", "oldContent": "x\n",
        "newContent": "y\n", "diff": "diff --git a/b.py b/a.py\n", "binary": False,
    }]
