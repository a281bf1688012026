"""A proposed edit's payload hunks are read off the diff lines as they are written
(no diff parser on the PreToolUse path): they must be exactly what parsing that
diff gives."""

from __future__ import annotations

from pathlib import Path

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
