"""Gitignore-like globs: the one dialect of paths/exclude, tools: path patterns and the pack.

``CASES`` is the one table of (pattern, path, expected); every caller must answer it the
same way: ``pathglob.match``, a rule's ``paths`` and ``exclude`` (loaded from YAML and applied
by ``changeset.split``), a ``Write(<pattern>)`` in ``tools:`` (loaded, then matched by
``selection.applicable_rules`` through ``toolmatch``) and the rule pack's ``slopscan.glob_match``.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slopjudge.pathglob import escape, match, match_any

RULES = Path(__file__).resolve().parent.parent / "rules"

CASES = [
    # pattern, path, expected
    # Where the three matchers once disagreed: a folder admits its files, `**` inside a
    # segment stays in it, a negated class is a class.
    ("src", "src/a.py", True),
    ("a**b.py", "a/x/b.py", False),
    ("a**b.py", "axyb.py", True),
    ("[!t]*.py", "x.py", True),
    ("[!t]*.py", "t.py", False),
    ("[!t]*.py", "deep/x.py", True),
    ("./src", "src/a.py", True),  # `./` anchors, as a leading `/` does
    ("./src", "lib/src/a.py", False),
    ("/setup.py", "setup.py", True),
    ("/setup.py", "pkg/setup.py", False),
    ("setup.py", "pkg/setup.py", True),
    ("src/**/*.py", "src/a.py", True),
    ("src/**/*.py", "src/x/y/a.py", True),
    ("src/**/*.py", "lib/src/a.py", False),
    ("src/**/*.py", "src/a.pyc", False),
    ("**/test_*.py", "test_a.py", True),
    ("**/test_*.py", "tests/unit/test_a.py", True),
    ("**/test_*.py", "tests/unit/a_test.py", False),
    ("*.md", "README.md", True),
    ("*.md", "docs/deep/guide.md", True),
    ("*.md", "README.mdx", False),
    ("*.md", "docs.md/inner.txt", True),  # gitignore: a matching folder covers its files
    ("docs/**", "docs/a", True),
    ("docs/**", "docs/a/b/c.txt", True),
    ("docs/**", "docs", False),
    ("docs/**", "mydocs/a", False),
    ("docs/**", "x/docs/a", False),
    ("a/**/b", "a/b", True),
    ("a/**/b", "a/x/b", True),
    ("a/**/b", "a/x/y/b", True),
    ("a/**/b", "a/x/y/bb", False),
    ("a/**/b", "xa/b", False),
    ("a/**/b", "a/b/c", True),  # b is a folder: its files match
    ("src", "src/a/b.py", True),
    ("src", "lib/src/x", True),  # no slash: any depth
    ("/src", "lib/src/x", False),  # leading slash anchors
    ("src/", "src", False),  # trailing slash: folders only
    ("src/", "src/a", True),
    ("lib/*.py", "lib/a.py", True),
    ("lib/*.py", "lib/x/a.py", False),  # * stays within one segment
    ("?.py", "a.py", True),
    ("?.py", "ab.py", False),
    ("[ab].txt", "a.txt", True),
    ("[ab].txt", "c.txt", False),
    ("[!ab].txt", "c.txt", True),
    ("[!ab].txt", "a.txt", False),
    ("[a-c]x", "bx", True),
    ("[a-c]x", "dx", False),
    ("**", "anything/at/all", True),
    ("**/*", "a/b", True),
    ("a**b", "axxb", True),  # ** inside a segment acts like *
    ("a**b", "ax/xb", False),
    ("\\*.txt", "*.txt", True),
    ("\\*.txt", "a.txt", False),
    ("file (1).txt", "dir/file (1).txt", True),
    ("é/*.txt", "é/日本.txt", True),
    ("*.py", "./a.py", True),
    ("", "a", False),
    ("[", "[", True),  # an unclosed class is a literal
    ("a.b", "axb", False),  # dots are literal
]


@pytest.mark.parametrize(("pattern", "path", "expected"), CASES)
def test_match(pattern: str, path: str, expected: bool) -> None:
    assert match(pattern, path) is expected


def test_match_any() -> None:
    assert match_any(["*.md", "src/**"], "src/a/b.c")
    assert match_any(["*.md", "src/**"], "x/y.md")
    assert not match_any(["*.md", "src/**"], "lib/a.py")
    assert not match_any([], "a")


def test_class_never_matches_separator() -> None:
    assert not match("a[/]b", "a/b")
    assert not match("a[!x]b", "a/b")
    assert not match("a?b", "a/b")


SEG = st.text(alphabet="abcxyz._-", min_size=1, max_size=5).filter(lambda s: s not in (".", ".."))
PATHS = st.lists(SEG, min_size=1, max_size=4).map("/".join)


@settings(max_examples=200, deadline=None)
@given(path=PATHS)
def test_literal_paths_match_themselves(path: str) -> None:
    assert match(path, path)
    assert match("**", path)
    assert match(path.split("/")[-1], path)  # a basename matches at any depth


def _git_ignored(tmp: Path, pattern: str, paths: list[str]) -> set[str]:
    subprocess.run(["git", "init", "-q", str(tmp)], check=True)
    (tmp / ".gitignore").write_text(pattern + "\n")
    res = subprocess.run(["git", "check-ignore", "--no-index", "--stdin", "-z"], cwd=tmp,
                         input="\0".join(paths).encode() + b"\0", capture_output=True)
    return {p for p in res.stdout.decode().split("\0") if p}


GIT_PATHS = ["a.py", "src/a.py", "src/x/y/a.py", "lib/src/a.py", "docs/a.md", "docs/x/y.md",
             "test_a.py", "tests/test_b.py", "a/b", "a/x/b", "a/x/y/b", "README.md", "src/a/b.py"]


@pytest.mark.parametrize("pattern", ["src/**/*.py", "**/test_*.py", "*.md", "docs/**",
                                     "a/**/b", "src", "*.py", "/a.py", "a/*/b"])
def test_agrees_with_git_check_ignore(tmp_path: Path, pattern: str) -> None:
    ignored = _git_ignored(tmp_path, pattern, GIT_PATHS)
    ours = {p for p in GIT_PATHS if match(pattern, p)}
    assert ours == ignored


def test_a_pattern_list_matches_as_its_patterns_do_one_by_one() -> None:
    """match_any (one combined regex, answers remembered) agrees with match on each."""
    from slopjudge.pathglob import match, match_any

    lists = [[], [""], ["*.py"], ["src/**", "!x"], ["**/vendor/**", "*.min.js", "docs/"],
             ["/abs/*.py", "a/*/c", "[ab].txt", "**"], ["tests/fixtures/**", "**/*_pb2.py"]]
    paths = ["a.py", "src/a.py", "src/deep/b.js", "vendor/x.js", "lib/vendor/y.py", "x.min.js",
             "docs", "docs/a.md", "a/b/c", "a/b/d/c", "a.txt", "c.txt", "./src/a.py",
             "tests/fixtures/z.py", "pkg/m_pb2.py", "/abs/q.py", ""]
    for patterns in lists:
        for path in paths * 2:  # the second pass answers from memory
            expected = any(match(p, path) for p in patterns)
            assert match_any(patterns, path) == expected, (patterns, path)


def test_escape_matches_the_text_literally() -> None:
    for text in ["a*b", "[x]", "q?", "back\\slash", "plain/dir"]:
        assert match(escape(text), text)
        assert match("/" + escape(text), text + "/inner.txt")
    assert not match(escape("a*b"), "axxb")


# --------------------------------------------------------------------------- every caller

def _slopscan() -> ModuleType:
    sys.path.insert(0, str(RULES / "_lib"))
    try:
        return importlib.import_module("slopscan")
    finally:
        sys.path.remove(str(RULES / "_lib"))


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """One rule per case and caller, loaded as a user's rules are: ``p<i>`` with
    ``paths`` and ``tools: [Write(...)]``, ``x<i>`` with ``exclude``."""
    from slopjudge.loading.loader import load_rules

    ws = tmp_path_factory.mktemp("ws")
    rules = ws / "rules"
    rules.mkdir()
    (rules / "s.py").write_text("print('ok')\n")
    for i, (pattern, _path, _expected) in enumerate(CASES):
        if not pattern:
            continue  # the schema refuses an empty glob
        quoted = json.dumps(pattern)
        (rules / f"p{i}.yaml").write_text(
            f"description: case {i}\non: [pre-tool, ci]\npaths: [{quoted}]\n"
            f"tools: [{json.dumps(f'Write({pattern})')}]\nchecks:\n  - id: s\n    script: s.py\n")
        (rules / f"x{i}.yaml").write_text(
            f"description: case {i}\non: [ci]\nexclude: [{quoted}]\n"
            "checks:\n  - id: s\n    script: s.py\n")
    result = load_rules(str(rules), workspace=str(ws))
    assert result.errors == [], result.errors
    return {"ws": str(ws), "rules": {r.id: r for r in result.rules}}


@pytest.mark.parametrize(("pattern", "path", "expected"), CASES)
def test_every_caller_answers_the_table_alike(loaded: dict[str, object], pattern: str,
                                              path: str, expected: bool) -> None:
    from slopjudge.changes.changeset import split
    from slopjudge.checks.selection import applicable_rules
    from slopjudge.model import Changeset, Event, FileChange

    assert match(pattern, path) is expected
    assert match_any([pattern], path) is expected
    assert _slopscan().glob_match(path, pattern) is expected
    if not pattern:
        return
    ws, rules = str(loaded["ws"]), loaded["rules"]
    assert isinstance(rules, dict)
    i = CASES.index((pattern, path, expected))
    changeset = Changeset(files=[FileChange(path=path, status="A")])
    admitted, _ = split(changeset, rules[f"p{i}"].paths, rules[f"p{i}"].exclude)
    assert bool(admitted) is expected, "paths"
    kept, _ = split(changeset, rules[f"x{i}"].paths, rules[f"x{i}"].exclude)
    assert (not kept) is expected, "exclude"
    call = Event(kind="pre-tool", tool_name="Write", tool_input={"file_path": path}, cwd=ws)
    assert (rules[f"p{i}"] in applicable_rules([rules[f"p{i}"]], call, ws)) is expected, "tools"
    absolute = {"file_path": f"{ws}/{path}"}
    call = Event(kind="pre-tool", tool_name="Write", tool_input=absolute, cwd=ws)
    assert (rules[f"p{i}"] in applicable_rules([rules[f"p{i}"]], call, ws)) is expected, "tools"


@pytest.mark.parametrize("rule", ["destructive-shell", "protect-rules", "placeholder-code"])
def test_the_pack_without_slopjudge_fails_closed_in_one_line(rule: str, tmp_path: Path) -> None:
    """The pack's helpers import slopjudge; on a Python without it a script says so."""
    exe = RULES / rule / "check.py"
    proc = subprocess.run([sys.executable, "-I", "-S", str(exe)], input="{}",
                          capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "slopjudge is installed in" in json.loads(proc.stdout)["reason"]
    assert "Traceback" not in proc.stderr
