"""The data every part of slopjudge passes around.

Plain dataclasses with no imports beyond the standard library, so the hook
fast path can use them without pulling in jinja2, jsonschema or ruamel.yaml.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from collections.abc import Callable

EVENT_KINDS: tuple[str, ...] = ("pre-tool", "stop", "subagent-stop", "ci")

# Outcomes of one check. Only "pass" lets a change through; "skipped" and
# "not_applicable" abstain; everything else refuses or reports an error.
Outcome = Literal[
    "pass", "refuse", "error", "skipped", "not_applicable", "not_judged", "would_refuse"
]


@dataclass
class LoadError:
    """One problem found while loading rules, printed as ``path:line:col: message``."""

    path: str
    line: int
    col: int
    message: str
    rule: str | None = None
    # Where the broken rule would have applied, so the hooks fail closed on it:
    # its `on` (None when the file does not say it readably: every event) and
    # its `tools` (empty: every tool).
    on: list[str] | None = None
    tools: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.col}: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class LoadResult:
    """What loading a rules folder gives: the good rules, and every problem."""

    rules: list[Rule]  # only rules with no problem, sorted by id
    errors: list[LoadError]  # every problem, sorted by (path, line, col)
    files: list[str]  # every rule file considered
    # Paths outside the rule and template folders the result depends on (scripts
    # found on PATH, PATH folders searched in vain): the rules cache stats them too.
    watched: list[str] = field(default_factory=list)


@dataclass
class Check:
    id: str  # short id, unique in its rule
    rule: str  # rule id
    kind: Literal["script", "judge"]
    needs: list[str] = field(default_factory=list)  # full ids "<rule>/<check>"
    timeout: float = 120.0  # seconds
    script: str | None = None  # absolute path, or a bare command name found on PATH
    prepare: str | None = None  # absolute path, or a bare command name
    judge: str | None = None  # absolute template path
    model: str = "size-md"
    allowed_tools: list[str] = field(default_factory=list)
    disallowed_tools: list[str] = field(default_factory=list)
    each: Literal["changeset", "file"] = "changeset"
    min_confidence: float | None = None
    max_prompt_tokens: int | None = None  # None: the settings' default (checks/split.py)
    line: int = 0  # position of the check in its rule file (1-based)
    col: int = 0

    @property
    def full_id(self) -> str:
        return f"{self.rule}/{self.id}"


@dataclass
class Rule:
    id: str
    path: str  # absolute path of the rule file
    dir: str  # absolute path of the folder holding it
    description: str
    on: list[str] = field(default_factory=lambda: ["stop", "ci"])
    tools: list[str] = field(default_factory=list)  # empty: every tool
    paths: list[str] = field(default_factory=list)  # empty: every file
    exclude: list[str] = field(default_factory=list)
    mode: Literal["enforce", "shadow"] = "enforce"
    on_uncertain: Literal["deny", "ask"] = "deny"
    checks: list[Check] = field(default_factory=list)
    doc: str = ""  # the long description block (What it does / Why / Example / Fix)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Rule:
        data = dict(data)
        data["checks"] = [Check(**c) for c in data.get("checks", [])]
        return cls(**data)


@dataclass
class Commit:
    sha: str
    subject: str
    body: str


@dataclass
class FileChange:
    """One changed file, named as git names it (paths relative to the repo root)."""

    path: str
    status: Literal["A", "M", "D", "R"]
    old_path: str | None = None  # the source of a rename or copy
    old_content: str | None = None
    new_content: str | None = None
    diff: str = ""  # this file's part of the unified diff, headers included
    binary: bool = False
    added: int = 0  # added lines (0 for binary)
    removed: int = 0
    # The payload's parsed hunks (schemas/payload.schema.json); None until first use,
    # then built by ``hunk_source`` (the parse that read ``diff``), else from ``diff``.
    # Lazy: a file no rule admits never has its hunks built.
    hunks: list[dict[str, Any]] | None = field(default=None, compare=False, repr=False)
    hunk_source: Callable[[], list[dict[str, Any]]] | None = field(
        default=None, compare=False, repr=False)

    def to_payload(self) -> dict[str, Any]:
        if self.hunks is None:
            if self.hunk_source is not None:
                self.hunks = self.hunk_source()
            else:
                from slopjudge.changes.diffparse import hunks_of

                self.hunks = hunks_of(self.diff)
        self.hunk_source = None  # the parse it holds is freed once read
        return {
            "path": self.path,
            "status": self.status,
            "oldPath": self.old_path,
            "oldContent": self.old_content,
            "newContent": self.new_content,
            "diff": self.diff,
            "binary": self.binary,
            "hunks": self.hunks,
        }


@dataclass
class Changeset:
    base: str | None = None
    head: str | None = None  # None for a work tree or a bare diff
    commits: list[Commit] = field(default_factory=list)
    files: list[FileChange] = field(default_factory=list)


@dataclass
class Event:
    kind: str
    tool_name: str | None = None
    tool_input: dict[str, Any] | None = None
    session_id: str | None = None
    transcript_path: str | None = None
    cwd: str | None = None

    def to_payload(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Finding:
    path: str | None = None
    line: int | None = None
    message: str = ""


@dataclass
class CheckResult:
    id: str  # "<rule>/<check>"
    rule: str
    check: str
    kind: Literal["script", "judge"]
    outcome: str  # an Outcome
    reason: str = ""
    findings: list[Finding] = field(default_factory=list)
    duration_ms: int = 0
    # Facts kept for the event log; not all of them reach reports.
    runner: str | None = None
    model: str | None = None
    prompt_sha256: str | None = None
    template_sha256: str | None = None
    cache_hit: bool = False
    confidence: float | None = None
    uncertain: bool = False  # a judge pass refused only for falling short of min_confidence
    shadow_error: bool = False  # a would_refuse that was an error (no decision) in a shadow rule
    tokens: int | None = None
    cost: float | None = None
    prompt: str | None = None  # rendered prompt, kept for replay and --prompts-dir
    # Judge cost (usage.py): summed usage of the calls made, the calls made, and
    # the units answered from the cache; prompt size of the largest unit.
    usage: dict[str, Any] | None = None
    judge_calls: int = 0
    cached_calls: int = 0
    units: int = 0
    prompt_tokens: int | None = None

    def to_report(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "rule": self.rule,
            "kind": self.kind,
            "outcome": self.outcome,
            "reason": self.reason,
            "findings": [asdict(f) for f in self.findings],
            "duration_ms": self.duration_ms,
            **self._usage_report(),
        }

    def _usage_report(self) -> dict[str, Any]:
        if self.kind != "judge":
            return {}
        return {"usage": {"judge_calls": self.judge_calls, "cached_calls": self.cached_calls,
                          "units": self.units, "prompt_tokens": self.prompt_tokens,
                          **(self.usage or {})}}


@dataclass
class RunReport:
    outcome: Literal["pass", "refuse", "error"]
    checks: list[CheckResult] = field(default_factory=list)
    load_errors: list[LoadError] = field(default_factory=list)
    rules: list[Rule] = field(default_factory=list)  # for report metadata (SARIF rules)

    def to_dict(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome,
            "checks": [c.to_report() for c in self.checks],
            "load_errors": [str(e) for e in self.load_errors],
            "usage": run_usage(self.checks),
        }


def run_usage(checks: list[CheckResult]) -> dict[str, Any]:
    """The run's judge cost: calls made, calls answered from the cache, summed usage."""
    from slopjudge.judging.usage import total, total_tokens

    summed = total(c.usage for c in checks) or {}
    return {
        "judge_calls": sum(c.judge_calls for c in checks),
        "cached_calls": sum(c.cached_calls for c in checks),
        "tokens": total_tokens(summed),
        **summed,
    }


def overall_outcome(
    checks: list[CheckResult], load_errors: list[LoadError]
) -> Literal["pass", "refuse", "error"]:
    """error beats refuse beats pass; load errors make the run an error."""
    if load_errors or any(c.outcome == "error" for c in checks):
        return "error"
    if any(c.outcome == "refuse" for c in checks):
        return "refuse"
    return "pass"
