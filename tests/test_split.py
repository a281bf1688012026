"""Bounded judge prompts: a change over max_prompt_tokens is judged in parts.

Driven through `slopjudge run --diff ... --dry-run --prompts-dir`, so the diff
parser, the rule's paths, the template and the prompt writer are the real ones.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from slopjudge.checks.split import (
    BYTES_PER_TOKEN,
    estimate_tokens,
    number_parts,
    part_note,
    plan,
    split_hunks,
)

TEMPLATE = """\
Part {{ unit.index }} of {{ unit.count }}{% if unit.hunks %} (hunks {{ unit.hunks.first }}-\
{{ unit.hunks.last }} of {{ unit.hunks.of }}){% endif %}.
{% for f in changeset.files %}<file path="{{ f.path }}">
{{ f.newContent }}</file>
{% endfor %}<diff>
{{ change }}</diff>
"""
FILE_RE = re.compile(r'<file path="([^"]+)">')


def new_file(path: str, lines: list[str]) -> str:
    body = "".join(f"+{ln}\n" for ln in lines)
    return (f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
            f"@@ -0,0 +1,{len(lines)} @@\n{body}")


def modified_file(path: str, hunks: int, width: int) -> str:
    """A modified file with ``hunks`` hunks, each changing one line of ``width`` chars."""
    out = [f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"]
    for h in range(hunks):
        at = h * 100 + 1
        out.append(f"@@ -{at},1 +{at},1 @@\n-old {h}\n+{'x' * width} {h}\n")
    return "".join(out)


def make_repo(tmp_path: Path, *, max_prompt_tokens: int, each: str = "changeset") -> Path:
    repo = tmp_path / "repo"
    rule = repo / "rules" / "big"
    rule.mkdir(parents=True)
    (rule / "rule.yaml").write_text(
        "description: Judges every file\n"
        "checks:\n  - id: judge\n    judge: big.md.j2\n"
        f"    each: {each}\n    max_prompt_tokens: {max_prompt_tokens}\n")
    (rule / "big.md.j2").write_text(TEMPLATE)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return repo


def dry_run(repo: Path, diff: str, tmp_path: Path) -> tuple[dict[str, Any], list[str]]:
    (tmp_path / "change.diff").write_text(diff)
    prompts = tmp_path / "rendered"
    env = {**os.environ, "SLOPJUDGE_EVENTS_FILE": str(tmp_path / "events.jsonl")}
    env.pop("SLOPJUDGE_JUDGE_MOCKS", None)
    proc = subprocess.run(
        [sys.executable, "-m", "slopjudge", "run", "--diff", str(tmp_path / "change.diff"),
         "--dry-run", "--prompts-dir", str(prompts), "--format", "json"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=600,
    )
    assert proc.stdout.strip(), proc.stderr
    texts = [p.read_text() for p in sorted(prompts.glob("*.md"))] if prompts.is_dir() else []
    return json.loads(proc.stdout), texts


def test_a_10000_file_change_fits_the_budget_and_judges_every_file_once(tmp_path: Path) -> None:
    budget = 20_000
    repo = make_repo(tmp_path, max_prompt_tokens=budget)
    paths = [f"src/pkg{n // 100}/mod{n}.py" for n in range(10_000)]
    diff = "".join(new_file(p, [f"value_{i} = {i}  # {p}" for i in range(5)]) for p in paths)
    report, prompts = dry_run(repo, diff, tmp_path)

    (check,) = report["checks"]
    assert check["outcome"] == "not_judged", check["reason"]
    assert check["usage"]["units"] == len(prompts) > 1
    assert max(estimate_tokens(p) for p in prompts) <= budget
    assert check["usage"]["prompt_tokens"] <= budget
    seen = [path for p in prompts for path in FILE_RE.findall(p)]
    assert sorted(seen) == sorted(paths)  # every file in exactly one prompt
    # The template and the judge know which part they see.
    count = len(prompts)
    numbers = sorted(int(m) for p in prompts for m in re.findall(r"^Part (\d+) of", p, re.M))
    assert numbers == list(range(1, count + 1))
    assert all(f"of {count}." in p for p in prompts)
    assert all("this is part " in p and "Judge only these files" in p for p in prompts)
    # Packed, not one file per call: parts are mostly full.
    assert count < 10_000 // 20


def test_a_single_oversized_file_is_an_error_naming_it_and_its_size(tmp_path: Path) -> None:
    budget = 20_000
    repo = make_repo(tmp_path, max_prompt_tokens=budget)
    small = "".join(new_file(f"src/m{n}.py", [f"x = {n}"]) for n in range(50))
    huge = new_file("src/generated/blob.py", [f"row_{i} = '{'y' * 60}'" for i in range(2000)])
    report, prompts = dry_run(repo, small + huge + small.replace("src/m", "lib/m"), tmp_path)
    (check,) = report["checks"]
    assert check["outcome"] == "error"
    assert "src/generated/blob.py" in check["reason"]
    assert "KB" in check["reason"] and "max_prompt_tokens 20,000" in check["reason"]
    assert "src/m1.py" not in check["reason"]
    assert prompts == []  # an erroring check sends nothing, not even the parts that fit


def test_a_file_over_the_budget_is_split_by_hunk_groups(tmp_path: Path) -> None:
    budget = 3_000
    repo = make_repo(tmp_path, max_prompt_tokens=budget)
    # 12 hunks of about 1,500 bytes: the file alone is about 5,000 tokens.
    big = modified_file("src/wide.py", 12, 1500)
    report, prompts = dry_run(repo, new_file("src/a.py", ["a = 1"]) + big, tmp_path)
    (check,) = report["checks"]
    assert check["outcome"] == "not_judged", check["reason"]
    assert max(estimate_tokens(p) for p in prompts) <= budget
    hunk_parts = [p for p in prompts if "only hunks" in p]
    assert len(hunk_parts) > 1
    # Every hunk in exactly one part, in order, and the content is left to the workspace.
    seen = [int(h) for p in hunk_parts for h in re.findall(r"^\+x+ (\d+)$", p, re.M)]
    assert seen == list(range(12))
    assert all("<file path=\"src/wide.py\">\nNone</file>" in p for p in hunk_parts)


def test_each_file_splits_only_the_files_that_do_not_fit(tmp_path: Path) -> None:
    budget = 3_000
    repo = make_repo(tmp_path, max_prompt_tokens=budget, each="file")
    diff = "".join(new_file(f"src/m{n}.py", ["a = 1"]) for n in range(5))
    diff += modified_file("src/wide.py", 12, 1500)
    report, prompts = dry_run(repo, diff, tmp_path)
    (check,) = report["checks"]
    assert check["outcome"] == "not_judged", check["reason"]
    assert max(estimate_tokens(p) for p in prompts) <= budget
    whole = [p for p in prompts if "only hunks" not in p]
    assert sorted(FILE_RE.findall("".join(whole))) == [f"src/m{n}.py" for n in range(5)]
    assert len(prompts) > 6


def test_a_change_under_the_budget_is_one_prompt(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, max_prompt_tokens=100_000)
    diff = "".join(new_file(f"src/m{n}.py", ["a = 1"]) for n in range(20))
    report, prompts = dry_run(repo, diff, tmp_path)
    assert len(prompts) == 1 and report["checks"][0]["usage"]["units"] == 1
    assert "Part 1 of 1." in prompts[0] and "this is part" not in prompts[0]


def test_estimate_is_bytes_over_3_5_rounded_up() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("abc") == 1
    assert estimate_tokens("a" * 35) == 10
    assert estimate_tokens("é" * 7) == 4  # 14 UTF-8 bytes
    assert BYTES_PER_TOKEN == 3.5


def test_split_hunks_keeps_the_header_and_every_hunk() -> None:
    diff = modified_file("a.py", 3, 4)
    header, hunks = split_hunks(diff)
    assert header.startswith("diff --git") and header.endswith("+++ b/a.py\n")
    assert len(hunks) == 3 and header + "".join(hunks) == diff


def test_plan_never_returns_a_part_over_the_budget_when_the_estimate_is_short() -> None:
    # A renderer that costs more per file in company than alone: packing by the
    # single-file estimate overshoots, and the planner must halve until parts fit.
    def render(payload: dict[str, Any]) -> str:
        files = payload["changeset"]["files"]
        return "x" * (100 + 350 * len(files) + 200 * max(0, len(files) - 1) ** 2)

    files = [{"path": f"f{n}", "diff": "", "newContent": None, "oldContent": None}
             for n in range(40)]
    base = {"changeset": {"files": files}, "change": ""}
    result = plan(base, each_file=False, render=render, budget=1_000)
    assert result.problems == []
    assert [p for part in result.parts for p in part.files] == [f"f{n}" for n in range(40)]
    assert all(part.tokens <= 1_000 for part in result.parts)


@pytest.mark.parametrize("budget", [1, 5])
def test_a_template_bigger_than_the_budget_is_an_error(tmp_path: Path, budget: int) -> None:
    repo = make_repo(tmp_path, max_prompt_tokens=budget)
    report, prompts = dry_run(repo, new_file("a.py", ["a = 1"]), tmp_path)
    (check,) = report["checks"]
    assert check["outcome"] == "error" and prompts == []
    assert f"max_prompt_tokens {budget}" in check["reason"]


def test_a_file_of_thousands_of_hunks_is_packed_not_grown_hunk_by_hunk(tmp_path: Path) -> None:
    budget = 20_000
    repo = make_repo(tmp_path, max_prompt_tokens=budget)
    report, prompts = dry_run(repo, modified_file("src/many.py", 3000, 200), tmp_path)
    (check,) = report["checks"]
    assert check["outcome"] == "not_judged", check["reason"]
    assert max(estimate_tokens(p) for p in prompts) <= budget
    seen = [int(h) for p in prompts for h in re.findall(r"^\+x+ (\d+)$", p, re.M)]
    assert sorted(seen) == list(range(3000))  # each hunk in exactly one part
    assert len(prompts) < 3000 * 230 * 2 / 3.5 / budget + 5  # parts are mostly full


def test_the_same_change_splits_the_same_wherever_the_repository_lives(tmp_path: Path) -> None:
    """3,000 files in a repository at a short path and at a long one: the same parts.
    The prompt names the repository's path; its length must not move a file to
    another part."""
    paths = [f"src/pkg{n // 100}/mod{n}.py" for n in range(3_000)]
    diff = "".join(new_file(p, [f"value_{i} = {i}  # {p}" for i in range(3)]) for p in paths)
    splits = []
    for where in ("a", "deep/" + "d" * 100 + "/" + "e" * 100):
        base = tmp_path / where
        base.mkdir(parents=True)
        report, prompts = dry_run(make_repo(base, max_prompt_tokens=20_000), diff, base)
        assert report["checks"][0]["outcome"] == "not_judged", report
        assert str(base / "repo") in prompts[0]
        splits.append([FILE_RE.findall(p) for p in prompts])
    assert len(splits[0]) > 10
    assert splits[0] == splits[1]


def test_numbered_parts_measure_the_same_wherever_the_repository_lives(tmp_path: Path) -> None:
    """Parts numbered again after a file was split (``each: file``) are measured as the
    planner measures them: the repository's path counts the same at any length."""
    diff = new_file("src/a.py", ["a = 1"]) + modified_file("src/wide.py", 12, 1500)
    sizes = []
    for where in ("a", "d" * 100):
        base = tmp_path / where
        base.mkdir()
        report, prompts = dry_run(make_repo(base, max_prompt_tokens=3_000, each="file"), diff,
                                  base)
        (check,) = report["checks"]
        assert check["outcome"] == "not_judged" and len(prompts) > 2, check
        sizes.append(check["usage"]["prompt_tokens"])
    assert sizes[0] == sizes[1]


def test_an_each_file_subject_of_two_files_is_judged_file_by_file(tmp_path: Path) -> None:
    """``subjects:`` with ``each: file``: a subject holding two files is two prompts."""
    repo = make_repo(tmp_path, max_prompt_tokens=100_000, each="file")
    rule = repo / "rules" / "big"
    with (rule / "rule.yaml").open("a") as f:
        f.write("subjects: ./by.py\n")
    (rule / "by.py").write_text(
        "#!/usr/bin/env python3\nimport json, sys\n"
        "files = [f['path'] for f in json.load(sys.stdin)['changeset']['files']]\n"
        "print(json.dumps([{'id': 'a', 'files': files}]))\n")
    (rule / "by.py").chmod(0o755)
    diff = new_file("skills/a/SKILL.md", ["A"]) + new_file("skills/a/ref.md", ["R"])
    report, prompts = dry_run(repo, diff, tmp_path)
    (check,) = report["checks"]
    assert check["outcome"] == "not_judged", check["reason"]
    assert [FILE_RE.findall(p) for p in prompts] == [["skills/a/SKILL.md"], ["skills/a/ref.md"]]
    assert [re.findall(r"^Part (\d+ of \d+)", p, re.M) for p in prompts] == [["1 of 2"],
                                                                              ["2 of 2"]]


def test_an_error_names_every_part_that_does_not_fit(tmp_path: Path) -> None:
    """A file whose one hunk is too big and a file the template blows up past the
    budget: both are named, not only the first found."""
    repo = make_repo(tmp_path, max_prompt_tokens=3_000)
    (repo / "rules" / "big" / "big.md.j2").write_text(
        '{% for f in changeset.files %}{% if f.path == "src/echo.py" %}{{ "w" * 20000 }}'
        "{% endif %}{% endfor %}" + TEMPLATE)
    diff = "".join(new_file(f"src/m{n}.py", ["a = 1"]) for n in range(3))
    diff += new_file("src/echo.py", ["b = 2"]) + modified_file("src/wide.py", 1, 20_000)
    report, prompts = dry_run(repo, diff, tmp_path)
    (check,) = report["checks"]
    assert check["outcome"] == "error" and prompts == []
    assert "src/wide.py (" in check["reason"] and "src/echo.py: the prompt" in check["reason"]


def paths_named_again(payload: dict[str, Any]) -> str:
    """A template that names each file again after the diffs, so a part of several files
    is larger than the files' estimated shares add up to."""
    files = payload["changeset"]["files"]
    return ("".join(f"<file {f['path']}>\n{f['diff']}</file>\n" for f in files)
            + " ".join(f["path"] for f in files) * 3 + part_note(payload["unit"], False))


def test_files_that_fit_one_prompt_at_their_place_are_one_part() -> None:
    """Parts are checked at their numbered size against max_prompt_tokens itself: two
    files whose prompt fits are one judge call, not halved by the planning margin."""
    files = [{"path": f"p{n}.py", "diff": "+" + "x" * 200 + "\n"} for n in range(3)]
    result = plan({"changeset": {"files": files}, "change": ""}, each_file=False,
                  render=paths_named_again, budget=185)
    assert result.problems == []
    assert [p.files for p in result.parts] == [["p0.py", "p1.py"], ["p2.py"]]
    assert [p.payload["unit"]["index"] for p in result.parts] == [1, 2]
    assert all(p.tokens <= 185 and p.prompt == paths_named_again(p.payload)
               for p in result.parts)


def test_each_part_of_whole_files_is_rendered_once() -> None:
    """Planning renders the whole change, the prompt without files and the first half of
    the files; then each part once, at its place, and numbering them again is free."""
    renders: list[dict[str, Any]] = []

    def render(payload: dict[str, Any]) -> str:
        renders.append(payload["unit"])
        return paths_named_again(payload)

    files = [{"path": f"src/f{n}.py", "diff": "+" + "x" * (50 + n * 37 % 900) + "\n"}
             for n in range(60)]
    result = plan({"changeset": {"files": files}, "change": ""}, each_file=False,
                  render=render, budget=1_500)
    assert result.problems == [] and len(result.parts) > 5
    assert len(renders) == 3 + len(result.parts)
    assert number_parts(result.parts, render, 1_500) == []
    assert len(renders) == 3 + len(result.parts)


@pytest.mark.parametrize("outside", [100, 150])
def test_files_outside_the_rules_paths_are_listed_up_to_100_then_counted(
        tmp_path: Path, outside: int) -> None:
    """The default pack's file list (``_changes.md.j2``): thousands of names outside the
    rule's paths would fill every prompt; past 100 they are counted, not named."""
    repo = tmp_path / "repo"
    rule = repo / "rules" / "py"
    rule.mkdir(parents=True)
    (rule / "rule.yaml").write_text(
        'description: judges Python\npaths: ["*.py"]\n'
        "checks:\n  - id: judge\n    judge: py.md.j2\n")
    (rule / "py.md.j2").write_text('{% include "_changes.md.j2" %}\nIs any of this slop?\n')
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    docs = [f"docs/page{n:03}.md" for n in range(outside)]
    diff = new_file("src/app.py", ["x = 1"]) + "".join(new_file(p, ["text"]) for p in docs)
    report, prompts = dry_run(repo, diff, tmp_path)
    assert report["checks"][0]["outcome"] == "not_judged", report
    [prompt] = prompts
    assert "- src/app.py (A)\n" in prompt
    listed = re.findall(r"^- (docs/\S+) \(A\), outside this rule's paths$", prompt, re.M)
    assert listed == docs[:100]
    more = re.findall(r"^- (\d+) more files outside this rule's paths$", prompt, re.M)
    assert more == ([] if outside <= 100 else [str(outside - 100)])
