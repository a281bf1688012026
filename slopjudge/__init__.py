"""slopjudge: keep AI slop out of a repository.

What users import is re-exported here, lazily: ``import slopjudge`` stays
cheap because every agent hook starts by importing this package.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not ``typing``'s: every hook imports this package
if TYPE_CHECKING:
    from typing import Any

__version__ = "0.1.0"

_MODEL = ("Rule", "Check", "Changeset", "FileChange", "Event", "CheckResult", "Finding",
          "RunReport", "LoadError")
_EXPORTS = {
    **dict.fromkeys(_MODEL, "slopjudge.model"),
    "RunOptions": "slopjudge.checks.options",
    "CheckContext": "slopjudge.hookspec",
    "load_rules": "slopjudge.loading.loader",
    "load_settings": "slopjudge.loading.config",
    "applicable_rules": "slopjudge.checks.selection",
    "run": "slopjudge.checks.engine",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'slopjudge' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
