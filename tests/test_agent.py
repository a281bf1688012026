"""slopjudge-agent with fake harness binaries on PATH (the model is the only mock).

The fake ``claude``/``codex`` is a small Python script that records its argv,
stdin and environment, then follows a per-invocation plan: write the answer
file, print to stdout/stderr, exit with a code, or sleep.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from slopjudge.harnesses.claude import ISOLATION_SETTINGS, ClaudeCode
from slopjudge.harnesses.codex import Codex
from slopjudge.hookspec import JudgeAttempt
from slopjudge.judging.runner.agent import UsageError, classify, parse_options

FAKE = r'''#!{python}
import json, os, re, sys, time
state = os.environ["FAKE_STATE"]
os.makedirs(state, exist_ok=True)
n = len([f for f in os.listdir(state) if f.startswith("call-")])
argv = sys.argv[1:]
stdin = sys.stdin.read()
prompt = argv[argv.index("--") + 1] if "--" in argv else stdin
m = re.search(r"Write your answer to the file (/\S+?)\. ", prompt)
answer = m.group(1) if m else None
info = {{"argv": argv, "stdin": stdin, "env": dict(os.environ), "pid": os.getpid()}}
if answer:
    d = os.path.dirname(answer)
    info["answer_dir_mode"] = oct(os.stat(d).st_mode & 0o777)
    info["answer_exists_at_start"] = os.path.exists(answer)
with open(os.path.join(state, "partial-%d" % n), "w") as fh:  # renamed whole: a poller
    json.dump(info, fh)                                          # never reads it half written
os.replace(os.path.join(state, "partial-%d" % n), os.path.join(state, "call-%d.json" % n))
plan = json.loads(os.environ.get("FAKE_PLAN", "[]"))
step = plan[min(n, len(plan) - 1)] if plan else {{}}
if "sleep" in step:
    time.sleep(step["sleep"])
if "write" in step and answer:
    with open(answer, "w") as fh:
        fh.write(step["write"] if isinstance(step["write"], str) else json.dumps(step["write"]))
if "stdout" in step:
    sys.stdout.write(step["stdout"])
if "stderr" in step:
    sys.stderr.write(step["stderr"])
sys.exit(step.get("exit", 0))
'''

PASS = {"pass": True, "reasoning": "fine"}
FAIL = {"pass": False, "reasoning": "adds slop"}
AGENT = [sys.executable, "-m", "slopjudge.judging.runner.agent"]


@pytest.fixture
def bindir(tmp_path: Path) -> Path:
    d = tmp_path / "bin"
    d.mkdir()
    for name in ("claude", "codex"):
        p = d / name
        p.write_text(FAKE.format(python=sys.executable))
        p.chmod(0o755)
    return d


@pytest.fixture
def ro(tmp_path: Path) -> Path:
    d = tmp_path / "repo"
    d.mkdir()
    return d


class Run:
    def __init__(self, tmp_path: Path, bindir: Path) -> None:
        self.state = tmp_path / "state"
        self.out = tmp_path / "answers"
        self.env = {
            k: v for k, v in os.environ.items()
            if not k.startswith(("SLOPJUDGE_", "SLOPRAIL_", "CLAUDE")) and k != "TMPDIR"
        }
        self.env.update(
            PATH=f"{bindir}:/usr/bin:/bin", FAKE_STATE=str(self.state),
            SLOPJUDGE_AGENT_OUTPUT_DIR=str(self.out), HOME=str(tmp_path / "home"),
        )

    def __call__(self, *args: str, plan: list[dict[str, Any]] | None = None,
                 stdin: bytes = b"", **env: str) -> subprocess.CompletedProcess[bytes]:
        e = dict(self.env, FAKE_PLAN=json.dumps(plan or []), **env)
        return subprocess.run([*AGENT, *args], input=stdin, env=e, capture_output=True, timeout=30)

    def calls(self) -> list[dict[str, Any]]:
        if not self.state.exists():
            return []
        files = sorted(self.state.glob("call-*.json"), key=lambda p: int(p.stem.split("-")[1]))
        return [json.loads(p.read_text()) for p in files]


@pytest.fixture
def run(tmp_path: Path, bindir: Path) -> Run:
    return Run(tmp_path, bindir)


# -- tool rules and argv -------------------------------------------------------

def test_tool_rule_lists_keep_parenthesised_rules_whole() -> None:
    def rules(*flags: str) -> list[str]:
        return list(parse_options(["--model", "m", *flags, "p"], {}).allowed_tools)

    assert rules("--allowed-tools", "Read Grep,Bash(git show:*)  Edit(//a b/**)") == [
        "Read", "Grep", "Bash(git show:*)", "Edit(//a b/**)"]
    assert rules("--allowed-tools", "") == rules() == []
    for bad in ("Bash(git", "Read)", "Bash((x)"):
        for flag in ("--allowed-tools", "--disallowed-tools"):
            with pytest.raises(UsageError, match="unbalanced"):
                rules(flag, bad)


def test_claude_argv_is_exactly_the_spec_shape(tmp_path: Path) -> None:
    ans, w, r = tmp_path / "ans", tmp_path / "w", tmp_path / "r"
    for d in (ans, w, r):
        d.mkdir()
    argv, stdin = ClaudeCode("/bin/claude").argv(JudgeAttempt(
        model="sonnet", prompt="judge it", allowed_tools=["Read", "Bash(git show:*)"],
        disallowed_tools=["Bash"], writable_dirs=[str(ans), str(w)], readonly_dirs=[str(r)],
    ))
    assert stdin == b""
    assert argv == [
        "/bin/claude", "-p", "--model", "sonnet", "--settings",
        '{"hooks":{},"mcpServers":{},"enabledPlugins":{},"disableAllHooks":true}',
        "--permission-mode", "default", "--output-format", "json",
        "--add-dir", str(ans), str(w), str(r),
        "--allowed-tools", "Read", "Bash(git show:*)", f"Edit(/{ans}/**)", f"Edit(/{w}/**)",
        "--disallowed-tools", f"Edit(/{r}/**)", "Bash",
        "--", "judge it",
    ]
    assert json.loads(ISOLATION_SETTINGS)["disableAllHooks"] is True


def test_claude_argv_grants_symlinked_dirs_under_both_names(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    argv, _ = ClaudeCode().argv(JudgeAttempt(
        model="opus", prompt="p", allowed_tools=[], disallowed_tools=[],
        writable_dirs=[], readonly_dirs=[str(link)],
    ))
    deny = argv[argv.index("--disallowed-tools") + 1: argv.index("--")]
    assert deny == [f"Edit(/{link}/**)", f"Edit(/{real}/**)"]
    assert "--allowed-tools" not in argv


def test_prompt_over_64k_goes_on_stdin() -> None:
    small = "a" * (64 * 1024)
    argv, stdin = ClaudeCode().argv(JudgeAttempt(model="m", prompt=small, allowed_tools=[],
                                       disallowed_tools=[], writable_dirs=[], readonly_dirs=[]))
    assert argv[-2:] == ["--", small] and stdin == b""
    big = "é" * (33 * 1024)  # 66 KiB as UTF-8: measured in bytes, not characters
    argv, stdin = ClaudeCode().argv(JudgeAttempt(model="m", prompt=big, allowed_tools=[],
                                       disallowed_tools=[], writable_dirs=[], readonly_dirs=[]))
    assert "--" not in argv and big not in argv and stdin == big.encode()
    argv, stdin = Codex().argv(JudgeAttempt(model="m", prompt=big, allowed_tools=[],
                                      disallowed_tools=[], writable_dirs=["/a"], readonly_dirs=[]))
    assert argv[-2:] == ["--", "-"] and stdin == big.encode()


def test_codex_argv_sandboxes_to_the_answer_dir() -> None:
    argv, stdin = Codex("codex").argv(JudgeAttempt(
        model="gpt-6.1-sol", prompt="p", allowed_tools=["Read"], disallowed_tools=["Bash"],
        writable_dirs=["/ans", "/w"], readonly_dirs=["/repo"],
    ))
    assert argv == [
        "codex", "exec", "-m", "gpt-6.1-sol", "--ignore-user-config", "--disable", "hooks",
        "--ephemeral", "--skip-git-repo-check", "--json", "-C", "/ans", "--sandbox",
        "workspace-write",
        "-c", "sandbox_workspace_write.exclude_slash_tmp=true",
        "-c", "sandbox_workspace_write.exclude_tmpdir_env_var=true",
        "--add-dir", "/w", "--", "p",
    ]
    with pytest.raises(ValueError, match="cannot scope"):
        Codex().check_tools(["Bash(git show:*)"], [])


# -- model sets ----------------------------------------------------------------

@pytest.mark.parametrize("model_set,claude,codex", [
    ("size-xs", "haiku", "gpt-6-luna"),
    ("size-sm", "haiku", "gpt-6-luna"),
    ("size-md", "sonnet", "gpt-6.1-sol"),
    ("size-lg", "opus", "gpt-6.1-sol"),
    ("size-xl", "opus", "gpt-6-astra"),
    ("size-xxl", "fable", "gpt-6-astra"),
    ("gpt-5, claude-opus-5", "claude-opus-5", "gpt-5"),
    ("o3-mini,sonnet", "sonnet", "o3-mini"),
    ("mystery,size-lg", "opus", "gpt-6.1-sol"),
])
def test_model_sets_resolve_per_harness(model_set: str, claude: str, codex: str) -> None:
    assert ClaudeCode().resolve_model(model_set) == claude
    assert Codex().resolve_model(model_set) == codex


def test_unmatched_model_set_is_refused() -> None:
    with pytest.raises(ValueError, match="no model in 'gpt-5' suits harness claude"):
        ClaudeCode().resolve_model("gpt-5")
    with pytest.raises(ValueError, match="empty"):
        Codex().resolve_model(" , ")
    warnings: list[str] = []
    assert ClaudeCode().resolve_model("size-md,opus", warnings) == "sonnet"
    assert warnings and "opus" in warnings[0]


def test_unmatched_model_exits_2_and_runs_nothing(run: Run, verifier: str) -> None:
    p = run("--model", "gemini-3", "--verify", verifier, "judge")
    assert p.returncode == 2
    assert re.search(r"no model in 'gemini-3' suits harness claude", p.stderr.decode())
    assert run.calls() == []


# -- dry run and binaries ------------------------------------------------------

def test_dry_run_prints_argv_and_verifier_and_runs_nothing(
    run: Run, verifier: str, ro: Path, bindir: Path
) -> None:
    p = run("--model", "size-md", "--verify", verifier, "--add-dir:readonly", str(ro),
            "--allowed-tools", "Read Grep", "--disallowed-tools", "Bash", "--dry-run",
            "--prompt-stdin", stdin=b"is it slop?")
    assert p.returncode == 0, p.stderr
    cmd, verify_line = p.stdout.decode().split("\nverify: ")
    argv = shlex.split(cmd)
    assert argv[:3] == [str(bindir / "claude"), "-p", "--model"] and argv[3] == "sonnet"
    answer = re.search(r"Write your answer to the file (/\S+?)\. ", argv[-1]).group(1)
    adir = os.path.dirname(answer)
    assert argv[argv.index("--add-dir") + 1: argv.index("--allowed-tools")] == [adir, str(ro)]
    assert argv[argv.index("--allowed-tools") + 1: argv.index("--disallowed-tools")] == [
        "Read", "Grep", f"Edit(/{adir}/**)"]
    assert argv[argv.index("--disallowed-tools") + 1: argv.index("--")] == [
        f"Edit(/{ro}/**)", "Bash"]
    assert argv[-1].startswith("is it slop?\n\nWrite your answer to the file ")
    assert shlex.split(verify_line)[:2] == [verifier, answer]
    assert run.calls() == []
    assert not os.path.exists(adir)


def test_dry_run_shows_a_path_that_is_not_utf8(run: Run, verifier: str, tmp_path: Path) -> None:
    odd = os.path.join(str(tmp_path), os.fsdecode(b"d\xfe"))
    os.mkdir(odd)
    p = run("--model", "size-md", "--verify", verifier, "--add-dir:readonly", odd, "--dry-run",
            "judge")
    assert p.returncode == 0, p.stderr
    assert os.fsencode(odd) in p.stdout and b"Traceback" not in p.stderr


def test_codex_dry_run_with_fake_codex_on_path(run: Run, verifier: str, bindir: Path) -> None:
    p = run("--harness", "codex", "--model", "size-xl", "--verify", verifier, "--dry-run",
            "--", "-starts with a dash")
    assert p.returncode == 0, p.stderr
    argv = shlex.split(p.stdout.decode().split("\nverify: ")[0])
    assert argv[:4] == [str(bindir / "codex"), "exec", "-m", "gpt-6-astra"]
    assert argv[argv.index("--sandbox") + 1] == "workspace-write"
    assert argv[-1].startswith("-starts with a dash\n\nWrite your answer")
    assert run.calls() == []


def test_harness_chosen_by_flag_then_env(run: Run, verifier: str, bindir: Path) -> None:
    p = run("--model", "size-md", "--verify", verifier, "--dry-run", "x",
            SLOPRAIL_HARNESS="codex")
    assert shlex.split(p.stdout.decode())[0] == str(bindir / "codex")
    p = run("--harness", "claude", "--model", "size-md", "--verify", verifier, "--dry-run", "x",
            SLOPJUDGE_HARNESS="codex")
    assert shlex.split(p.stdout.decode())[0] == str(bindir / "claude")
    p = run("--harness", "cursor", "--model", "size-md", "x")
    assert p.returncode == 2 and "unknown harness 'cursor'" in p.stderr.decode()


@pytest.mark.parametrize("harness,msg", [
    ("claude", "slopjudge-agent: claude not found on PATH (install @anthropic-ai/claude-code "
               "or set SLOPJUDGE_CLAUDE_BIN)"),
    ("codex", "slopjudge-agent: codex not found on PATH"),
])
def test_missing_binary_is_a_clear_error(
    run: Run, verifier: str, tmp_path: Path, harness: str, msg: str
) -> None:
    run.env["PATH"] = "/usr/bin:/bin"
    p = run("--harness", harness, "--model", "size-md", "--verify", verifier, "judge")
    assert p.returncode == 2
    assert msg in p.stderr.decode().splitlines()[-1]
    assert not run.out.exists() or list(run.out.iterdir()) == []


def test_slopjudge_claude_bin_wins_and_must_exist(
    run: Run, verifier: str, bindir: Path, tmp_path: Path
) -> None:
    run.env["PATH"] = "/usr/bin:/bin"
    p = run("--model", "size-md", "--verify", verifier, "judge", plan=[{"write": PASS}],
            SLOPJUDGE_CLAUDE_BIN=str(bindir / "claude"))
    assert p.returncode == 0, p.stderr
    p = run("--model", "size-md", "--verify", verifier, "judge",
            SLOPJUDGE_CLAUDE_BIN=str(tmp_path / "nope"))
    assert p.returncode == 2 and "claude not found" in p.stderr.decode()


def test_running_claude_codes_binary_is_used_inside_a_session(
    run: Run, verifier: str, bindir: Path, tmp_path: Path
) -> None:
    run.env["PATH"] = "/usr/bin:/bin"
    p = run("--model", "size-md", "--verify", verifier, "judge", plan=[{"write": PASS}],
            CLAUDECODE="1", CLAUDE_CODE_EXECPATH=str(bindir / "claude"))
    assert p.returncode == 0, p.stderr
    # Without the session marker the variable is not trusted.
    p = run("--model", "size-md", "--verify", verifier, "judge",
            CLAUDE_CODE_EXECPATH=str(bindir / "claude"))
    assert p.returncode == 2


# -- the verify loop -----------------------------------------------------------

def test_pass_prints_the_answer_and_cleans_up(run: Run, verifier: str, ro: Path) -> None:
    p = run("--model", "size-md", "--verify", verifier, "--add-dir:readonly", str(ro),
            "--prompt-stdin", stdin=b"judge this", plan=[{"write": PASS}])
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == PASS
    (call,) = run.calls()
    assert call["answer_dir_mode"] == "0o700"
    assert call["answer_exists_at_start"] is False
    assert call["stdin"] == ""  # a small prompt goes in argv, stdin stays empty
    assert list(run.out.iterdir()) == []
    assert 'JUDGE-PASS-REASON-JSON: "fine"' in p.stderr.decode().splitlines()


def test_big_prompt_reaches_the_harness_on_stdin(run: Run, verifier: str) -> None:
    big = "D" * 70_000
    p = run("--model", "size-md", "--verify", verifier, "--prompt-stdin",
            stdin=big.encode(), plan=[{"write": PASS}])
    assert p.returncode == 0, p.stderr
    (call,) = run.calls()
    assert "--" not in call["argv"]
    assert call["stdin"].startswith(big + "\n\nWrite your answer to the file ")


def test_malformed_answer_is_reasked_then_passes(run: Run, verifier: str) -> None:
    p = run("--model", "size-md", "--verify", verifier, "judge",
            plan=[{"write": "I think it passes"}, {"write": PASS}])
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == PASS
    first, second = run.calls()
    assert "REJECTED" not in first["argv"][-1]
    reask = second["argv"][-1]
    assert "was REJECTED" in reask and "The check said:\n\nJUDGE-REASON: " in reask
    assert "\n\nFix exactly that" in reask
    assert "verified on attempt 2/2" in p.stderr.decode()


def test_fail_verdict_is_final(run: Run, verifier: str) -> None:
    p = run("--model", "size-md", "--verify", verifier, "--verify-attempts", "5", "judge",
            plan=[{"write": FAIL}, {"write": PASS}])
    assert p.returncode == 2
    assert p.stdout == b""
    assert len(run.calls()) == 1
    lines = p.stderr.decode().splitlines()
    assert 'JUDGE-REASON-JSON: "adds slop"' in lines  # unprefixed, whole line


def test_exhausted_attempts_refuse(run: Run, verifier: str) -> None:
    p = run("--model", "size-md", "--verify", verifier, "--verify-attempts", "3", "judge",
            plan=[{"write": "{\"pass\": \"yes\"}"}])
    assert p.returncode == 2 and p.stdout == b""
    assert len(run.calls()) == 3
    err = p.stderr.decode()
    assert err.rstrip().endswith("(after 3 attempts)")
    assert any(ln.startswith("JUDGE-REASON: ") for ln in err.splitlines())


def test_no_file_falls_back_to_a_json_reply_only(run: Run, verifier: str) -> None:
    p = run("--model", "size-md", "--verify", verifier, "judge",
            plan=[{"stdout": json.dumps(PASS) + "\n"}])
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == PASS
    p = run("--model", "size-md", "--verify", verifier, "--verify-attempts", "1", "judge",
            plan=[{"stdout": "Sure! " + json.dumps(PASS)}])
    assert p.returncode == 2 and "wrote no output" in p.stderr.decode()


def test_verifier_stdout_and_odd_exit_codes(run: Run, tmp_path: Path) -> None:
    v = tmp_path / "v.sh"
    v.write_text("#!/bin/sh\ncat >/dev/null\necho \"checked $1\"\nexit 5\n")
    v.chmod(0o755)
    p = run("--model", "size-md", "--verify", str(v), "--verify-attempts", "2", "judge",
            plan=[{"write": PASS}])
    assert p.returncode == 2  # only exit 0 from the verifier passes
    assert len(run.calls()) == 2
    assert "slopjudge-agent: verifier (attempt 1/2): checked /" in p.stderr.decode()


# -- harness failures and environment -----------------------------------------

@pytest.mark.parametrize("stderr,cause", [
    ("API Error: 429 {\"type\":\"rate_limit_error\"}\n", "usage limit"),
    ("Claude usage limit reached. Resets at 5pm\n", "usage limit"),
    ("Invalid API key · Please run /login\n", "authentication"),
    ("error: unknown option '--permission-mode'\n", "version skew"),
    ("segfault\n", "other"),
])
def test_harness_failure_is_classified_and_its_code_passed_through(
    run: Run, verifier: str, stderr: str, cause: str
) -> None:
    p = run("--model", "size-md", "--verify", verifier, "judge",
            plan=[{"stderr": stderr, "exit": 7}])
    assert p.returncode == 7
    lines = p.stderr.decode().splitlines()
    assert f"sr-agent: harness-failure: {cause}" in lines
    assert f"slopjudge-agent: harness: {stderr.strip()}" in lines
    assert len(run.calls()) == 1  # a harness failure is never re-asked


def test_classify_reads_the_tail_of_stderr_then_stdout() -> None:
    assert classify(b"401 Unauthorized\n" + b"x\n" * 2000) == "other"
    assert classify(b"", b"Error: 403 forbidden") == "authentication"
    assert classify(b"unknown flag --x", b"429") == "version skew"
    assert classify(b"ran 4290 tests") == "other"


def test_harness_env_drops_session_vars_and_stderr_is_prefixed(
    run: Run, verifier: str
) -> None:
    p = run("--model", "size-md", "--verify", verifier, "judge",
            plan=[{"write": PASS, "stderr": "warming up\n"}],
            CLAUDE_CODE_SESSION_ID="s", CLAUDE_CODE_HOST_SESSION_ID="h",
            CLAUDE_CODE_MESSAGING_SOCKET="/s", CLAUDE_CODE_MESSAGING_TOKEN="t",
            SLOPJUDGE_LAUNCHED_BY="r/c")
    assert p.returncode == 0, p.stderr
    env = run.calls()[0]["env"]
    for name in ("CLAUDE_CODE_SESSION_ID", "CLAUDE_CODE_HOST_SESSION_ID",
                 "CLAUDE_CODE_MESSAGING_SOCKET", "CLAUDE_CODE_MESSAGING_TOKEN"):
        assert name not in env
    assert env["SLOPJUDGE_LAUNCHED_BY"] == "r/c"
    assert "slopjudge-agent: harness: warming up" in p.stderr.decode().splitlines()


def test_sigterm_takes_the_harness_down(run: Run, verifier: str) -> None:
    e = dict(run.env, FAKE_PLAN=json.dumps([{"sleep": 60}]))
    proc = subprocess.Popen([*AGENT, "--model", "size-md", "--verify", verifier, "judge"],
                            env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 20
        while not run.calls() and time.monotonic() < deadline:
            time.sleep(0.05)
        (call,) = run.calls()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 128 + signal.SIGTERM
        # The killed harness is reaped by whoever adopts it: wait for that, bounded.
        deadline = time.monotonic() + 10
        with pytest.raises(ProcessLookupError):
            while time.monotonic() < deadline:
                os.kill(call["pid"], 0)
                time.sleep(0.02)
        assert list(run.out.iterdir()) == []
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


# -- usage errors --------------------------------------------------------------

@pytest.mark.parametrize("args,msg", [
    (["--verify", "V", "x"], "--model is required"),
    (["--model", "size-md", "--verify", "V", "--prompt", "a", "b"], "one way"),
    (["--model", "size-md", "--verify", "V", "--verify-attempts", "0", "x"], "1..20"),
    (["--model", "size-md", "--verify", "V", "--verify-attempts", "21", "x"], "1..20"),
    (["--model", "size-md", "--verify", "V"], "empty prompt"),
    (["--model", "size-md", "--verify", "V", "--add-dir:readonly", "/nonexistent-x", "x"],
     "no such directory"),
    (["--model", "size-md", "--verify", "V", "--add-dir", "/tmp/*", "x"], "glob"),
    (["--model", "size-md", "--verify", "V", "--allowed-tools", "Bash(git", "x"], "unbalanced"),
    (["--model", "size-md", "--verify", "PLAIN", "x"], "not an executable"),
    (["--model", "size-md", "--verify", "no-such-verifier-x", "x"], "not found on PATH"),
    (["--model", "size-md", "--bogus", "x"], "unrecognized arguments"),
])
def test_usage_errors_exit_2_with_one_line(
    run: Run, verifier: str, tmp_path: Path, args: list[str], msg: str
) -> None:
    plain = tmp_path / "plain.sh"
    plain.write_text("#!/bin/sh\nexit 0\n")
    plain.chmod(0o644)
    args = [{"V": verifier, "PLAIN": str(plain)}.get(a, a) for a in args]
    p = run(*args)
    assert p.returncode == 2
    err = p.stderr.decode().strip().splitlines()
    assert len(err) == 1 and err[0].startswith("slopjudge-agent: ") and msg in err[0], err
    assert run.calls() == []


def test_writable_dir_inside_readonly_is_refused(run: Run, verifier: str, ro: Path) -> None:
    inner = ro / "sub"
    inner.mkdir()
    p = run("--model", "size-md", "--verify", verifier, "--add-dir", str(inner),
            "--add-dir:readonly", str(ro), "x")
    assert p.returncode == 2 and "inside read-only" in p.stderr.decode()
    p = run("--model", "size-md", "--verify", verifier, "--add-dir", str(ro),
            "--add-dir:readonly", str(ro), "x")
    assert p.returncode == 2 and "both writable and read-only" in p.stderr.decode()


def test_answer_folder_is_never_inside_a_readonly_dir(
    run: Run, verifier: str, ro: Path, tmp_path: Path
) -> None:
    del run.env["SLOPJUDGE_AGENT_OUTPUT_DIR"]
    inside = ro / "tmp"
    inside.mkdir()
    p = run("--model", "size-md", "--verify", verifier, "--add-dir:readonly", str(ro),
            "judge", plan=[{"write": PASS}], TMPDIR=str(inside))
    assert p.returncode == 0, p.stderr
    answer_dir = run.calls()[0]["argv"][run.calls()[0]["argv"].index("--add-dir") + 1]
    assert not answer_dir.startswith(str(ro))
    assert list(inside.iterdir()) == []
    p = run("--model", "size-md", "--verify", verifier, "--add-dir:readonly", str(ro),
            "judge", SLOPJUDGE_AGENT_OUTPUT_DIR=str(inside))
    assert p.returncode == 2 and "inside a read-only dir" in p.stderr.decode()


def test_an_answer_folder_root_that_cannot_be_made_is_one_line_exit_2(
    run: Run, verifier: str, tmp_path: Path
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    for root in (blocker / "sub", blocker):  # under a file; a file itself
        p = run("--model", "size-md", "--verify", verifier, "judge",
                SLOPJUDGE_AGENT_OUTPUT_DIR=str(root))
        err = p.stderr.decode()
        assert p.returncode == 2 and "Traceback" not in err, err
        assert err.splitlines()[-1] == (f"slopjudge-agent: answer folder root {root} cannot "
                                        "be made or written to")
        assert run.calls() == []
    # A folder it may write to (root may write anywhere) but where no folder can be made.
    p = run("--model", "size-md", "--verify", verifier, "judge",
            SLOPJUDGE_AGENT_OUTPUT_DIR="/proc")
    last = p.stderr.decode().splitlines()[-1]
    assert p.returncode == 2 and "Traceback" not in p.stderr.decode(), p.stderr
    assert last in ("slopjudge-agent: answer folder root /proc cannot be made or written to",
                    "slopjudge-agent: cannot make the answer folder in /proc: "
                    "No such file or directory"), last
    assert run.calls() == []


def test_without_verify_the_harness_reply_passes_through(run: Run) -> None:
    p = run("--model", "haiku", "say hi", plan=[{"stdout": "hi\n"}])
    assert p.returncode == 0 and p.stdout == b"hi\n"
    argv = run.calls()[0]["argv"]
    assert argv[-2:] == ["--", "say hi"] and "--allowed-tools" not in argv



# -- the fake Messages API itself (other suites rely on it) -----------------------

def _post(url: str, body: dict[str, Any]) -> bytes:
    import urllib.request

    req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                 headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return resp.read()


def test_fake_api_streams_turns_and_keeps_side_requests_off_the_script() -> None:
    from tests.fakeapi import FakeMessagesAPI, tool_results

    seen: list[int] = []

    def script(request: dict[str, Any], turn: int) -> list[dict[str, Any]]:
        seen.append(turn)
        if turn == 0:
            return [{"type": "text", "text": "hm"},
                    {"type": "tool_use", "name": "Write", "input": {"file_path": "/x"}}]
        return [{"type": "text", "text": "done"}]

    tools = [{"name": "Write", "input_schema": {"type": "object"}}]
    with FakeMessagesAPI(script) as api:
        raw = _post(api.url + "/v1/messages?beta=true",
                    {"model": "m", "stream": True, "tools": tools, "max_tokens": 100,
                     "messages": [{"role": "user", "content": "go"}]}).decode()
        events = re.findall(r"^event: (\S+)", raw, re.M)
        assert events == ["message_start",
                          "content_block_start", "content_block_delta", "content_block_stop",
                          "content_block_start", "content_block_delta", "content_block_stop",
                          "message_delta", "message_stop"]
        assert '"stop_reason": "tool_use"' in raw and '"input_json_delta"' in raw
        assert '"partial_json": "{\\"file_path\\": \\"/x\\"}"' in raw
        # Side requests: no tools, or a 1-token quota probe, or token counting.
        _post(api.url + "/v1/messages", {"model": "m", "max_tokens": 50,
                                         "messages": [{"role": "user", "content": "title?"}]})
        _post(api.url + "/v1/messages", {"model": "m", "max_tokens": 1, "tools": tools,
                                         "messages": [{"role": "user", "content": "q"}]})
        counted = json.loads(_post(api.url + "/v1/messages/count_tokens", {"messages": []}))
        assert counted["input_tokens"] >= 1
        msg = json.loads(_post(api.url + "/v1/messages", {
            "model": "m", "tools": tools, "max_tokens": 100,
            "messages": [{"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "is_error": True,
                 "content": [{"type": "text", "text": "denied"}]}]}]}))
        assert msg["stop_reason"] == "end_turn" and msg["content"][0]["text"] == "done"
        assert tool_results(api.requests[1]) == [
            {"tool_use_id": "t1", "is_error": True, "content": "denied"}]
    assert seen == [0, 1] and len(api.side_requests) == 2 and not api.errors


def test_fake_api_records_script_errors_and_still_answers() -> None:
    from tests.fakeapi import FakeMessagesAPI

    def script(request: dict[str, Any], turn: int) -> list[dict[str, Any]]:
        raise KeyError("boom")

    with FakeMessagesAPI(script) as api:
        msg = json.loads(_post(api.url + "/v1/messages", {
            "model": "m", "tools": [{"name": "X"}], "max_tokens": 9,
            "messages": [{"role": "user", "content": "go"}]}))
    assert "fake API script error" in msg["content"][0]["text"]
    assert len(api.errors) == 1
