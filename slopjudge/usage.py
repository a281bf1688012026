"""What judge calls cost, from a runner's ``JUDGE-USAGE-JSON:`` line (docs/judges.md): a
plain dict (:data:`NUMBER_FIELDS` and ``model``), so the event log and the json report take
it as it is. A value that is not a non-negative number (``model``: a string) is dropped."""

from __future__ import annotations

# json, functools, typing: imported where used, so the text report's judge cost line
# (every CI run prints one) loads only what it calls.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

USAGE_MARKER = "JUDGE-USAGE-JSON:"

TOKEN_FIELDS = ("input_tokens", "output_tokens", "cache_creation_input_tokens",
                "cache_read_input_tokens")
NUMBER_FIELDS = (*TOKEN_FIELDS, "cost_usd", "duration_ms")


def clean(raw: Any) -> dict[str, Any] | None:
    """The known, well-typed fields of ``raw``; None when nothing usable is left."""
    if not isinstance(raw, dict):
        return None
    out: dict[str, Any] = {}
    for key in NUMBER_FIELDS:
        value = raw.get(key)
        if (isinstance(value, (int, float)) and not isinstance(value, bool)
                and 0 <= value < float("inf")):  # not NaN either
            out[key] = float(value) if key == "cost_usd" else int(value)
    model = raw.get("model")
    if isinstance(model, str) and model.strip():
        out["model"] = model.strip()[:200]
    return out or None


def _json_lines(text: str, marker: str = "") -> list[Any]:
    """The JSON value after ``marker`` on each line it starts; a banner or warning is skipped."""
    import json

    found = []
    for line in map(str.strip, text.splitlines()):
        if line.startswith(marker):
            try:
                found.append(json.loads(line[len(marker):]))
            except ValueError:
                continue
    return found


def parse_usage_line(text: str) -> dict[str, Any] | None:
    """The last well-formed ``JUDGE-USAGE-JSON:`` line of a runner's stderr."""
    usages = [u for u in map(clean, _json_lines(text, USAGE_MARKER)) if u is not None]
    return usages[-1] if usages else None


def usage_line(usage: dict[str, Any]) -> str:
    import json

    return f"{USAGE_MARKER} {json.dumps(usage, separators=(',', ':'), sort_keys=True)}"


def total_tokens(usage: dict[str, Any] | None) -> int:
    """Every token a call moved: input, output and both kinds of cache tokens."""
    return sum(int(usage.get(k) or 0) for k in TOKEN_FIELDS) if usage else 0


def add(a: dict[str, Any] | None, b: dict[str, Any] | None) -> dict[str, Any] | None:
    """The sum of two usages; ``model`` is kept when both agree, joined otherwise."""
    if not (a and b):
        return dict(a or b or {}) or None
    out = {key: (a.get(key) or 0) + (b.get(key) or 0) for key in NUMBER_FIELDS
           if key in a or key in b}
    models = dict.fromkeys(part for m in (a.get("model"), b.get("model")) if m
                           for part in str(m).split(",") if part)
    if models:
        out["model"] = ",".join(models)
    return out


def total(usages: Iterable[dict[str, Any] | None]) -> dict[str, Any] | None:
    from functools import reduce

    return reduce(add, usages, None)


def from_claude_result(obj: Any) -> dict[str, Any] | None:
    """Usage from ``claude -p --output-format json``: ``usage``, ``total_cost_usd``,
    ``duration_ms`` and the model names under ``modelUsage``."""
    if not isinstance(obj, dict):
        return None
    usage, models = obj.get("usage"), obj.get("modelUsage")
    return clean({**(usage if isinstance(usage, dict) else {}),  # clean keeps the token counts
                  "cost_usd": obj.get("total_cost_usd"), "duration_ms": obj.get("duration_ms"),
                  "model": ",".join(map(str, models)) if isinstance(models, dict) else None})


def codex_events(text: str) -> list[dict[str, Any]]:
    """The events of ``codex exec --json``, one a line: JSON objects with a string ``type``."""
    return [e for e in _json_lines(text) if isinstance(e, dict) and isinstance(e.get("type"), str)]


def from_codex_events(text: str) -> dict[str, Any] | None:
    """Usage from ``codex exec --json`` events: the sum of ``turn.completed`` usages. Codex's
    ``input_tokens`` include the cached ones (``cached_input_tokens``); here, as in
    Anthropic's usage, ``input_tokens`` are the uncached ones, so each is counted once."""
    out: dict[str, Any] | None = None
    for event in codex_events(text):
        usage = event.get("usage") if event["type"] == "turn.completed" else None
        if isinstance(usage, dict):
            ins, cached = usage.get("input_tokens"), usage.get("cached_input_tokens")
            if isinstance(ins, int) and isinstance(cached, int) and 0 < cached <= ins:
                ins -= cached
            out = add(out, clean({"input_tokens": ins, "cache_read_input_tokens": cached,
                                  "output_tokens": usage.get("output_tokens")}))
    return out


def summary(usage: dict[str, Any] | None, calls: int, cache_hits: int) -> str:
    """``3 judge calls (1 from cache), 5,400 tokens (in 4,000, out 200, cache 1,200), $0.0123``."""
    text = f"{calls} judge {'call' if calls == 1 else 'calls'}"
    if cache_hits:
        text += f" ({cache_hits} from cache)"
    if usage:
        ins, outs = int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)
        tokens = total_tokens(usage)  # the rest of it is cache tokens
        text += f", {tokens:,} tokens (in {ins:,}, out {outs:,}, cache {tokens - ins - outs:,})"
        if "cost_usd" in usage:
            text += f", ${float(usage['cost_usd']):.4f}"
    return text
