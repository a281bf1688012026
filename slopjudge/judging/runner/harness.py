"""What the judge harnesses of slopjudge-agent share: model sets, the binary, a base class.

A model set is a comma list of size aliases (``size-md``) and model names; each
harness maps the aliases to its own models and knows which names it can run.
The harnesses themselves (the command line of one judge attempt) live in
``harness_claude`` and ``harness_codex``.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping

from slopjudge.model import SIZE_ALIASES

PROMPT_STDIN_LIMIT = 64 * 1024  # a prompt over this many bytes goes on stdin


class ModelSetError(ValueError):
    """A model set names nothing the harness can run."""


def resolve_model_set(
    model_set: str,
    harness: str,
    aliases: Mapping[str, str],
    prefixes: tuple[str, ...],
    warnings: list[str] | None = None,
) -> str:
    """First entry of a comma list that suits the harness: an alias or a known name."""
    entries = [e.strip() for e in model_set.split(",") if e.strip()]
    if not entries:
        raise ModelSetError("empty model set (give --model size-md, a model name, or a comma list)")
    for i, entry in enumerate(entries):
        if entry in aliases:
            if warnings is not None and i + 1 < len(entries):
                rest = ", ".join(entries[i + 1:])
                warnings.append(f"model set entries after {entry} are never used: {rest}")
            return aliases[entry]
        if entry.lower().startswith(prefixes):
            return entry
    known = ", ".join(SIZE_ALIASES)
    names = ", ".join(p.rstrip("-") + ("-*" if p.endswith("-") else "") for p in prefixes)
    raise ModelSetError(
        f"no model in {model_set!r} suits harness {harness} (use {known}, or a name like {names})"
    )


def explicit_binary(env: Mapping[str, str], variable: str) -> str | None:
    """The binary named by ``variable``: a path must be an executable file, a bare name
    is looked up on PATH. None when the variable is unset or names nothing runnable."""
    explicit = env.get(variable)
    if not explicit:
        return None
    if os.sep in explicit:
        return explicit if os.path.isfile(explicit) and os.access(explicit, os.X_OK) else None
    return shutil.which(explicit, path=env.get("PATH"))


class CommandHarness:
    """A harness that runs one binary: holds the binary and resolves model sets for it."""

    name: str
    models: Mapping[str, str]  # size alias -> model name
    prefixes: tuple[str, ...]  # model names this harness runs as given
    missing_message: str

    def __init__(self, binary: str) -> None:
        self.binary = binary

    def resolve_model(self, model_set: str, warnings: list[str] | None = None) -> str:
        return resolve_model_set(model_set, self.name, self.models, self.prefixes, warnings)

    def override_models(self, overrides: Mapping[str, str]) -> None:
        """Settings' ``model_aliases`` for this harness: alias -> model name."""
        self.models = {**self.models, **overrides}


def alias_overrides(raw: str | None, harness: str) -> dict[str, str]:
    """This harness's part of ``SLOPJUDGE_MODEL_ALIASES``
    (``{"claude": {"size-sm": "claude-haiku-4-5"}, ...}``); ValueError when malformed."""
    import json

    if not raw or not raw.strip():
        return {}
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise ValueError(f"SLOPJUDGE_MODEL_ALIASES is not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError("SLOPJUDGE_MODEL_ALIASES must map harness names to {alias: model}")
    mine = data.get(harness) or {}
    if not isinstance(mine, dict):
        raise ValueError(f"SLOPJUDGE_MODEL_ALIASES[{harness!r}] must map size aliases to models")
    out: dict[str, str] = {}
    for alias, model in mine.items():
        if alias not in SIZE_ALIASES:
            raise ValueError(f"SLOPJUDGE_MODEL_ALIASES: {alias!r} is not one of "
                             + ", ".join(SIZE_ALIASES))
        if not isinstance(model, str) or not model.strip():
            raise ValueError(f"SLOPJUDGE_MODEL_ALIASES: {harness}.{alias} must name a model")
        out[alias] = model.strip()
    return out
