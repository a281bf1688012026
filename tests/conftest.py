"""Isolation every test gets, so the suite can run in parallel (pytest-xdist).

Each worker process keeps slopjudge's state outside the checkout and apart from the
user's and from other workers': the cache-signing key lives under a private
XDG_STATE_HOME, and the variables that would change what slopjudge does are
cleared. Tests that need another key or state set their own (monkeypatch or env=).

Every payload slopjudge builds while the suite runs, in this process and in every
subprocess it starts (hooks, `slopjudge run`, `slopjudge test`), is validated against
``schemas/payload.schema.json``: a payload of the wrong shape raises where it is built.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from slopjudge.payload import CHECK_ENV

os.environ[CHECK_ENV] = "1"

# From the caller's shell, these would change what slopjudge does in every test.
_SCRUB = ("SLOPJUDGE_RUNNER", "SLOPJUDGE_JUDGE_MOCKS", "SLOPJUDGE_EVENTS_FILE",
          "SLOPJUDGE_LAUNCHED_BY", "SLOPRAIL_LAUNCHED_BY", "SLOPJUDGE_DEBUG")


@pytest.fixture(scope="session", autouse=True)
def _private_state(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in ("XDG_STATE_HOME", *_SCRUB)}
    os.environ["XDG_STATE_HOME"] = str(tmp_path_factory.mktemp("xdg-state"))
    for name in _SCRUB:
        os.environ.pop(name, None)
    yield
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


# The files that take longest start first, so no worker is left running one of them
# alone at the end (each file stays on one worker). Order only: nothing is skipped.
_LONGEST_FIRST = ("test_self.py", "test_action.py", "test_split.py", "test_precommit.py",
                  "test_hooks_fuzz.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        name = item.path.name
        return _LONGEST_FIRST.index(name) if name in _LONGEST_FIRST else len(_LONGEST_FIRST)

    items.sort(key=rank)  # stable: the order inside each file is kept
