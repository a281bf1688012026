"""How far recorded verdicts agree with people's labels, and where they wobble (flips);
only real verdicts count (docs/records.md)."""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any

from slopjudge.records.record import read_json_lines

VERDICT_OUTCOMES = {"pass": "pass", "refuse": "refuse", "would_refuse": "refuse"}
LABELS = ("pass", "refuse")


@dataclass
class Agreement:
    n: int  # labels matched with a recorded verdict
    accuracy: float  # share of matched labels the verdict agrees with (0.0 when n == 0)
    kappa: float  # Cohen's kappa between verdicts and labels
    false_refusals: int  # verdict refuse, label pass
    false_passes: int  # verdict pass, label refuse
    missing: int  # labels with no recorded verdict
    true_passes: int = 0
    true_refusals: int = 0
    skipped: int = 0  # judge records that are not verdicts (runner errors): never compared

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def cohens_kappa(a: list[str], b: list[str]) -> float:
    """Cohen's kappa of two raters over the same items: (po - pe) / (1 - pe); 0.0 for no
    items (no evidence), 1.0 when both gave every item the same single class."""
    if len(a) != len(b):
        raise ValueError(f"cohens_kappa: {len(a)} ratings against {len(b)}")
    total = len(a)
    if total == 0:
        return 0.0
    observed = sum(1 for x, y in zip(a, b, strict=True) if x == y) / total
    count_a, count_b = Counter(a), Counter(b)
    expected = sum(count_a[c] * count_b[c] for c in set(count_a) | set(count_b)) / (total * total)
    if expected >= 1.0:
        return 1.0
    return (observed - expected) / (1.0 - expected)


# Reasons slopjudge gave when a judge reached no verdict (SPEC §5's fixed sentences).
_NO_VERDICT = re.compile(
    r"judge could not start|judge timed out after|the judge gave no (?:valid )?verdict"
    r"|judge unavailable: |judge output over |judge mock |slopjudge failed while judging"
    r"|judge template does not render|\(before the model was asked\)"
)


def verdict(event: dict[str, Any]) -> str | None:
    """``pass`` or ``refuse`` for a verdict event, ``None`` for anything else."""
    outcome = event.get("outcome")
    found = VERDICT_OUTCOMES.get(outcome) if isinstance(outcome, str) else None
    if found == "refuse":
        if event.get("shadow_error") is True:
            return None
        reason = event.get("reason")
        if event.get("kind") == "judge" and isinstance(reason, str) and _NO_VERDICT.search(reason):
            return None
    return found


def not_verdicts(events: list[dict[str, Any]]) -> int:
    """How many judge events are outcomes but not verdicts (errors, old-style crashes)."""
    return sum(1 for e in events if e.get("kind") == "judge" and verdict(e) is None
               and e.get("outcome") in ("refuse", "would_refuse", "error"))


def rule_check(record: dict[str, Any]) -> tuple[str | None, str | None]:
    """(rule, check) from ``rule``/``check`` or from ``id`` = ``<rule>/<check>``."""
    rule, check = record.get("rule"), record.get("check")
    full = record.get("id")
    if isinstance(full, str) and "/" in full:
        head, _, tail = full.partition("/")
        rule = head if rule is None else rule
        check = tail if check is None else check
    return rule, check


def _matches(label: dict[str, Any], event: dict[str, Any]) -> bool:
    rule, check = rule_check(label)
    ev_rule, ev_check = rule_check(event)
    if (rule is not None and rule != ev_rule) or (check is not None and check != ev_check):
        return False
    digest = label.get("prompt_sha256")
    if digest is not None:
        return bool(event.get("prompt_sha256") == digest)
    # Without a digest the label names its rule and check (check_label made sure).
    session = label.get("session_id")
    return session is None or event.get("session_id") == session


def check_label(label: Any, where: str) -> str | None:
    """A one-line problem with one label line, or None when it is usable."""
    if not isinstance(label, dict):
        return f"{where}: a label must be a JSON object"
    if label.get("label") not in LABELS:
        return f'{where}: "label" must be "pass" or "refuse", not {json.dumps(label.get("label"))}'
    if label.get("prompt_sha256") is None and None in rule_check(label):
        return f"{where}: a label needs \"prompt_sha256\", or \"id\", or \"rule\" and \"check\""
    return None


def compare(predicted: list[str], expected: list[str], *, missing: int = 0,
            skipped: int = 0) -> Agreement:
    """How far ``predicted`` verdicts agree with ``expected`` ones, pair by pair."""
    pairs = Counter(zip(predicted, expected, strict=True))
    n = len(predicted)
    agreed = pairs["pass", "pass"] + pairs["refuse", "refuse"]
    return Agreement(
        n=n, accuracy=agreed / n if n else 0.0, kappa=cohens_kappa(predicted, expected),
        false_refusals=pairs["refuse", "pass"], false_passes=pairs["pass", "refuse"],
        missing=missing, true_passes=pairs["pass", "pass"],
        true_refusals=pairs["refuse", "refuse"], skipped=skipped)


def agreement(events: list[dict[str, Any]], labels: list[dict[str, Any]]) -> Agreement:
    """The latest recorded verdict for each label against the label; ``ValueError``
    names the first unusable label (see :func:`check_label`)."""
    verdicts = [e for e in events if verdict(e) is not None]
    predicted: list[str] = []
    expected: list[str] = []
    for number, label in enumerate(labels, start=1):
        if problem := check_label(label, f"label {number}"):
            raise ValueError(problem)
        latest = next((e for e in reversed(verdicts) if _matches(label, e)), None)
        if latest is not None:
            predicted.append(verdict(latest) or "")
            expected.append(label["label"])
    return compare(predicted, expected, missing=len(labels) - len(predicted),
                   skipped=not_verdicts(events))


# What `report flips` shows of each verdict recorded for a flipping prompt.
_FLIP_FIELDS = ("outcome", "model", "runner", "session_id", "cache_hit", "reason")


def flips(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each (check, prompt) with both a pass and a refusal recorded, in order of first
    appearance, with every verdict recorded for it."""
    groups: dict[tuple[Any, Any, str], list[dict[str, Any]]] = {}
    for event in events:
        digest = event.get("prompt_sha256")
        if verdict(event) is None or not isinstance(digest, str) or not digest:
            continue
        groups.setdefault((*rule_check(event), digest), []).append(event)
    found: list[dict[str, Any]] = []
    for (rule, check, digest), group in groups.items():
        seen = Counter(verdict(e) for e in group)
        if len(seen) < 2:
            continue
        found.append({
            "id": f"{rule}/{check}", "rule": rule, "check": check, "prompt_sha256": digest,
            "passes": seen["pass"], "refusals": seen["refuse"],
            "verdicts": [{"time": e.get("time"), "verdict": verdict(e),
                          **{k: e.get(k) for k in _FLIP_FIELDS}} for e in group],
        })
    return found


def read_labels(path: str) -> tuple[list[dict[str, Any]], list[str]]:
    """``labels.jsonl``'s usable labels, and one ``path:line: problem`` per bad line."""
    return read_json_lines(path, check_label)
