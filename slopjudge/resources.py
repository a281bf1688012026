"""Where slopjudge's package data lives: ``slopjudge/data/`` (in a checkout, links to the
top-level folders; in a wheel, copies)."""

from __future__ import annotations

import os

from slopjudge.fsutil import inside

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
DATA_DIR = os.path.join(PACKAGE_DIR, "data")


def data_path(*parts: str) -> str:
    """The path of ``parts`` inside the package data (it may not exist)."""
    return os.path.join(DATA_DIR, *parts)


def in_package(path: str) -> bool:
    """``path`` is one of slopjudge's own installed files (links resolved: a checkout's data
    links resolve to the repository's folders, which stay the project's)."""
    return inside(path, PACKAGE_DIR)
