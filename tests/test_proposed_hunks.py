"""A proposed edit's payload hunks are read off the diff lines as they are written
(no diff parser on the PreToolUse path): they must be exactly what parsing that
diff gives."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slopjudge.changes.diffparse import hunks_of
from slopjudge.changes.proposed import from_proposed_edits

LINES = st.lists(st.sampled_from(["a", "b", "c", "", "x = 1", "  indented", "tab\there",
                                  "crlf\r", "é ü", "\\ backslash", "+plus", "-minus",
                                  "@@ at", " space"]), max_size=30)


def _text(lines: list[str], final_newline: bool) -> str:
    text = "\n".join(lines)
    return text + "\n" if final_newline and lines else text


@settings(max_examples=300, deadline=None)
@given(old=LINES, new=LINES, old_nl=st.booleans(), new_nl=st.booleans(),
       exists=st.booleans(), deleted=st.booleans())
def test_hunks_match_a_parse_of_the_diff(tmp_path_factory: object, old: list[str],
                                         new: list[str], old_nl: bool, new_nl: bool,
                                         exists: bool, deleted: bool) -> None:
    ws = Path(tmp_path_factory.mktemp("ws"))  # type: ignore[attr-defined]
    if exists:
        (ws / "f.py").write_bytes(_text(old, old_nl).encode("utf-8"))
    new_text = None if deleted and exists else _text(new, new_nl)
    cs = from_proposed_edits(str(ws), [("f.py", None, new_text)])
    for f in cs.files:
        assert f.hunks == hunks_of(f.diff), f.diff


def test_rename_and_absolute_path_hunks(tmp_path: Path) -> None:
    (tmp_path / "old.txt").write_text("one\ntwo\nthree\n")
    outside = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    cs = from_proposed_edits(str(tmp_path), [
        ("new.txt", str(tmp_path / "old.txt"), "one\n2\nthree\nfour"),
        (str(outside), None, "far\naway\n"),
    ])
    assert [f.status for f in cs.files] == ["R", "A"]
    for f in cs.files:
        assert f.hunks and f.hunks == hunks_of(f.diff), f.diff


@settings(max_examples=200, deadline=None)
@given(lines=LINES, final_newline=st.booleans(), added=st.booleans())
def test_an_added_or_deleted_file_is_difflibs_hunk(lines: list[str], final_newline: bool,
                                                   added: bool) -> None:
    """The hunk of a file added or deleted is made without difflib: it must be
    exactly difflib's, and so must its diff lines."""
    import difflib

    from slopjudge.changes.proposed import _groups, _split_keep, _synth_hunks

    text = _text(lines, final_newline)
    side = _split_keep(text)
    a, b = ([], side) if added else (side, [])
    assert _groups(a, b) == list(difflib.SequenceMatcher(None, a, b).get_grouped_opcodes(3))
    old, new = ("", text) if added else (text, "")
    diff = list(difflib.unified_diff(a, b, lineterm="", n=3))[2:]
    assert _synth_hunks(old, new)[0] == [
        ln + "\n" if ln.startswith("@@") else ln if ln.endswith("\n")
        else ln + "\n\\ No newline at end of file\n" for ln in diff]


def _difflibs(a: list[str], b: list[str]) -> list[list[tuple[str, int, int, int, int]]]:
    import difflib

    return list(difflib.SequenceMatcher(None, a, b).get_grouped_opcodes(3))


@pytest.mark.parametrize(("old", "new"), [
    ("def main():\n    return 1\n", "def main():\n    return 2\n"),  # the bench's Edit
    ("a\nb\na\nb\n", "a\nc\na\nc\n"),  # replace_all: two places, difflib
    ("x\nx\nx\nx\n", "x\nx\ny\nx\nx\n"),  # repeated lines around an insertion
    ("a\nb\n", "a\nb\nb\na\nb\n"),  # the kept tail occurs earlier: difflib takes that one
    ("p\nq\nr\n", "p\nr\n"),  # a line removed
    ("p\nr\n", "p\nq\nr\n"),  # a line added
    ("one\ntwo\n", ""),  # new text empty
    ("", "one\ntwo\n"),  # old text empty
    ("a\r\nb\r\nc\r\n", "a\r\nB\r\nc\r\n"),  # CRLF: the \r stays in the line
    ("a\nb\nc", "a\nb\nd"),  # no newline at the end
    ("a\nb\nc", "a\nb\nc\n"),  # a newline added at the end
    ("k\nm\nk\n", "k\nn\nm\nk\n"),  # a removed line shared by the added side: difflib
    ("a\nb\nc\nd\n", "a\nc\nb\nd\n"),  # lines swapped
    ("s\n" * 250 + "end\n", "s\n" * 250 + "END\n"),  # a line over 1% of b: difflib's junk
    ("".join(f"{i}\n" for i in range(300)), "".join(f"{i}\n" for i in range(300) if i != 150)),
])
def test_an_edits_hunks_are_difflibs(old: str, new: str) -> None:
    """An edit's hunks, made without difflib when the change is in one place, are
    difflib's in every case, and so are its diff lines."""
    import difflib

    from slopjudge.changes.proposed import _groups, _split_keep, _synth_hunks

    a, b = _split_keep(old), _split_keep(new)
    assert _groups(a, b) == _difflibs(a, b)
    diff = list(difflib.unified_diff(a, b, lineterm="", n=3))[2:]
    assert _synth_hunks(old, new)[0] == [
        ln + "\n" if ln.startswith("@@") else ln if ln.endswith("\n")
        else ln + "\n\\ No newline at end of file\n" for ln in diff]


def test_a_change_in_one_place_needs_no_difflib() -> None:
    from slopjudge.changes.proposed import _one_place, _split_keep

    a = _split_keep("import os\n\n\ndef main():\n    return 1\n\n\nmain()\n")
    b = _split_keep("import os\n\n\ndef main():\n    return 2\n\n\nmain()\n")
    assert _one_place(a, b) == _difflibs(a, b) == [[
        ("equal", 1, 4, 1, 4), ("replace", 4, 5, 4, 5), ("equal", 5, 8, 5, 8)]]


SPAN = st.lists(st.sampled_from(["a", "b", "c", "", "new", "z = 2"]), max_size=5)


@settings(max_examples=500, deadline=None)
@given(lines=st.lists(st.sampled_from(["a", "b", "c", "", "x = 1", "  y"]), max_size=40),
       at=st.integers(0, 40), cut=st.integers(0, 5), put=SPAN, swap=st.booleans(),
       pad=st.integers(0, 260))
def test_an_edit_in_one_place_has_difflibs_hunks(lines: list[str], at: int, cut: int,
                                                  put: list[str], swap: bool,
                                                  pad: int) -> None:
    """A span of a file replaced, as an Edit does, on short files and on files long
    enough for difflib's junk heuristic (``pad`` distinct lines, or a popular one)."""
    from slopjudge.changes.proposed import _groups

    base = [ln + "\n" for ln in lines]
    base += [f"line {i}\n" if pad % 2 else "\n" for i in range(pad if pad > 200 else 0)]
    at = min(at, len(base))
    edited = base[:at] + [ln + "\n" for ln in put] + base[at + cut:]
    a, b = (edited, base) if swap else (base, edited)
    if a and b:
        assert _groups(a, b) == _difflibs(a, b)
