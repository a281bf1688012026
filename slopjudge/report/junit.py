"""``--format junit``: JUnit XML for CI test panels, a suite per rule, a case per check.

A shadow ``would_refuse`` does not block, so it is no failure: the case passes and its
``<system-out>`` says what it would have refused. Rule load errors form a
``slopjudge-load`` suite with one erroring case per rule file.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from slopjudge.model import CheckResult, LoadError, RunReport, left_out_summary
from slopjudge.report import first_line, outcome_label
from slopjudge.report.text import format_finding

_SKIPPED = {"skipped", "not_applicable", "not_judged"}
# Characters XML 1.0 cannot carry at all; a parser rejects the whole file over one.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
LOAD_SUITE = "slopjudge-load"


def _xml_text(text: str) -> str:
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _details(result: CheckResult) -> str:
    parts = [result.reason.strip()] if result.reason.strip() else []
    parts += [format_finding(f) for f in result.findings]
    return _xml_text("\n".join(parts))


def _testcase(suite: ET.Element, result: CheckResult) -> None:
    """Add one case, marked failure, error or skipped as its outcome says."""
    case = ET.SubElement(suite, "testcase", classname=result.rule, name=result.id,
                         time=f"{result.duration_ms / 1000:.3f}")
    message = _xml_text(first_line(result.reason) or outcome_label(result.outcome))
    if result.outcome in _SKIPPED:
        label = outcome_label(result.outcome)
        # A reason that already says the outcome ("not judged (dry run)") is not repeated.
        if result.reason.strip() and not message.lower().startswith(label.lower()):
            message = f"{label}: {message}"
        ET.SubElement(case, "skipped", message=message)
        return
    if result.outcome == "would_refuse":
        ET.SubElement(case, "system-out").text = _xml_text(
            "would refuse (shadow mode, not blocking): " + _details(result))
    if result.outcome not in ("pass", "would_refuse"):
        # A refusal fails the case; an error, or an outcome this format does not know (never
        # hidden), errors it.
        mark = "failure" if result.outcome in ("refuse", "needs_person") else "error"
        ET.SubElement(case, mark, message=message, type=result.outcome).text = _details(result)


def _set_counts(element: ET.Element, seconds: float) -> None:
    """The counts of the cases under ``element``, read from their marks."""
    cases = list(element.iter("testcase"))
    element.set("tests", str(len(cases)))
    for name, mark in (("failures", "failure"), ("errors", "error"), ("skipped", "skipped")):
        element.set(name, str(sum(case.find(mark) is not None for case in cases)))
    element.set("time", f"{seconds:.3f}")


def _load_suite(root: ET.Element, errors: list[LoadError]) -> None:
    by_path: dict[str, list[LoadError]] = {}
    for error in errors:
        by_path.setdefault(error.path, []).append(error)
    suite = ET.SubElement(root, "testsuite", name=LOAD_SUITE)
    for path, group in by_path.items():
        case = ET.SubElement(suite, "testcase", classname=LOAD_SUITE, name=path, time="0.000")
        ET.SubElement(case, "error", message=_xml_text(f"{path} does not load: {group[0].message}"),
                      type="load-error").text = _xml_text("\n".join(str(e) for e in group))
    _set_counts(suite, 0.0)


def render(report: RunReport, *, color: bool = False) -> str:  # color: no meaning here
    root = ET.Element("testsuites", name="slopjudge")
    if report.load_errors:
        _load_suite(root, report.load_errors)
    by_rule: dict[str, list[CheckResult]] = {}
    for result in report.checks:
        by_rule.setdefault(result.rule, []).append(result)
    for rule, results in by_rule.items():
        suite = ET.SubElement(root, "testsuite", name=rule)
        for r in results:
            _testcase(suite, r)
        _set_counts(suite, sum(r.duration_ms for r in results) / 1000)
    _set_counts(root, sum(r.duration_ms for r in report.checks) / 1000)
    left = left_out_summary(report.left_out)
    if left:  # a JUnit reader shows a suite's properties; the count and why
        props = ET.SubElement(root, "properties")
        ET.SubElement(props, "property", name="slopjudge.left_out", value=left)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
