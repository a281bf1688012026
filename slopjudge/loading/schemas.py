"""Find and read slopjudge's JSON Schemas.

They live in the package data (``slopjudge/data/schemas``, a link to ``schemas/`` in a checkout).
"""

from __future__ import annotations

import functools
import json
import os
from typing import Any

from slopjudge.resources import data_path


def schema_path(name: str) -> str:
    path = data_path("schemas", name)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{name} is missing from this slopjudge install")
    return path


@functools.cache
def load_schema(name: str) -> dict[str, Any]:
    with open(schema_path(name), encoding="utf-8") as fh:
        schema: dict[str, Any] = json.load(fh)
    return schema
