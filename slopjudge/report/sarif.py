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

from slopjudge.model import CheckResult, Finding, LoadError, Rule, RunReport, left_out_summary
from slopjudge.report import encodable

SARIF_SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVELS = {"refuse": "error", "needs_person": "error", "would_refuse": "warning"}


def tool_version() -> str:
    try:
        from importlib.metadata import version

        return version("slopjudge")
    except Exception:  # not installed (running from a bare checkout)
        return "0+unknown"


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


def _descriptor(check_id: str, rule: Rule | None, kind: str | None) -> dict[str, Any]:
    descriptor: dict[str, Any] = {"id": check_id}
    properties: dict[str, Any] = {"rule": check_id.partition("/")[0]}
    if kind:
        properties["kind"] = kind
    if rule is not None:
        descriptor["shortDescription"] = _message(rule.description)
        if rule.doc.strip():
            descriptor["fullDescription"] = {"text": rule.doc.strip()}
            descriptor["help"] = {"text": rule.doc.strip(), "markdown": rule.doc.strip()}
        properties["mode"] = rule.mode
    shadow = rule is not None and rule.mode == "shadow"
    descriptor["defaultConfiguration"] = {"level": "warning" if shadow else "error"}
    descriptor["properties"] = properties
    return descriptor


def _descriptors(report: RunReport) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Descriptors for every declared check, then for any reported check not declared."""
    rules_by_id = {r.id: r for r in report.rules}
    descriptors: list[dict[str, Any]] = []
    index: dict[str, int] = {}
    for check_id, rule, kind in [
            *((c.full_id, r, c.kind) for r in report.rules for c in r.checks),
            *((x.id, rules_by_id.get(x.rule), x.kind) for x in report.checks)]:
        if check_id not in index:
            index[check_id] = len(descriptors)
            descriptors.append(_descriptor(check_id, rule, kind))
    return descriptors, index


def _location(path: str | None, line: int | None, col: int = 0) -> dict[str, Any] | None:
    if not path:
        return None
    physical: dict[str, Any] = {"artifactLocation": {"uri": artifact_uri(path)}}
    if line and line >= 1:
        physical["region"] = {"startLine": int(line), **({"startColumn": col} if col >= 1 else {})}
    return {"physicalLocation": physical}


def _results(result: CheckResult, rule_index: int) -> list[dict[str, Any]]:
    level = _LEVELS[result.outcome]
    prefix = "would refuse (shadow): " if result.outcome == "would_refuse" else ""
    findings = result.findings or [Finding(message=result.reason)]
    out: list[dict[str, Any]] = []
    for finding in findings:
        text = prefix + (finding.message or result.reason)
        key = json.dumps([result.id, finding.path, finding.line, finding.message])
        entry: dict[str, Any] = {
            "ruleId": result.id,
            "ruleIndex": rule_index,
            "level": level,
            "message": _message(text),
            "partialFingerprints": {"slopjudge/v1": hashlib.sha256(key.encode()).hexdigest()[:32]},
            "properties": {"outcome": result.outcome, "reason": result.reason},
        }
        location = _location(finding.path, finding.line)
        if location:
            entry["locations"] = [location]
        out.append(entry)
    return out


def _notification(text: str, rule: tuple[str, int] | None = None,
                  error: LoadError | None = None) -> dict[str, Any]:
    """A tool execution notification: slopjudge could not decide (``rule``: the check's
    id and index), or a rule file does not load (``error``)."""
    note: dict[str, Any] = {"level": "error", "message": _message(text)}
    if rule is not None:
        note["associatedRule"] = {"id": rule[0], "index": rule[1]}
    location = _location(error.path, error.line, error.col) if error is not None else None
    if location:
        note["locations"] = [location]
    return note


def to_sarif(report: RunReport) -> dict[str, Any]:
    descriptors, index = _descriptors(report)
    results: list[dict[str, Any]] = []
    notifications = [_notification(f"{e.path} does not load: {e.message}", error=e)
                     for e in report.load_errors]
    for result in report.checks:
        if result.outcome in _LEVELS:
            results += _results(result, index[result.id])
        elif result.outcome == "error":
            notifications.append(_notification(f"{result.id}: {result.reason}",
                                               (result.id, index[result.id])))
    invocation: dict[str, Any] = {
        "executionSuccessful": not report.load_errors and not any(
            c.outcome == "error" for c in report.checks),
        "toolExecutionNotifications": notifications,
    }
    return {
        "$schema": SARIF_SCHEMA_URI,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "slopjudge",
                "version": tool_version(),
                "rules": descriptors,
            }},
            "invocations": [invocation],
            "columnKind": "unicodeCodePoints",
            "results": results,
            "properties": {"outcome": report.outcome, **_left_out(report)},
        }],
    }


def _left_out(report: RunReport) -> dict[str, Any]:
    if not report.left_out:
        return {}
    return {"leftOut": {"files": sum(x.files for x in report.left_out),
                        "summary": left_out_summary(report.left_out),
                        "entries": [{"path": x.path, "files": x.files, "why": x.why}
                                    for x in report.left_out]}}


def render(report: RunReport, *, color: bool = False) -> str:  # color: no meaning here
    return encodable(json.dumps(to_sarif(report), indent=2, ensure_ascii=False)) + "\n"
