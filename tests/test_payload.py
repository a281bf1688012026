"""The payload object (SPEC §3): every key present, Bash calls parsed for scripts."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from slopjudge.model import Changeset, Event, FileChange, Rule
from slopjudge.payload import CHECK_ENV, build_payload, file_payload, for_rule, payload_keys
from tests.helpers import script_rule, sj
from tests.payloadcheck import PayloadCheck, PayloadShapeError, check_shape, shape_problems

KEYS = {"event", "rule", "check", "workspace", "changeset", "change", "additionalContext", "rubric"}
EVENT_KEYS = {"kind", "tool_name", "tool_input", "session_id", "transcript_path", "cwd", "argv",
              "raw", "invocations", "citations"}


def payload(event: Event, files: list[FileChange] | None = None) -> dict:
    return build_payload(event=event, workspace="/ws", changeset=Changeset(), files=files or [],
                         others=[], change="", rule=Rule("r", "/ws/rules/r.yaml", "/ws/rules", "d"),
                         check_id="c")


def test_every_key_is_present_even_when_unknown() -> None:
    data = payload(Event(kind="ci"))
    assert set(data) == KEYS and set(data["event"]) == EVENT_KEYS
    assert set(data["changeset"]) == {"base", "head", "commits", "files", "others",
                                      "citations"}
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
        "hunks": [],
    }]


# ---- one shape: schemas/payload.schema.json ------------------------------------------------


KEEP_PAYLOADS = """
import sys
from slopjudge.model import Changeset, Event, FileChange
from slopjudge.payload import build_payload
for status in sys.argv[1:]:
    build_payload(event=Event(kind="ci"), workspace="/ws", changeset=Changeset(), others=[],
                  files=[FileChange(path="a.py", status=status, diff="")], change="")
"""


def test_every_payload_a_subprocess_builds_is_checked_after_its_test(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # tests/conftest.py hands this process and every subprocess a folder to keep payloads in.
    assert os.path.isdir(os.path.dirname(os.environ[CHECK_ENV]))
    monkeypatch.setenv(CHECK_ENV, os.environ[CHECK_ENV])  # restored after this test
    check = PayloadCheck()
    try:
        folder = check.start("tests/x.py::t")

        def build(*statuses: str) -> None:
            subprocess.run([sys.executable, "-c", KEEP_PAYLOADS, *statuses], check=True)

        build("A", "A", "M")
        assert len(os.listdir(folder)) == 2  # the same payload twice is kept once
        check.finish(folder)  # valid: nothing raised
        other = check.start("tests/x.py::u")
        build("X")
        with pytest.raises(PayloadShapeError,
                           match=r"tests/x.py::u: .* at /changeset/files/0/status: 'X' is not one"):
            check.finish(other)
        # a payload kept after its test had finished is checked when the session ends
        os.environ[CHECK_ENV] = str(folder)
        build("Y")
        with pytest.raises(PayloadShapeError, match=r"tests/x.py::t: .* 'Y' is not one"):
            check.close()
    finally:
        shutil.rmtree(check.root, ignore_errors=True)  # close() keeps it after a failure


@pytest.mark.parametrize("break_it,where", [
    (lambda p: p.pop("rubric"), "at /: 'rubric' is a required property"),
    (lambda p: p["changeset"]["files"][0].pop("hunks"), "at /changeset/files/0: 'hunks'"),
    (lambda p: p["changeset"]["files"][0]["hunks"][0]["added"].append([0, "x"]),
     "at /changeset/files/0/hunks/0/added/2/0: 0 is less than the minimum of 1"),
    (lambda p: p["changeset"]["files"][0]["hunks"][0].update(newStart="1"),
     "at /changeset/files/0/hunks/0/newStart: '1' is not of type 'integer'"),
    (lambda p: p["event"].update(kind="post-tool"), "at /event/kind: 'post-tool' is not one of"),
    (lambda p: p.update(extra=1), "at /: Additional properties are not allowed ('extra'"),
    (lambda p: p["changeset"]["others"].append({"path": "b"}), "at /changeset/others/0: 'status'"),
])
def test_a_payload_of_the_wrong_shape_fails_validation(
    break_it: Callable[[dict[str, Any]], object], where: str
) -> None:
    data = from_diff_payload(SAMPLE_DIFF)
    assert shape_problems(data) == []
    break_it(data)
    problems = shape_problems(data)
    assert problems and problems[0].startswith(where), problems
    with pytest.raises(PayloadShapeError):
        check_shape(data)


def test_the_schema_is_the_one_list_of_top_level_keys() -> None:
    from slopjudge.loading.schemas import load_schema
    from slopjudge.loading.templates import CONTEXT_KEYS, synthetic_payload

    schema = load_schema("payload.schema.json")
    assert set(schema["required"]) == KEYS == set(payload_keys())
    assert CONTEXT_KEYS[: len(KEYS)] == payload_keys()
    # the load-time sample is a real payload plus the two template-only names
    sample = synthetic_payload()
    assert set(sample) == KEYS | {"unit", "subject"}
    assert shape_problems({k: v for k, v in sample.items() if k not in ("unit", "subject")}) == []


# ---- parsed hunks -----------------------------------------------------------------------


SAMPLE_DIFF = (
    "diff --git a/src/a.py b/src/a.py\n"
    "index 1111111..2222222 100644\n"
    "--- a/src/a.py\n"
    "+++ b/src/a.py\n"
    "@@ -2,4 +2,5 @@ def f():\n"
    " keep = 1\n"
    "-old = 2\n"
    "+new = 2\n"
    "+more = 3\r\n"
    " \n"
    " tail = 4\n"
    "@@ -20 +21,0 @@\n"
    "-gone = 9\n"
    "\\ No newline at end of file\n"
)


def from_diff_payload(diff: str) -> dict[str, Any]:
    from slopjudge.changes.changeset import read_diff

    cs = read_diff(diff.encode(), "x.diff")
    _, data = for_rule(event=Event(kind="ci"), workspace="/ws", changeset=cs, rule=None)
    return data


def test_each_file_carries_its_hunks_with_line_numbers() -> None:
    [f] = from_diff_payload(SAMPLE_DIFF)["changeset"]["files"]
    assert f["hunks"] == [
        {"oldStart": 2, "oldLines": 4, "newStart": 2, "newLines": 5,
         "added": [[3, "new = 2"], [4, "more = 3\r"]], "removed": [[3, "old = 2"]],
         "context": [[2, "keep = 1"], [5, ""], [6, "tail = 4"]]},
        {"oldStart": 20, "oldLines": 1, "newStart": 21, "newLines": 0,
         "added": [], "removed": [[20, "gone = 9"]], "context": []},
    ]


def test_a_file_made_without_a_parse_gets_its_hunks_from_its_diff() -> None:
    f = FileChange(path="src/a.py", status="M", diff=SAMPLE_DIFF)
    assert file_payload(f)["hunks"] == from_diff_payload(SAMPLE_DIFF)["changeset"]["files"][0][
        "hunks"]
    assert file_payload(FileChange(path="b.bin", status="M", binary=True,
                                   diff="Binary files a/b.bin and b/b.bin differ\n"))["hunks"] == []


def test_a_proposed_edit_carries_the_hunks_of_its_synthesized_diff(tmp_path: Path) -> None:
    from slopjudge.changes.changeset import from_proposed_edits

    (tmp_path / "a.py").write_text("one\ntwo\nthree\n")
    cs = from_proposed_edits(str(tmp_path), [("a.py", None, "one\n2\nthree\nfour")])
    [h] = file_payload(cs.files[0])["hunks"]
    assert h["added"] == [[2, "2"], [4, "four"]] and h["removed"] == [[2, "two"]]
    assert h["context"] == [[1, "one"], [3, "three"]]


def test_slopjudge_payload_prints_what_the_engine_builds(tmp_path: Path) -> None:
    script_rule(tmp_path / "rules", "py", "exit 0", paths=["src/**"])
    diff = tmp_path / "x.diff"
    diff.write_text(SAMPLE_DIFF + SAMPLE_DIFF.replace("src/a.py", "docs/b.py"))
    proc = sj("payload", "--diff", str(diff), "--rule", "py", "--rules", str(tmp_path / "rules"),
              cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    printed = json.loads(proc.stdout)
    assert shape_problems(printed) == []
    assert [f["path"] for f in printed["changeset"]["files"]] == ["src/a.py"]
    assert printed["changeset"]["others"] == [{"path": "docs/b.py", "status": "M"}]
    assert printed["changeset"]["files"][0]["hunks"] == from_diff_payload(SAMPLE_DIFF)[
        "changeset"]["files"][0]["hunks"]
    assert printed["check"] == {"id": "check"} and printed["event"]["cwd"] == str(tmp_path)


def test_a_pack_script_given_files_without_parsed_hunks_crashes_rather_than_passes() -> None:
    exe = Path(__file__).resolve().parent.parent / "rules" / "placeholder-code" / "check.py"
    data = from_diff_payload(SAMPLE_DIFF.replace("+new = 2", "+raise NotImplementedError"))
    data["changeset"]["files"][0]["newContent"] = None
    ok = subprocess.run([sys.executable, str(exe)], input=json.dumps(data), text=True,
                        capture_output=True, cwd=exe.parent, timeout=60)
    del data["changeset"]["files"][0]["hunks"]
    old = subprocess.run([sys.executable, str(exe)], input=json.dumps(data), text=True,
                         capture_output=True, cwd=exe.parent, timeout=60)
    assert ok.returncode == 1 and json.loads(ok.stdout)["findings"][0]["line"] == 3, ok.stdout
    assert old.returncode == 2 and "carry no parsed hunks" in json.loads(old.stdout)["reason"]


def test_a_judge_part_holding_some_hunks_of_a_file_carries_only_their_parsed_hunks() -> None:
    from slopjudge.checks.split import plan

    body = "".join(f"@@ -{n * 100 + 1} +{n * 100 + 1} @@\n-old {n}\n+{'x' * 300} {n}\n"
                   for n in range(3))
    diff = "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n" + body
    data = from_diff_payload(diff)

    def render(payload: dict[str, Any]) -> str:
        return json.dumps(payload["changeset"]["files"])

    result = plan(data, each_file=False, render=render, budget=400)
    assert result.problems == [] and len(result.parts) == 3
    for n, part in enumerate(result.parts):
        [f] = part.payload["changeset"]["files"]
        assert [h["added"][0][1] for h in f["hunks"]] == [f"{'x' * 300} {n}"]
        assert f"+{'x' * 300} {n}\n" in f["diff"]
