"""unidiff reads the hunks; the one adapter around it (diffparse._read) is tested here.

unidiff refuses a hunk whose body disagrees with its header's counts and recognises only
the English end-of-file marker after a hunk's last line; slopjudge's lenient reader keeps
such hunks as their bodies hold them.
"""

from __future__ import annotations

import pytest
from unidiff.errors import UnidiffParseError
from unidiff.patch import PatchSet

from slopjudge.changes.changeset import from_diff, read_diff
from slopjudge.payload import file_payload

HEAD = "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n"


def test_unidiff_alone_refuses_a_hunk_shorter_than_its_header() -> None:
    # Why the adapter exists: without it a cut-off diff could not be read leniently.
    with pytest.raises(UnidiffParseError):
        PatchSet(HEAD + "@@ -1,5 +1,5 @@\n a\n-b\n+c\n")


def test_a_cut_off_hunk_is_read_as_its_body_holds_it() -> None:
    [f] = from_diff((HEAD + "@@ -3,5 +3,5 @@\n a\n-b\n+c\n").encode()).files
    [h] = file_payload(f)["hunks"]
    assert (h["oldStart"], h["oldLines"], h["newStart"], h["newLines"]) == (3, 5, 3, 5)
    assert h["context"] == [[3, "a"]] and h["removed"] == [[4, "b"]] and h["added"] == [[4, "c"]]
    assert f.new_content is None  # a cut-off hunk proves no content


def test_a_hunk_holding_more_than_its_header_keeps_every_line() -> None:
    [f] = from_diff((HEAD + "@@ -1 +1 @@\n-a\n-b\n+c\n").encode()).files
    [h] = file_payload(f)["hunks"]
    assert h["removed"] == [[1, "a"], [2, "b"]] and h["added"] == [[1, "c"]]


def test_any_backslash_marker_ends_a_side_without_a_newline() -> None:
    # GNU diff translates the marker; unidiff knows only the English text after a hunk.
    diff = "--- a.txt\n+++ a.txt\n@@ -1 +1 @@\n-x\n\\ Kein Zeilenumbruch am Dateiende.\n+y\n"
    [f] = read_diff(diff.encode(), "x.diff").files
    assert f.old_content == "x" and f.new_content == "y\n"
    [h] = file_payload(f)["hunks"]
    assert h["removed"] == [[1, "x"]] and h["added"] == [[1, "y"]]


def test_line_text_keeps_a_cr_and_undecodable_bytes_become_replacement_characters() -> None:
    diff = (HEAD + "@@ -1,2 +1,2 @@\n-a\r\n+b\r\n \xff\n").encode("latin-1")
    [f] = read_diff(diff, "x.diff").files
    [h] = file_payload(f)["hunks"]
    assert h["added"] == [[1, "b\r"]] and h["removed"] == [[1, "a\r"]]
    assert h["context"] == [[2, "\ufffd"]]


def test_a_blank_context_line_without_its_space_is_context() -> None:
    [f] = read_diff((HEAD + "@@ -1,3 +1,3 @@\n a\n\n-b\n+c\n").encode(), "x.diff").files
    [h] = file_payload(f)["hunks"]
    assert h["context"] == [[1, "a"], [2, ""]] and h["added"] == [[3, "c"]]


def test_a_hunk_cut_off_right_after_its_header_has_no_lines() -> None:
    [f] = from_diff((HEAD + "@@ -1,2 +1,2 @@\n").encode()).files
    assert file_payload(f)["hunks"] == [{"oldStart": 1, "oldLines": 2, "newStart": 1,
                                        "newLines": 2, "added": [], "removed": [], "context": []}]
