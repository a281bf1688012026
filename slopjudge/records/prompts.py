"""Kept judge prompts: each rendered prompt stored once beside the event log, by digest.

The event log names a judge's prompt by its sha256; ``slopjudge replay`` reads
the prompt back from here to re-judge it through another runner.
"""

from __future__ import annotations

import os


def _path(events_file: str, digest: str) -> str:
    return os.path.join(os.path.dirname(os.path.abspath(events_file)), "prompts", f"{digest}.md")


def save_prompt(events_file: str, digest: str, prompt: str) -> None:
    """Keep each rendered prompt once, by digest, so `replay` can re-judge it."""
    path = _path(events_file, digest)
    if not os.path.exists(path):
        from slopjudge.fsutil import write_atomic

        write_atomic(path, prompt)


def load_prompt(events_file: str, digest: str) -> str | None:
    try:
        with open(_path(events_file, digest), encoding="utf-8") as fh:
            return fh.read()
    except OSError:
        return None
