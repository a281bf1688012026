"""``slopjudge report html``: the event log as one self-contained HTML page
(docs/reports.md says what it shows), from the template ``data/report.html.j2``.

Charts are pygal's SVG, inlined with no script, so the file opens anywhere; fixed
chart ids and no dated comment make the same log give the same page, byte for byte.
"""

from __future__ import annotations

import os
import re
import statistics
from collections import Counter
from datetime import UTC, datetime
from typing import Any

from slopjudge.records.agreement import agreement, rule_check, verdict
from slopjudge.records.costreport import group_by, model_of, number

DEFAULT_LINK = "file://{abspath}"
# Series colours, drawn opaque (pygal's default blends them with the background).
COLOURS = ("#d62728", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf")
_MAX_BUCKETS = 40


# --- the figures -------------------------------------------------------------------


def bucket_width(events: list[dict[str, Any]]) -> tuple[int, str]:
    """How much of the ISO time names a bucket (day, hour or minute), and its name: the
    finest that keeps the span of the log within a chart's width."""
    times = []
    for e in events:
        text = e.get("time")
        try:
            if isinstance(text, str) and len(text) >= 16:
                when = datetime.fromisoformat(text.replace("Z", "+00:00"))
                # A time without its zone is read as UTC, as slopjudge writes them.
                times.append(when if when.tzinfo else when.replace(tzinfo=UTC))
        except ValueError:
            pass  # not a time: counted in no bucket
    span = (max(times) - min(times)).total_seconds() if times else 0.0
    for width, name, seconds in ((16, "minute", 60), (13, "hour", 3600)):
        if span / seconds < _MAX_BUCKETS:
            return width, name
    return 10, "day"


def over_time(events: list[dict[str, Any]]) -> dict[str, Any]:
    """Refusals and errors per rule per time bucket (every bucket the log covers)."""
    width, unit = bucket_width(events)
    buckets = sorted({str(e.get("time") or "")[:width] for e in events if e.get("time")})
    counts: dict[str, dict[str, Counter[str]]] = {"refusals": {}, "errors": {}}
    for e in events:
        outcome = e.get("outcome")
        refusal = outcome in ("refuse", "would_refuse") and verdict(e) is not None
        error = outcome == "error" or (outcome == "would_refuse" and e.get("shadow_error") is True)
        kind = "refusals" if refusal else "errors" if error else None
        if kind and e.get("time"):
            per_rule = counts[kind].setdefault(str(e.get("rule")), Counter())
            per_rule[str(e["time"])[:width]] += 1
    return {
        "unit": unit,
        "buckets": buckets,
        **{kind: {rule: [c[b] for b in buckets] for rule, c in sorted(by_rule.items())}
           for kind, by_rule in counts.items()},
    }


def cost_by_rule_and_model(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    judges = [e for e in events if e.get("kind") == "judge"]
    rows = group_by(judges, lambda e: f"{e.get('rule')}\t{model_of(e)}")
    for row in rows:
        row["rule"], row["model"] = row.pop("key").split("\t", 1)
        row["cache_tokens"] = row["cache_creation_input_tokens"] + row["cache_read_input_tokens"]
    return rows


def latency(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Judge wall time per rule and model, of the calls that went to a model."""
    seen: dict[tuple[str, str], list[float]] = {}
    for e in events:
        took = e.get("duration_ms")
        if (e.get("kind") != "judge" or e.get("cache_hit") is True
                or e.get("outcome") in ("not_judged", "skipped", "not_applicable")
                or number(took) != took or isinstance(took, bool)):
            continue  # not a time (NaN, infinite, negative, a string)
        seen.setdefault((str(e.get("rule")), model_of(e)), []).append(float(took))
    rows = []
    for (rule, model), values in sorted(seen.items()):
        values.sort()
        rows.append({"rule": rule, "model": model, "calls": len(values),
                     "p50": statistics.median(values),
                     "p90": values[min(len(values) - 1, int(0.9 * len(values)))],
                     "max": values[-1], "values": values})
    return rows


def agreement_by_rule(events: list[dict[str, Any]],
                      labels: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """Per rule: the matrix of recorded verdicts against people's labels."""
    if not labels:
        return []
    rule_of_prompt = {e.get("prompt_sha256"): str(e.get("rule")) for e in events
                      if e.get("prompt_sha256")}
    shadow = {str(e.get("rule")) for e in events if e.get("outcome") == "would_refuse"}
    per_rule: dict[str, list[dict[str, Any]]] = {}
    for label in labels:
        rule = rule_check(label)[0] or rule_of_prompt.get(label.get("prompt_sha256"))
        if rule:
            per_rule.setdefault(str(rule), []).append(label)
    rows = []
    for rule, its_labels in sorted(per_rule.items(), key=lambda kv: (kv[0] not in shadow, kv[0])):
        found = agreement([e for e in events if str(e.get("rule")) == rule], its_labels)
        rows.append({"rule": rule, "shadow": rule in shadow, **found.to_dict()})
    return rows


def last_run(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events of the last run: those sharing the last recorded ``run``, else the
    last event's unbroken tail of the same event kind and session (logs from before
    runs were named)."""
    if not events:
        return []
    named = [e for e in events if isinstance(e.get("run"), str)]
    if named:
        last = named[-1]["run"]
        return [e for e in events if e.get("run") == last]
    key = (events[-1].get("event"), events[-1].get("session_id"))
    tail: list[dict[str, Any]] = []
    for e in reversed(events):
        if (e.get("event"), e.get("session_id")) != key:
            break
        tail.append(e)
    return tail[::-1]


def page_data(events: list[dict[str, Any]], *, labels: list[dict[str, Any]] | None,
              link: str, workspace: str, source: str) -> dict[str, Any]:
    run = last_run(events)
    checks = []
    for e in run:
        findings = []
        listed = e.get("findings")
        for f in listed if isinstance(listed, list) else []:
            if isinstance(f, dict) and isinstance(f.get("path"), str) and f["path"]:
                line = f.get("line") if isinstance(f.get("line"), int) else None
                full = os.path.normpath(os.path.join(workspace, f["path"]))  # abs: as it is
                findings.append({"where": f"{f['path']}:{line}" if line else f["path"],
                                 "href": link.format(path=f["path"], abspath=full, line=line or 1),
                                 "message": str(f.get("message") or "")})
        checks.append({"id": str(e.get("id") or f"{e.get('rule')}/{e.get('check')}"),
                       "outcome": str(e.get("outcome")),
                       "reason": str(e.get("reason") or "").strip().split("\n")[0][:300],
                       "findings": findings})
    times = [str(e["time"]) for e in events if e.get("time")]
    return {
        "source": source,
        "events": len(events),
        "runs": len({e.get("run") for e in events if e.get("run")}),
        "first": min(times) if times else "",
        "last": max(times) if times else "",
        "outcomes": dict(sorted(Counter(str(e.get("outcome")) for e in events).items())),
        "over_time": over_time(events),
        "cost": cost_by_rule_and_model(events),
        "latency": latency(events),
        "agreement": agreement_by_rule(events, labels),
        "labels_given": labels is not None,
        "last_run": {"time": run[-1].get("time") if run else "",
                     "event": run[-1].get("event") if run else "", "checks": checks},
    }


# --- the charts ----------------------------------------------------------------------


def _chart(kind: str, chart_id: str, title: str, **config: Any) -> Any:
    import pygal
    from pygal.style import Style

    style = Style(colors=COLOURS, opacity="1", opacity_hover="1", background="white",
                  plot_background="white", font_family="system-ui, sans-serif")
    chart = getattr(pygal, kind)(
        js=[],  # pygal's tooltips load from the network: none, the page stands alone
        style=style, disable_xml_declaration=True, width=900, height=360, title=title,
        legend_at_bottom=True, truncate_legend=40, print_values=False, **config)
    chart.uuid = chart_id  # fixed ids: the same log gives the same page
    return chart


def _svg(chart: Any) -> str:
    text = str(chart.render(is_unicode=True))
    text = re.sub(r"<!--.*?-->", "", text)  # pygal's credits, dated: not ours to repeat
    # pygal's inline script only configures its tooltips, which are left out: none at all.
    return re.sub(r"<script\b.*?</script>", "", text, flags=re.S)


def charts(data: dict[str, Any]) -> dict[str, str]:
    found: dict[str, str] = {}
    times = data["over_time"]
    for kind in ("refusals", "errors"):
        if times[kind]:
            chart = _chart("StackedBar", f"{kind}-over-time",
                           f"{kind.capitalize()} per {times['unit']}, by rule",
                           x_label_rotation=35, show_minor_x_labels=False)
            chart.x_labels = times["buckets"]
            chart.x_labels_major_every = max(1, len(times["buckets"]) // 12)
            for rule, values in times[kind].items():
                chart.add(rule, values)
            found[kind] = _svg(chart)
    if data["cost"]:
        rules = sorted({r["rule"] for r in data["cost"]})
        models = sorted({r["model"] for r in data["cost"]})
        for what, field, unit in (("cost", "cost_usd", "USD"), ("tokens", "tokens", "tokens")):
            chart = _chart("HorizontalStackedBar", f"{what}-by-rule",
                           f"Judge {what} by rule and model ({unit})")
            chart.x_labels = rules
            cells = {(r["rule"], r["model"]): r[field] for r in data["cost"]}
            for model in models:
                chart.add(model, [cells.get((rule, model)) for rule in rules])
            found[what] = _svg(chart)
    if data["latency"]:
        chart = _chart("Box", "judge-latency", "Judge latency per call (ms), by rule and model",
                       box_mode="tukey")
        for row in data["latency"]:
            chart.add(f"{row['rule']} · {row['model']}", row["values"])
        found["latency"] = _svg(chart)
    return found


def render(events: list[dict[str, Any]], *, labels: list[dict[str, Any]] | None = None,
           link: str = DEFAULT_LINK, workspace: str = ".", source: str = "") -> str:
    import jinja2
    from markupsafe import Markup

    from slopjudge.resources import data_path

    data = page_data(events, labels=labels, link=link, workspace=workspace, source=source)
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(os.path.dirname(data_path("report.html.j2"))),
        autoescape=True, undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    svgs = {k: Markup(v) for k, v in charts(data).items()}  # pygal escapes its text
    return env.get_template("report.html.j2").render(data=data, charts=svgs)
