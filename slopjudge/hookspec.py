"""The protocols behind slopjudge's extension points (docs/architecture.md lists each with
its registry): each registry is a dict typed by one, so ``mypy --strict`` holds every entry
to its interface (tests/test_registries.py); an agent's hook side is in harnesses/registry.py."""

from __future__ import annotations

from slopjudge.model import record

TYPE_CHECKING = False  # not typing's: a PreToolUse hook running checks imports this module
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, Protocol

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


class ReportFormat(Protocol):
    def __call__(self, report: RunReport, *, color: bool = False) -> str: ...


@record
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

    def parse_output(self, stdout: bytes) -> tuple[bytes, dict[str, Any] | None]:
        """The reply and the usage the harness reported (None when it reported none)."""

