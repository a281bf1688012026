"""``pathglob.match`` answers a path that lacks a pattern's literal text without
compiling the pattern: the answer must be the compiled pattern's, always."""

from __future__ import annotations

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
    expected = pathglob.compile_pattern(pattern).fullmatch(key) is not None
    assert pathglob.match(pattern, path) == expected


def test_a_path_without_the_literal_text_compiles_nothing() -> None:
    pattern = "/templates/**/*.md.never-compiled-j2"
    pathglob.compile_pattern.cache_clear()
    assert not pathglob.match(pattern, "src/prices.py")
    assert pathglob.compile_pattern.cache_info().currsize == 0
    assert pathglob.match(pattern, "templates/a/b.md.never-compiled-j2")
