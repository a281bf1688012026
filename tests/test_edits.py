"""Proposed content of file tool calls, computed against the file on disk."""

from __future__ import annotations

import json
import os
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slopjudge.changes.edits import EditError, proposed_changes


def proposed_content(tool_name: str, tool_input: dict, workspace: str) -> tuple[str, str] | None:
    """The one file a file tool call writes, and its new content."""
    changes = proposed_changes(tool_name, tool_input, workspace)
    if changes is None:
        return None
    [(path, moved_from, content)] = changes
    assert moved_from is None and content is not None
    return path, content


@pytest.fixture()
def ws(tmp_path):
    (tmp_path / "a.txt").write_text("hello\nworld\nhello\n")
    return str(tmp_path)


def test_write_new_and_existing(ws: str) -> None:
    assert proposed_content("Write", {"file_path": f"{ws}/n.txt", "content": "x"}, ws) == (
        f"{ws}/n.txt", "x")
    # A relative path is taken from the workspace.
    assert proposed_content("Write", {"file_path": "a.txt", "content": ""}, ws) == (
        f"{ws}/a.txt", "")


def test_edit_unique_and_replace_all(ws: str) -> None:
    path = f"{ws}/a.txt"
    assert proposed_content("Edit", {"file_path": path, "old_string": "world",
                                     "new_string": "W"}, ws) == (path, "hello\nW\nhello\n")
    assert proposed_content("Edit", {"file_path": path, "old_string": "hello",
                                     "new_string": "H", "replace_all": True}, ws) == (
        path, "H\nworld\nH\n")


def test_edit_that_cannot_apply(ws: str) -> None:
    path = f"{ws}/a.txt"
    with pytest.raises(EditError, match="not found"):
        proposed_content("Edit", {"file_path": path, "old_string": "nope", "new_string": "x"}, ws)
    with pytest.raises(EditError, match="2 times"):
        proposed_content("Edit", {"file_path": path, "old_string": "hello", "new_string": "x"}, ws)
    with pytest.raises(EditError, match="does not exist"):
        proposed_content("Edit", {"file_path": f"{ws}/missing", "old_string": "a",
                                  "new_string": "b"}, ws)
    with pytest.raises(EditError, match="not a string"):
        proposed_content("Edit", {"file_path": path, "old_string": None, "new_string": "b"}, ws)
    with pytest.raises(EditError, match="without a file path"):
        proposed_content("Write", {"content": "x"}, ws)
    with pytest.raises(EditError, match="directory"):
        proposed_content("Edit", {"file_path": ws, "old_string": "a", "new_string": "b"}, ws)


def test_edit_with_empty_old_string_creates_a_file(ws: str) -> None:
    assert proposed_content("Edit", {"file_path": f"{ws}/new.py", "old_string": "",
                                     "new_string": "x = 1\n"}, ws) == (f"{ws}/new.py", "x = 1\n")


def test_multiedit_applies_in_order(ws: str) -> None:
    path = f"{ws}/a.txt"
    edits = [{"old_string": "hello", "new_string": "bye", "replace_all": True},
             {"old_string": "world", "new_string": "hello"}]
    assert proposed_content("MultiEdit", {"file_path": path, "edits": edits}, ws) == (
        path, "bye\nhello\nbye\n")
    # Claude Code refuses an edit whose old_string an earlier edit wrote.
    with pytest.raises(EditError, match="earlier edit"):
        proposed_content("MultiEdit", {"file_path": path, "edits": [
            {"old_string": "world", "new_string": "hello"},
            {"old_string": "hello", "new_string": "bye", "replace_all": True}]}, ws)
    with pytest.raises(EditError, match="edit 2"):
        proposed_content("MultiEdit", {"file_path": path, "edits": [
            {"old_string": "world", "new_string": "x"},
            {"old_string": "world", "new_string": "y"}]}, ws)
    with pytest.raises(EditError):
        proposed_content("MultiEdit", {"file_path": path, "edits": []}, ws)


def _notebook(ws: str) -> str:
    nb = {"cells": [{"cell_type": "code", "id": "abc1", "metadata": {}, "source": ["x=1\n"],
                     "execution_count": 3, "outputs": [{"output_type": "stream"}]},
                    {"cell_type": "markdown", "id": "md2", "metadata": {}, "source": "# T"}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path = os.path.join(ws, "nb.ipynb")
    with open(path, "w") as fh:
        json.dump(nb, fh)
    return path


def test_notebook_replace_insert_delete(ws: str) -> None:
    path = _notebook(ws)
    _, text = proposed_content("NotebookEdit", {"notebook_path": path, "cell_id": "abc1",
                                                "new_source": "x=2\n"}, ws)
    cells = json.loads(text)["cells"]
    # As Claude Code writes it: the source as one string, outputs cleared.
    assert cells[0]["source"] == "x=2\n" and cells[0]["outputs"] == []
    _, text = proposed_content("NotebookEdit", {"notebook_path": path, "cell_id": "abc1",
                                                "new_source": "y", "edit_mode": "insert",
                                                "cell_type": "markdown"}, ws)
    assert [c["source"] for c in json.loads(text)["cells"]] == [["x=1\n"], "y", "# T"]
    _, text = proposed_content("NotebookEdit", {"notebook_path": path, "cell_id": "md2",
                                                "edit_mode": "delete"}, ws)
    assert [c["id"] for c in json.loads(text)["cells"]] == ["abc1"]
    _, text = proposed_content("NotebookEdit", {"notebook_path": path, "cell_id": "cell-1",
                                                "new_source": "z"}, ws)
    assert json.loads(text)["cells"][1]["source"] == "z"
    with pytest.raises(EditError, match="not found"):
        proposed_content("NotebookEdit", {"notebook_path": path, "cell_id": "zzz",
                                          "new_source": "z"}, ws)


def test_other_tools_have_no_content(ws: str) -> None:
    assert proposed_content("Bash", {"command": "ls"}, ws) is None
    assert proposed_content("Read", {"file_path": f"{ws}/a.txt"}, ws) is None
    assert proposed_content("mcp__x__y", {}, ws) is None


# --- matching as Claude Code does ------------------------------------------------

def test_edit_matches_through_curly_quotes_and_keeps_the_file_style(tmp_path) -> None:
    path = tmp_path / "q.py"
    path.write_text("msg = \u201chello\u201d  # it\u2019s\n")
    got = proposed_content("Edit", {"file_path": str(path), "old_string": 'msg = "hello"',
                                    "new_string": 'msg = "bye"'}, str(tmp_path))
    assert got == (str(path), "msg = \u201cbye\u201d  # it\u2019s\n")
    # curly in old_string, straight in the file
    path.write_text("say('it''s')\n")
    got = proposed_content("Edit", {"file_path": str(path), "old_string": "say(\u2018it",
                                    "new_string": "say('its"}, str(tmp_path))
    assert got == (str(path), "say('its''s')\n")
    # apostrophes between letters curl right, opening quotes left
    path.write_text("x = \u2018a\u2019\n")
    got = proposed_content("Edit", {"file_path": str(path), "old_string": "x = 'a'",
                                    "new_string": "x = 'don't'"}, str(tmp_path))
    assert got == (str(path), "x = \u2018don\u2019t\u2019\n")


def test_edit_keeps_crlf_and_bom(tmp_path) -> None:
    path = tmp_path / "w.txt"
    path.write_bytes("\ufeffone\r\ntwo\r\n".encode())
    got = proposed_content("Edit", {"file_path": str(path), "old_string": "one\ntwo",
                                    "new_string": "1\n2"}, str(tmp_path))
    assert got == (str(path), "\ufeff1\r\n2\r\n")


def test_edit_escapes_and_abbreviated_tags(tmp_path) -> None:
    path = tmp_path / "e.py"
    path.write_text('s = "caf\\u00e9"\n')
    got = proposed_content("Edit", {"file_path": str(path), "old_string": 's = "caf\u00e9"',
                                    "new_string": 's = "d\u00e9j\u00e0"'}, str(tmp_path))
    assert got == (str(path), 's = "d\\u00e9j\\u00e0"\n')
    path.write_text("<function_results>x</function_results>\n")
    got = proposed_content("Edit", {"file_path": str(path), "old_string": "<fnr>x",
                                    "new_string": "<fnr>y"}, str(tmp_path))
    assert got == (str(path), "<function_results>y</function_results>\n")


def test_edit_trailing_spaces_cut_outside_markdown(tmp_path) -> None:
    (tmp_path / "a.py").write_text("x\n")
    (tmp_path / "a.md").write_text("x\n")
    assert proposed_content("Edit", {"file_path": str(tmp_path / "a.py"), "old_string": "x",
                                     "new_string": "y  \nz\t"}, str(tmp_path))[1] == "y\nz\n"
    assert proposed_content("Edit", {"file_path": str(tmp_path / "a.md"), "old_string": "x",
                                     "new_string": "y  "}, str(tmp_path))[1] == "y  \n"


def test_deleting_a_line_takes_its_newline(tmp_path) -> None:
    path = tmp_path / "d.txt"
    path.write_text("keep\ndrop\nkeep2\n")
    got = proposed_content("Edit", {"file_path": str(path), "old_string": "drop",
                                    "new_string": ""}, str(tmp_path))
    assert got == (str(path), "keep\nkeep2\n")


def test_unapplied_edit_is_judged_on_its_path_and_new_text(tmp_path) -> None:
    from slopjudge.changes.edits import unapplied_changeset

    (tmp_path / "rules").mkdir()
    rule = tmp_path / "rules" / "r.yaml"
    rule.write_text("on: [stop]\n")
    ti = {"file_path": str(rule), "old_string": "nowhere", "new_string": "on: []\nchecks: []"}
    with pytest.raises(EditError, match="not found"):
        proposed_content("Edit", ti, str(tmp_path))
    cs = unapplied_changeset("Edit", ti, str(tmp_path))
    [f] = cs.files
    assert f.path == "rules/r.yaml" and f.status == "M"
    assert "+on: []\n+checks: []\n" in f.diff
    # nothing added (a deletion that does not apply): the file is still named
    ti = {"file_path": str(rule), "old_string": "nowhere", "new_string": ""}
    [f] = unapplied_changeset("Edit", ti, str(tmp_path)).files
    assert f.path == "rules/r.yaml" and f.diff.startswith("diff --git a/rules/r.yaml")


def test_unapplied_patch_names_every_file(tmp_path) -> None:
    from slopjudge.changes.edits import unapplied_changeset

    (tmp_path / "a.txt").write_text("a\n")
    patch = ("*** Begin Patch\n*** Update File: a.txt\n@@\n-not in the file\n+new line\n"
             "*** Update File: b.txt\n*** Move to: c.txt\n+moved\n*** Delete File: a.txt\n"
             "*** End Patch\n")
    cs = unapplied_changeset("apply_patch", {"input": patch}, str(tmp_path))
    by_path = {f.path: f for f in cs.files}
    assert set(by_path) == {"a.txt", "c.txt"}
    assert "+moved" in by_path["c.txt"].diff


@pytest.mark.parametrize("tool_input", [
    {"file_path": "x.txt", "edits": 5}, {"file_path": "x.txt", "edits": "abc"},
    {"file_path": 3, "old_string": "a"}, {"file_path": "x.txt", "new_string": ["a"]},
    {"file_path": "sub", "old_string": "a", "new_string": "b"},
])
def test_unapplied_items_never_raise_on_bad_input(tmp_path, tool_input) -> None:
    from slopjudge.changes.edits import unapplied_changeset

    (tmp_path / "sub").mkdir()
    for tool in ("Edit", "MultiEdit", "Write", "NotebookEdit", "apply_patch"):
        cs = unapplied_changeset(tool, tool_input, str(tmp_path))
        assert all(not f.path.startswith("/") for f in cs.files)


# --- without `re`: the same answers as the patterns they replace ---------------------------

_CHARS = st.sampled_from(["a", " ", "\t", "\r", "\n", "\ufeff", "\xa0", "\u2028", "\x1c", "\x85",
                          '"', "\\", "\x7f", "\x00", "é", "\u3000", "\x0b", "\x0c"])


@settings(max_examples=3000, deadline=None)
@given(text=st.lists(_CHARS, max_size=14).map("".join))
def test_line_ends_are_cut_as_the_regex_cut_them(text: str) -> None:
    from slopjudge.changes.edits import _strip_line_ends

    parts = re.split(r"(\r\n|\n|\r)", text)
    expected = "".join(re.sub(r"[\s\ufeff]+\Z", "", p) if i % 2 == 0 else p
                       for i, p in enumerate(parts))
    assert _strip_line_ends(text) == expected


def test_the_trailing_set_is_what_isspace_admits() -> None:
    import sys

    from slopjudge.changes.edits import _TRAILING

    spaces = {c for c in map(chr, range(sys.maxunicode + 1)) if c.isspace()}
    assert set(_TRAILING) == spaces | {"\ufeff"}


@settings(max_examples=3000, deadline=None)
@given(name=st.lists(_CHARS, max_size=8).map("".join))
def test_a_path_is_quoted_when_the_regex_said_so(name: str) -> None:
    from slopjudge.changes.proposed import _quote

    assert (_quote(name) != name) == bool(re.search(r'["\\\x00-\x1f\x7f]', name))


def test_an_escaped_form_longer_than_the_file_compiles_no_pattern(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A long non-ASCII old_string not in the file is refused at once (a pattern of its
    size took seconds to compile)."""
    from slopjudge.changes import edits as module

    compiled: list[str] = []
    real = re.compile

    def counting(pattern: str, *args: int) -> re.Pattern[str]:
        compiled.append(pattern)
        return real(pattern, *args)

    monkeypatch.setattr(re, "compile", counting)
    assert module.find_actual("var s = '\\u00e9';\n", "中文" * 1000, "x") == ("中文" * 1000, "x")
    assert compiled == []
    assert module.find_actual("var s = '\\u00e9';\n" * 100, "中文", "x") == ("中文", "x")
    assert len(compiled) == 1  # the same search where the form could fit
