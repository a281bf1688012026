"""Fixtures the fail-closed hook tests share."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.failclosed.hooks_kit import make_ws


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    """A committed repository with protect-rules (shipped) and no-forbidden (a script)."""
    return make_ws(tmp_path)
