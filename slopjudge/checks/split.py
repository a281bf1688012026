"""Bounded judge prompts: a change over ``max_prompt_tokens`` is judged in parts, by
files, then by groups of one file's hunks; a hunk that does not fit alone is an error
(docs/judges.md, "Prompt budget"). Tokens are UTF-8 bytes / 3.5: code and prose run at
3.5 to 4.5 bytes a token, so the estimate errs on the large side, without a tokenizer."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from slopjudge.checks.script import with_files

DEFAULT_MAX_PROMPT_TOKENS = 100_000
BYTES_PER_TOKEN = 3.5
# Parts are planned this far under the budget: numbering them (``unit.index``,
# ``unit.count``) after planning adds a few bytes.
NUMBERING_MARGIN = 32
WORKSPACE_ALLOWANCE = 256  # bytes each mention of the workspace path counts for (below)

Render = Callable[[dict[str, Any]], str]  # a payload -> the whole prompt (instruction included)


def estimate_tokens(text: str, workspace: str | None = None) -> int:
    """Each mention of ``workspace`` counted as :data:`WORKSPACE_ALLOWANCE` bytes (its real
    size when longer): the same change gives the same parts wherever the repository lives."""
    size = len(text.encode("utf-8"))
    if workspace:
        size += text.count(workspace) * max(
            0, WORKSPACE_ALLOWANCE - len(workspace.encode("utf-8")))
    return math.ceil(size / BYTES_PER_TOKEN)


@dataclass
class Part:
    """One judge call's share of the change."""

    label: str | None  # None: the whole change; a path for one file (or its hunks)
    payload: dict[str, Any]
    prompt: str = ""  # rendered, with the judge's instruction
    files: list[str] = field(default_factory=list)
    tokens: int = 0  # the prompt's, estimated
    fingerprint: str | None = None  # its own prepare's (a per-unit prepare)
    usage: dict[str, Any] | None = None  # what its model call cost (JUDGE-USAGE-JSON)


@dataclass
class Plan:
    parts: list[Part]
    problems: list[str]  # one line per part that cannot fit; the check is an error


def split_hunks(diff: str) -> tuple[str, list[str]]:
    """A file's diff as (header, hunks); each hunk starts at its ``@@`` line."""
    header, *hunks = re.split(r"(?m)^(?=@@)", diff)
    return header, hunks


def _file_size(f: dict[str, Any]) -> int:
    keys = ("diff", "oldContent", "newContent")
    return sum(len(str(f.get(k) or "").encode("utf-8")) for k in keys)


class _Planner:
    def __init__(self, base: dict[str, Any], render: Render, budget: int,
                 workspace: str | None = None) -> None:
        self.base = base
        self.render = render
        self.limit = budget  # as configured, for messages
        self.budget = max(1, budget - NUMBERING_MARGIN)  # what parts are planned to
        self.workspace = workspace or None
        self.problems: list[str] = []

    def part(self, label: str | None, files: list[dict[str, Any]],
             hunks: dict[str, int] | None = None, whole: bool = False,
             place: tuple[int, int] = (1, 1)) -> Part:
        """A part rendered at ``place``; at (0, 0) it is rendered when numbered."""
        paths = [str(f.get("path")) for f in files]
        payload = dict(with_files(self.base, files), unit={
            "index": place[0], "count": place[1], "files": paths, "hunks": hunks, "whole": whole})
        prompt = self.render(payload) if place[1] else ""
        return Part(label, payload, prompt, paths, estimate_tokens(prompt, self.workspace))

    def too_big(self, f: dict[str, Any], tokens: int, why: str) -> None:
        n = _file_size(f)
        size = next((f"{n / at:.1f} {unit}" for unit, at in (("MB", 1_000_000), ("KB", 1_000))
                     if n >= at), f"{n} bytes")
        self.problems.append(
            f"{f.get('path')} ({size}) does not fit max_prompt_tokens "
            f"{self.limit:,}: {why} is about {tokens:,} tokens; it was not judged "
            "(exclude it from the rule's paths, or raise max_prompt_tokens)"
        )

    def one_file(self, f: dict[str, Any], single: Part) -> list[Part]:
        """Parts for a file too big to go alone: groups of its hunks."""
        path = str(f.get("path"))
        header, hunks = split_hunks(str(f.get("diff") or ""))
        if len(hunks) == 0 or (len(hunks) == 1 and not f.get("newContent")
                               and not f.get("oldContent")):
            self.too_big(f, single.tokens, "the file alone")
            return []
        slim = dict(f, oldContent=None, newContent=None)
        of = len(hunks)
        parsed = f.get("hunks") or []

        def make(group: list[int]) -> Part:
            hk = {"first": group[0] + 1, "last": group[-1] + 1, "of": of}
            diff = header + "".join(hunks[i] for i in group)
            mine = [parsed[i] for i in group] if len(parsed) == of else parsed
            return self.part(path, [dict(slim, diff=diff, hunks=mine)], hk)

        def fit(group: list[int]) -> list[Part]:
            # make(group), halved while it is over the budget: hunks are grouped by their
            # estimated sizes, and an estimate can be short (a template may render a hunk
            # more than once).
            part = singles[group[0]] if len(group) == 1 else make(group)
            if part.tokens <= self.budget or len(group) == 1:
                return [part]
            half = len(group) // 2
            return fit(group[:half]) + fit(group[half:])

        singles = [make([i]) for i in range(of)]
        for i, one in enumerate(singles):
            if one.tokens > self.budget:
                self.too_big(f, one.tokens, f"its hunk {i + 1} of {of} alone")
                return []
        overhead = self.part(path, [dict(slim, diff=header, hunks=[])],
                             {"first": 1, "last": 1, "of": of})
        groups = _groups([max(s.tokens - overhead.tokens, 1) for s in singles],
                         overhead.tokens, self.budget)
        return [p for group in groups for p in fit(group)]

    def files(self, group: list[dict[str, Any]]) -> Part:
        """A part of some whole files, rendered when numbered (:meth:`numbered`)."""
        label = (str(group[0].get("path")) if len(group) == 1
                 else f"{len(group)} files from {group[0].get('path')}")
        return self.part(label, group, place=(0, 0))

    def numbered(self, parts: list[Part]) -> list[Part]:
        """Each part rendered at its place (:func:`number_parts`); a part of several files
        over the limit after all is halved and the parts numbered again."""
        while True:
            number_parts(parts, self.render, self.limit, self.workspace)
            over = [i for i, p in enumerate(parts) if p.tokens > self.limit and len(p.files) > 1]
            if not over:
                return parts
            for i in reversed(over):
                group = parts[i].payload["changeset"]["files"]
                half = len(group) // 2
                parts[i:i + 1] = [self.files(group[:half]), self.files(group[half:])]

    def shares(self, files: list[dict[str, Any]], whole: int, overhead: int) -> list[int]:
        """Each file's share of a prompt, measured once for all files: the prompt grows
        by ``a + b * size`` a file (``size``: its path, diff and contents in bytes), with
        ``a`` and ``b`` solved from the whole change and its first half, each rendered
        once. An estimate: every part is rendered and checked before it is used."""
        sizes = [_file_size(f) + len(str(f.get("path"))) for f in files]
        n, total = len(files), sum(sizes)
        grown = whole - overhead
        a, b = 0.0, (grown / total if total else 0.0)
        if n > 1:
            m = n // 2
            half = self.part(None, files[:m]).tokens - overhead
            det = n * sum(sizes[:m]) - m * total
            if det:
                a2 = (grown * sum(sizes[:m]) - half * total) / det
                b2 = (n * half - m * grown) / det
                if a2 >= 0 and b2 >= 0:
                    a, b = a2, b2
        if not total and not a:
            a = grown / n
        return [max(1, math.ceil(a + b * size)) for size in sizes]


def _groups(extras: list[int], overhead: int, budget: int) -> list[list[int]]:
    """Indexes in order, as few to a group as ``overhead`` plus their extras fit."""
    groups: list[list[int]] = [[]]
    size = overhead
    for i, extra in enumerate(extras):
        if groups[-1] and size + extra > budget:
            groups.append([])
            size = overhead
        groups[-1].append(i)
        size += extra
    return groups if groups[-1] else []


def part_note(unit: dict[str, Any], each_file: bool) -> str:
    """What the judge is told when it sees part of the change, not the whole of it."""
    hunks = unit.get("hunks")
    if hunks:
        return (f"\n\nThis prompt holds only hunks {hunks['first']}-{hunks['last']} of "
                f"{hunks['of']} of {unit['files'][0]} (part {unit['index']} of {unit['count']}); "
                "its full text is in the repository. Judge only these hunks.")
    if unit.get("whole") or each_file:
        return ""
    return (f"\n\nThe change is too large for one prompt: this is part {unit['index']} of "
            f"{unit['count']}, holding {len(unit['files'])} of its files. Judge only these files.")


def plan(base: dict[str, Any], *, each_file: bool, render: Render, budget: int,
         workspace: str | None = None, place: tuple[int, int] = (1, 1)) -> Plan:
    """The judge calls for one check: the whole change, or numbered parts that fit
    ``budget``, each part of whole files rendered once, at its place (:meth:`numbered`).
    ``each_file``: each file of the unit alone, numbered from ``place`` (its place among
    the check's files: :func:`number_parts` renders again only when a file was split)."""
    files: list[dict[str, Any]] = list((base.get("changeset") or {}).get("files") or [])
    planner = _Planner(base, render, budget, workspace)
    if not files or not each_file:
        whole = planner.part(None, files, whole=True)
        if whole.tokens <= budget:
            return Plan([whole], [])
        if not files:
            return Plan([], [f"the prompt is about {whole.tokens:,} tokens, over "
                             f"max_prompt_tokens {budget:,}"])
    parts: list[Part] = []
    if each_file:  # a file alone, or in groups of its hunks; a subject may hold several
        for i, f in enumerate(files):
            single = planner.part(str(f.get("path")), [f],
                                  place=(place[0] + i, max(place[1], len(files))))
            parts += [single] if single.tokens <= planner.budget else planner.one_file(f, single)
        return Plan(parts, planner.problems)
    overhead = planner.part(None, []).tokens
    if overhead > planner.budget:
        return Plan([], [f"the prompt without any file is about {overhead:,} tokens, "
                         f"over max_prompt_tokens {budget:,}"])
    shares = planner.shares(files, whole.tokens, overhead)

    def packed(run: list[int]) -> list[Part]:  # its files, in order, as few to a part as fit
        groups = _groups([shares[i] for i in run], overhead, planner.budget)
        return [planner.files([files[run[i]] for i in group]) for group in groups]

    run: list[int] = []  # files that fit, waiting to be packed (the change's order kept)
    for i, f in enumerate(files):
        if overhead + shares[i] > planner.budget:  # measured alone; too big, split by hunks
            alone = planner.part(str(f.get("path")), [f])
            if alone.tokens > planner.budget:
                parts += packed(run) + planner.one_file(f, alone)
                run = []
                continue
            shares[i] = max(1, alone.tokens - overhead)
        run.append(i)
    parts += packed(run)
    return Plan(planner.numbered(parts), planner.problems)


def number_parts(parts: list[Part], render: Render, budget: int,
                 workspace: str | None = None) -> list[str]:
    """Give each part its place among all of a check's parts (``unit.index``/``count``),
    rendered again only where it changed; the parts then over ``budget`` as problems."""
    for n, part in enumerate(parts, 1):
        unit = dict(part.payload["unit"], index=n, count=len(parts))
        if unit == part.payload["unit"]:
            continue
        part.payload = dict(part.payload, unit=unit)
        part.prompt = render(part.payload)
        part.tokens = estimate_tokens(part.prompt, workspace)
    return [f"{p.label or 'the change'}: the prompt is about {p.tokens:,} tokens, over "
            f"max_prompt_tokens {budget:,}" for p in parts if p.tokens > budget]
