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

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from .model import Changeset, Check, CheckResult, Event, Rule, RunReport

if TYPE_CHECKING:
    from .options import RunOptions


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
