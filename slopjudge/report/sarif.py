"""``--format sarif``: SARIF 2.1.0, for code-scanning panels (validated in tests against
``schemas/sarif-2.1.0-rtm.5.json``).

A descriptor per check; a result per finding of a refusal (``error``) or a shadow
``would_refuse`` (``warning``). Errors and rule load errors are not findings about the
code: they are tool execution notifications, and make ``executionSuccessful`` false.
"""

from __future__ import annotations

import hashlib
import json
import urllib.parse
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any

from slopjudge import __version__
from slopjudge.model import CheckResult, Finding, Rule, RunReport, asdict, left_out_summary
from slopjudge.report import encodable

SARIF_SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVELS = {"refuse": "error", "needs_person": "error", "would_refuse": "warning"}


def artifact_uri(path: str) -> str:
    """A URI reference for ``path``: relative paths stay relative, with '/' separators."""
    if PureWindowsPath(path).drive:  # C:\\x or \\\\server\\share
        return PureWindowsPath(path).as_uri()
    posix = path.replace("\\", "/")
    if posix.startswith("/"):
        return PurePosixPath(posix).as_uri()
    while posix.startswith("./"):
        posix = posix[2:]
    return urllib.parse.quote(posix, safe="/-._~!$&'()*+,;=@")


def _message(text: str) -> dict[str, str]:
    # SARIF requires non-empty message text.
    return {"text": text if text.strip() else "(no message)"}


def _descriptor(check_id: str, rule: Rule | None, kind: str) -> dict[str, Any]:
    descriptor: dict[str, Any] = {"id": check_id}
    properties: dict[str, Any] = {"rule": check_id.partition("/")[0], "kind": kind}
    if rule is not None:
        descriptor["shortDescription"] = _message(rule.description)
        if doc := rule.doc.strip():
            descriptor["fullDescription"] = {"text": doc}
            descriptor["help"] = {"text": doc, "markdown": doc}
        properties["mode"] = rule.mode
    level = "warning" if properties.get("mode") == "shadow" else "error"
    return descriptor | {"defaultConfiguration": {"level": level}, "properties": properties}


def _descriptors(report: RunReport) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Descriptors for every declared check, then for any reported check not declared."""
    rules_by_id = {r.id: r for r in report.rules}
    found: dict[str, dict[str, Any]] = {}
    for check_id, rule, kind in [
            *((c.full_id, r, c.kind) for r in report.rules for c in r.checks),
            *((x.id, rules_by_id.get(x.rule), x.kind) for x in report.checks)]:
        if check_id not in found:
            found[check_id] = _descriptor(check_id, rule, kind)
    return list(found.values()), {check_id: i for i, check_id in enumerate(found)}


def _locations(path: str | None, line: int | None, col: int = 0) -> dict[str, Any]:
    """``{"locations": [...]}`` of a place with a path, else nothing."""
    if not path:
        return {}
    physical: dict[str, Any] = {"artifactLocation": {"uri": artifact_uri(path)}}
    if line and line >= 1:
        physical["region"] = {"startLine": int(line), **({"startColumn": col} if col >= 1 else {})}
    return {"locations": [{"physicalLocation": physical}]}


def _results(result: CheckResult, rule_index: int) -> list[dict[str, Any]]:
    prefix = "would refuse (shadow): " if result.outcome == "would_refuse" else ""
    out: list[dict[str, Any]] = []
    for finding in result.findings or [Finding(message=result.reason)]:
        key = json.dumps([result.id, finding.path, finding.line, finding.message])
        out.append({
            "ruleId": result.id,
            "ruleIndex": rule_index,
            "level": _LEVELS[result.outcome],
            "message": _message(prefix + (finding.message or result.reason)),
            "partialFingerprints": {"slopjudge/v1": hashlib.sha256(key.encode()).hexdigest()[:32]},
            "properties": {"outcome": result.outcome, "reason": result.reason},
            **_locations(finding.path, finding.line),
        })
    return out


def render(report: RunReport, *, color: bool = False) -> str:  # color: no meaning here
    descriptors, index = _descriptors(report)
    results: list[dict[str, Any]] = []
    # Tool execution notifications: a rule file does not load, or slopjudge could not decide.
    notifications = [{"level": "error", "message": _message(f"{e.path} does not load: {e.message}"),
                      **_locations(e.path, e.line, e.col)} for e in report.load_errors]
    for result in report.checks:
        if result.outcome in _LEVELS:
            results += _results(result, index[result.id])
        elif result.outcome == "error":
            notifications.append({"level": "error",
                                  "message": _message(f"{result.id}: {result.reason}"),
                                  "associatedRule": {"id": result.id, "index": index[result.id]}})
    properties: dict[str, Any] = {"outcome": report.outcome}
    if report.left_out:
        properties["leftOut"] = {"files": sum(x.files for x in report.left_out),
                                 "summary": left_out_summary(report.left_out),
                                 "entries": [asdict(x) for x in report.left_out]}
    sarif = {
        "$schema": SARIF_SCHEMA_URI,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "slopjudge",
                "version": __version__,
                "rules": descriptors,
            }},
            "invocations": [{"executionSuccessful": not notifications,
                             "toolExecutionNotifications": notifications}],
            "columnKind": "unicodeCodePoints",
            "results": results,
            "properties": properties,
        }],
    }
    return encodable(json.dumps(sarif, indent=2, ensure_ascii=False)) + "\n"
