"""Every report format, checked the way its consumer reads it."""

from __future__ import annotations

import copy
import io
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest

from slopjudge.model import Check, CheckResult, Finding, LoadError, Rule, RunReport, overall_outcome
from slopjudge.report import FORMATS, render
from slopjudge.report.text import Progress

SCHEMAS = Path(__file__).resolve().parent.parent / "schemas"


def _rule(rule_id: str, description: str, checks: list[tuple[str, str]], *, doc: str = "",
          mode: str = "enforce") -> Rule:
    return Rule(
        id=rule_id, path=f"/repo/rules/{rule_id}.yaml", dir="/repo/rules", description=description,
        mode=mode, doc=doc,
        checks=[Check(id=cid, rule=rule_id, kind=kind) for cid, kind in checks],  # type: ignore[arg-type]
    )


def _result(
    full_id: str,
    kind: str,
    outcome: str,
    reason: str = "",
    findings: list[Finding] | None = None,
    ms: int = 10,
) -> CheckResult:
    rule, _, check = full_id.partition("/")
    return CheckResult(id=full_id, rule=rule, check=check, kind=kind, outcome=outcome,  # type: ignore[arg-type]
                       reason=reason, findings=findings or [], duration_ms=ms)


def sample_report(*, load_errors: bool = True) -> RunReport:
    """Every outcome, findings with and without lines, non-ASCII, newlines and % in reasons."""
    checks = [
        _result("no-todo/grep", "script", "pass", ms=12),
        _result(
            "no-todo/judge",
            "judge",
            "refuse",
            "Leaves TODOs behind: 100% of new functions\nSecond line: a, b: c\r\nthird",
            [
                Finding("src/app.py", 12, "TODO left in a new function"),
                Finding("docs/café, notes.md", None, "mentions «later» without a plan"),
                Finding(None, None, "the change as a whole defers work"),
            ],
            ms=1530,
        ),
        _result("docs/readme", "judge", "refuse", "README does not say how to install", ms=2400),
        _result(
            "docs/links",
            "script",
            "error",
            "script crashed: exit 139\n\x1b[31mcore dumped\x00",
            ms=40,
        ),
        _result("docs/spelling", "script", "skipped", "needs docs/links, which errored", ms=0),
        _result("style/naming", "judge", "not_applicable", "", ms=0),
        _result("style/tone", "judge", "not_judged", "", ms=5),
        _result(
            "shadowed/strict",
            "judge",
            "would_refuse",
            "Would block: 3 magic numbers",
            [Finding("src/calc.py", 7, "magic number 42")],
            ms=800,
        ),
        _result("shadowed/loose", "judge", "would_refuse", "No findings, still refuses", ms=300),
    ]
    rules = [
        _rule(
            "no-todo",
            "New code does not leave TODOs behind",
            [("grep", "script"), ("judge", "judge")],
            doc="## What it does\nFinds TODO markers.\n\n## Fix\nDo the work or open an issue.",
        ),
        _rule(
            "docs",
            "Docs say how to install and link correctly",
            [("readme", "judge"), ("links", "script"), ("spelling", "script")],
        ),
        _rule("style", "Names and tone fit the codebase", [("naming", "judge"), ("tone", "judge")]),
        _rule(
            "shadowed",
            "Strict numeric hygiene (trial)",
            [("strict", "judge"), ("loose", "judge")],
            mode="shadow",
        ),
    ]
    errors = (
        [
            LoadError(
                "rules/broken.yaml",
                3,
                5,
                'unknown field "chekcs" (did you mean "checks"?)',
                rule="broken",
            ),
            LoadError("rules/broken.yaml", 9, 1, "needs: unknown check `nope`", rule="broken"),
            LoadError("rules/other, odd.yaml", 1, 1, "description: required", rule="other"),
        ]
        if load_errors
        else []
    )
    return RunReport(outcome=overall_outcome(checks, errors), checks=checks, load_errors=errors,  # type: ignore[arg-type]
                     rules=rules)


def test_formats_and_dispatch() -> None:
    assert tuple(FORMATS) == ("text", "json", "junit", "sarif", "github", "markdown")
    report = sample_report()
    for fmt in FORMATS:
        assert render(report, fmt).endswith("\n")
    with pytest.raises(ValueError, match="unknown report format 'xml'"):
        render(report, "xml")


# --- json ---------------------------------------------------------------------

def _report_validator() -> jsonschema.protocols.Validator:
    schema = json.loads((SCHEMAS / "report.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_json_is_to_dict_and_matches_the_schema() -> None:
    report = sample_report()
    data = json.loads(render(report, "json"))
    assert data == report.to_dict()
    assert data["outcome"] == "error"
    _report_validator().validate(data)
    assert {c["outcome"] for c in data["checks"]} == {
        "pass", "refuse", "error", "skipped", "not_applicable", "not_judged", "would_refuse"}
    assert data["checks"][1]["findings"][2] == {
        "path": None,
        "line": None,
        "message": "the change as a whole defers work",
    }


@pytest.mark.parametrize("mutate", [
    lambda d: d.update(outcome="maybe"),
    lambda d: d["checks"][0].update(outcome="passed"),
    lambda d: d["checks"][0].update(kind="prompt"),
    lambda d: d["checks"][0]["findings"].append({"path": "a", "line": "3", "message": "x"}),
    lambda d: d["checks"][0].pop("reason"),
    lambda d: d.update(load_errors=[{"path": "x"}]),
])
def test_report_schema_rejects_what_it_should(mutate) -> None:
    data = sample_report().to_dict()
    mutate(data)
    assert list(_report_validator().iter_errors(data)), "schema accepted a malformed report"


# --- sarif --------------------------------------------------------------------

def _sarif_validator() -> jsonschema.protocols.Validator:
    schema = json.loads((SCHEMAS / "sarif-2.1.0-rtm.5.json").read_text())
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def test_sarif_validates_against_the_official_schema() -> None:
    log = json.loads(render(sample_report(), "sarif"))
    _sarif_validator().validate(log)
    # And the schema really bites: a bad level, a line 0, a missing message are rejected.
    for mutate in (
        lambda d: d["runs"][0]["results"][0].update(level="fatal"),
        lambda d: d["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"].update(
            startLine=0
        ),
        lambda d: d["runs"][0]["results"][0].pop("message"),
        lambda d: d.update(version="2.0.0"),
    ):
        bad = copy.deepcopy(log)
        mutate(bad)
        assert list(_sarif_validator().iter_errors(bad))


def test_sarif_content() -> None:
    report = sample_report()
    run = json.loads(render(report, "sarif"))["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "slopjudge"
    assert driver["version"]
    ids = [d["id"] for d in driver["rules"]]
    assert ids == [c.full_id for r in report.rules for c in r.checks]  # one descriptor per check
    todo = driver["rules"][ids.index("no-todo/judge")]
    assert todo["shortDescription"]["text"] == "New code does not leave TODOs behind"
    assert "Do the work or open an issue." in todo["fullDescription"]["text"]
    assert "## Fix" in todo["help"]["markdown"]
    assert (
        driver["rules"][ids.index("shadowed/strict")]["defaultConfiguration"]["level"] == "warning"
    )

    results = run["results"]
    by_rule = {}
    for r in results:
        assert driver["rules"][r["ruleIndex"]]["id"] == r["ruleId"]
        by_rule.setdefault(r["ruleId"], []).append(r)
    # 3 findings + 1 finding-less refusal + 1 shadow finding + 1 finding-less shadow refusal
    assert len(results) == 6
    assert set(by_rule) == {"no-todo/judge", "docs/readme", "shadowed/strict", "shadowed/loose"}
    first = by_rule["no-todo/judge"][0]
    assert first["level"] == "error"
    loc = first["locations"][0]["physicalLocation"]
    assert loc == {"artifactLocation": {"uri": "src/app.py"}, "region": {"startLine": 12}}
    odd = by_rule["no-todo/judge"][1]["locations"][0]["physicalLocation"]
    assert odd["artifactLocation"]["uri"] == "docs/caf%C3%A9,%20notes.md"
    assert "region" not in odd  # no line known
    assert "locations" not in by_rule["no-todo/judge"][2]
    readme = by_rule["docs/readme"][0]
    assert readme["level"] == "error" and "locations" not in readme
    assert readme["message"]["text"] == "README does not say how to install"
    assert {r["level"] for r in by_rule["shadowed/strict"] + by_rule["shadowed/loose"]} == {
        "warning"
    }
    # Errors and load problems are about slopjudge's run, not the code.
    inv = run["invocations"][0]
    assert inv["executionSuccessful"] is False
    texts = [n["message"]["text"] for n in inv["toolExecutionNotifications"]]
    assert any(t.startswith("docs/links: script crashed") for t in texts)
    assert sum("does not load" in t for t in texts) == 3
    load = inv["toolExecutionNotifications"][0]["locations"][0]["physicalLocation"]
    assert load == {
        "artifactLocation": {"uri": "rules/broken.yaml"},
        "region": {"startLine": 3, "startColumn": 5},
    }


def test_sarif_for_a_clean_run_has_no_results_and_still_validates() -> None:
    report = RunReport(outcome="pass", checks=[_result("a/b", "script", "pass")], rules=[])
    log = json.loads(render(report, "sarif"))
    _sarif_validator().validate(log)
    run = log["runs"][0]
    assert run["results"] == []
    assert run["invocations"][0]["executionSuccessful"] is True
    assert [d["id"] for d in run["tool"]["driver"]["rules"]] == [
        "a/b"
    ]  # undeclared check still described


# --- junit --------------------------------------------------------------------

def _counts(element: ET.Element) -> tuple[int, int, int, int]:
    return tuple(int(element.get(k)) for k in ("tests", "failures", "errors", "skipped"))  # type: ignore[return-value]


def test_junit_counts_and_cases() -> None:
    root = ET.fromstring(render(sample_report(), "junit").encode("utf-8"))
    assert root.tag == "testsuites"
    # 9 checks + 2 rule files that fail to load; refuse x2 fail; error + 2 load files err; 3 skip.
    assert _counts(root) == (11, 2, 3, 3)
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert list(suites) == ["slopjudge-load", "no-todo", "docs", "style", "shadowed"]
    assert _counts(suites["slopjudge-load"]) == (2, 0, 2, 0)
    assert _counts(suites["no-todo"]) == (2, 1, 0, 0)
    assert _counts(suites["docs"]) == (3, 1, 1, 1)
    assert _counts(suites["style"]) == (2, 0, 0, 2)
    assert _counts(suites["shadowed"]) == (2, 0, 0, 0)  # shadow refusals do not fail the build
    for suite in root.findall("testsuite"):  # suite counts agree with their cases
        cases = suite.findall("testcase")
        assert int(suite.get("tests")) == len(cases)
        assert int(suite.get("failures")) == sum(c.find("failure") is not None for c in cases)
        assert int(suite.get("errors")) == sum(c.find("error") is not None for c in cases)
        assert int(suite.get("skipped")) == sum(c.find("skipped") is not None for c in cases)

    cases = {c.get("name"): c for c in root.iter("testcase")}
    todo = cases["no-todo/judge"]
    assert todo.get("classname") == "no-todo" and todo.get("time") == "1.530"
    failure = todo.find("failure")
    assert failure.get("message") == "Leaves TODOs behind: 100% of new functions"
    assert "src/app.py:12: TODO left in a new function" in failure.text
    assert "docs/café, notes.md: mentions «later» without a plan" in failure.text
    error = cases["docs/links"].find("error")
    assert (
        error is not None and "\\x1b[31mcore dumped\\x00" in error.text
    )  # control chars made inert
    assert cases["style/tone"].find("skipped").get("message") == "not judged (dry run)"
    assert "needs docs/links" in cases["docs/spelling"].find("skipped").get("message")
    shadow = cases["shadowed/strict"]
    assert shadow.find("failure") is None
    assert "would refuse" in shadow.find("system-out").text
    load = cases["rules/broken.yaml"].find("error")
    assert "rules/broken.yaml:3:5:" in load.text and "rules/broken.yaml:9:1:" in load.text


def test_junit_all_passing() -> None:
    report = RunReport(
        outcome="pass", checks=[_result("a/b", "script", "pass"), _result("a/c", "judge", "pass")]
    )
    root = ET.fromstring(render(report, "junit"))
    assert _counts(root) == (2, 0, 0, 0)
    assert [s.get("name") for s in root.findall("testsuite")] == ["a"]


# --- github -------------------------------------------------------------------

COMMAND = re.compile(r"^::(error|warning|notice)(?: ([^:]*))?::(.*)$")


def _unescape(text: str) -> str:
    return (text.replace("%0D", "\r").replace("%0A", "\n").replace("%3A", ":")
            .replace("%2C", ",").replace("%25", "%"))


def _parse_github(output: str) -> list[tuple[str, dict[str, str], str]]:
    parsed = []
    for line in output.splitlines():
        match = COMMAND.match(line)
        assert match, f"not a workflow command: {line!r}"
        props = {}
        if match.group(2):
            for item in match.group(2).split(","):  # escaped values hold no raw comma
                key, _, value = item.partition("=")
                props[key] = _unescape(value)
        parsed.append((match.group(1), props, _unescape(match.group(3))))
    return parsed


def test_github_annotations_round_trip() -> None:
    output = render(sample_report(), "github")
    assert "\r" not in output
    commands = _parse_github(output)
    kinds = [c[0] for c in commands]
    assert kinds[-1] == "notice" and "ERROR" in commands[-1][2]
    loads = [c for c in commands if c[1].get("title") == "slopjudge: rule does not load"]
    assert [(p["file"], p["line"], p["col"]) for _, p, _ in loads] == [
        ("rules/broken.yaml", "3", "5"),
        ("rules/broken.yaml", "9", "1"),
        ("rules/other, odd.yaml", "1", "1"),
    ]
    todo = [c for c in commands if c[1].get("title") == "no-todo/judge"]
    assert [(k, p.get("file"), p.get("line"), m) for k, p, m in todo] == [
        ("error", "src/app.py", "12", "TODO left in a new function"),
        ("error", "docs/café, notes.md", None, "mentions «later» without a plan"),
        ("error", None, None, "the change as a whole defers work"),
    ]
    readme = [c for c in commands if c[1].get("title") == "docs/readme"]
    assert readme == [("error", {"title": "docs/readme"}, "README does not say how to install")]
    crashed = [c for c in commands if c[1].get("title") == "docs/links (error)"]
    assert crashed and crashed[0][2].startswith("check error: script crashed: exit 139\n")
    warnings = [c for c in commands if c[0] == "warning"]
    assert len(warnings) == 2
    assert warnings[0][1]["file"] == "src/calc.py" and warnings[0][2].startswith(
        "would refuse (shadow)"
    )
    # Outcomes that do not block or fail say nothing.
    assert not [c for c in commands if "no-todo/grep" in c[1].get("title", "")]
    assert not [c for c in commands if "style/" in c[1].get("title", "")]


def test_github_escapes_percent_and_newlines_in_messages() -> None:
    reason = "100% sure\nline two\r\nkey: a, b"
    report = RunReport(outcome="refuse", checks=[_result("r/c", "judge", "refuse", reason)])
    first = render(report, "github").splitlines()[0]
    assert first == "::error title=r/c::100%25 sure%0Aline two%0D%0Akey: a, b"
    assert _parse_github(first)[0][2] == reason



def test_github_leaves_out_a_line_or_column_before_the_first() -> None:
    refusal = _result("r/c", "script", "refuse", "why", [Finding("a.py", 0, "m")])
    report = RunReport(outcome="error", checks=[refusal],
                       load_errors=[LoadError("rules/x.yaml", 0, 0, "unreadable")])
    load, finding = _parse_github(render(report, "github"))[:2]
    assert load[1] == {"file": "rules/x.yaml", "title": "slopjudge: rule does not load"}
    assert finding[1] == {"file": "a.py", "title": "r/c"}


# --- text ---------------------------------------------------------------------

def test_text_tells_a_person_what_happened() -> None:
    out = render(sample_report(), "text")
    assert "\x1b" not in out  # no color unless asked
    lines = out.splitlines()
    assert lines[0].startswith("slopjudge: 3 problems loading rules")
    assert (
        lines[1].strip() == 'rules/broken.yaml:3:5: unknown field "chekcs" (did you mean "checks"?)'
    )
    by_id = {}
    for line in lines:
        for cid in ("no-todo/grep", "no-todo/judge", "docs/readme", "docs/links", "docs/spelling",
                    "style/naming", "style/tone", "shadowed/strict", "shadowed/loose"):
            if re.search(rf"\s{re.escape(cid)}\s", line + " "):
                by_id.setdefault(cid, line)
    assert by_id["no-todo/grep"].split()[0] == "pass"
    assert by_id["no-todo/judge"].split()[0] == "REFUSE"
    assert by_id["no-todo/judge"].endswith("Leaves TODOs behind: 100% of new functions")
    assert "1.5 s" in by_id["no-todo/judge"]
    assert by_id["docs/links"].split()[0] == "ERROR"
    assert "\\x1b[31mcore dumped\\x00" in out  # script output cannot drive the terminal
    assert "would refuse (shadow)" in by_id["shadowed/strict"]
    assert "not judged (dry run)" in by_id["style/tone"]
    assert "not applicable" in by_id["style/naming"]
    assert "needs docs/links, which errored" in by_id["docs/spelling"]
    # Findings, indented under their check.
    assert "      src/app.py:12: TODO left in a new function" in lines
    assert "      docs/café, notes.md: mentions «later» without a plan" in lines
    assert "      the change as a whole defers work" in lines
    assert "      src/calc.py:7: magic number 42" in lines
    # The rest of a refusal's reason is shown, indented.
    assert "      Second line: a, b: c" in lines
    # Summary table and verdict.
    table = {ln.strip().rsplit(None, 1)[0].strip(): ln.strip().rsplit(None, 1)[1]
             for ln in lines if re.match(r"^\s+\S.*\s\d+$", ln)}
    assert table["refuse"] == "2" and table["pass"] == "1" and table["would refuse (shadow)"] == "2"
    assert table["error"] == "1" and table["not judged (dry run)"] == "1"
    assert re.search(r"total\s+9\s+\(check time 5\.1 s\)", out)
    assert lines[-1] == ("slopjudge: ERROR: 9 checks: 3 load errors, 1 errored, 2 refused, "
                         "2 would refuse (shadow), 1 not judged (dry run), 1 passed")


def test_text_color_only_when_asked() -> None:
    report = sample_report(load_errors=False)
    colored = render(report, "text", color=True)
    assert "\x1b[1;31mREFUSE" in colored and "\x1b[32mpass" in colored
    assert re.sub(r"\x1b\[[0-9;]*m", "", colored) == render(report, "text")


def test_text_passing_run() -> None:
    report = RunReport(outcome="pass", checks=[_result("a/b", "script", "pass", ms=61_000)])
    out = render(report, "text")
    assert out.splitlines()[-1] == "slopjudge: PASS: 1 check: 1 passed"
    assert "1m 01s" in out
    empty = render(RunReport(outcome="pass"), "text")
    assert empty.splitlines()[-1] == "slopjudge: PASS: 0 checks: nothing to check"


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_draws_one_line_on_a_terminal_only() -> None:
    tty = _Tty()
    progress = Progress(tty, delay=0)
    progress.start(3)
    progress.advance(_result("a/b", "script", "pass"))
    progress.advance(_result("a/c", "judge", "refuse", "no"))
    drawn = tty.getvalue()
    assert "\n" not in drawn  # one line, redrawn in place
    assert drawn.count("\r\x1b[K") == 2
    assert "[2/3]" in drawn and "1 refused" in drawn and "a/c: refuse" in drawn
    progress.finish()
    assert tty.getvalue().endswith("\r\x1b[K")  # the line is cleared for the report

    pipe = io.StringIO()
    quiet = Progress(pipe, delay=0)
    quiet.start(2)
    quiet.advance(_result("a/b", "script", "pass"))
    quiet.finish()
    assert pipe.getvalue() == ""


def test_progress_waits_before_drawing() -> None:
    tty = _Tty()
    progress = Progress(tty, delay=60)
    progress.start(1)
    progress.advance(_result("a/b", "script", "pass"))
    progress.finish()
    assert tty.getvalue() == ""  # a quick run does not flicker


def test_undecodable_child_output_renders_in_every_format() -> None:
    reason = "exit 1: " + b"\xff\xfe broken".decode("utf-8", "surrogateescape")
    report = RunReport(outcome="refuse", checks=[_result("r/c", "script", "refuse", reason,
                                                         [Finding("a.py", 2, reason)])])
    for fmt in FORMATS:
        render(report, fmt).encode("utf-8")  # writable to any UTF-8 stream
    assert json.loads(render(report, "json"))["checks"][0]["reason"] == reason
    _sarif_validator().validate(json.loads(render(report, "sarif")))
    ET.fromstring(render(report, "junit"))
    assert "exit 1: \\udcff\\udcfe broken" in render(report, "text")
