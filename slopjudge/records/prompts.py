"""Kept judge prompts: each rendered prompt stored once beside the event log, by digest.

The event log names a judge's prompt by its sha256; ``slopjudge replay`` reads
the prompt back from here to re-judge it through another runner.
"""

from __future__ import annotations

import os


def prompts_dir_for(events_file: str) -> str:
    return os.path.join(os.path.dirname(os.path.abspath(events_file)), "prompts")


def save_prompt(events_file: str, digest: str, prompt: str) -> None:
    """Keep each rendered prompt once, by digest, so `replay` can re-judge it."""
    folder = prompts_dir_for(events_file)
    path = os.path.join(folder, f"{digest}.md")
    if os.path.exists(path):
        return
    from slopjudge.fsutil import write_atomic

    write_atomic(path, prompt)


def load_prompt(events_file: str, digest: str) -> str | None:
    try:
        with open(
            os.path.join(prompts_dir_for(events_file), f"{digest}.md"), encoding="utf-8"
        ) as fh:
            return fh.read()
    except OSError:
        return None
