"""``pathglob.match`` and a pattern list's matcher answer as the patterns' regexes do,
always (answers are remembered per list)."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from slopjudge import pathglob

PATTERN_PARTS = st.sampled_from(["a", "b", "src", ".md", "x.py", "*", "?", "**", "/", "./",
                                 "rules", "-", "[ab]", "\\*"])
PATH_PARTS = st.sampled_from(["a", "b", "src", "x.py", "y.md", ".md", "rules", "/", "-", "*"])


@settings(max_examples=2000, deadline=None)
@given(pattern=st.lists(PATTERN_PARTS, min_size=1, max_size=7).map("".join),
       path=st.lists(PATH_PARTS, min_size=1, max_size=7).map("".join))
def test_match_is_the_compiled_patterns_answer(pattern: str, path: str) -> None:
    key = path[2:] if path.startswith("./") else path
    assert pathglob.match(pattern, path) == _compiled(pattern, key)
    assert pathglob.match(pattern, path, below=False) == _compiled(pattern, key, below=False)


SUFFIX_PATHS = st.sampled_from(["a", "x.py", "py", ".py", "/", "\n", "_pb2.py", "b.py.txt"])


@settings(max_examples=2000, deadline=None)
@given(pattern=st.sampled_from(["*.py", "**/*.py", "*_pb2.py", "**/*.py.txt", "*y"]),
       path=st.lists(SUFFIX_PATHS, min_size=0, max_size=7).map("".join),
       below=st.booleans())
def test_a_name_pattern_answered_by_its_text_is_the_regex_answer(pattern: str, path: str,
                                                                 below: bool) -> None:
    assert pathglob._suffix(pattern) is not None  # answered without the regex
    assert pathglob._Matcher((pattern,), below)(path) == _compiled(pattern, path, below)


def _compiled(pattern: str, key: str, below: bool = True) -> bool:
    return re.fullmatch(pathglob.regex_source(pattern, below), key, re.DOTALL) is not None


@settings(max_examples=300, deadline=None)
@given(patterns=st.lists(st.lists(PATTERN_PARTS, min_size=1, max_size=5).map("".join),
                         min_size=0, max_size=4),
       paths=st.lists(st.lists(PATH_PARTS, min_size=1, max_size=6).map("".join),
                      min_size=1, max_size=40))
def test_a_pattern_list_answers_as_its_compiled_patterns(patterns: list[str],
                                                        paths: list[str]) -> None:
    # Paths repeat: a remembered answer must be the patterns' too.
    m = pathglob.matcher(tuple(patterns))
    for path in paths:
        key = path[2:] if path.startswith("./") else path
        expected = any(_compiled(p, key) for p in patterns if p)
        assert m(path) == expected


def test_a_list_no_changed_path_can_match_compiles_no_regex() -> None:
    m = pathglob._Matcher(("**/*.py", "src/**", "tests/fixtures/**"))
    assert not m("README.md") and not m("docs/guide.txt")
    assert m("lib/x.py") and m.regex is None  # `**/*.py` needs no regex
    assert m("src/a.md") and m.regex is not None  # compiled once a path could match
    with_class = pathglob._Matcher(("[ab]*.md",))  # no literal text to go by
    assert not with_class("README.md") and with_class.regex is not None
