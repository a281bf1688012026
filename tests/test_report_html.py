"""`slopjudge report html`: one self-contained page from a real event log.

The log (tests/fixtures/events/, made by its make.py) holds a few hundred real
`slopjudge run`s: script refusals with findings, script errors, judge verdicts
with tokens and cost from two models, a shadow-mode judge, verdict cache hits,
judge errors, and a person's labels. Every figure the page shows is counted here
again from the log itself, and read back from the page's tables and charts, as
written and as headless Chromium renders it; the screenshot is checked for the
charts and the matrices having been painted.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import struct
import subprocess
import zlib
from collections import Counter, defaultdict
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from slopjudge.report.html import COLOURS
from tests.helpers import sj

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "events"


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


EVENTS = read_jsonl(FIXTURE / "events.jsonl")
LABELS = read_jsonl(FIXTURE / "labels.jsonl")


# --- the page, read back ------------------------------------------------------------


class Tables(HTMLParser):
    """Each <table id=...>'s rows as lists of cell texts; each chart's <svg> text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: dict[str, list[list[str]]] = {}
        self.links: list[tuple[str, str]] = []
        self._table: str | None = None
        self._cell: list[str] | None = None
        self._href: str | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "table" and a.get("id"):
            self._table = a["id"]
            self.tables[self._table] = []
        elif tag == "tr" and self._table:
            self.tables[self._table].append([])
        elif tag in ("td", "th") and self._table:
            self._cell = []
        elif tag == "a":
            self._href, self._text = a.get("href"), []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._table and self._cell is not None:
            self.tables[self._table][-1].append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "table":
            self._table = None
        elif tag == "a" and self._href is not None:
            self.links.append((self._href, "".join(self._text)))
            self._href = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        if self._href is not None:
            self._text.append(data)


def tables(page: str) -> Tables:
    parser = Tables()
    parser.feed(page)
    return parser


def chart(page: str, name: str) -> str:
    found = re.search(rf'<div class="chart" id="chart-{name}">(.*?)</div>', page, re.S)
    assert found, f"no {name} chart"
    return found.group(1)


def series_values(svg: str) -> dict[str, list[float]]:
    """Each series' title and the values pygal drew for it."""
    titles = re.findall(r'<g id="activate-serie-\d+"[^>]*>.*?<text[^>]*>([^<]*)</text>', svg,
                        re.S)
    groups = re.split(r'<g class="series serie-(\d+) color-\d+">', svg)[1:]
    values: dict[str, list[float]] = {}
    for index, body in zip(groups[::2], groups[1::2], strict=True):
        drawn = re.findall(r'<desc class="value">([^<]*)</desc>', body)
        # A box's value is its five figures in words: those series are compared by title.
        values[titles[int(index)]] = [float(v.replace(",", "")) for v in drawn
                                      if re.fullmatch(r"-?[\d,]+(\.\d+)?", v)]
    return values


# --- the figures, counted again from the log --------------------------------------------


def is_refusal(e: dict[str, Any]) -> bool:
    return e["outcome"] in ("refuse", "would_refuse") and not e.get("shadow_error")


def is_error(e: dict[str, Any]) -> bool:
    return e["outcome"] == "error" or bool(e.get("shadow_error"))


def model(e: dict[str, Any]) -> str:
    return str((e.get("usage") or {}).get("model") or e.get("model") or "(unknown)")


def test_the_fixture_is_a_few_hundred_real_runs() -> None:
    runs = {e["run"] for e in EVENTS}
    assert len(runs) >= 200
    outcomes = Counter(e["outcome"] for e in EVENTS)
    assert {"pass", "refuse", "error", "would_refuse"} <= set(outcomes)
    assert any(e.get("cache_hit") for e in EVENTS) and any(e.get("findings") for e in EVENTS)
    assert {model(e) for e in EVENTS if e["kind"] == "judge"} >= {"claude-haiku-test",
                                                                 "claude-sonnet-test"}


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("html") / "report.html"
    proc = sj("report", "html", "--events", str(FIXTURE / "events.jsonl"), "--labels",
              str(FIXTURE / "labels.jsonl"), "--output", str(out),
              "--link", "https://example.test/blob/main/{path}#L{line}",
              cwd=out.parent, process=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"slopjudge: wrote {out} ({len(EVENTS)} events)\n"
    return out


def test_refusals_and_errors_per_rule_are_the_logged_ones(page: Path) -> None:
    text = page.read_text()
    refusals = Counter(e["rule"] for e in EVENTS if is_refusal(e))
    errors = Counter(e["rule"] for e in EVENTS if is_error(e))
    rows = tables(text).tables["table-over-time"][1:]
    assert rows == [[rule, str(refusals[rule]), str(errors[rule])]
                    for rule in sorted(set(refusals) | set(errors))]
    # The charts draw the same counts, one series per rule, over the buckets.
    for name, counted in (("refusals", refusals), ("errors", errors)):
        drawn = series_values(chart(text, name))
        assert sorted(drawn) == sorted(counted)
        assert {rule: sum(v) for rule, v in drawn.items()} == dict(counted)
    # Per bucket (minutes: the log spans less than 40 of them).
    per_bucket: Counter[tuple[str, str]] = Counter()
    for e in EVENTS:
        if is_refusal(e):
            per_bucket[e["time"][:16], e["rule"]] += 1
    table = tables(text).tables["table-over-time-buckets"]
    assert table[0][0] == "minute"
    assert {(b, r): int(n) for b, r, n, _ in table[1:] if n != "0"} == dict(per_bucket)


def test_cost_and_tokens_by_rule_and_model(page: Path) -> None:
    text = page.read_text()
    sums: dict[tuple[str, str], dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for e in EVENTS:
        if e["kind"] != "judge":
            continue
        row = sums[e["rule"], model(e)]
        usage = e.get("usage") or {}
        row["calls"] += e.get("judge_calls") or 0
        row["input"] += usage.get("input_tokens", 0)
        row["output"] += usage.get("output_tokens", 0)
        row["cost"] += usage.get("cost_usd", 0)
    rows = tables(text).tables["table-cost"][1:]
    assert [(r[0], r[1]) for r in rows] == sorted(sums)
    for rule, mod, calls, _cached, inp, out, _cache, _tokens, cost in rows:
        want = sums[rule, mod]
        assert (int(calls), int(inp), int(out)) == (want["calls"], want["input"], want["output"])
        assert cost == f"{want['cost']:.4f}"
    drawn = series_values(chart(text, "cost"))
    assert {m: round(sum(v), 6) for m, v in drawn.items()} == {
        m: round(sum(w["cost"] for (_, mm), w in sums.items() if mm == m), 6)
        for m in {mm for _, mm in sums}}


def test_judge_latency_leaves_cache_hits_out(page: Path) -> None:
    text = page.read_text()
    took: dict[tuple[str, str], list[float]] = defaultdict(list)
    for e in EVENTS:
        if e["kind"] == "judge" and not e.get("cache_hit") and e["outcome"] not in (
                "not_judged", "skipped"):
            took[e["rule"], model(e)].append(e["duration_ms"])
    rows = tables(text).tables["table-latency"][1:]
    assert [(r[0], r[1], int(r[2])) for r in rows] == [(k[0], k[1], len(v))
                                                        for k, v in sorted(took.items())]
    for rule, mod, _calls, median, _p90, biggest in rows:
        assert int(median) == round(statistics.median(took[rule, mod]))
        assert int(biggest) == round(max(took[rule, mod]))
    assert sorted(series_values(chart(text, "latency"))) == sorted(f"{r} · {m}" for r, m in took)


def test_agreement_matrices_per_rule_shadow_first(page: Path) -> None:
    text = page.read_text()
    matrix: dict[str, Counter[tuple[str, str]]] = defaultdict(Counter)
    for label in LABELS:
        matches = [e for e in EVENTS if e["id"] == label["id"]
                   and e.get("prompt_sha256") == label["prompt_sha256"]
                   and e["outcome"] in ("pass", "refuse", "would_refuse")
                   and not e.get("shadow_error")]
        if matches:
            said = "pass" if matches[-1]["outcome"] == "pass" else "refuse"
            matrix[label["id"].split("/")[0]][said, label["label"]] += 1
    found = tables(text).tables
    assert re.findall(r"<h3>([^<]*)</h3>", text) == ["second-look (shadow)", "review"]
    for rule, counts in matrix.items():
        assert found[f"matrix-{rule}"][1:] == [
            ["pass", str(counts["pass", "pass"]), str(counts["pass", "refuse"])],
            ["refuse", str(counts["refuse", "pass"]), str(counts["refuse", "refuse"])]]
    assert all(sum(c.values()) for c in matrix.values())
    assert matrix["review"]["refuse", "pass"] > 0  # "fine slop": the judge and the person differ


def test_the_last_run_lists_its_findings_linked_to_file_and_line(page: Path) -> None:
    last = [e for e in EVENTS if e["run"] == EVENTS[-1]["run"]]
    parsed = tables(page.read_text())
    rows = parsed.tables["table-last-run"][1:]
    assert [(r[0], r[1]) for r in rows] == [(e["id"], e["outcome"]) for e in last]
    findings = [f for e in last for f in e.get("findings") or []]
    assert [(h, t) for h, t in parsed.links] == [
        (f"https://example.test/blob/main/{f['path']}#L{f['line']}", f"{f['path']}:{f['line']}")
        for f in findings]


def test_the_page_stands_alone_and_is_the_same_every_time(page: Path, tmp_path: Path) -> None:
    text = page.read_text()
    for needle in ("<script", "<link", "<img", "<iframe", "@import", "url(", "src="):
        assert needle not in text, needle
    for address in re.findall(r"https?://[^\s\"'<>)]+", text):
        assert address.startswith(("http://www.w3.org/", "https://example.test/")), address
    again = tmp_path / "again.html"
    proc = sj("report", "html", "--events", str(FIXTURE / "events.jsonl"), "--labels",
              str(FIXTURE / "labels.jsonl"), "--output", str(again),
              "--link", "https://example.test/blob/main/{path}#L{line}", cwd=tmp_path)
    assert proc.returncode == 0 and again.read_text() == text


# --- headless Chromium ------------------------------------------------------------------


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    if os.environ.get("CI"):
        pytest.fail("chromium is missing: .ci/run installs Debian's chromium package")
    pytest.skip("chromium is not installed (apt-get install chromium)")


def browse(page: Path, out: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    # No network for the page: a proxy that is not there.
    return subprocess.run(
        [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--no-first-run", "--proxy-server=http://127.0.0.1:9", f"--user-data-dir={out}",
         *flags, page.as_uri()],
        capture_output=True, text=True, timeout=180)


def png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """Width, height and rows of RGB pixels of an 8-bit, non-interlaced PNG. A row under
    the Sub or Up filter is undone as one integer (bytewise sums, no carry between bytes:
    the screenshot has 5.7 million pixels, a loop per byte took 15 CPU-s); Average and
    Paeth, a few rows, byte by byte."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", b""
    while pos < len(data):
        (length,), kind = struct.unpack(">I", data[pos:pos + 4]), data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        header = body if kind == b"IHDR" else header
        idat += body if kind == b"IDAT" else b""
        pos += 12 + length
    width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert (depth, interlace) == (8, 0) and color in (2, 6)
    step = 4 if color == 6 else 3
    size = width * step
    high, low = int.from_bytes(b"\x80" * size, "big"), int.from_bytes(b"\x7f" * size, "big")

    def add(a: int, b: int) -> int:
        return ((a & low) + (b & low)) ^ ((a ^ b) & high)

    raw, rows, prev = zlib.decompress(idat), [], bytes(size)
    for y in range(height):
        kind, line = raw[y * (size + 1)], raw[y * (size + 1) + 1:(y + 1) * (size + 1)]
        if kind == 1:  # each byte plus the decoded one a pixel to its left: a prefix sum
            total, shift = int.from_bytes(line, "big"), step
            while shift < size:
                total, shift = add(total, total >> 8 * shift), shift * 2
            line = total.to_bytes(size, "big")
        elif kind == 2:
            line = add(int.from_bytes(line, "big"), int.from_bytes(prev, "big")).to_bytes(
                size, "big")
        elif kind in (3, 4):
            line = _average_or_paeth(kind, bytearray(line), prev, step)
        prev = line
        rows.append(line if step == 3 else b"".join(
            line[j:j + 3] for j in range(0, len(line), 4)))
    return width, height, rows


def _average_or_paeth(kind: int, line: bytearray, prev: bytes, step: int) -> bytes:
    for i in range(len(line)):
        left = line[i - step] if i >= step else 0
        up, corner = prev[i], prev[i - step] if i >= step else 0
        if kind == 3:
            line[i] = (line[i] + (left + up) // 2) & 255
        else:
            p = left + up - corner
            pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
            line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc
                                  else corner)) & 255
    return bytes(line)


def colours(rows: list[bytes]) -> Counter[str]:
    """How many pixels have each colour (rows alike counted once, pixels counted in C)."""
    seen: Counter[str] = Counter()
    for row, times in Counter(rows).items():
        for (r, g, b), n in Counter(zip(row[0::3], row[1::3], row[2::3], strict=True)).items():
            seen[f"#{r:02x}{g:02x}{b:02x}"] += n * times
    return seen


def test_chromium_renders_every_section_offline(page: Path, tmp_path: Path) -> None:
    proc = browse(page, tmp_path / "profile", "--dump-dom")
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = proc.stdout
    for section in ("over-time", "cost", "latency", "agreement", "last-run"):
        assert f'id="{section}"' in dom, section
    assert dom.count("<svg") == 5  # refusals, errors, cost, tokens, latency
    rendered = tables(dom).tables
    written = tables(page.read_text()).tables
    assert rendered == written  # the browser read every figure as written


def test_the_screenshot_shows_the_charts_and_the_matrices(page: Path, tmp_path: Path) -> None:
    shot = tmp_path / "report.png"
    proc = browse(page, tmp_path / "profile", "--window-size=1100,5200",
                  f"--screenshot={shot}")
    assert proc.returncode == 0 and shot.is_file(), proc.stderr[-2000:]
    width, height, rows = png_pixels(shot.read_bytes())
    assert (width, height) == (1100, 5200)
    seen = colours(rows)
    # pygal's first series colours fill the bars and boxes; the matrices' cells their own.
    for colour in (*COLOURS[:2], "#e7f5ea", "#fbe9e7"):
        assert seen[colour] > 200, (colour, seen.most_common(12))
    # Below the last section the page ends: not all of it is blank.
    assert sum(n for c, n in seen.items() if c != "#ffffff") > width * height // 20


def test_the_page_goes_to_the_state_folder_which_git_ignores(tmp_path: Path) -> None:
    """Written into the work tree it would be an untracked file, judged with every change."""
    from tests.helpers import make_repo

    repo = make_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    proc = sj("report", "html", "--events", str(FIXTURE / "events.jsonl"), cwd=repo)
    assert proc.returncode == 0, proc.stderr
    assert "wrote .slopjudge/report.html" in proc.stdout
    assert (repo / ".slopjudge" / "report.html").read_text().startswith("<!DOCTYPE html>")
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"],
                            cwd=repo, capture_output=True, text=True, check=True).stdout
    assert status == ""


def test_a_state_folder_that_cannot_be_made_is_named_in_the_error(tmp_path: Path) -> None:
    from tests.helpers import make_repo

    repo = make_repo(tmp_path / "repo", {"slopjudge.yaml": "state_dir: /proc/no/such\n"})
    proc = sj("report", "html", "--events", str(FIXTURE / "events.jsonl"), cwd=repo)
    assert proc.returncode == 2
    assert "report.html: cannot write the report" in proc.stderr and "None" not in proc.stderr


def test_a_log_of_odd_numbers_still_makes_a_page(tmp_path: Path) -> None:
    """NaN, Infinity, huge and negative counts (json reads them all) count as nothing."""
    events = tmp_path / "events.jsonl"
    line = ('{{"time": "2026-12-01T10:0{n}:00Z", "kind": "judge", "rule": "r", "check": "c", '
            '"outcome": "refuse", "duration_ms": {took}, "cached_calls": -3, '
            '"usage": {{"input_tokens": {tokens}, "cost_usd": 1}}}}\n')
    events.write_text("".join(line.format(n=n, took=took, tokens=tokens) for n, (took, tokens)
                              in enumerate([("NaN", "1e300"), ("1e999", "-5"), ("1200", "10")])))
    out = tmp_path / "page.html"
    proc = sj("report", "html", "--events", str(events), "--output", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "wrote" in proc.stdout and out.stat().st_size > 0
    cost = sj("report", "cost", "--events", str(events), cwd=tmp_path)
    assert cost.returncode == 0 and ", 10 tokens," in cost.stdout, cost.stdout
    assert "saving about 0 tokens" in cost.stdout


def test_a_log_mixing_time_zones_odd_findings_and_lone_surrogates_still_makes_a_page(
        tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    rows = [{"time": "2026-12-01T10:00:00", "run": "a", "kind": "script", "rule": "r",
             "check": "c", "outcome": "refuse", "findings": 5},
            {"time": "2026-12-01T11:00:00+00:00", "run": "a", "kind": "script", "rule": "r",
             "check": "d", "outcome": "error", "findings": {"path": "x"}},
            {"time": "2026-12-01T12:00:00Z", "run": "a", "kind": "script", "rule": "r",
             "check": "e", "outcome": "refuse",
             "findings": [{"path": "src/a.py", "line": 3, "message": "seen"}]},
            {"time": "2026-12-01T12:30:00Z", "run": "a", "kind": "script", "rule": "r\ud800",
             "check": "f", "outcome": "refuse", "reason": "r\ud800",
             "findings": [{"path": "x\ud800", "line": 1, "message": "m\ud800"}]}]
    events.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "page.html"
    proc = sj("report", "html", "--events", str(events), "--output", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "src/a.py:3" in out.read_text()
    for report in ("events", "cost"):  # the text reports show it escaped
        proc = sj("report", report, "--events", str(events), cwd=tmp_path, process=True)
        assert proc.returncode == 0 and "internal error" not in proc.stderr, proc.stderr
    shown = sj("report", "events", "--events", str(events), cwd=tmp_path, process=True).stdout
    assert "r\\ud800" in shown  # the escape, as text
