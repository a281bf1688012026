"""``jsonobject.dumps`` (json's C encoder without importing json) writes exactly what
``json.dumps`` writes, and fails as it fails."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slopjudge.jsonobject import dumps

SCALARS = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True)
           | st.text(st.characters(), max_size=12))
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text(max_size=6), inner, max_size=4), max_leaves=25)


@settings(max_examples=300, deadline=None)
@given(value=VALUES, ensure_ascii=st.booleans(), compact=st.booleans())
def test_same_text_as_json(value: object, ensure_ascii: bool, compact: bool) -> None:
    seps = (",", ":") if compact else (", ", ": ")
    assert dumps(value, ensure_ascii=ensure_ascii, separators=seps) == json.dumps(
        value, ensure_ascii=ensure_ascii, separators=seps)


def test_default_and_what_json_refuses() -> None:
    class Odd:
        def __str__(self) -> str:
            return "odd é"

    value = {"a": [Odd(), 1.5, math.inf], "b": "\ud800"}
    for ascii_ in (True, False):
        assert dumps(value, ensure_ascii=ascii_, default=str) == json.dumps(
            value, ensure_ascii=ascii_, default=str)
    with pytest.raises(TypeError, match="Object of type Odd is not JSON serializable"):
        dumps({"x": Odd()})
    loop: list[object] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular reference"):
        dumps(loop)
    shared = [1, 2]
    assert dumps([shared, shared]) == "[[1, 2], [1, 2]]"  # not a loop; and after an error
