"""``--format json``: exactly ``RunReport.to_dict()`` (``schemas/report.schema.json``).
Named ``json.py`` on purpose: absolute imports keep ``import json`` the standard library."""

from __future__ import annotations

import json

from slopjudge.model import RunReport
from slopjudge.report import encodable


def render(report: RunReport, *, color: bool = False) -> str:  # color: no meaning here
    return encodable(json.dumps(report.to_dict(), indent=2, ensure_ascii=False)) + "\n"
