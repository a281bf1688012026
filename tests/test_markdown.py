"""``--format markdown``: golden files, and the rules a PR comment must keep.

The golden files are under tests/fixtures/markdown/. After a deliberate
change of the format, rewrite them with ``SLOPJUDGE_UPDATE_GOLDEN=1`` and read
the diff.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from slopjudge.model import CheckResult, Finding, LoadError, RunReport, overall_outcome
from slopjudge.report import markdown, render

GOLDEN = Path(__file__).resolve().parent / "fixtures" / "markdown"
SLOPJUDGE = str(Path(sys.executable).parent / "slopjudge")
GITHUB = {"GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "acme/widgets",
          "GITHUB_SHA": "0123456789abcdef0123456789abcdef01234567"}


def result(full_id: str, kind: str, outcome: str, reason: str = "",
           findings: list[Finding] | None = None, ms: int = 10, **facts: object) -> CheckResult:
    rule, _, check = full_id.partition("/")
    out = CheckResult(id=full_id, rule=rule, check=check, kind=kind,  # type: ignore[arg-type]
                      outcome=outcome, reason=reason, findings=findings or [], duration_ms=ms)
    for key, value in facts.items():
        setattr(out, key, value)
    return out


def report(checks: list[CheckResult], load_errors: list[LoadError] | None = None) -> RunReport:
    errors = load_errors or []
    return RunReport(outcome=overall_outcome(checks, errors), checks=checks, load_errors=errors)


def refusing() -> RunReport:
    """Refusals with names that have spaces and non-ASCII, and reasons full of markup."""
    return report([
        result("placeholder-code/scan", "script", "refuse",
               "2 added functions are placeholders", [
                   Finding("src/my module/ünïcode names.py", 12, "body is `pass`"),
                   Finding("docs/café menu.md", 3, "TODO: implement <b>this</b> | later"),
                   Finding("Makefile", None, "the whole file is a stub"),
               ], ms=35),
        result("naming judge/naming", "judge", "refuse",
               "Names do not say what they hold; ask @acme/reviewers\n"
               "```\nx = data2\n```\n* not a list item", ms=2300),
        result("debug-leftovers/scan", "script", "pass", ms=20),
        result("narration-comments/judge", "judge", "skipped",
               "the prepare step said no comment was added", ms=4),
        result("emoji-marketing/scan", "script", "not_applicable", ms=0),
    ])


CASES: dict[str, Callable[[], RunReport]] = {
    "pass": lambda: report([result("placeholder-code/scan", "script", "pass", ms=30),
                            result("skipped-tests/scan", "script", "pass", ms=25)]),
    "nothing": lambda: report([]),
    "refuse": refusing,
    "error": lambda: report(
        [result("hardcoded-results/judge", "judge", "error",
                "judge unavailable: authentication", ms=900),
         result("placeholder-code/scan", "script", "refuse", "a placeholder",
                [Finding("a b/ç.py", 1, "raise NotImplementedError")]),
         result("skipped-tests/scan", "script", "pass")],
        [LoadError("rules/bröken rule.yaml", 4, 3, 'unknown field "chekcs" (did you mean '
                                                   '"checks"?)', rule="bröken rule")]),
    "dry-run": lambda: report([
        result("placeholder-code/scan", "script", "pass", ms=30),
        result("hardcoded-results/judge", "judge", "not_judged", ms=5),
        result("narration-comments/judge", "judge", "not_judged", ms=6),
        result("trial/strict", "judge", "would_refuse", "Would block: magic numbers",
               [Finding("src/calc.py", 7, "magic number 42")], ms=0),
    ]),
    # What a judge check records of its calls (checks/judge.py): the usage the runner
    # reported, the calls made and those answered from the cache.
    "cost": lambda: report([
        result("hardcoded-results/judge", "judge", "pass", ms=3100, judge_calls=1,
               usage={"input_tokens": 4000, "output_tokens": 210, "cost_usd": 0.0123}),
        result("narration-comments/judge", "judge", "refuse", "narrates the edit",
               [Finding("app.py", 9, "# Added error handling")], ms=2800, judge_calls=2,
               usage={"input_tokens": 1700, "output_tokens": 100, "cost_usd": 0.0051},
               units=2, prompt_tokens=1200),
        result("narration-comments/again", "judge", "pass", ms=3, cached_calls=1,
               cache_hit=True),
        result("placeholder-code/scan", "script", "pass", ms=30),
    ]),
}


def golden(name: str, actual: str) -> None:
    path = GOLDEN / f"{name}.md"
    if os.environ.get("SLOPJUDGE_UPDATE_GOLDEN"):
        path.write_text(actual, encoding="utf-8")
    assert path.exists(), f"{path} is missing; write it with SLOPJUDGE_UPDATE_GOLDEN=1"
    assert actual == path.read_text(encoding="utf-8")


@pytest.fixture()
def no_github(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in GITHUB:
        monkeypatch.delenv(key, raising=False)


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden(name: str, no_github: None) -> None:
    golden(name, render(CASES[name](), "markdown"))


def test_golden_with_links_on_github(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in GITHUB.items():
        monkeypatch.setenv(key, value)
    text = render(refusing(), "markdown")
    golden("refuse-github", text)
    assert ("[`src/my module/ünïcode names.py:12`](https://github.com/acme/widgets/blob/"
            f"{GITHUB['GITHUB_SHA']}/src/my%20module/%C3%BCn%C3%AFcode%20names.py#L12)") in text
    # A finding without a line links the file; one without a path has no link.
    assert "(https://github.com/acme/widgets/blob/" + GITHUB["GITHUB_SHA"] + "/Makefile)" in text


def test_no_link_for_a_path_outside_the_repository(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in GITHUB.items():
        monkeypatch.setenv(key, value)
    assert markdown.line_link("/etc/passwd", 1) is None
    assert markdown.line_link("../up.py", 1) is None
    assert markdown.line_link("ok.py", 0) == (
        f"https://github.com/acme/widgets/blob/{GITHUB['GITHUB_SHA']}/ok.py")


def test_check_output_cannot_format_the_summary_or_mention_anyone(no_github: None) -> None:
    evil = ("@octocat see <img src=x onerror=alert(1)> **bold** [link](http://x) "
            "| cell | ~~strike~~ \\ `code`")
    text = render(report([result("r/c", "script", "refuse", evil,
                                 [Finding("a`b.py", 1, evil)])]), "markdown")
    assert "@octocat" not in text and "@\u200bocto" in text
    assert "<img" not in text and "&lt;img" in text
    assert "**bold**" not in text and "\\*\\*bold\\*\\*" in text
    assert "[link]" not in text and "\\[link\\]" in text
    assert "\\| cell \\|" in text
    assert "``a`b.py:1``" in text  # a code span longer than the backticks inside


def test_a_huge_report_fits_a_comment_and_closes_its_code_block(no_github: None) -> None:
    long_reason = "first\n" + "\n".join("x" * 300 for _ in range(30))
    checks = [result(f"rule{i}/scan", "script", "refuse", long_reason,
                     [Finding(f"f{j}.py", j, "m" * 200) for j in range(30)])
              for i in range(100)]
    text = render(report(checks), "markdown")
    assert len(text) <= markdown.MAX_CHARS
    assert text.rstrip().endswith("the full report is in the job's log and annotations)")
    fences = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("```")]
    assert len(fences) % 2 == 0  # every block that opens is closed
    assert "<details>" not in text  # the table goes first
    assert "and 10 more" in text  # findings past 20 are counted, not listed


def test_cost_is_left_out_when_nothing_recorded_it(no_github: None) -> None:
    text = render(CASES["pass"](), "markdown")
    assert "cost" not in text.lower()
    # A judge whose runner reported no usage (a dry run, a cached verdict): no cost line.
    text = render(report([result("j/judge", "judge", "not_judged"),
                          result("k/judge", "judge", "pass", cached_calls=1, cache_hit=True)]),
                  "markdown")
    assert "cost" not in text.lower()


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout


def test_run_format_markdown_on_a_real_change(tmp_path: Path) -> None:
    ws = tmp_path / "repo"
    ws.mkdir()
    git(ws, "init", "-q")
    subprocess.run([SLOPJUDGE, "init"], cwd=ws, check=True, capture_output=True)
    (ws / "src dir").mkdir()
    (ws / "src dir" / "wïdget.py").write_text(
        "def area(w: float, h: float) -> float:\n    raise NotImplementedError\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    proc = subprocess.run([SLOPJUDGE, "run", "--dry-run", "--format", "markdown",
                           "--rule", "placeholder-code"], cwd=ws, env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.startswith("## slopjudge: refused\n")
    assert re.search(r"^- `placeholder-code/scan`: ", proc.stdout, re.M)
    assert "  - `src dir/wïdget.py:2`: " in proc.stdout
