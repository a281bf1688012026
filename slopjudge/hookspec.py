"""The extension points of slopjudge, on one page.

Each capability plugs in behind one small protocol, so a new check kind,
changeset source, report format, or judge harness is one module that does
not touch the others:

- a **check kind** (``checks/script.py``, ``checks/judge.py``) turns a
  :class:`CheckContext` into a :class:`~slopjudge.model.CheckResult`;
- a **changeset source** (``changeset.py``) produces a
  :class:`~slopjudge.model.Changeset` from a diff, a commit range, the index
  or the work tree;
- a **report format** (``report/*.py``) renders a
  :class:`~slopjudge.model.RunReport` as text;
- a **harness** (``runner/harness_*.py``) tells ``slopjudge-agent`` how to run
  one coding agent as a judge;
- a **hook point** (``hooks/*.py``) translates one agent event into an engine
  run and the engine's answer back into the agent's protocol.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from .model import Changeset, Check, CheckResult, Event, Rule, RunReport

if TYPE_CHECKING:
    from .procs import Registry


@dataclass
class RunOptions:
    """How one engine run behaves; filled from CLI flags, config and environment."""

    jobs: int = 0  # 0: the CPU count
    dry_run: bool = False
    prompts_dir: str | None = None
    runner: str | None = None  # a command line; None: resolve (see runner/client.py)
    no_cache: bool = False
    judge_mocks: dict[str, str] | None = None  # SLOPJUDGE_JUDGE_MOCKS
    events_file: str | None = None  # None: do not record
    cache_dir: str | None = None  # verdict cache; None: no cache
    shard: tuple[int, int] | None = None  # (index 1-based, count)
    rubric: str = ""  # RUBRIC.md with '#' lines removed
    template_dirs: list[str] = field(default_factory=list)  # shared templates/ folders
    retry_backoff_s: float = 3.0
    retries: int = 1
    # Judge cost: the prompt budget default, the spend limits (budget.Budget), and
    # the settings' model alias overrides for the runner.
    max_prompt_tokens: int | None = None
    budget: Any = None
    model_aliases: dict[str, dict[str, str]] = field(default_factory=dict)


@dataclass
class CheckContext:
    """Everything one check needs to run."""

    rule: Rule
    check: Check
    event: Event
    workspace: str
    changeset: Changeset  # the files this rule admits (paths/exclude applied)
    payload: dict[str, Any]  # SPEC §3 object for this rule and check
    options: RunOptions
    # The rule's payload serialised once for all its checks (engine.SharedPayload).
    shared_payload: Any = None
    # The run's child processes: stopping this run stops these, and no other run's.
    processes: Registry | None = None


class CheckKind(Protocol):
    def __call__(self, ctx: CheckContext) -> CheckResult: ...


class ChangesetSource(Protocol):
    def __call__(self, workspace: str) -> Changeset: ...


class ReportFormat(Protocol):
    def __call__(self, report: RunReport) -> str: ...


class Harness(Protocol):
    name: str

    def argv(
        self,
        *,
        model: str,
        prompt: str,
        allowed_tools: list[str],
        disallowed_tools: list[str],
        writable_dirs: list[str],
        readonly_dirs: list[str],
    ) -> tuple[list[str], bytes]:
        """The command to run and the bytes for its stdin."""
        ...

    def resolve_model(self, model_set: str) -> str: ...
