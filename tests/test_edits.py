"""Proposed content of file tool calls, computed against the file on disk."""

from __future__ import annotations

import json
import os

import pytest

from slopjudge.edits import EditError, proposed_content


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
    edits = [{"old_string": "world", "new_string": "hello"},
             {"old_string": "hello", "new_string": "bye", "replace_all": True}]
    assert proposed_content("MultiEdit", {"file_path": path, "edits": edits}, ws) == (
        path, "bye\nbye\nbye\n")
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
