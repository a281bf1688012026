"""tools: patterns against tool calls (names, Bash argument globs, paths, MCP)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slopjudge.changes.shell import argv_list, split
from slopjudge.changes.toolmatch import any_tool_matches, tool_matches


def bash(cmd: str) -> dict:
    return {"command": cmd, "description": "x"}


@pytest.mark.parametrize(
    "pattern,name,expected",
    [
        ("Write", "Write", True),
        ("Write", "Edit", False),
        ("Edit", "NotebookEdit", False),  # names match exactly, not as a regex
        ("*", "Anything", True),
        ("mcp__*", "mcp__github__create_issue", True),
        ("mcp__*", "Bash", False),
        ("mcp__github__*", "mcp__github__create_issue", True),
        ("mcp__github__*", "mcp__gitlab__create_issue", False),
        ("write", "Write", False),  # case matters, as in Claude Code
    ],
)
def test_names(pattern: str, name: str, expected: bool) -> None:
    assert tool_matches(pattern, name, {}) is expected


def test_no_tool_name_never_matches() -> None:
    assert not tool_matches("*", None, {})
    assert not tool_matches("*", "", {})


def test_a_pattern_is_a_name_glob_and_an_argument_glob() -> None:
    assert tool_matches("Bash(git push *)", "Bash", bash("git push origin"))
    assert not tool_matches("Bash(git push *)", "Bash", bash("git status"))
    assert tool_matches(" Write ", "Write", {"file_path": "a.py"})
    assert tool_matches("Bash(echo (a))", "Bash", bash("echo (a)"))
    assert not tool_matches("Bash(echo (a))", "Bash", bash("echo a"))


@pytest.mark.parametrize(
    "command,expected",
    [
        ("git push origin main", True),
        ("git push", True),  # a trailing " *" also admits the bare command
        ("git pushx", False),
        ("git status", False),
        ("cd repo && git push --force", True),
        ("make test || git push", True),
        ("echo a; git push -f origin", True),
        ("git log | git push", True),
        ("FOO=1 BAR=2 git push origin", True),
        ("env GIT_TRACE=1 git push", True),
        ("(cd sub && git push)", True),
        ("echo 'git push && rm -rf /'", False),  # quoted text is not a command
        ('echo "x; git push"', False),
        ("echo $(git push)", True),  # a substitution runs too
        ("echo \"`git push`\"", True),
        ("echo '$(git push)'", False),
        ("git  push   origin", True),  # whitespace runs collapse
        ("git commit -m 'wip'\ngit push", True),
        ("sleep 1 & git push", True),
        ("git status 2>&1 | cat", False),
        ("# git push\ngit status", False),  # a comment is not a command
    ],
)
def test_bash_argument_glob(command: str, expected: bool) -> None:
    assert tool_matches("Bash(git push *)", "Bash", bash(command)) is expected


def test_bash_legacy_prefix_form() -> None:
    assert tool_matches("Bash(npm publish:*)", "Bash", bash("npm publish --tag next"))
    assert tool_matches("Bash(npm publish:*)", "Bash", bash("npm publish"))
    assert not tool_matches("Bash(npm publish:*)", "Bash", bash("npm install"))


def test_bash_pattern_needs_a_command() -> None:
    assert not tool_matches("Bash(git push *)", "Bash", {})
    assert not tool_matches("Bash(git push *)", "Bash", None)
    assert not tool_matches("Bash(git push *)", "Bash", {"command": 7})
    assert not tool_matches("Bash(git push *)", "Write", bash("git push"))


def test_segments_and_argv() -> None:
    assert argv_list("cd a && FOO=1 git push 'my branch' | tee log; ls") == [
        ["cd", "a"], ["FOO=1", "git", "push", "my branch"], ["tee", "log"], ["ls"],
    ]
    assert argv_list("") == []
    # An unbalanced quote still yields words.
    assert argv_list("echo 'oops") == [["echo", "'oops"]]
    # Redirections are not separators.
    assert [(s.argv, s.redirects) for s in split("a 2>&1 && b &> out")] == [
        (["a"], [(">&", "1")]), (["b"], [("&>", "out")])]
    # A descriptor number is ASCII digits, as bash reads it: others are a word of the command.
    assert [(s.argv, s.redirects) for s in split("cp a b ²>x; echo ٣>f; rm 12>y")] == [
        (["cp", "a", "b", "²"], [(">", "x")]), (["echo", "٣"], [(">", "f")]),
        (["rm"], [(">", "y")])]


@given(st.text(max_size=80))
def test_splitting_never_raises(command: str) -> None:
    for argv in argv_list(command):
        assert argv and all(isinstance(w, str) for w in argv)
    tool_matches("Bash(git push *)", "Bash", {"command": command})


@pytest.mark.parametrize(
    "pattern,path,expected",
    [
        ("Write(src/**)", "src/a/b.py", True),
        ("Write(src/**)", "lib/src/a.py", False),
        ("Write(*.py)", "deep/down/x.py", True),  # a bare name matches in any folder
        ("Write(*.py)", "x.txt", False),
        ("Write(src/*.py)", "src/a/b.py", False),  # * stops at /
        ("Write(src/**/*.py)", "src/b.py", True),
        ("Write(/src/*.py)", "src/b.py", True),  # leading / anchors at the workspace
    ],
)
def test_path_globs(tmp_path, pattern: str, path: str, expected: bool) -> None:
    ws = str(tmp_path)
    assert tool_matches(pattern, "Write", {"file_path": f"{ws}/{path}"}, ws) is expected
    assert tool_matches(pattern, "Write", {"file_path": path}, ws) is expected


def test_path_outside_workspace_uses_the_absolute_path(tmp_path) -> None:
    ws = str(tmp_path / "ws")
    assert not tool_matches("Write(src/**)", "Write", {"file_path": "/etc/src/x"}, ws)
    assert tool_matches("Write(//etc/**)", "Write", {"file_path": "/etc/src/x"}, ws)
    assert tool_matches("NotebookEdit(*.ipynb)", "NotebookEdit",
                        {"notebook_path": f"{ws}/n/a.ipynb"}, ws)


def test_mcp_argument_globs_the_input_json() -> None:
    call = {"repo": "r", "owner": "o"}
    assert tool_matches('mcp__github__*(*"repo":"r"*)', "mcp__github__push", call)
    assert not tool_matches('mcp__github__*(*"repo":"x"*)', "mcp__github__push", call)


def test_empty_tools_list_admits_everything() -> None:
    assert any_tool_matches([], "Whatever", None)
    assert any_tool_matches(["Write", "Bash(rm *)"], "Bash", bash("rm -rf x"))
    assert not any_tool_matches(["Write", "Bash(rm *)"], "Bash", bash("ls"))


@pytest.mark.parametrize(
    "pattern,command,expected",
    [
        ("Bash(rm *)", "# clean up\nrm -rf build", True),  # a comment ends with its line
        ("Bash(rm *)", "echo a#b && rm -rf build", True),  # `#` inside a word is no comment
        ("Bash(rm *)", "echo hi # rm -rf build", False),
        ("Bash(git status)", "cd x && git status 2>/dev/null", True),  # `2>` is a redirection
        ("Bash(git push *)", "sudo -u deploy git push origin", True),  # as run
        ("Bash(sudo *)", "cd x && sudo -u deploy git push", True),  # as written
        ("Bash(git push *)", "bash -c 'git push origin'", True),  # sh -c runs its script
        ("Bash(git push *)", "eval git push", True),
        ("Bash(git push *)", "cat > run.sh <<'EOF'\ngit push\nEOF", True),  # erring wide
        ("Bash(git push *)", "git log <<< 'git push'", False),
    ],
)
def test_bash_patterns_see_the_command_as_the_shell_rules_do(pattern: str, command: str,
                                                             expected: bool) -> None:
    assert tool_matches(pattern, "Bash", bash(command)) is expected


def test_codex_argv_commands_are_their_script() -> None:
    assert tool_matches("Bash(git push *)", "Bash", {"command": ["bash", "-lc", "git push"]})
    assert tool_matches("Bash(git push *)", "Bash", {"command": ["git", "push", "-f"]})
    assert not tool_matches("Bash(git push *)", "Bash", {"command": ["git", 7]})


def test_argv_drops_comments_and_descriptor_numbers() -> None:
    assert argv_list("ls 2>/dev/null # all of it\necho hi >&2") == [["ls"], ["echo", "hi"]]
    assert argv_list("cp a rules/x.yaml 2>&1") == [["cp", "a", "rules/x.yaml"]]
    assert argv_list("echo \"a # b\" '2>x'") == [["echo", "a # b", "2>x"]]
    assert argv_list("echo ${#x} $#") == [["echo", "${#x}", "$#"]]
    [simple] = split("sudo -u deploy FOO=1 rm -rf x > log")
    assert simple.words == ["sudo", "-u", "deploy", "FOO=1", "rm", "-rf", "x"]
    assert simple.argv == ["rm", "-rf", "x"] and simple.redirects == [(">", "log")]


def test_path_outside_workspace_only_by_a_pattern_that_may_start_anywhere(tmp_path) -> None:
    ws = str(tmp_path / "ws")
    outside = {"file_path": "/etc/app/x.py"}
    assert tool_matches("Write(*.py)", "Write", outside, ws)
    assert tool_matches("Write(**/app/*.py)", "Write", outside, ws)
    assert tool_matches("Write(**)", "Write", outside, ws)
    assert not tool_matches("Write(app/*.py)", "Write", outside, ws)
    assert not tool_matches("Write(/x.py)", "Write", outside, ws)
    assert tool_matches("Write(//etc/app)", "Write", outside, ws)  # a folder admits its files


def test_a_file_tool_pattern_names_a_folder_as_paths_does(tmp_path) -> None:
    ws = str(tmp_path)
    assert tool_matches("Write(src)", "Write", {"file_path": f"{ws}/src/a/b.py"}, ws)
    assert tool_matches("Edit(./src)", "Edit", {"file_path": "src/a.py"}, ws)
    assert not tool_matches("Edit(./src)", "Edit", {"file_path": "lib/src/a.py"}, ws)
    assert not tool_matches("Write(a**b.py)", "Write", {"file_path": "a/x/b.py"}, ws)


@given(st.text(alphabet="${}HOMEPWD/~.ax", max_size=14),
       st.sampled_from(["/home/me", "/h"]), st.sampled_from(["/work/ws", "/w"]))
def test_resolve_expands_home_and_pwd_as_the_leading_patterns_did(
        path: str, home: str, cwd: str) -> None:
    # The expansion's old form: ^\$\{?HOME\}? then ^\$\{?PWD\}?, replaced by the value.
    import os
    import re

    from slopjudge.changes.shell import resolve

    p = home + path[1:] if path == "~" or path.startswith("~/") else path
    p = re.sub(r"^\$\{?HOME\}?", lambda _m: home, p)
    p = re.sub(r"^\$\{?PWD\}?", lambda _m: cwd, p)
    expected = os.path.normpath(p if os.path.isabs(p) else os.path.join(cwd, p))
    assert resolve(path, cwd, home) == expected


@pytest.mark.parametrize(("name", "python"), [
    ("python", True), ("python3", True), ("python3.11", True), ("python3.", False),
    ("python2", False), ("python3.x", False), ("pythonw", False), ("ipython3", False),
    ("python3.1a", False), ("python3.١", False),
])
def test_a_script_is_python_by_its_interpreter_line(tmp_path: object, name: str,
                                                    python: bool) -> None:
    from pathlib import Path

    from slopjudge.procs import is_python_script

    script = Path(str(tmp_path)) / "check"
    script.write_text(f"#!/usr/bin/env {name}\nprint(1)\n", encoding="utf-8")
    assert is_python_script(str(script)) is python
    script.write_text(f"#!/usr/bin/{name} -u\nprint(1)\n", encoding="utf-8")
    assert is_python_script(str(script)) is python
