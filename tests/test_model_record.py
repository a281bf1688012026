"""``model.record`` stands in for ``@dataclass`` on the hook's path: the same class
written both ways behaves the same (init, defaults, equality, repr, asdict, errors)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from slopjudge import model
from slopjudge.model import asdict, field, fields, record


def _pair(**options: Any) -> tuple[Any, Any]:
    """One class as a record and as a dataclass."""

    def body(deco: Any, fld: Any) -> Any:
        @deco(**options)
        class Point:
            x: int
            y: int = 0
            tags: list[str] = fld(default_factory=list)
            note: str = fld(default="", compare=False, repr=False)

        return Point

    return body(record, field), body(dataclasses.dataclass, dataclasses.field)


def test_a_record_behaves_as_the_same_dataclass() -> None:
    rec, dc = _pair()
    for args, kwargs in [((1,), {}), ((1, 2), {}), ((), {"x": 3, "tags": ["a"]}),
                         ((1,), {"note": "n"})]:
        a, b = rec(*args, **kwargs), dc(*args, **kwargs)
        assert repr(a).replace("Point", "P") == repr(b).replace("Point", "P")
        assert vars(a) == vars(b)
    assert rec(1, 2) == rec(1, 2, note="other")  # note does not count in __eq__
    assert rec(1, 2) != rec(1, 3)
    assert rec(1).tags is not rec(1).tags  # a factory per instance
    assert [f.name for f in fields(rec)] == [f.name for f in dataclasses.fields(dc)]
    assert rec.__hash__ is None and dc.__hash__ is None  # eq without hash, as dataclasses


@pytest.mark.parametrize(("args", "kwargs"), [
    ((), {}), ((1, 2, [], "", 5), {}), ((1,), {"z": 2}), ((1,), {"x": 2}),
])
def test_wrong_arguments_raise_as_a_dataclass_does(args: tuple[Any, ...],
                                                   kwargs: dict[str, Any]) -> None:
    # Missing, too many, unknown, twice: a TypeError either way.
    rec, dc = _pair()
    with pytest.raises(TypeError):
        rec(*args, **kwargs)
    with pytest.raises(TypeError):
        dc(*args, **kwargs)


def test_keyword_only_and_post_init() -> None:
    @record(kw_only=True)
    class Keyed:
        a: int
        b: int = 2

        def __post_init__(self) -> None:
            self.b *= 10

    with pytest.raises(TypeError):
        Keyed(1)  # type: ignore[misc]
    assert Keyed(a=1).b == 20


def test_a_mutable_default_is_refused_as_dataclasses_refuse_it() -> None:
    with pytest.raises(ValueError, match="mutable default list for field items"):
        @record
        class Bad:
            items: list[int] = []  # noqa: RUF012 - the mistake under test


def test_asdict_follows_nested_records_lists_and_dicts() -> None:
    finding = model.Finding(path="a.py", line=3, message="m")
    result = model.CheckResult(id="r/c", rule="r", check="c", kind="script", outcome="refuse",
                               findings=[finding])
    out = asdict(result)
    assert out["findings"] == [asdict(finding)]
    assert out["findings"][0]["path"] == "a.py" and out["outcome"] == "refuse"
