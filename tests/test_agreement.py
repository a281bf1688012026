"""Agreement with human labels, Cohen's kappa, flips, and `slopjudge report`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slopjudge.cli import main
from slopjudge.records.agreement import Agreement, agreement, cohens_kappa, flips, read_labels
from slopjudge.records.record import append_events
from tests.helpers import in_process


def _pairs(matrix: dict[tuple[str, str], int]) -> tuple[list[str], list[str]]:
    a: list[str] = []
    b: list[str] = []
    for (x, y), count in matrix.items():
        a += [x] * count
        b += [y] * count
    return a, b


# --- kappa ----------------------------------------------------------------------

def test_kappa_hand_computed() -> None:
    # 50 items: both pass 20, a pass/b refuse 5, a refuse/b pass 10, both refuse 15.
    # po = 35/50 = 0.7; pa(pass) = 0.5, pb(pass) = 0.6; pe = 0.5*0.6 + 0.5*0.4 = 0.5;
    # kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4
    a, b = _pairs(
        {
            ("pass", "pass"): 20,
            ("pass", "refuse"): 5,
            ("refuse", "pass"): 10,
            ("refuse", "refuse"): 15,
        }
    )
    assert cohens_kappa(a, b) == pytest.approx(0.4)
    # 100 items: po = 0.85; pa(pass) = 0.60, pb(pass) = 0.45; pe = 0.6*0.45 + 0.4*0.55 = 0.49;
    # kappa = (0.85 - 0.49) / 0.51 = 0.70588...
    a, b = _pairs({("pass", "pass"): 45, ("pass", "refuse"): 15, ("refuse", "refuse"): 40})
    assert cohens_kappa(a, b) == pytest.approx(0.36 / 0.51)


def test_kappa_perfect_chance_and_worse() -> None:
    a, b = _pairs({("pass", "pass"): 7, ("refuse", "refuse"): 3})
    assert cohens_kappa(a, b) == 1.0
    # Agreement exactly at chance level.
    assert (
        cohens_kappa(["pass", "pass", "refuse", "refuse"], ["pass", "refuse", "pass", "refuse"])
        == 0.0
    )
    # Systematic disagreement.
    assert cohens_kappa(["pass", "refuse"], ["refuse", "pass"]) == -1.0


def test_kappa_edge_cases_never_divide_by_zero() -> None:
    # Both raters put everything in one class: chance agreement is certain (pe = 1).
    assert cohens_kappa(["pass"] * 5, ["pass"] * 5) == 1.0
    assert cohens_kappa(["refuse"] * 3, ["refuse"] * 3) == 1.0
    # Each in its own single class: po = 0, pe = 0.
    assert cohens_kappa(["pass"] * 4, ["refuse"] * 4) == 0.0
    # One constant rater: pe = po, no information beyond chance.
    assert cohens_kappa(["pass"] * 4, ["pass", "pass", "pass", "refuse"]) == 0.0
    assert cohens_kappa([], []) == 0.0
    with pytest.raises(ValueError, match="3 ratings against 2"):
        cohens_kappa(["pass"] * 3, ["pass"] * 2)


@given(
    st.lists(
        st.tuples(st.sampled_from(["pass", "refuse"]), st.sampled_from(["pass", "refuse"])),
        max_size=60,
    )
)
def test_kappa_is_bounded_and_symmetric(pairs: list[tuple[str, str]]) -> None:
    a = [x for x, _ in pairs]
    b = [y for _, y in pairs]
    k = cohens_kappa(a, b)
    assert -1.0 <= k <= 1.0
    assert k == pytest.approx(cohens_kappa(b, a))
    if a == b and a:
        assert k == 1.0


# --- agreement --------------------------------------------------------------------

def ev(rule: str, check: str, outcome: str, digest: str | None = None, session: str | None = None,
       **extra: object) -> dict:
    return {
        "time": "2025-01-01T00:00:00.000Z",
        "event": "ci",
        "id": f"{rule}/{check}",
        "rule": rule,
        "check": check,
        "kind": "judge",
        "outcome": outcome,
        "reason": f"{outcome} because",
        "prompt_sha256": digest,
        "session_id": session,
        "model": "size-md",
        **extra,
    }


def test_agreement_counts_against_labels() -> None:
    events = [
        ev("docs", "readme", "refuse", "p1"),
        ev("docs", "readme", "pass", "p1"),  # later verdict for the same prompt wins
        ev("docs", "readme", "refuse", "p2"),  # false refusal (label pass)
        ev("docs", "readme", "error", "p3"),  # not a verdict
        ev("docs", "readme", "pass", "p4"),  # false pass (label refuse)
        ev("style", "tone", "would_refuse", "p5"),  # a shadow refusal is a refusal
        ev("style", "tone", "pass", None, "s1"),
        ev("style", "tone", "refuse", None, "s2"),
        ev(
            "style", "tone", "skipped", None, "s2"
        ),  # not a verdict: s2's latest verdict stays refuse
    ]
    labels = [
        {"prompt_sha256": "p1", "label": "pass"},
        {"prompt_sha256": "p2", "label": "pass"},
        {"prompt_sha256": "p3", "label": "refuse"},  # only an error recorded: missing
        {"prompt_sha256": "p4", "label": "refuse"},
        {"prompt_sha256": "p5", "label": "refuse", "rule": "style", "check": "tone"},
        {
            "prompt_sha256": "p5",
            "label": "refuse",
            "id": "docs/readme",
        },  # digest from another check: missing
        {"rule": "style", "check": "tone", "session_id": "s1", "label": "pass"},
        {"id": "style/tone", "session_id": "s2", "label": "refuse"},
        {"id": "nope/none", "label": "pass"},
    ]
    result = agreement(events, labels)
    assert result == Agreement(
        n=6,
        accuracy=pytest.approx(4 / 6),
        kappa=pytest.approx(
            cohens_kappa(
                ["pass", "refuse", "pass", "refuse", "pass", "refuse"],
                ["pass", "pass", "refuse", "refuse", "pass", "refuse"],
            )
        ),
        false_refusals=1,
        false_passes=1,
        missing=3,
        true_passes=2,
        true_refusals=2,
        skipped=1,  # p3's error
    )
    # 2x2 by hand: TP(pass)=2, FP=1, FR=1, TR=2 -> po = 4/6, pe = 0.5 -> kappa = 1/3
    assert result.kappa == pytest.approx(1 / 3)


def test_runner_failures_are_not_verdicts_however_they_were_recorded() -> None:
    crashed = dict(ev("a", "b", "refuse", "p1"), reason="judge unavailable: authentication")
    timed_out = dict(ev("a", "b", "refuse", "p2"), reason="x.py: judge timed out after 30 s")
    shadow = dict(ev("a", "b", "would_refuse", "p3"), shadow_error=True)
    real = ev("a", "b", "refuse", "p4")
    labels = [{"prompt_sha256": d, "label": "pass"} for d in ("p1", "p2", "p3", "p4")]
    result = agreement([crashed, timed_out, shadow, real], labels)
    assert (result.n, result.missing, result.skipped, result.false_refusals) == (1, 3, 3, 1)


def test_agreement_by_rule_and_check_takes_the_latest_verdict_of_any_session() -> None:
    events = [ev("a", "b", "pass", session="s1"), ev("a", "b", "refuse", session="s2")]
    assert agreement(events, [{"id": "a/b", "label": "refuse"}]).false_refusals == 0
    assert agreement(events, [{"id": "a/b", "label": "pass"}]).false_refusals == 1


def test_agreement_with_nothing_to_compare() -> None:
    result = agreement([], [{"id": "a/b", "label": "pass"}])
    assert (result.n, result.accuracy, result.kappa, result.missing) == (0, 0.0, 0.0, 1)


@pytest.mark.parametrize("label, message", [
    ({"id": "a/b", "label": "yes"}, 'label 1: "label" must be "pass" or "refuse", not "yes"'),
    ({"label": "pass"}, 'label 1: a label needs "prompt_sha256", or "id", or "rule" and "check"'),
    ({"rule": "a", "label": "pass"}, 'label 1: a label needs'),
])
def test_agreement_refuses_unusable_labels(label: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        agreement([ev("a", "b", "pass")], [label])


def test_read_labels_names_bad_lines(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    path.write_text(
        '{"id": "a/b", "label": "pass"}\n\nnot json\n{"id": "a/b", "label": "PASS"}\n[]\n'
    )
    labels, problems = read_labels(str(path))
    assert labels == [{"id": "a/b", "label": "pass"}]
    assert problems == [
        f"{path}:3:1: not JSON: expecting value",
        f'{path}:4: "label" must be "pass" or "refuse", not "PASS"',
        f"{path}:5: a label must be a JSON object",
    ]


def test_read_labels_names_a_line_not_utf8_and_an_unfinished_last_line(tmp_path: Path) -> None:
    # A labels file is written by a person: unlike the event log, its last line is
    # never a record being written, so one that does not parse is named too.
    path = tmp_path / "labels.jsonl"
    path.write_bytes(b'{"id": "a/b", "label": "pass", "note": "\xff"}\n{"id": "a/b", "label"')
    labels, problems = read_labels(str(path))
    assert labels == []
    assert problems == [f"{path}:1: not UTF-8 (byte 41)",
                        f"{path}:2:22: not JSON: expecting ':' delimiter"]


# --- flips ------------------------------------------------------------------------

def test_flips_finds_changed_verdicts_for_the_same_prompt() -> None:
    events = [
        ev("docs", "readme", "pass", "p1", model="haiku"),
        ev("docs", "readme", "pass", "p2"),
        ev("docs", "readme", "refuse", "p1", model="sonnet"),
        ev("docs", "readme", "error", "p2"),          # an error is not a verdict: p2 did not flip
        ev("style", "tone", "pass", "p1"),            # same digest, other check: its own group
        ev("style", "tone", "pass", "p1"),
        ev("style", "shadow", "pass", "p9"),
        ev("style", "shadow", "would_refuse", "p9"),  # shadow refusal vs pass is a flip too
        ev("x", "script", "pass", None),
        ev("x", "script", "refuse", None),            # no prompt: scripts cannot flip
    ]
    found = flips(events)
    assert [(f["id"], f["prompt_sha256"], f["passes"], f["refusals"]) for f in found] == [
        ("docs/readme", "p1", 1, 1), ("style/shadow", "p9", 1, 1)]
    assert [v["model"] for v in found[0]["verdicts"]] == ["haiku", "sonnet"]
    assert [v["verdict"] for v in found[1]["verdicts"]] == ["pass", "refuse"]
    assert flips([ev("a", "b", "pass", "p"), ev("a", "b", "pass", "p")]) == []


# --- slopjudge report -----------------------------------------------------------------

def _log(tmp_path: Path) -> Path:
    path = tmp_path / "state" / "events.jsonl"
    append_events(str(path), [
        ev("docs", "readme", "pass", "p1", duration_ms=100, cache_hit=False, tokens=10, cost=0.5),
        ev("docs", "readme", "refuse", "p1", duration_ms=300, cache_hit=True, tokens=20, cost=0.25),
        ev("docs", "links", "error", None, duration_ms=5),
    ])
    with open(path, "ab") as handle:
        handle.write(b"garbage line\n")
    return path


def _cli(
    *argv: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if k != "SLOPJUDGE_EVENTS_FILE"}
    full_env.update(env or {})
    # `slopjudge report ARGS` through the console script's main, in this process.
    rc, out, err = in_process(lambda: main(["report", *argv]), b"", cwd=cwd, env=full_env)
    return subprocess.CompletedProcess([sys.executable, "-m", "slopjudge", "report", *argv],
                                       rc, out, err)


def test_report_events_text_and_json(tmp_path: Path) -> None:
    path = _log(tmp_path)
    done = _cli("--events", str(path), "events", "--last", "2", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"slopjudge: skipped {path}:4:1: not JSON: expecting value" in done.stderr
    assert f"{path}: 3 events" in done.stdout
    row = next(line for line in done.stdout.splitlines() if line.startswith("docs/readme"))
    assert row.split()[:4] == ["docs/readme", "2", "1", "1"]  # runs, pass, refuse
    assert "last 2 events:" in done.stdout
    data = json.loads(
        _cli("events", "--format", "json", "--events", str(path), cwd=tmp_path).stdout
    )
    readme = next(c for c in data["checks"] if c["id"] == "docs/readme")
    assert readme == {"id": "docs/readme", "runs": 2, "outcomes": {"pass": 1, "refuse": 1},
                      "mean_duration_ms": 200, "cache_hits": 1, "tokens": 30, "cost": 0.75}
    assert data["events"] == 3 and len(data["problems"]) == 1


def test_report_default_events_file_and_missing_log(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()  # the workspace root
    sub = tmp_path / "src"
    sub.mkdir()
    missing = _cli(cwd=sub)
    assert missing.returncode == 2
    assert missing.stderr.strip() == (
        f"slopjudge: {tmp_path}/.slopjudge/events.jsonl: no event log yet "
        "(runs record one; set --events FILE)"
    )
    append_events(str(tmp_path / ".slopjudge" / "events.jsonl"), [ev("a", "b", "pass")])
    assert "1 events" in _cli(cwd=sub).stdout  # `report` alone means `report events`
    other = tmp_path / "elsewhere.jsonl"
    append_events(str(other), [ev("a", "b", "pass"), ev("a", "b", "refuse")])
    assert "2 events" in _cli("events", cwd=sub, env={"SLOPJUDGE_EVENTS_FILE": str(other)}).stdout


def test_report_agreement(tmp_path: Path) -> None:
    path = _log(tmp_path)
    labels = tmp_path / "labels.jsonl"
    labels.write_text(
        '{"prompt_sha256": "p1", "label": "pass"}\n{"id": "docs/links", "label": "pass"}\n'
    )
    done = _cli("agreement", "--labels", str(labels), "--events", str(path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "2 labels, 1 matched a recorded verdict, 1 with none" in done.stdout
    assert "false refusals  1" in done.stdout
    data = json.loads(
        _cli(
            "--events",
            str(path),
            "--format",
            "json",
            "agreement",
            "--labels",
            str(labels),
            cwd=tmp_path,
        ).stdout
    )
    assert (data["n"], data["false_refusals"], data["false_passes"], data["missing"]) == (
        1,
        1,
        0,
        1,
    )

    labels.write_text('{"prompt_sha256": "p1", "label": "ok"}\n')
    bad = _cli("agreement", "--labels", str(labels), "--events", str(path), cwd=tmp_path)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert f'{labels}:1: "label" must be "pass" or "refuse", not "ok"' in bad.stderr
    gone = _cli(
        "agreement", "--labels", str(tmp_path / "none.jsonl"), "--events", str(path), cwd=tmp_path
    )
    assert gone.returncode == 2 and "cannot read labels" in gone.stderr


@pytest.mark.parametrize("sub", ["events", "agreement", "flips", "cost"])
def test_report_json_reads_the_same_on_an_ascii_output(tmp_path: Path, sub: str) -> None:
    folder = tmp_path / "lab\u00e9"
    folder.mkdir()
    path = _log(folder)
    labels = folder / "labels.jsonl"
    labels.write_text('{"prompt_sha256": "p1", "label": "pass"}\n')
    extra = ["--labels", str(labels)] if sub == "agreement" else []
    done = subprocess.run(
        [sys.executable, "-m", "slopjudge", "report", "--events", str(path), "--format",
         "json", sub, *extra], capture_output=True, text=True, encoding="ascii",
        env={**os.environ, "PYTHONIOENCODING": "ascii"}, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert isinstance(json.loads(done.stdout), dict)


def test_report_flips(tmp_path: Path) -> None:
    path = _log(tmp_path)
    done = _cli("flips", "--events", str(path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "docs/readme  prompt p1: 1 pass, 1 refuse" in done.stdout
    assert "(cached)" in done.stdout
    data = json.loads(_cli("flips", "--format", "json", "--events", str(path), cwd=tmp_path).stdout)
    assert [f["id"] for f in data["flips"]] == ["docs/readme"]
    calm = tmp_path / "calm.jsonl"
    append_events(str(calm), [ev("a", "b", "pass", "p"), ev("a", "b", "pass", "p")])
    assert (
        "no check changed its verdict" in _cli("flips", "--events", str(calm), cwd=tmp_path).stdout
    )
