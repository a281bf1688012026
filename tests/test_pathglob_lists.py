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


def _compiled(pattern: str, key: str) -> bool:
    return re.fullmatch(pathglob.regex_source(pattern), key, re.DOTALL) is not None


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
