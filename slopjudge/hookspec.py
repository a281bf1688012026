"""The extension points of slopjudge, on one page.

Each capability plugs in behind one protocol declared here, and each has one
registry: a dict from a name to an implementation, typed by the protocol so
that ``mypy --strict`` holds every entry to the interface (tests/test_registries.py
shows mypy rejecting entries that drift). A new changeset source, report format or
judge harness is one module plus one registry entry:

- a **check kind** (:class:`CheckKind`) turns a :class:`CheckContext` into a
  :class:`~slopjudge.model.CheckResult`. Registry: ``CHECK_KINDS`` in
  ``checks/__init__.py`` (``script``, ``judge``), keyed by ``model.CheckKindName``,
  the one list of kinds, which mypy holds the registry, the loader and the results
  to; the engine dispatches on a check's ``kind`` through it. A new kind also needs
  its key in the rule schema and the loader's reading of its fields.
- a check's **outcome** is ``model.Outcome`` (a run's, ``model.RunOutcome``): one
  ``Literal`` every result is typed by.
- a **changeset source** (:class:`ChangesetSource`) produces the
  :class:`~slopjudge.model.Changeset` a CLI command judges (``--diff``,
  ``--base``, ``--staged``, ``--working-tree``). Registry: ``SOURCES`` in
  ``changes/sources.py``.
- a **report format** (:class:`ReportFormat`) renders a
  :class:`~slopjudge.model.RunReport` as text. Registry: ``FORMATS`` in
  ``report/__init__.py``; ``slopjudge run --format`` and ``--write`` offer
  exactly its keys.
- a **harness** (:class:`Harness`) tells ``slopjudge-agent`` how to run one
  coding agent as a judge; a :class:`HarnessFactory` finds its binary. It is the
  ``judge`` of an agent (:class:`~slopjudge.harnesses.registry.AgentHarness`: one module
  per agent, which also reads its hook payloads, writes its answers and its
  install). Registry: ``HARNESSES`` in ``harnesses/registry.py`` (``claude``,
  ``codex``).
- a **hook point** (``hooks/*.py``) translates one agent event into an engine
  run and the engine's answer back into the agent's protocol.

How a run behaves (:class:`~slopjudge.checks.options.RunOptions`) lives in
``checks/options.py``.
"""

from __future__ import annotations

from slopjudge.model import record

TYPE_CHECKING = False  # not typing's: a PreToolUse hook running checks imports this module
if TYPE_CHECKING:
    import argparse
    from collections.abc import Mapping
    from typing import Any, Protocol

    from slopjudge.changes.authored import Policy
    from slopjudge.checks.options import RunOptions
    from slopjudge.model import Changeset, Check, CheckResult, Event, Rule, RunReport
    from slopjudge.procs import Registry
else:
    Protocol = object  # the protocols are for the type checker; at run time, plain classes


@record
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
    # A rule with `subjects`: what its script printed, each judge asked once per entry.
    subjects: list[dict[str, Any]] | None = None
    # The run's child processes: stopping this run stops these, and no other run's.
    processes: Registry | None = None


class CheckKind(Protocol):
    """Runs one check; never raises (a failure to decide is an ``error`` result)."""

    def __call__(self, ctx: CheckContext) -> CheckResult: ...


class ChangesetSource(Protocol):
    """The change a command's source flags name, without the files ``policy`` leaves out
    (``changes/authored.py``); raises ChangesetError or OSError (one line)."""

    def __call__(self, args: argparse.Namespace, workspace: str,
                 policy: Policy | None) -> Changeset: ...


class ReportFormat(Protocol):
    def __call__(self, report: RunReport, *, color: bool = False) -> str: ...


@record(frozen=True)
class JudgeAttempt:
    """What one judge attempt asks of a harness. ``writable_dirs[0]``, when there is
    one, is the private answer folder."""

    model: str
    prompt: str
    allowed_tools: list[str]
    disallowed_tools: list[str]
    writable_dirs: list[str]
    readonly_dirs: list[str]


class Harness(Protocol):
    name: str
    binary: str
    missing_message: str  # said when the binary was not found

    def resolve_model(self, model_set: str, warnings: list[str] | None = None) -> str: ...

    def override_models(self, overrides: Mapping[str, str]) -> None: ...

    def check_tools(self, allowed_tools: list[str], disallowed_tools: list[str]) -> None:
        """Raise ValueError for tool rules this harness cannot honour."""

    def argv(self, attempt: JudgeAttempt) -> tuple[list[str], bytes]:
        """The command to run and the bytes for its stdin."""
        ...

    def parse_output(self, stdout: bytes) -> tuple[bytes, dict[str, Any] | None]:
        """The reply and the usage the harness reported (None when it reported none)."""
        ...


class HarnessFactory(Protocol):
    """A harness for this environment, and whether its binary was found."""

    def __call__(self, env: Mapping[str, str]) -> tuple[Harness, bool]: ...
