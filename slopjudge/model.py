"""The data every part of slopjudge passes around, as plain record classes.

Not dataclasses: importing ``dataclasses`` (and the ``inspect`` it loads) cost a
PreToolUse hook more than its own work. :func:`record` gives what slopjudge uses of them.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not ``typing``'s: importing typing costs the fast path too
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, Literal, dataclass_transform

    # Outcomes of one check. Only "pass" lets a change through; "skipped" and
    # "not_applicable" abstain; everything else refuses or reports an error.
    # "needs_person": a change to what decides the judging (`run --rules-from`).
    Outcome = Literal[
        "pass", "refuse", "error", "skipped", "not_applicable", "not_judged", "would_refuse",
        "needs_person",
    ]
    # A run's, a hook's or a case's answer as a whole.
    RunOutcome = Literal["pass", "refuse", "error", "needs_person"]
    # The check kinds: the keys of checks.CHECK_KINDS (tests/test_registries.py holds
    # the two, the loader and the rule schema to the same list).
    CheckKindName = Literal["script", "judge"]
else:
    def dataclass_transform(**_kw: object) -> Callable[[Any], Any]:
        return lambda f: f

EVENT_KINDS: tuple[str, ...] = ("pre-tool", "stop", "subagent-stop", "ci")
# The model sizes a rule or the settings may name instead of a model (each harness maps
# them to its own models).
SIZE_ALIASES = ("size-xs", "size-sm", "size-md", "size-lg", "size-xl", "size-xxl")


_MISSING: Any = object()  # no default


class Field:
    """One field of a record, as ``dataclasses.field`` makes one."""

    __slots__ = ("name", "default", "factory", "compare", "repr", "kw_only")

    def __init__(self, *, default: Any = _MISSING, default_factory: Any = _MISSING,
                 compare: bool = True, repr: bool = True) -> None:
        self.name = ""
        self.default, self.factory = default, default_factory
        self.compare, self.repr, self.kw_only = compare, repr, False


field: Any = Field


def fields(cls_or_obj: Any) -> tuple[Field, ...]:
    """A record's fields, in ``__init__`` order."""
    return tuple(cls_or_obj.__record_fields__)  # the same tuple, typed


def _make_init(cls: type, flds: tuple[Field, ...]) -> Any:
    """``__init__`` binding arguments as a dataclass's does (a wrong one is a TypeError).
    Not compiled from source: compiling a dozen of them cost the hook more than the rest."""
    qual = cls.__qualname__
    names = frozenset(f.name for f in flds)
    positional = tuple(f.name for f in flds if not f.kw_only)
    post = hasattr(cls, "__post_init__")

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        values = dict(zip(positional, args, strict=False))
        if len(args) > len(positional) or not names.issuperset(kwargs) or values.keys() & kwargs:
            raise TypeError(f"{qual}() takes {', '.join(positional)} (keywords: "
                            f"{', '.join(sorted(names))}), not {args!r} {kwargs!r}")
        values.update(kwargs)
        for f in flds:
            value = values.get(f.name, f.default)
            if value is _MISSING:  # no default: a factory's, or a required one
                if f.factory is _MISSING:
                    raise TypeError(f"{qual}() missing required argument {f.name!r}")
                value = f.factory()
            setattr(self, f.name, value)
        if post:
            self.__post_init__()

    __init__.__qualname__ = f"{qual}.__init__"
    return __init__


@dataclass_transform(field_specifiers=(Field,))
def record(cls: Any = None, /, *, kw_only: bool = False) -> Any:
    """As ``@dataclass`` (``eq``, ``repr``, ``kw_only``), without importing it."""

    def wrap(cls: Any) -> Any:
        flds: dict[str, Field] = {}
        for base in reversed(cls.__mro__[1:]):
            for f in getattr(base, "__record_fields__", ()):
                flds[f.name] = f
        for name in cls.__dict__.get("__annotations__", {}):
            value = cls.__dict__.get(name, _MISSING)
            if isinstance(value, (list, dict, set)):  # one object shared by every instance
                raise ValueError(f"mutable default {type(value).__name__} for field {name} "
                                 "is not allowed: use field(default_factory=...)")
            if isinstance(value, Field):
                delattr(cls, name)  # every instance sets its own
            else:
                value = Field(default=value)
            value.name, value.kw_only = name, kw_only
            flds[name] = value
        cls.__record_fields__ = ordered = tuple(flds.values())
        cls.__init__ = _make_init(cls, ordered)
        shown = tuple(f.name for f in ordered if f.repr)
        compared = tuple(f.name for f in ordered if f.compare)

        def __repr__(self: Any) -> str:
            inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in shown)
            return f"{type(self).__qualname__}({inner})"

        def __eq__(self: Any, other: object) -> bool:
            if other.__class__ is not self.__class__:
                return NotImplemented
            return tuple(getattr(self, n) for n in compared) == tuple(
                getattr(other, n) for n in compared)

        cls.__repr__, cls.__eq__, cls.__hash__ = __repr__, __eq__, None
        return cls

    return wrap if cls is None else wrap(cls)


def asdict(obj: Any) -> dict[str, Any]:
    """As ``dataclasses.asdict``: records, lists and dicts in it copied through."""
    return {f.name: _copy(getattr(obj, f.name)) for f in fields(obj)}


def _copy(obj: Any) -> Any:
    if getattr(type(obj), "__record_fields__", None) is not None:
        return asdict(obj)
    if isinstance(obj, (list, tuple)):
        return type(obj)(_copy(v) for v in obj)
    if isinstance(obj, dict):
        return type(obj)((_copy(k), _copy(v)) for k, v in obj.items())
    return obj


@record
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


@record
class LoadResult:
    """What loading a rules folder gives: the good rules, and every problem."""

    rules: list[Rule]  # only rules with no problem, sorted by id
    errors: list[LoadError]  # every problem, sorted by (path, line, col)
    files: list[str]  # every rule file considered
    # Paths outside the rule and template folders the result depends on (scripts
    # found on PATH, PATH folders searched in vain): the rules cache stats them too.
    watched: list[str] = field(default_factory=list)
    # Preview rules the settings leave off: loaded without problems, not run.
    preview_off: list[Rule] = field(default_factory=list)


@record
class Check:
    id: str  # short id, unique in its rule
    rule: str  # rule id
    kind: CheckKindName
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


@record
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
    # sloprail's shapes (docs/sloprail.md): a match expression over each file or the
    # event (loading/matchexpr.py; "" matches all), prerequisites checked before any
    # check (checks/require.py), and a script that groups the files into subjects.
    match: str = ""
    require: list[dict[str, Any]] = field(default_factory=list)
    subjects: str | None = None
    preview: bool = False  # off unless the settings enable previews
    measured: dict[str, Any] = field(default_factory=dict)  # the figures behind its status

    def status_why(self) -> str:
        """Why the rule is stable or preview: its measured figures, in one line."""
        m = self.measured
        if not m:
            return "not measured"
        parts = []
        if m.get("precision") is not None:
            parts.append(f"precision {m['precision']:.2f} ({m.get('findings', 0)} findings)")
        elif "findings" in m:
            parts.append("no findings")
        if m.get("false_refusals") is not None:
            parts.append(f"false refusals {m['false_refusals']:.1%} of {m.get('commits', 0)} "
                         "code commits")
        said = [", ".join(parts) + f" on {m['corpus']}"] if parts else []
        said += [f"{label}{m[key]}" for key, label in (("note", ""), ("misses", "misses: "))
                 if m.get(key)]
        return "; ".join(said)


@record
class Commit:
    sha: str
    subject: str
    body: str


@record
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
    # The payload's parsed hunks (schemas/payload.schema.json); None until first use
    # (``payload.file_payload``), then built by ``hunk_source`` (the parse that read
    # ``diff``), else from ``diff``. Lazy: a file no rule admits never has them built.
    hunks: list[dict[str, Any]] | None = field(default=None, compare=False, repr=False)
    hunk_source: Callable[[], list[dict[str, Any]]] | None = field(
        default=None, compare=False, repr=False)


@record
class LeftOut:
    """Files of the change that are not judged (changes/authored.py): a file, or a
    folder (``path`` ends in ``/``) of ``files`` files, and why."""

    path: str
    files: int
    why: str


@record
class Changeset:
    base: str | None = None
    head: str | None = None  # None for a work tree or a bare diff
    commits: list[Commit] = field(default_factory=list)
    files: list[FileChange] = field(default_factory=list)
    left_out: list[LeftOut] = field(default_factory=list)


@record
class Event:
    kind: str
    tool_name: str | None = None
    tool_input: dict[str, Any] | None = None
    session_id: str | None = None
    transcript_path: str | None = None
    cwd: str | None = None


@record
class Finding:
    path: str | None = None
    line: int | None = None
    message: str = ""


@record
class CheckResult:
    id: str  # "<rule>/<check>"
    rule: str
    check: str
    kind: CheckKindName
    outcome: Outcome
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
        out = {"id": self.id, "rule": self.rule, "kind": self.kind, "outcome": self.outcome,
               "reason": self.reason, "findings": [asdict(f) for f in self.findings],
               "duration_ms": self.duration_ms}
        if self.kind == "judge":
            out["usage"] = {"judge_calls": self.judge_calls, "cached_calls": self.cached_calls,
                            "units": self.units, "prompt_tokens": self.prompt_tokens,
                            **(self.usage or {})}
        return out


@record
class RunReport:
    outcome: RunOutcome
    checks: list[CheckResult] = field(default_factory=list)
    load_errors: list[LoadError] = field(default_factory=list)
    rules: list[Rule] = field(default_factory=list)  # for report metadata (SARIF rules)
    left_out: list[LeftOut] = field(default_factory=list)  # files of the change not judged

    def to_dict(self) -> dict[str, Any]:
        from slopjudge.usage import total, total_tokens

        summed = total(c.usage for c in self.checks) or {}
        return {
            "outcome": self.outcome,
            "checks": [c.to_report() for c in self.checks],
            "load_errors": [str(e) for e in self.load_errors],
            "usage": {"judge_calls": sum(c.judge_calls for c in self.checks),
                      "cached_calls": sum(c.cached_calls for c in self.checks),
                      "tokens": total_tokens(summed), **summed},
            "left_out": {"files": sum(x.files for x in self.left_out),
                         "entries": [asdict(x) for x in self.left_out]},
        }


def left_out_summary(left_out: list[LeftOut]) -> str:
    """One line for a report: "N files left out of judging: why (count), ..."; "" if none."""
    if not left_out:
        return ""
    by_why: dict[str, int] = {}
    for x in left_out:
        by_why[x.why] = by_why.get(x.why, 0) + x.files
    total = sum(by_why.values())
    shown = [x.path for x in left_out[:3]]
    more = f", {len(left_out) - 3} more" if len(left_out) > 3 else ""
    return (f"{total} file{'s' if total != 1 else ''} left out of judging: "
            + "; ".join(f"{why} ({n})" for why, n in sorted(by_why.items()))
            + f" [{', '.join(shown)}{more}]; --include-generated judges them")


def overall_outcome(
    checks: list[CheckResult], load_errors: list[LoadError], *, person_blocks: bool = True
) -> RunOutcome:
    """error beats needs_person beats refuse beats pass; load errors make the run an
    error. ``person_blocks`` false (``rule_changes: warn``): a needs_person check is
    shown and does not decide the run."""
    if load_errors or any(c.outcome == "error" for c in checks):
        return "error"
    if person_blocks and any(c.outcome == "needs_person" for c in checks):
        return "needs_person"
    if any(c.outcome == "refuse" for c in checks):
        return "refuse"
    return "pass"
