"""How one engine run behaves: :class:`RunOptions`, from the settings (which carry the
environment's overrides) plus what only a run needs: rubric, judge mocks, cost limits."""

from __future__ import annotations

import os

from slopjudge.errors import SlopjudgeError
from slopjudge.jsonobject import loads
from slopjudge.loading.config import Limits
from slopjudge.model import field, fields, record
from slopjudge.resources import in_package

TYPE_CHECKING = False  # not typing's: a PreToolUse hook running checks imports this module
if TYPE_CHECKING:
    from typing import Any

    from slopjudge.loading.config import Settings


@record
class RunOptions:
    """How one engine run behaves; filled from CLI flags, config and environment."""

    jobs: int = 0  # script checks at once; 0: the CPU count
    judge_slots: int = 8  # model calls at once, on this whole machine (judging/slots.py)
    dry_run: bool = False
    prompts_dir: str | None = None
    runner: str | None = None  # the runner's command line; None: the default (runner/client.py)
    no_cache: bool = False
    judge_mocks: dict[str, str] | None = None  # SLOPJUDGE_JUDGE_MOCKS
    cache_dir: str | None = None  # verdict cache; None: no cache
    shard: tuple[int, int] | None = None  # (index 1-based, count)
    rubric: str = ""  # RUBRIC.md with '#' lines removed
    template_dirs: list[str] = field(default_factory=list)  # shared templates/ folders
    # The rule pack's own files (workspace-relative folders and files): not sent to judges
    # unless a rule's paths ask for them (checks/judge.py).
    pack_paths: list[str] = field(default_factory=list)
    retry_backoff_s: float = 3.0
    retries: int = 1
    # Judge cost: prompt budget default, spend limits (budget.Budget), model alias overrides.
    max_prompt_tokens: int | None = None
    budget: Any = None
    model_aliases: dict[str, dict[str, str]] = field(default_factory=dict)
    # slopjudge's own Python scripts run in this process (checks/inproc.py): a hook
    # process, under its deadline, with no other thread
    in_process: bool = False


def options_from_settings(settings: Settings, **overrides: Any) -> RunOptions:
    rubric = settings.rubric_path
    limits = Limits(**{f.name: getattr(settings, f.name) for f in fields(Limits)})
    budget = None
    if limits.any():
        from slopjudge.judging.budget import Budget  # loaded only where a limit is set

        budget = Budget(limits, settings.state_dir)
    try:
        mocks = judge_mocks_from_env()
    except ValueError as exc:
        raise SlopjudgeError(str(exc)) from None
    return RunOptions(**dict(
        jobs=settings.jobs,
        judge_slots=settings.judge_slots,
        runner=settings.runner,
        cache_dir=settings.cache_dir,
        template_dirs=list(settings.template_dirs),
        pack_paths=_pack_paths(settings),
        max_prompt_tokens=settings.max_prompt_tokens,
        model_aliases=dict(settings.model_aliases),
        rubric=read_rubric(rubric) if rubric and os.path.isfile(rubric) else "",
        budget=budget,
        judge_mocks=mocks,
    ) | overrides)


def _pack_paths(settings: Settings) -> list[str]:
    """The rules folder, the project's template folders and its rubric, relative to the
    workspace (those inside it); slopjudge's own installed copies are not the project's."""
    ws = os.path.realpath(settings.workspace)
    rels = [os.path.relpath(os.path.realpath(path), ws).replace(os.sep, "/")
            for path in [settings.rules_dir, *settings.template_dirs, settings.rubric_path]
            if path and not in_package(path)]
    # And what `slopjudge init` copies beside the rules for editors.
    return ["schemas/rule.schema.json", "schemas/case.schema.json",
            *(rel for rel in rels if rel != "." and not rel.startswith("../"))]


def read_rubric(path: str) -> str:
    """RUBRIC.md as judges read it: every line that starts with ``#`` removed."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        return "".join(line for line in fh if not line.startswith("#"))


def judge_mocks_from_env(environ: dict[str, str] | None = None) -> dict[str, str] | None:
    """``SLOPJUDGE_JUDGE_MOCKS``: None when unset; ValueError (one line) when malformed. Set
    but empty, every judge errors: a test run never falls through to a real model."""
    raw = (os.environ if environ is None else environ).get("SLOPJUDGE_JUDGE_MOCKS")
    if raw is None:
        return None
    if not raw.strip():
        return {}
    shape = 'a JSON object {"<rule>/<check>": "/abs/script"}'
    try:
        data = loads(raw)
    except ValueError as exc:
        raise ValueError(f"SLOPJUDGE_JUDGE_MOCKS is not JSON ({exc}); expected {shape}") from None
    if not isinstance(data, dict):
        raise ValueError(f"SLOPJUDGE_JUDGE_MOCKS is not {shape}")
    for key, value in data.items():
        if key.count("/") != 1 or not all(key.split("/")):
            raise ValueError(f"SLOPJUDGE_JUDGE_MOCKS: {key!r} is not a check id <rule>/<check>")
        if not isinstance(value, str) or not os.path.isabs(value):
            raise ValueError(f"SLOPJUDGE_JUDGE_MOCKS: the mock for {key} must be an absolute path")
    return data
