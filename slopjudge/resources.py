"""Where slopjudge's package data lives: the rule pack, templates, schemas, rubric
and hook wrapper, under ``slopjudge/data/`` (in a checkout, links to the top-level
folders; in a wheel, copies). The one place that knows the layout."""

from __future__ import annotations

import os

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
DATA_DIR = os.path.join(PACKAGE_DIR, "data")


def data_path(*parts: str) -> str:
    """The path of ``parts`` inside the package data (it may not exist)."""
    return os.path.join(DATA_DIR, *parts)


def in_package(path: str) -> bool:
    """True when ``path`` is one of slopjudge's own installed files: inside the
    package folder once links are resolved. A checkout's data links resolve to the
    repository's own folders, so those stay the project's."""
    real = os.path.realpath(path)
    root = os.path.realpath(PACKAGE_DIR)
    return real == root or real.startswith(root + os.sep)
