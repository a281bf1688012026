"""``pathglob.match`` answers a path that lacks a pattern's literal text without
compiling the pattern: the answer must be the compiled pattern's, always."""

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


def _compiled(pattern: str, key: str) -> bool:
    return re.fullmatch(pathglob.regex_source(pattern), key, re.DOTALL) is not None


def test_a_path_without_the_literal_text_compiles_nothing() -> None:
    pattern = "/templates/**/*.md.never-compiled-j2"
    assert not pathglob.match(pattern, "src/prices.py")
    assert pathglob.matcher((pattern,)).regex is None
    assert pathglob.match(pattern, "templates/a/b.md.never-compiled-j2")


@settings(max_examples=300, deadline=None)
@given(patterns=st.lists(st.lists(PATTERN_PARTS, min_size=1, max_size=5).map("".join),
                         min_size=0, max_size=4),
       paths=st.lists(st.lists(PATH_PARTS, min_size=1, max_size=6).map("".join),
                      min_size=1, max_size=40))
def test_a_pattern_list_answers_as_its_compiled_patterns(patterns: list[str],
                                                        paths: list[str]) -> None:
    # A fresh matcher (not the cache's): its first paths are answered by the literal
    # text, the rest by the one compiled regex; every answer must be the patterns'.
    m = pathglob._Matcher(tuple(patterns))
    for path in paths:
        key = path[2:] if path.startswith("./") else path
        expected = any(_compiled(p, key) for p in patterns if p)
        assert m(path) == expected


def test_a_list_no_changed_path_can_match_compiles_no_regex() -> None:
    m = pathglob._Matcher(("**/*.py", "src/**", "tests/fixtures/**"))
    assert not m("README.md") and not m("docs/guide.txt")
    assert m.regex is None
    assert m("lib/x.py") and m.regex is not None  # compiled once a path could match
    with_class = pathglob._Matcher(("[ab]*.md",))  # no literal text to go by
    assert not with_class("README.md") and with_class.regex is not None
