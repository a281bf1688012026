"""The hooks' one catch-all: an error becomes one line for the hook point to act on."""

from __future__ import annotations

import pytest

from slopjudge.hooks import common


def test_an_error_is_caught_and_said_in_one_line() -> None:
    with common.fail_closed() as failure:
        raise ValueError("bad\n  thing   here")
    assert failure and failure.why == "ValueError: bad thing here"


def test_a_clean_block_is_no_failure() -> None:
    with common.fail_closed() as failure:
        pass
    assert not failure and failure.why is None


@pytest.mark.parametrize("exc", [KeyboardInterrupt, SystemExit])
def test_interrupts_and_exits_go_through(exc: type[BaseException]) -> None:
    with pytest.raises(exc), common.fail_closed():
        raise exc()


def test_debug_lets_the_error_through(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLOPJUDGE_DEBUG", "1")
    with pytest.raises(ValueError), common.fail_closed():
        raise ValueError("shown with its traceback")
