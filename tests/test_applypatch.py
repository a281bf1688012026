"""Codex's apply_patch envelope: parsing, applying to files on disk, the
proposed changeset it makes, and finding the patch in a tool call."""

from __future__ import annotations

from pathlib import Path

import pytest

from slopjudge.changes import applypatch, changeset
from slopjudge.changes.applypatch import PatchError
from slopjudge.changes.edits import EditError, patch_text, proposed_changes


def envelope(*body: str) -> str:
    return "\n".join(["*** Begin Patch", *body, "*** End Patch"])


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    (tmp_path / "old.py").write_text("def f():\n    return 1\n\n\ndef g():\n    return 1\n")
    return tmp_path


def test_parse_every_operation() -> None:
    ops = applypatch.parse(envelope(
        "*** Add File: a/new.py", "+x = 1", "+", "*** Update File: old.py",
        "*** Move to: renamed.py", "@@ def g():", " context", "-removed", "+added",
        "*** End of File", "*** Delete File: gone.txt"))
    assert [(o.kind, o.path, o.move_to) for o in ops] == [
        ("add", "a/new.py", None), ("update", "old.py", "renamed.py"),
        ("delete", "gone.txt", None)]
    assert ops[0].content == "x = 1\n\n"
    (hunk,) = ops[1].hunks
    assert (hunk.context, hunk.old, hunk.new, hunk.end_of_file) == (
        "def g():", ["context", "removed"], ["context", "added"], True)


def test_add_update_with_context_and_delete(ws: Path) -> None:
    (ws / "gone.txt").write_text("bye\n")
    items = applypatch.apply(str(ws), envelope(
        "*** Add File: pkg/new.py", "+print('hi')",
        "*** Update File: old.py", "@@ def g():", "-    return 1", "+    return 2",
        "*** Delete File: gone.txt"))
    assert items == [
        (str(ws / "pkg" / "new.py"), None, "print('hi')\n"),
        (str(ws / "old.py"), None, "def f():\n    return 1\n\n\ndef g():\n    return 2\n"),
        (str(ws / "gone.txt"), None, None),
    ]
    # Nothing was written.
    assert not (ws / "pkg").exists() and (ws / "gone.txt").exists()
    assert "return 2" not in (ws / "old.py").read_text()


def test_without_the_context_header_the_first_match_changes(ws: Path) -> None:
    (item,) = applypatch.apply(str(ws), envelope(
        "*** Update File: old.py", "@@", "-    return 1", "+    return 0"))
    assert item[2] == "def f():\n    return 0\n\n\ndef g():\n    return 1\n"


def test_several_hunks_apply_in_order(ws: Path) -> None:
    (ws / "n.txt").write_text("".join(f"{i}\n" for i in range(1, 11)))
    (item,) = applypatch.apply(str(ws), envelope(
        "*** Update File: n.txt", "@@", " 2", "-3", "+three", "@@", " 8", "-9", "+nine",
        "+9.5"))
    assert item[2] == "1\n2\nthree\n4\n5\n6\n7\n8\nnine\n9.5\n10\n"
    # Hunks are found in order: the second may not match above the first.
    with pytest.raises(PatchError, match="hunk 2 does not apply"):
        applypatch.apply(str(ws), envelope(
            "*** Update File: n.txt", "@@", "-8", "+eight", "@@", "-3", "+three"))


def test_a_hunk_without_old_lines_appends(ws: Path) -> None:
    (ws / "n.txt").write_text("a\nb")  # no final newline: Codex adds one
    (item,) = applypatch.apply(str(ws), envelope("*** Update File: n.txt", "@@", "+c"))
    assert item[2] == "a\nb\nc\n"
    # Two such hunks append in patch order, as Codex applies its sorted replacements
    # from the last.
    (item,) = applypatch.apply(str(ws), envelope("*** Update File: n.txt", "@@", "+c", "@@",
                                                 "+d"))
    assert item[2] == "a\nb\nc\nd\n"


def test_move_is_a_rename_from_the_source(ws: Path) -> None:
    items = applypatch.apply(str(ws), envelope(
        "*** Update File: old.py", "*** Move to: lib/new.py", "@@ def f():", "-    return 1",
        "+    return 5"))
    assert items == [(str(ws / "lib" / "new.py"), str(ws / "old.py"),
                      "def f():\n    return 5\n\n\ndef g():\n    return 1\n")]
    (fc,) = changeset.from_proposed_edits(str(ws), items).files
    assert (fc.status, fc.path, fc.old_path) == ("R", "lib/new.py", "old.py")
    assert fc.diff.startswith("diff --git a/old.py b/lib/new.py\nsimilarity index ")
    assert "rename from old.py\nrename to lib/new.py\n--- a/old.py\n+++ b/lib/new.py\n" in fc.diff
    assert "-    return 1\n+    return 5\n" in fc.diff and fc.old_content == (
        ws / "old.py").read_text()


def test_crlf_file_and_crlf_patch(ws: Path) -> None:
    (ws / "w.txt").write_bytes(b"one\r\ntwo  \r\nthree\r\n")
    # The patch's own line endings do not matter, nor trailing spaces in the file.
    patch = envelope("*** Update File: w.txt", "@@", " one", "-two", "+TWO").replace("\n", "\r\n")
    (item,) = applypatch.apply(str(ws), patch)
    assert item[2] == "one\r\nTWO\r\nthree\r\n"
    # Leading indentation differences are tolerated last, as Codex does.
    (item,) = applypatch.apply(str(ws), envelope("*** Update File: w.txt", "-  three", "+3"))
    assert item[2] == "one\r\ntwo  \r\n3\r\n"


def test_end_of_file_anchors_at_the_end(ws: Path) -> None:
    (ws / "r.txt").write_text("x\ny\nx\n")
    (item,) = applypatch.apply(str(ws), envelope(
        "*** Update File: r.txt", "@@", "-x", "+z", "*** End of File"))
    assert item[2] == "x\ny\nz\n"


def test_later_operations_see_earlier_ones(ws: Path) -> None:
    items = applypatch.apply(str(ws), envelope(
        "*** Add File: t.txt", "+a", "*** Update File: t.txt", "-a", "+b"))
    assert items == [(str(ws / "t.txt"), None, "b\n")]


@pytest.mark.parametrize(("body", "message"), [
    (("*** Update File: old.py", "@@", "-not there", "+x"), "hunk 1 does not apply"),
    (("*** Update File: old.py", "@@ def nowhere():", "-x", "+y"),
     r"context line 'def nowhere\(\):' not found"),
    (("*** Update File: missing.py", "@@", "-a", "+b"), "does not exist"),
    (("*** Delete File: missing.py",), "cannot delete a file that does not exist"),
    (("*** Update File: old.py",), "has no hunks"),
    (("*** Frobnicate: old.py",), "expected '\\*\\*\\* Add File:'"),
    (("*** Update File: old.py", "@@", "?what"), "must start with"),
])
def test_patches_that_do_not_apply(ws: Path, body: tuple[str, ...], message: str) -> None:
    with pytest.raises(PatchError, match=message) as caught:
        applypatch.apply(str(ws), envelope(*body))
    assert isinstance(caught.value, EditError) and "\n" not in str(caught.value)


@pytest.mark.parametrize("text", ["garbage", "", "*** Begin Patch\n*** Add File: x\n+y\n"])
def test_garbage_is_an_error(ws: Path, text: str) -> None:
    with pytest.raises(PatchError):
        applypatch.apply(str(ws), text)


def test_patch_found_in_every_tool_input_shape() -> None:
    patch = envelope("*** Add File: x.txt", "+y")
    for tool_input in ({"command": patch}, {"input": patch}, {"patch": patch},
                       {"command": ["apply_patch", patch]}, {"other": 1, "input": patch}):
        assert patch_text("apply_patch", tool_input) == patch
    heredoc = f"apply_patch <<'EOF'\n{patch}\nEOF\n"
    for name, tool_input in (("Bash", {"command": heredoc}), ("shell", {"command": heredoc}),
                             ("shell", {"command": ["bash", "-lc", heredoc]}),
                             ("shell", {"command": ["apply_patch", patch]})):
        assert patch_text(name, tool_input) == patch
    for name, tool_input in (("Bash", {"command": f"cat <<'EOF'\n{patch}\nEOF"}),
                             ("Bash", {"command": "apply_patch"}),
                             ("Write", {"file_path": "x", "content": patch}),
                             ("apply_patch", {"command": "no patch here"})):
        assert patch_text(name, tool_input) is None


def test_proposed_changes_resolves_against_the_agent_cwd(ws: Path) -> None:
    (ws / "sub").mkdir()
    patch = envelope("*** Add File: x.txt", "+y")
    assert proposed_changes("apply_patch", {"input": patch}, str(ws), cwd=str(ws / "sub")) == [
        (str(ws / "sub" / "x.txt"), None, "y\n")]
    assert proposed_changes("apply_patch", {"input": patch}, str(ws)) == [
        (str(ws / "x.txt"), None, "y\n")]
    assert proposed_changes("Write", {"file_path": "w.txt", "content": "c"}, str(ws)) == [
        (str(ws / "w.txt"), None, "c")]
    assert proposed_changes("Bash", {"command": "ls"}, str(ws)) is None
    with pytest.raises(EditError, match="without a"):
        proposed_changes("apply_patch", {"input": "nothing"}, str(ws))


def test_multi_file_changeset_drops_unchanged_files(ws: Path) -> None:
    text = (ws / "old.py").read_text()
    c = changeset.from_proposed_edits(str(ws), [
        (str(ws / "old.py"), None, text), (str(ws / "n.txt"), None, "n\n"),
        (str(ws / "absent.txt"), None, None)])
    assert [(f.path, f.status) for f in c.files] == [("n.txt", "A")]
    # The single-file form still answers as before.
    assert changeset.from_proposed_edits(str(ws), [("old.py", None, text)]).files == []


def test_context_matches_through_typographic_punctuation(tmp_path: Path) -> None:
    """Codex's last pass reads curly quotes, dashes and odd spaces as ASCII."""
    (tmp_path / "q.md").write_text("He said \u201chi\u201d \u2014 it\u2019s\u00a0done\n")
    patch = envelope("*** Update File: q.md", "@@", "-He said \"hi\" - it's done",
                     "+He said nothing")
    assert applypatch.apply(str(tmp_path), patch) == [
        (str(tmp_path / "q.md"), None, "He said nothing\n")]
    with pytest.raises(PatchError):
        applypatch.apply(str(tmp_path), envelope("*** Update File: q.md", "@@",
                                                 "-He said \"ho\"", "+x"))
