"""A child process's whole output read as one JSON object, or nothing.

Script checks, the harness replies of ``slopjudge-agent`` and its answer file
all answer this way; a reply that is not exactly one object is not an answer.
"""

from __future__ import annotations

import json
from typing import Any


def parse_json_object(text: str) -> dict[str, Any] | None:
    """``text`` (surrounding blanks aside) as a JSON object; None when it is anything else."""
    text = text.strip()
    if not text.startswith("{"):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
