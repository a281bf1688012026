"""Find and read slopjudge's JSON Schemas.

They live in ``schemas/`` in a checkout and in the package data when installed.
"""

from __future__ import annotations

import functools
import json
import os
from typing import Any

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
SEARCH = (
    os.path.join(os.path.dirname(PACKAGE_DIR), "schemas"),
    os.path.join(PACKAGE_DIR, "data", "schemas"),
)


def schema_path(name: str) -> str:
    for folder in SEARCH:
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            return path
    raise FileNotFoundError(f"{name} is missing from this slopjudge install")


@functools.cache
def load_schema(name: str) -> dict[str, Any]:
    with open(schema_path(name), encoding="utf-8") as fh:
        schema: dict[str, Any] = json.load(fh)
    return schema
