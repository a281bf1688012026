"""unidiff reads a file section's hunks in one go; what it gives equals reading each hunk alone."""

from __future__ import annotations

from typing import Any

from slopjudge.changes import diffparse
from slopjudge.changes.changeset import from_diff
from slopjudge.payload import file_payload

HEAD = "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n"
MIXED = (HEAD + "@@ -1,2 +1,2 @@ def f():\n a\n-b\n\\ Kein Zeilenumbruch\n+c\n"
         "@@ -7,3 +7,2 @@\n x\n-y\n\n@@ -20 +19,2 @@\n-q\n+r\r\n+s\n\\ No newline at end of file\n")


def _alone(diff: str) -> list[list[dict[str, Any]]]:
    parts, lines = diffparse.parse(diff.encode())
    out = []
    for part in parts:
        for h in part.hunks:
            diffparse._read([h], lines)  # each hunk its own PatchSet, as before
        out.append(diffparse.hunk_payloads(part, lines))
    return out


def test_one_read_per_section_equals_one_read_per_hunk() -> None:
    together = [file_payload(f)["hunks"] for f in from_diff(MIXED.encode()).files]
    assert together == _alone(MIXED)
    [[first, second, third]] = together
    assert first["removed"] == [[2, "b"]] and first["added"] == [[2, "c"]]
    assert second["context"] == [[7, "x"], [8, ""]] and third["added"] == [[19, "r\r"], [20, "s"]]


def test_a_hunk_with_no_body_before_another_is_still_read_alone() -> None:
    # unidiff would take the next header as the empty hunk's body: read hunk by hunk.
    diff = HEAD + "@@ -1,2 +1,2 @@\n@@ -5 +5 @@\n-a\n+b\n"
    [f] = from_diff(diff.encode()).files
    empty, real = file_payload(f)["hunks"]
    assert (empty["added"], empty["removed"], empty["context"]) == ([], [], [])
    assert real["removed"] == [[5, "a"]] and real["added"] == [[5, "b"]]


def test_hunks_are_built_only_when_a_payload_asks() -> None:
    [f] = from_diff(MIXED.encode()).files
    assert f.hunks is None and f.hunk_source is not None
    file_payload(f)
    assert f.hunks is not None and len(f.hunks) == 3 and f.hunk_source is None


def test_the_payload_command_prints_each_hunk_array_on_one_line() -> None:
    import json

    from slopjudge.model import Event
    from slopjudge.payload import dumps_readable, for_rule

    cs = from_diff(MIXED.encode())
    cs.files[0].new_content = '"hunks": "x:0"'  # text that looks like a placeholder stays text
    _, payload = for_rule(event=Event(kind="ci"), workspace="/w", changeset=cs, rule=None)
    text = dumps_readable(payload)
    assert json.loads(text) == json.loads(json.dumps(payload))
    hunk_lines = [ln for ln in text.splitlines() if '"hunks":' in ln and "oldStart" in ln]
    assert len(hunk_lines) == 1 and text.startswith("{\n  \"event\"")


def test_many_sections_read_together_equal_each_read_alone() -> None:
    b = MIXED.replace("a.txt", "b.txt")
    c = ("diff --git a/c.txt b/c.txt\nnew file mode 100644\n--- /dev/null\n+++ b/c.txt\n"
         "@@ -0,0 +1 @@\n+-- x\n")
    diff = MIXED + HEAD.replace("a.txt", "e.txt") + "@@ -4,2 +4,2 @@\n" + b + c
    files = from_diff(diff.encode()).files
    assert [file_payload(f)["hunks"] for f in files] == _alone(diff)
    assert files[-1].new_content == "-- x\n" and file_payload(files[1])["hunks"][0]["context"] == []
