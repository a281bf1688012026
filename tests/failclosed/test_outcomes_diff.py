"""Diff input that is not a diff never passes: `run --diff`, `payload --diff`, `test` fixtures.

Each bad input exits 2 with one line on stderr naming where reading failed
(``FILE:LINE: ...``, or the byte for binary data); no check runs. Only
well-formed unified or git diffs, cut from real git repos, get judged.
"""

from __future__ import annotations

import os
import random
import re
import subprocess
from pathlib import Path

import pytest

from tests.helpers import (
    PY,
    cli_env,
    commit_all,
    git,
    make_repo,
    run_json,
    script_rule,
    sj,
    write_files,
)

RAN = "check-ran"


def repo_with_rule(tmp_path: Path) -> Path:
    """A repo whose one script check passes and leaves a marker when it runs."""
    repo = make_repo(tmp_path / "repo", {"a.py": "a = 1\nb = 2\nc = 3\n"})
    script_rule(repo / "rules", "scripted", f'cat >/dev/null; touch "{tmp_path / RAN}"')
    commit_all(repo, "rules")
    return repo


def git_out(repo: Path, *args: str) -> bytes:
    """git's stdout, byte for byte (its final newline kept)."""
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, check=True).stdout


def real_diff(repo: Path) -> bytes:
    """A real git diff of a two-line change, left in the work tree."""
    write_files(repo, {"a.py": "a = 1\nb = 'two'\nc = 'three'\n"})
    out = git_out(repo, "diff")
    git(repo, "checkout", "--", "a.py")
    return out


def one_error_line(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


def bad_inputs(diff: bytes) -> dict[str, tuple[bytes, str]]:
    lines = diff.split(b"\n")
    hunk = next(n for n, ln in enumerate(lines) if ln.startswith(b"@@ "))
    cut = b"\n".join(lines[: hunk + 3])  # the hunk header and two of its lines
    wrong_count = diff.replace(b"@@ -1,3 +1,3 @@", b"@@ -1,2 +1,2 @@")
    too_short = diff.replace(b"@@ -1,3 +1,3 @@", b"@@ -1,5 +1,5 @@")
    return {
        "random bytes": (random.Random(9).randbytes(4096),
                         r"^slopjudge: d\.diff: byte \d+ is NUL: binary data, not a unified"),
        "plain text": (b"Fixed the bug in the parser.\nPlease merge.\n",
                       r"^slopjudge: d\.diff:1: not a unified or git diff"),
        "cut off mid-hunk": (cut + b"\n", rf"^slopjudge: d\.diff:{hunk + 3}: the input ends "
                             rf"inside hunk '@@ -1,3 \+1,3 @@' \(line {hunk + 1}\)"),
        "more lines than counted": (wrong_count, r"^slopjudge: d\.diff:\d+: hunk '@@ -1,2 \+1,2 @@'"
                                    r" .* holds more lines than its header counts"),
        "fewer lines than counted": (too_short, r"^slopjudge: d\.diff:\d+: the input ends inside "
                                     r"hunk '@@ -1,5 \+1,5 @@'"),
        "cut off in the header": (b"\n".join(lines[:hunk]) + b"\n",
                                  r"^slopjudge: d\.diff:\d+: the input ends before the file's "
                                  r"first hunk"),
        "garbled hunk header": (diff.replace(b"@@ -1,3 +1,3 @@", b"@@ -1,3 +one @@"),
                                rf"^slopjudge: d\.diff:{hunk + 1}: "),
        "empty": (b"", r"^slopjudge: d\.diff: empty diff"),
        "blank lines only": (b"\n\n  \n", r"^slopjudge: d\.diff: empty diff"),
    }


CASES = sorted(bad_inputs(b"@@ -1,3 +1,3 @@\n").keys())


@pytest.mark.parametrize("case", CASES)
def test_run_diff_refuses_what_is_not_a_diff(tmp_path: Path, case: str) -> None:
    repo = repo_with_rule(tmp_path)
    data, pattern = bad_inputs(real_diff(repo))[case]
    (repo / "d.diff").write_bytes(data)
    res = sj("run", "--diff", "d.diff", cwd=repo)
    assert res.returncode == 2, res.stdout + res.stderr
    assert re.search(pattern, one_error_line(res.stderr)), res.stderr
    assert res.stdout == "" and "PASS" not in res.stdout
    assert not (tmp_path / RAN).exists(), "a check ran on input that is not a diff"


@pytest.mark.parametrize("case", ["random bytes", "cut off mid-hunk", "empty"])
def test_run_diff_from_stdin_is_checked_too(tmp_path: Path, case: str) -> None:
    repo = repo_with_rule(tmp_path)
    data, _ = bad_inputs(real_diff(repo))[case]
    res = subprocess.run([PY, "-m", "slopjudge", "run", "--diff", "-"], cwd=repo, input=data,
                         capture_output=True, env=cli_env(), timeout=60)
    assert res.returncode == 2
    assert one_error_line(res.stderr.decode()).startswith("slopjudge: <stdin>")


def test_a_real_diff_still_runs(tmp_path: Path) -> None:
    # Control: the same pipeline on the well-formed diff runs the check and passes.
    repo = repo_with_rule(tmp_path)
    (repo / "d.diff").write_bytes(real_diff(repo))
    code, report = run_json("--diff", "d.diff", cwd=repo)
    assert (code, report["outcome"]) == (0, "pass")
    assert (tmp_path / RAN).exists()


def test_format_patch_mail_is_a_diff(tmp_path: Path) -> None:
    # Text around the patches (mail headers, message, signature) is not an error.
    repo = repo_with_rule(tmp_path)
    write_files(repo, {"a.py": "a = 1\nb = 'two'\nc = 3\n"})
    commit_all(repo, "two")
    (repo / "d.diff").write_bytes(git_out(repo, "format-patch", "-1", "--stdout"))
    code, report = run_json("--diff", "d.diff", cwd=repo)
    assert (code, report["outcome"]) == (0, "pass")


def test_missing_diff_file_says_so_in_one_sentence(tmp_path: Path) -> None:
    repo = repo_with_rule(tmp_path)
    res = sj("run", "--diff", "nope.diff", cwd=repo)
    assert res.returncode == 2
    assert one_error_line(res.stderr) == "slopjudge: --diff nope.diff: no such file"
    res = sj("run", "--diff", "rules", cwd=repo)
    assert res.returncode == 2
    assert one_error_line(res.stderr) == "slopjudge: --diff rules: is a directory, not a diff file"


def test_payload_diff_is_checked(tmp_path: Path) -> None:
    repo = repo_with_rule(tmp_path)
    (repo / "d.diff").write_bytes(b"just words\n")
    res = sj("payload", "--diff", "d.diff", cwd=repo)
    assert res.returncode == 2 and res.stdout == ""
    assert one_error_line(res.stderr).startswith("slopjudge: d.diff:1: not a unified or git diff")


def test_a_rule_fixture_that_is_not_a_diff_exits_2(tmp_path: Path) -> None:
    repo = repo_with_rule(tmp_path)
    case = repo / "tests" / "rules" / "scripted" / "broken"
    case.mkdir(parents=True)
    (case / "case.yaml").write_text("diff: change.diff\nexpect: pass\n")
    (case / "change.diff").write_bytes(real_diff(repo)[:-12])  # cut off mid-hunk
    res = sj("test", cwd=repo)
    assert res.returncode == 2, res.stdout + res.stderr
    assert "cannot read the case input" in res.stdout
    assert "looks cut off" in res.stdout or "the input ends inside hunk" in res.stdout
    # Control: the whole diff is a case that runs (and passes).
    (case / "change.diff").write_bytes(real_diff(repo))
    res = sj("test", cwd=repo)
    assert res.returncode == 0, res.stdout + res.stderr


def test_binary_git_diff_is_a_diff(tmp_path: Path) -> None:
    repo = repo_with_rule(tmp_path)
    (repo / "blob.bin").write_bytes(b"\x00" + os.urandom(64))
    (repo / "latin1.txt").write_bytes(b"caf\xe9\n")  # not UTF-8, still text
    git(repo, "add", "-N", "blob.bin", "latin1.txt")
    diff = git_out(repo, "diff")
    assert b"Binary files" in diff and b"+caf\xe9" in diff
    (repo / "d.diff").write_bytes(diff)
    code, report = run_json("--diff", "d.diff", cwd=repo)
    assert code == 0, report


def test_every_cut_of_a_real_diff_is_refused(tmp_path: Path) -> None:
    """Cut a real two-file diff at every byte: each cut is refused, or is exactly the
    first file's whole section (a shorter diff that is well-formed on its own)."""
    from slopjudge.changes import changeset as cs

    repo = repo_with_rule(tmp_path)
    write_files(repo, {"a.py": "a = 1\nb = 'two'\nc = 3\n", "n.py": "x = 1\ny = 2\n"})
    git(repo, "add", "-N", "n.py")
    diff = git_out(repo, "diff")
    second = diff.index(b"diff --git a/n.py")
    whole = cs.read_diff(diff, "d.diff")
    assert [f.path for f in whole.files] == ["a.py", "n.py"]
    for cut in range(len(diff)):
        try:
            got = cs.read_diff(diff[:cut], "d.diff")
        except cs.ChangesetError:
            continue
        assert cut == second, f"a diff cut at byte {cut} of {len(diff)} was read as whole"
        assert [f.path for f in got.files] == ["a.py"]
