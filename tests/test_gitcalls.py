"""A change is read in few git calls, and reads exactly as when asked step by step.

Every git call costs a process start in a Stop hook and in a CI run. A commit
range is one ``git rev-parse base...head`` (the top, both commits and their
merge base), one diff, one ``cat-file`` and the commit list (read while the diff
is); a session's change from its baseline, one ``rev-parse`` with the snapshot's
three calls, the diff and ``cat-file``. When git does not answer that one call
plainly, each part is asked alone, so what an unknown revision says is unchanged.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from slopjudge.changes import changeset as cs
from slopjudge.changes import gitio
from tests.test_changeset import commit, git, init, write


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    made: list[list[str]] = []
    real = gitio.git

    def counted(workspace: str, args: list[str], **kw: Any) -> bytes:
        made.append(args)
        return real(workspace, args, **kw)

    monkeypatch.setattr(gitio, "git", counted)
    monkeypatch.setattr(gitio, "_TOPLEVELS", {})
    return made


def command(args: list[str]) -> str:
    """The git command of a call's arguments (``-c name=value`` pairs skipped)."""
    i = 0
    while args[i] == "-c":
        i += 2
    return args[i]


def step_by_step(monkeypatch: pytest.MonkeyPatch) -> None:
    """As if git never answered the combined call: every part is asked alone."""
    monkeypatch.setattr(gitio, "rev_parse", lambda workspace, revs, *plain: None)


def same(a: Any, b: Any) -> None:
    assert (a.base, a.head) == (b.base, b.head)
    assert [(c.sha, c.subject, c.body) for c in a.commits] == [
        (c.sha, c.subject, c.body) for c in b.commits]
    assert [(f.path, f.status, f.old_path, f.old_content, f.new_content, f.diff)
            for f in a.files] == [(f.path, f.status, f.old_path, f.old_content, f.new_content,
                                   f.diff) for f in b.files]


def two_branches(tmp_path: Path) -> tuple[Path, str, str, str]:
    """One commit, then a commit on ``feature`` from it and one on ``main``: the
    repository and the first commit's, main's and feature's ids."""
    r = init(tmp_path / "r")
    made = []
    for branch, name in (("main", "a.txt"), ("feature", "feature.txt"), ("main", "main.txt")):
        if made:  # the first commit starts main
            git(r, "checkout", "-q", *(["-b", branch] if branch == "feature" else [branch]))
        write(r, name, f"{name}\n")
        made.append(commit(r, f"{branch}: {name}"))
    first, feature, main = made
    return r, first, main, feature


def test_a_range_is_four_git_calls(tmp_path: Path, calls: list[list[str]]) -> None:
    r, first, main, feature = two_branches(tmp_path)
    c = cs.from_git_range(str(r), main, feature)
    assert sorted(command(a) for a in calls) == ["cat-file", "diff", "log", "rev-parse"]
    assert c.base == first and c.head == feature
    assert [x.subject for x in c.commits] == ["feature: feature.txt"]


def test_a_session_change_is_seven_git_calls(tmp_path: Path, calls: list[list[str]]) -> None:
    r = init(tmp_path / "s")
    write(r, "a.txt", "a\n")
    commit(r, "one")
    tree = git(r, "rev-parse", "HEAD^{tree}").decode().strip()
    write(r, "a.txt", "changed\n")
    write(r, "new.txt", "n\n")
    c = cs.from_tree_to_worktree(str(r), tree)
    # config: the filter drivers to switch off before the files are hashed.
    assert [command(a) for a in calls] == ["rev-parse", "ls-files", "config", "update-index",
                                           "write-tree", "diff", "cat-file"]
    assert [(f.path, f.status) for f in c.files] == [("a.txt", "M"), ("new.txt", "A")]
    assert c.base == tree


@pytest.mark.parametrize("case", ["merge-base", "ancestor", "same", "tag", "unrelated",
                                  "criss-cross"])
def test_a_range_reads_as_step_by_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       case: str) -> None:
    r, first, main, feature = two_branches(tmp_path)
    base, head = {"merge-base": (main, feature), "ancestor": (first, feature),
                  "same": (feature, feature), "tag": ("v1", "feature"),
                  "unrelated": ("lonely", "main"), "criss-cross": ("main", "feature")}[case]
    if case == "tag":
        git(r, "tag", "-a", "-m", "an annotated tag", "v1", first)
    if case == "unrelated":
        git(r, "checkout", "-q", "--orphan", "lonely")
        git(r, "rm", "-rq", "--cached", ".")
        write(r, "other.txt", "o\n")
        commit(r, "another history")
        git(r, "checkout", "-q", "-f", "main")
    if case == "criss-cross":  # two merge bases: git merge-base picks one
        git(r, "checkout", "-q", "feature")
        git(r, "merge", "-q", "--no-edit", main)
        write(r, "f2.txt", "2\n")
        commit(r, "more on feature")
        git(r, "checkout", "-q", "main")
        git(r, "merge", "-q", "--no-edit", feature)  # feature as it was before its merge
        write(r, "m2.txt", "2\n")
        commit(r, "more on main")
        assert len(git(r, "merge-base", "--all", "main", "feature").split()) == 2
    fast = cs.from_git_range(str(r), base, head)
    want = [] if case == "unrelated" else git(r, "merge-base", base, head).decode().split()
    assert fast.base == (want[0] if want else git(r, "rev-parse", base).decode().strip())
    step_by_step(monkeypatch)
    same(fast, cs.from_git_range(str(r), base, head))


def test_odd_revisions_read_as_before(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    r, first, main, feature = two_branches(tmp_path)
    empty = git(r, "hash-object", "-t", "tree", "--stdin", input=b"").decode().strip()
    for base, head in ((empty, "HEAD"), (f"{first}^{{commit}}", "feature"),
                       ("main~1", "feature"), ("@{-1}", "main")):
        with monkeypatch.context() as m:
            got = cs.from_git_range(str(r), base, head)
            step_by_step(m)
            same(got, cs.from_git_range(str(r), base, head))
    for base, head in (("no-such-rev", "HEAD"), ("main..feature", "HEAD"), ("HEAD", "nope"),
                       ("HEAD:a.txt", "HEAD"), ("-p", "HEAD"), ("^main", "feature")):
        with pytest.raises(cs.ChangesetError) as fast:
            cs.from_git_range(str(r), base, head)
        with monkeypatch.context() as m, pytest.raises(cs.ChangesetError) as slow:
            step_by_step(m)
            cs.from_git_range(str(r), base, head)
        assert str(fast.value) == str(slow.value)
        assert str(fast.value).startswith("unknown revision") or base == "^main"


def test_a_baseline_git_does_not_know_is_an_error(tmp_path: Path) -> None:
    r = init(tmp_path / "b")
    write(r, "a.txt", "a\n")
    commit(r, "one")
    missing = "1" * 40
    with pytest.raises(cs.ChangesetError) as e:
        cs.from_tree_to_worktree(str(r), missing)
    assert str(e.value) == f"unknown revision: {missing}"
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(cs.ChangesetError) as e:
        cs.from_tree_to_worktree(str(plain), missing)
    assert str(e.value) == f"not a git repository: {plain}"


def test_working_tree_and_index_read_as_step_by_step(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    r, _first, _main, _feature = two_branches(tmp_path)
    write(r, "a.txt", "staged\n")
    git(r, "add", "a.txt")
    write(r, "b.txt", "untracked\n")
    got = (cs.from_working_tree(str(r)), cs.from_staged(str(r)))
    step_by_step(monkeypatch)
    for a, b in zip(got, (cs.from_working_tree(str(r)), cs.from_staged(str(r))), strict=True):
        same(a, b)


def test_a_failed_read_in_the_background_is_raised_where_asked() -> None:
    def boom() -> None:
        raise cs.ChangesetError("no such thing")

    job = gitio.Background(boom)
    job.wait()
    with pytest.raises(cs.ChangesetError, match="no such thing"):
        job.result()
    assert gitio.Background(lambda x: x + 1, 41).result() == 42


def test_an_interrupt_while_waiting_kills_the_git_read(tmp_path: Path) -> None:
    import signal
    import time

    r = init(tmp_path / "i")
    # A git call that does not end by itself: an alias running a shell.
    job = gitio.Background(gitio.git, str(r), ["-c", "alias.wait=!sleep 30", "wait"])

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, interrupt)
    started = time.monotonic()
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.5)
        with pytest.raises(KeyboardInterrupt):
            job.result()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert job.wait(timeout=10)  # its git (and the shell under it) was killed
    assert time.monotonic() - started < 10
    with pytest.raises(cs.ChangesetError, match="exited with -9"):
        job.result()  # and it reads as a git that did not finish


def test_git_is_found_on_path_once_and_started_by_its_full_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    real = shutil.which("git")
    assert real is not None
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "git").mkdir()  # a folder named git is not a program: passed over
    monkeypatch.setattr(gitio, "_PROGRAMS", {})
    path = os.pathsep.join([str(shadow), os.path.dirname(real)])
    monkeypatch.setenv("PATH", path)
    assert gitio._program(None) == real
    assert gitio._PROGRAMS == {path: real}
    # Another PATH (a call's own environment) is looked up on its own.
    assert gitio._program({"PATH": str(shadow)}) is None  # git() says so, never runs "git"
    # No PATH: the system's default folders, as exec would look. A relative folder (or an
    # empty entry, the current folder) is passed over: it would be the judged repository's.
    assert gitio._program({}) == shutil.which("git", path=os.defpath)
    for relative in ("bin", ".", ""):
        assert gitio._program({"PATH": os.pathsep.join([relative, os.path.dirname(real)])}) \
            == real
    r = init(tmp_path / "r")
    assert gitio.toplevel(str(r)) == str(r)


def test_a_missing_git_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    r = init(tmp_path / "r")
    monkeypatch.setattr(gitio, "_PROGRAMS", {})
    monkeypatch.setattr(gitio, "_TOPLEVELS", {})
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    with pytest.raises(cs.ChangesetError, match="cannot run git: git: not found"):
        gitio.toplevel(str(r))
    # Only a relative folder holds one (the repository's own): not run, the same error.
    (r / "bin").mkdir()
    (r / "bin" / "git").write_text("#!/bin/sh\necho planted > planted\n")
    (r / "bin" / "git").chmod(0o755)
    monkeypatch.chdir(r)
    monkeypatch.setenv("PATH", os.pathsep.join(["bin", ".", str(tmp_path / "nothing-here")]))
    with pytest.raises(cs.ChangesetError, match="not found in PATH's absolute folders"):
        gitio.toplevel(str(r))
    assert not (r / "planted").exists()


def test_a_git_planted_in_the_repository_is_not_run_with_a_relative_path_entry(
        tmp_path: Path) -> None:
    # PATH starting with "." (or ":"): a `git` in the repository, which the judged agent
    # can write, would report no change and let everything pass.
    import shutil
    import subprocess
    import sys

    real = shutil.which("git")
    assert real is not None
    r = init(tmp_path / "r")
    (r / "rules" / "always-no").mkdir(parents=True)
    (r / "rules" / "always-no" / "rule.yaml").write_text(
        "description: refuses every change\non: [ci]\nchecks:\n  - id: check\n"
        "    script: check.py\n")
    (r / "rules" / "always-no" / "check.py").write_text("import sys\nsys.exit(1)\n")
    ran = tmp_path / "planted-git-ran"
    (r / "git").write_text(f"#!/bin/sh\ntouch {ran}\nexit 0\n")
    (r / "git").chmod(0o755)
    subprocess.run([real, "add", "-A"], cwd=r, check=True)
    subprocess.run([real, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "c"],
                   cwd=r, check=True)
    (r / "a.txt").write_text("x\n")
    subprocess.run([real, "add", "-A"], cwd=r, check=True)
    subprocess.run([real, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "d"],
                   cwd=r, check=True)
    for path in (os.pathsep.join([".", os.environ["PATH"]]), os.pathsep + os.environ["PATH"]):
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLOPJUDGE_")}
        env["PATH"] = path
        res = subprocess.run([sys.executable, "-m", "slopjudge", "run", "--base", "HEAD~1"],
                             cwd=r, env=env, capture_output=True, text=True, timeout=60)
        assert res.returncode == 1, res.stdout + res.stderr  # the rule refused the change
        assert not ran.exists()
