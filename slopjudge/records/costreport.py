"""`slopjudge report cost`: what judge calls cost, from the event log (docs/records.md):
each judge event's ``judge_calls``, ``cached_calls`` and ``usage`` summed by rule, check,
model and day (UTC), and the cache's savings at each check's mean per call made.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from slopjudge.usage import TOKEN_FIELDS, clean, total_tokens

# No count or cost of a real log comes near this; past it a chart's arithmetic overflows.
_MOST = 1e15


def number(value: Any) -> float:
    """``value`` when it is a JSON number in [0, 1e15], else 0 (a log line may hold
    anything: json reads NaN and Infinity, which ``int()`` refuses)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    return value if 0 <= value <= _MOST else 0


def _usage(event: dict[str, Any]) -> dict[str, Any]:
    """The event's usage as usage.py reads a runner's (a log line may hold anything)."""
    found = clean(event.get("usage")) or {}
    return {k: v if k == "model" else number(v) for k, v in found.items()}


def _figures(event: dict[str, Any]) -> dict[str, Any]:
    """What one judge event adds to a row (all zeros for an empty one)."""
    usage = _usage(event)
    tokens = {k: usage.get(k, 0) for k in TOKEN_FIELDS}
    cached = event.get("cached_calls")
    return {
        "judge_calls": int(number(event.get("judge_calls"))),
        # Events from before per-unit counts: a cache hit was one unit.
        "cached_calls": int(number(cached)) if cached is not None else int(
            event.get("cache_hit") is True),
        **tokens,
        "tokens": total_tokens(tokens),
        "cost_usd": usage.get("cost_usd", 0.0),
    }


def model_of(event: dict[str, Any]) -> str:
    return str(_usage(event).get("model") or event.get("model") or "(unknown)")


def group_by(
    events: list[dict[str, Any]], key: Callable[[dict[str, Any]], str]
) -> list[dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    for e in events:
        row = rows.setdefault(key(e), {"key": key(e), **_figures({})})
        for name, value in _figures(e).items():
            row[name] += value
    for r in rows.values():
        r["cost_usd"] = round(r["cost_usd"], 6)
    return sorted(rows.values(), key=lambda r: r["key"])


def cost_report(events: list[dict[str, Any]]) -> dict[str, Any]:
    judges = [e for e in events if e.get("kind") == "judge"]
    total = (group_by(judges, lambda e: "total") or [{"key": "total", **_figures({})}])[0]
    by_check = group_by(judges, lambda e: str(e.get("id") or f"{e.get('rule')}/{e.get('check')}"))
    made = [r for r in by_check if r["judge_calls"]]
    saved_tokens = sum((r["cached_calls"] * r["tokens"] / r["judge_calls"] for r in made), 0.0)
    saved_cost = sum((r["cached_calls"] * r["cost_usd"] / r["judge_calls"] for r in made), 0.0)
    return {
        "total": total,
        "by_rule": group_by(judges, lambda e: str(e.get("rule"))),
        "by_check": by_check,
        "by_model": group_by(judges, model_of),
        "by_day": group_by(judges, lambda e: str(e.get("time") or "")[:10] or "(no time)"),
        "cache": {
            "cached_calls": total["cached_calls"],
            "saved_tokens": round(saved_tokens),
            "saved_cost_usd": round(saved_cost, 6),
        },
    }


def render_cost(path: str, report: dict[str, Any]) -> str:
    total = report["total"]
    calls = "call" if total["judge_calls"] == 1 else "calls"
    lines = [f"{path}: {total['judge_calls']} judge {calls}, {total['cached_calls']} answered "
             f"from cache, {total['tokens']:,} tokens, ${total['cost_usd']:.4f}"]
    for title in ("rule", "check", "model", "day"):
        rows = report[f"by_{title}"]
        if not rows:
            continue
        width = max(len(title), *(len(r["key"]) for r in rows))
        lines += ["", f"{title.ljust(width)}  {'calls':>6}  {'cached':>6}  {'input':>10}  "
                      f"{'output':>9}  {'cache':>10}  {'cost USD':>10}"]
        for r in rows:
            cache = r["cache_creation_input_tokens"] + r["cache_read_input_tokens"]
            lines.append(f"{r['key'].ljust(width)}  {r['judge_calls']:>6}  {r['cached_calls']:>6}"
                         f"  {r['input_tokens']:>10,}  {r['output_tokens']:>9,}  {cache:>10,}"
                         f"  {r['cost_usd']:>10.4f}")
    saved = report["cache"]
    lines += ["", f"cache: {saved['cached_calls']} answered from cache, saving about "
                  f"{saved['saved_tokens']:,} tokens and ${saved['saved_cost_usd']:.4f} "
                  "(at each check's mean per call)"]
    return "\n".join(lines)
