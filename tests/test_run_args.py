"""`slopjudge run`'s usual options are read without argparse, exactly as argparse reads
them: every command line the plain reading takes gives the same arguments, and every
other one (help, unknown or abbreviated options, bad or missing values, conflicts) is
left to argparse, which reads and judges it as before."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slopjudge.cli import build_parser
from slopjudge.commands.run import plain_args


def argparse_reading(argv: list[str]) -> dict[str, object] | None:
    """What argparse makes of ``argv``; None when it refuses it."""
    try:
        return vars(build_parser("run").parse_args(argv))
    except SystemExit:
        return None


@pytest.mark.parametrize("argv", [
    ["run"],
    ["run", "--base", "HEAD~1"],
    ["run", "--base=origin/main", "--head", "HEAD"],
    ["run", "--base", ""],
    ["run", "--base", "a b"],
    ["run", "--diff", "change.diff", "--format", "json", "--output", "out.json"],
    ["run", "--staged", "--dry-run", "--no-cache", "--event", "stop"],
    ["run", "--working-tree", "--rules", "my-rules", "--runner", "sr-agent -x"],
    ["run", "--rule", "a", "--rule=b", "--write", "sarif=out.sarif", "--write", "junit=j.xml"],
    ["run", "--format", "github", "--base", "main"],
])
def test_the_usual_options_read_as_argparse_reads_them(argv: list[str]) -> None:
    plain = plain_args(argv)
    assert plain is not None, argv
    assert vars(plain) == argparse_reading(argv)


@pytest.mark.parametrize("argv", [
    ["run", "--help"], ["run", "-h"], ["run", "--bas", "x"], ["run", "--base"],
    ["run", "--base", "-x"], ["run", "--base=-x"], ["run", "--diff", "-"],
    ["run", "--base", "a", "--base", "b"], ["run", "--base", "a", "--staged"],
    ["run", "--diff", "x", "--base", ""], ["run", "--staged", "--working-tree"],
    ["run", "--format", "yaml"], ["run", "--event", "pre-tool"], ["run", "--dry-run=yes"],
    ["run", "--jobs", "2"], ["run", "--shard", "1/2"], ["run", "--prompts-dir", "p"],
    ["run", "extra"], ["run", "--", "--base", "x"], ["validate"], [],
])
def test_anything_else_is_left_to_argparse(argv: list[str]) -> None:
    assert plain_args(argv) is None


TOKENS = ["--base", "--head", "--diff", "--rules", "--output", "--runner", "--format",
          "--event", "--rule", "--write", "--staged", "--working-tree", "--dry-run",
          "--no-cache", "--jobs", "--base=x", "--format=json", "--dry-run=1", "-h", "--bas",
          "--", "-", "-1", "", "HEAD~1", "main", "json", "sarif", "stop", "ci", "a=b", "x y"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(TOKENS), max_size=7))
def test_any_command_line_reads_the_same_or_goes_to_argparse(tokens: list[str]) -> None:
    argv = ["run", *tokens]
    plain = plain_args(argv)
    if plain is not None:
        assert vars(plain) == argparse_reading(argv), argv


def test_a_ci_run_with_the_usual_options_does_not_import_argparse() -> None:
    probe = ("import sys\nfrom slopjudge.commands.run import plain_args\n"
             "assert plain_args(['run', '--base', 'HEAD~1', '--format', 'json']) is not None\n"
             "print(sorted(m for m in ('argparse', 'shutil', 'locale', 'gettext') "
             "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"
