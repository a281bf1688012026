"""The runner client: sr-agent's exact command line, resolution, environment, retries."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from test_judge_check import PASS, make_ctx, write_exe

from slopjudge import procs
from slopjudge.checks.judge import run_judge
from slopjudge.judging.runner import client
from slopjudge.judging.runner.client import build_argv, call_runner, read_outcome, resolve_runner
from slopjudge.judging.verifier import verifier_path

ALLOWED = ["Read", "Grep", "Bash(git show:*)", "Read(/a b/**)"]
DISALLOWED = ["WebFetch", "Bash(rm -rf *)"]


@pytest.fixture(autouse=True)
def _no_runner_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SLOPJUDGE_RUNNER", raising=False)
    monkeypatch.delenv("SLOPJUDGE_MIN_CONFIDENCE", raising=False)


def test_fake_sr_agent_first_on_path_sees_the_exact_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bindir = tmp_path / "bin"
    write_exe(
        bindir / "sr-agent",
        f"""#!/bin/bash
printf '%s\\0' "$@" > "{tmp_path}/argv"
cat > "{tmp_path}/stdin"
pwd > "{tmp_path}/cwd"
printf '%s\\n%s\\n%s\\n' "$SLOPJUDGE_LAUNCHED_BY" "$SLOPRAIL_LAUNCHED_BY" "${{SLOPJUDGE_MIN_CONFIDENCE-unset}}" > "{tmp_path}/env"
echo '{PASS}'
""",  # noqa: E501 (the environment goes to one file in one printf)
    )
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    ctx = make_ctx(
        tmp_path, model="size-lg,opus", allowed_tools=ALLOWED, disallowed_tools=DISALLOWED
    )
    result = run_judge(ctx)
    assert result.outcome == "pass", result.reason
    argv = (tmp_path / "argv").read_bytes().split(b"\0")[:-1]
    assert [a.decode() for a in argv] == [
        "--model", "size-lg,opus",
        "--verify", verifier_path(),
        "--allowed-tools", "Read Grep Bash(git show:*) Read(/a b/**)",
        "--disallowed-tools", "WebFetch Bash(rm -rf *)",
        "--add-dir:readonly", ctx.workspace,
        "--prompt-stdin",
    ]
    assert result.runner == str(bindir / "sr-agent")
    assert (tmp_path / "stdin").read_text() == result.prompt
    assert (tmp_path / "cwd").read_text().strip() == ctx.rule.dir
    assert (tmp_path / "env").read_text().splitlines() == ["demo/quality", "demo/quality", "unset"]


def test_tool_flags_are_left_out_when_empty() -> None:
    assert build_argv(
        ["sr-agent"],
        model="size-md",
        verifier="/v",
        allowed_tools=[],
        disallowed_tools=[],
        readonly_dir=None,
    ) == ["sr-agent", "--model", "size-md", "--verify", "/v", "--prompt-stdin"]
    assert build_argv(["py", "-m", "x"], model="m", verifier="/v", allowed_tools=["Read"],
                      disallowed_tools=[], readonly_dir="/ws") == [
        "py", "-m", "x", "--model", "m", "--verify", "/v", "--allowed-tools", "Read",
        "--add-dir:readonly", "/ws", "--prompt-stdin"]


def test_resolution_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bindir = tmp_path / "bin"
    sr_agent = write_exe(bindir / "sr-agent", "#!/bin/sh\n")
    monkeypatch.setenv("PATH", str(bindir))
    assert resolve_runner("cli-runner --flag 'a b'") == ["cli-runner", "--flag", "a b"]
    assert resolve_runner("  ") == [sr_agent]
    assert resolve_runner(None) == [sr_agent]
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    bundled = Path(sys.executable).parent / "slopjudge-agent"
    if bundled.exists():
        assert resolve_runner(None) == [str(bundled)]
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    assert resolve_runner(None) == [str(tmp_path / "python"), "-m",
                                    "slopjudge.judging.runner.agent"]


def test_the_bundled_programs_are_found_beside_a_python_whose_folder_holds_a_colon(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Looked up as a PATH string, "x:y/bin" splits into "x" and "y/bin", a folder relative
    # to the working one, where the agent could plant its own runner and verifier.
    from slopjudge.judging import verifier

    real, planted = tmp_path / "x:y" / "bin", tmp_path / "y" / "bin"
    for folder in (real, planted):
        for name in ("slopjudge-agent", "slopjudge-verify"):
            write_exe(folder / name, "#!/bin/sh\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "executable", str(real / "python"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert resolve_runner(None) == [str(real / "slopjudge-agent")]
    assert verifier._installed() == str(real / "slopjudge-verify")


def test_slopjudges_own_programs_are_never_found_in_a_relative_path_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A relative PATH entry ("", ".", "bin") names a folder of the judged repository, where
    # the agent could plant a runner (its verdicts), a git (no change), a claude or codex
    # (the judge) or the slopjudge an --absolute install writes into the hooks.
    from slopjudge.changes.gitio import _program
    from slopjudge.commands.install import default_command
    from slopjudge.harnesses.claude import CLAUDE

    real, planted = tmp_path / "x:y" / "bin", tmp_path / "y" / "bin"
    for name in ("sr-agent", "git", "claude", "slopjudge"):
        write_exe(planted / name, "#!/bin/sh\n")
        write_exe(tmp_path / name, "#!/bin/sh\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "executable", str(real / "python"))
    relative = os.pathsep.join(["", ".", "y/bin", str(tmp_path / "empty")])
    monkeypatch.setenv("PATH", relative)
    assert resolve_runner(None) == [sys.executable, "-m", "slopjudge.judging.runner.agent"]
    assert _program(None) is None
    assert CLAUDE.judge({"PATH": relative})[1] is False
    assert default_command() == f"{sys.executable} -m slopjudge"
    # The same programs in an absolute folder are found; a name with "/" is that file.
    monkeypatch.setenv("PATH", os.pathsep.join([".", str(planted)]))
    assert resolve_runner(None) == [str(planted / "sr-agent")]
    assert _program(None) == str(planted / "git")
    assert default_command() == str(planted / "slopjudge")
    env = {"PATH": str(planted), "SLOPJUDGE_CLAUDE_BIN": "./claude"}
    harness, found = CLAUDE.judge(env)
    assert found and harness.binary == "./claude"
    write_exe(real / "slopjudge", "#!/bin/sh\n")
    assert default_command() == str(real / "slopjudge")  # beside this Python: first


def test_runner_option_is_a_command_line(tmp_path: Path) -> None:
    runner = write_exe(tmp_path / "bin" / "runner with space", f"""#!/bin/bash
printf '%s\\0' "$@" > "{tmp_path}/argv"
cat >/dev/null
echo '{PASS}'
""")
    ctx = make_ctx(tmp_path, runner=f"'{runner}' --harness codex")
    assert run_judge(ctx).outcome == "pass"
    argv = (tmp_path / "argv").read_bytes().split(b"\0")
    assert argv[:4] == [b"--harness", b"codex", b"--model", b"size-md"]


def test_environment_carries_guards_and_min_confidence(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLOPJUDGE_MIN_CONFIDENCE", "0.1")  # inherited: must not leak through
    env = client.runner_env("r/c", None)
    assert env["SLOPJUDGE_LAUNCHED_BY"] == env["SLOPRAIL_LAUNCHED_BY"] == "r/c"
    assert "SLOPJUDGE_MIN_CONFIDENCE" not in env
    assert client.runner_env("r/c", 0.75)["SLOPJUDGE_MIN_CONFIDENCE"] == "0.75"


def _proc(code: int | None, out: str = "", err: str = "", **kw: object) -> procs.ProcResult:
    return procs.ProcResult(code, out.encode(), err.encode(), **kw)  # type: ignore[arg-type]


def test_reading_outcomes() -> None:
    read = lambda p, mc=None: read_outcome(p, timeout=5, min_confidence=mc)  # noqa: E731
    ok = read(_proc(0, PASS))
    assert ok.passed and ok.verdict == {"pass": True, "reasoning": "clean change"}
    low = read(_proc(0, '{"pass": true, "reasoning": "hm", "confidence": 0.5}'), 0.6)
    assert (
        not low.passed
        and low.verdict is not None
        and low.reason == "confidence 0.5 below min_confidence 0.6: hm"
    )
    last = read(_proc(2, err='JUDGE-REASON-JSON: "first"\nnoise\nJUDGE-REASON-JSON: "second"\n'))
    assert (last.passed, last.reason, last.verdict) == (
        False,
        "second",
        {"pass": False, "reasoning": "second"},
    )
    bad = read(_proc(2, err="JUDGE-REASON: no JSON object in the answer (after 2 attempts)\n"))
    assert bad.verdict is None and bad.cause is None
    assert (
        bad.reason
        == "the judge gave no valid verdict: no JSON object in the answer (after 2 attempts)"
    )
    other = read(
        _proc(1, err="sr-agent: harness-failure: other\nclaude exited with status 1: other\n")
    )
    assert (other.reason, other.cause) == ("judge unavailable: other", "other")
    assert read(_proc(None, timed_out=True)).reason == "judge timed out after 5 s"
    assert (
        read(_proc(None, start_error="x: not found")).reason
        == "judge could not start: x: not found"
    )


def test_retry_only_crashes_with_a_retryable_cause(tmp_path: Path) -> None:
    log = tmp_path / "log"
    for cause, expected in (
        ("other", 2),
        ("usage limit", 2),
        ("authentication", 1),
        ("version skew", 1),
    ):
        log.write_text("")
        runner = write_exe(tmp_path / "r.sh", f"""#!/bin/bash
echo x >> "{log}"
echo 'sr-agent: harness-failure: {cause}' >&2
exit 1
""")
        out = call_runner([runner], "p", cwd=str(tmp_path), timeout=10, launched_by="a/b",
                          min_confidence=None, retries=1, backoff_s=0)
        assert (out.passed, out.attempts, len(log.read_text().split())) == (
            False,
            expected,
            expected,
        )
        assert out.reason.startswith(f"judge unavailable: {cause}")


def test_retries_setting_is_honoured(tmp_path: Path) -> None:
    log = tmp_path / "log"
    runner = write_exe(tmp_path / "r.sh", f"""#!/bin/bash
echo x >> "{log}"
echo 'sr-agent: harness-failure: other' >&2
exit 1
""")
    out = call_runner([runner], "p", cwd=str(tmp_path), timeout=10, launched_by="a/b",
                      min_confidence=None, retries=3, backoff_s=0)
    assert out.attempts == 4 and len(log.read_text().split()) == 4
    log.write_text("")
    out = call_runner([runner], "p", cwd=str(tmp_path), timeout=10, launched_by="a/b",
                      min_confidence=None, retries=0, backoff_s=0)
    assert out.attempts == 1 and len(log.read_text().split()) == 1


def test_a_verdict_is_never_retried(tmp_path: Path) -> None:
    log = tmp_path / "log"
    runner = write_exe(tmp_path / "r.sh", f"""#!/bin/bash
echo x >> "{log}"
echo 'sr-agent: harness-failure: other' >&2
echo 'JUDGE-REASON-JSON: "no"' >&2
exit 2
""")
    out = call_runner([runner], "p", cwd=str(tmp_path), timeout=10, launched_by="a/b",
                      min_confidence=None, retries=1, backoff_s=0)
    assert (out.reason, out.attempts) == ("no", 1)


# An sr-agent stand-in that, like the real one, runs the --verify script on an
# answer file and honours its exit code: 0 → print the answer, 3 → final, else re-ask.
SR_AGENT_LIKE = """#!/bin/bash
while [ $# -gt 0 ]; do
  case "$1" in
    --verify) verify="$2"; shift 2;;
    --prompt-stdin) shift;;
    *) shift 2;;
  esac
done
cat > /dev/null
answer="$(mktemp)"
for attempt in 1 2; do
  var="ANSWER_$attempt"
  printf '%s' "${!var}" > "$answer"
  "$verify" "$answer" < "$answer" 2> "$answer.err"; code=$?
  sed 's/^/sr-agent: verifier (attempt '$attempt'\\/2): /' "$answer.err" >&2
  if [ $code -eq 0 ]; then cat "$answer"; rm -f "$answer" "$answer.err"; exit 0; fi
  if [ $code -eq 3 ]; then cat "$answer.err" >&2; rm -f "$answer" "$answer.err"; exit 2; fi
done
cat "$answer.err" >&2
rm -f "$answer" "$answer.err"
exit 2
"""


@pytest.mark.parametrize(
    ("first", "second", "outcome", "reason"),
    [
        (PASS, "", "pass", "clean change"),
        ("not json", PASS, "pass", "clean change"),
        ('{"pass": false, "reasoning": "dup helper"}', PASS, "refuse", "dup helper"),
        (
            "nope",
            '{"pass": "true", "reasoning": "x"}',
            "error",
            'the judge gave no valid verdict: "pass" must',
        ),
    ],
)
def test_with_the_real_verifier(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    first: str,
    second: str,
    outcome: str,
    reason: str,
) -> None:
    runner = write_exe(tmp_path / "bin" / "sr-agent-like", SR_AGENT_LIKE)
    monkeypatch.setenv("ANSWER_1", first)
    monkeypatch.setenv("ANSWER_2", second)
    result = run_judge(make_ctx(tmp_path, runner=runner))
    assert result.outcome == outcome
    assert result.reason.startswith(reason)


def test_the_runner_command_is_resolved_once_from_the_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--runner, else SLOPJUDGE_RUNNER, else the settings file: read when the settings load."""
    from slopjudge.checks.options import options_from_settings
    from slopjudge.loading.config import load_settings

    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    (tmp_path / "slopjudge.yaml").write_text("runner: config-runner --y\n")
    opts = options_from_settings(load_settings(str(tmp_path)))
    assert resolve_runner(opts.runner) == ["config-runner", "--y"]
    monkeypatch.setenv("SLOPJUDGE_RUNNER", "env-runner --flag 'a b'")
    opts = options_from_settings(load_settings(str(tmp_path)))
    assert resolve_runner(opts.runner) == ["env-runner", "--flag", "a b"]
    # The judge reads the options only: the environment is not consulted a second time.
    monkeypatch.setenv("SLOPJUDGE_RUNNER", "later-runner")
    assert resolve_runner(opts.runner) == ["env-runner", "--flag", "a b"]
    cli = options_from_settings(load_settings(str(tmp_path)), runner="cli-runner -x")
    assert resolve_runner(cli.runner) == ["cli-runner", "-x"]
