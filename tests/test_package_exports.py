"""What ``import slopjudge`` offers a library user: every name in ``__all__``, loaded when
first asked for, is the object its module defines."""

from __future__ import annotations

import pytest

import slopjudge
from slopjudge.checks import engine
from slopjudge.model import LoadError, Rule


def test_every_name_in_all_resolves() -> None:
    for name in slopjudge.__all__:
        assert getattr(slopjudge, name) is not None, name
    assert (slopjudge.Rule, slopjudge.LoadError, slopjudge.run) == (Rule, LoadError, engine.run)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        slopjudge.nothing_here  # noqa: B018
