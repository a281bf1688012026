"""slopjudge's JSON Schemas, from the package data (``slopjudge/data/schemas``, a link
to ``schemas/`` in a checkout)."""

from __future__ import annotations

import functools
import json
from typing import Any

from slopjudge.resources import data_path


@functools.cache
def load_schema(name: str) -> dict[str, Any]:
    with open(data_path("schemas", name), encoding="utf-8") as fh:
        schema: dict[str, Any] = json.load(fh)
    return schema
