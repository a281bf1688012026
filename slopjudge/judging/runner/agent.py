"""slopjudge-agent: the bundled judge runner, a drop-in for sr-agent's judge mode
(command line and exit codes: docs/judges.md, SPEC §5). A failed harness's exit code is
passed through; usage errors, a missing binary and every rejection exit 2."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import sys
import tempfile
from types import FrameType
from typing import Any, NoReturn

from slopjudge import procs
from slopjudge import usage as usage_mod
from slopjudge.fsutil import inside, read_or, write_atomic
from slopjudge.harnesses.base import alias_overrides
from slopjudge.harnesses.registry import HARNESSES  # --harness names; each one's ``judge``
from slopjudge.hookspec import Harness, JudgeAttempt
from slopjudge.jsonobject import parse_json_object
from slopjudge.loading.toolrules import split_tool_rules

PROG = "slopjudge-agent"
MAX_ATTEMPTS = 20
STDOUT_CAPTURE = 64 * 1024  # sr-agent keeps this much of the harness reply

# Variables tying a process to the Claude Code session that launched it: a judge
# must be a fresh session, never a participant in the caller's.
_SESSION_VARS = ("CLAUDE_CODE_SESSION_ID", "CLAUDE_CODE_HOST_SESSION_ID",
                 "CLAUDE_CODE_MESSAGING_SOCKET", "CLAUDE_CODE_MESSAGING_TOKEN")


class UsageError(Exception):
    """Bad input: one line on stderr, exit 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, allow_abbrev=False, description=__doc__.split("\n(")[0] + ".")
    p.add_argument("--model", default="",
                   help="model set: size-xs..size-xxl, a name, or a comma list")
    p.add_argument("--verify", help="verifier executable; turns on answer-file mode")
    p.add_argument("--verify-attempts", dest="attempts", type=int, default=2,
                   help="1..20, default 2")
    p.add_argument("--allowed-tools", action="append", default=[], help="ONE string of rules")
    p.add_argument("--disallowed-tools", action="append", default=[], help="ONE string of rules")
    p.add_argument("--add-dir", dest="writable_dirs", action="append", default=[],
                   help="writable directory")
    p.add_argument("--add-dir-readonly", "--add-dir:readonly", dest="readonly_dirs",
                   action="append", default=[], help="read-only directory")
    p.add_argument("--prompt", default=None)
    p.add_argument("--prompt-stdin", action="store_true")
    p.add_argument("--harness", default=None, help="claude (default) or codex")
    p.add_argument("--dry-run", action="store_true", help="print the harness command, run nothing")
    p.add_argument("words", nargs="*", help="the prompt (after -- if it starts with a dash)")
    return p


def _check_dirs(writable: list[str], readonly: list[str]) -> tuple[list[str], list[str]]:
    def norm(d: str, kind: str) -> str:
        if any(c in "*?[]{}" for c in d):
            raise UsageError(f"{kind} {d!r}: glob characters are not allowed")
        if not os.path.isdir(d):
            raise UsageError(f"{kind} {d!r}: no such directory")
        return os.path.abspath(d)

    w = list(dict.fromkeys(norm(d, "--add-dir") for d in writable))
    r = list(dict.fromkeys(norm(d, "--add-dir:readonly") for d in readonly))
    for d in w:
        if d in r:
            raise UsageError(f"{d} is given both writable and read-only")
        for ro in r:
            if _inside(d, ro):
                raise UsageError(f"writable {d} is inside read-only {ro}")
    return w, r


def _inside(path: str, root: str) -> bool:
    """``path`` is ``root`` or under it, as written or with links resolved."""
    return path.startswith(root.rstrip("/") + "/") or inside(path, root)


def parse_options(argv: list[str], env: dict[str, str]) -> argparse.Namespace:
    """Parse and check the command line; raises UsageError with a one-line message."""
    # Words after "--" are prompt words even when they start with a dash.
    cut = argv.index("--") if "--" in argv else len(argv)
    argv, tail = argv[:cut], argv[cut + 1:]
    ns = _parser().parse_intermixed_args(argv)
    ns.words = [*ns.words, *tail]
    if sum([bool(ns.words), ns.prompt is not None, ns.prompt_stdin]) > 1:
        raise UsageError("give the prompt one way: positional words, --prompt or --prompt-stdin")
    if ns.prompt_stdin:
        ns.prompt = sys.stdin.buffer.read().decode("utf-8", "replace")
    elif ns.prompt is None:
        ns.prompt = " ".join(ns.words)
    ns.prompt = ns.prompt.strip()
    if not ns.prompt:
        raise UsageError("empty prompt")
    if not ns.model.strip():
        raise UsageError("--model is required (size-md, a model name, or a comma list)")
    if not 1 <= ns.attempts <= MAX_ATTEMPTS:
        raise UsageError(f"--verify-attempts must be 1..{MAX_ATTEMPTS}, got {ns.attempts}")
    harness = ns.harness or env.get("SLOPJUDGE_HARNESS") or env.get("SLOPRAIL_HARNESS") or "claude"
    harness = harness.strip().lower()
    ns.harness = "claude" if harness in ("claude-code", "claudecode") else harness
    if ns.harness not in HARNESSES:
        raise UsageError(f"unknown harness {ns.harness!r} ({' or '.join(HARNESSES)})")
    try:  # each is ONE string of rules: commas or spaces between, ``Bash(git show:*)`` whole
        ns.allowed_tools = [r for s in ns.allowed_tools for r in split_tool_rules(s)]
        ns.disallowed_tools = [r for s in ns.disallowed_tools for r in split_tool_rules(s)]
    except ValueError as exc:
        raise UsageError(f"tool rules: {exc}") from None
    ns.writable_dirs, ns.readonly_dirs = _check_dirs(ns.writable_dirs, ns.readonly_dirs)
    if ns.verify is not None:
        found = shutil.which(ns.verify, path=env.get("PATH"))  # with a "/": that file only
        if not found:
            raise UsageError(f"--verify {ns.verify}: " + (
                "not an executable file" if os.sep in ns.verify else "not found on PATH"))
        ns.verify = os.path.abspath(found)
    return ns


def _answer_root(env: dict[str, str], readonly: list[str]) -> str:
    """Where the private answer folder goes: never inside a read-only dir."""
    override = env.get("SLOPJUDGE_AGENT_OUTPUT_DIR") or env.get("SLOPRAIL_AGENT_OUTPUT_DIR")
    if override:
        if any(_inside(override, ro) for ro in readonly):
            raise UsageError(f"answer folder root {override} is inside a read-only dir")
        with contextlib.suppress(OSError):
            os.makedirs(override, exist_ok=True)
        if not (os.path.isdir(override) and os.access(override, os.W_OK)):
            raise UsageError(f"answer folder root {override} cannot be made or written to")
        return override
    cache = env.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    for root in (env.get("TMPDIR"), os.path.join(cache, "slopjudge-agent"), "/tmp"):
        if not root or any(_inside(root, ro) for ro in readonly):
            continue
        with contextlib.suppress(OSError):
            os.makedirs(root, exist_ok=True)
        if os.path.isdir(root) and os.access(root, os.W_OK):
            return root
    raise UsageError("no writable place for the answer file outside the read-only dirs")


_ANSWER = (
    "\n\nWrite your answer to the file {path}. That file is what will be read and checked; "
    "put exactly the answer in it and nothing else, and write it with your file-writing tool."
)
_REASK = (
    "\n\nYour previous answer in {path} was REJECTED by the check that reads it. "
    "The check said:\n\n{complaint}\n\n"
    "Fix exactly that, and write the whole corrected answer to {path} again."
)


# -- why a harness failed: ``sr-agent: harness-failure: <cause>`` (sr-agent's spelling, what
# callers grep for) tells the caller whether a retry can help (SPEC §5) ----------------

_TAIL_BYTES = 2048
_CAUSES = {
    "usage limit": r"usage[ _-]?limit|rate[ _-]?limit|rate_limit_error|too many requests"
                   r"|quota exceeded|\b429\b",
    "authentication": r"invalid[ _-]?(?:api[ _-]?)?key|invalid x-api-key|authentication_error"
                      r"|not logged in|please run /login|/login\b|\b401\b|\b403\b|unauthori[sz]ed",
    "version skew": r"(?:unknown|unrecognized|unexpected)[ _-](?:option|flag|argument)",
}


def classify(stderr: bytes, stdout: bytes = b"") -> str:
    """The failure cause: the first class matching stderr's tail, then stdout's."""
    for stream in (stderr, stdout):
        text = stream[-_TAIL_BYTES:].decode("utf-8", "replace")
        for cause, words in _CAUSES.items():
            if re.search(words, text, re.I):
                return cause
    return "other"


def _err(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _lines(data: bytes) -> list[str]:
    return data.decode("utf-8", "replace").splitlines()


def _exit_code(rc: int) -> int:
    return 128 - rc if rc < 0 else rc  # killed by a signal: said the way a shell does


def _out(data: bytes) -> None:
    sys.stdout.buffer.write(data)
    sys.stdout.flush()


def run_agent(opts: argparse.Namespace, env: dict[str, str]) -> int:
    harness, found = HARNESSES[opts.harness].judge(env)
    warnings: list[str] = []
    try:
        harness.override_models(alias_overrides(env.get("SLOPJUDGE_MODEL_ALIASES"), harness.name))
        model = harness.resolve_model(opts.model, warnings)
        harness.check_tools(opts.allowed_tools, opts.disallowed_tools)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    for w in warnings:
        _err(f"{PROG}: warning: {w}")
    _err(f"{PROG}: harness {harness.name}, model {model} (from {json.dumps(opts.model)})")
    if not found and not opts.dry_run:
        _err(f"{PROG}: {harness.missing_message}")
        return 2
    judge = _Judge(opts, env, harness, model)
    if opts.verify is None:
        argv, stdin = judge.command(opts.prompt, opts.writable_dirs)
        if opts.dry_run:
            return _dry_run(argv, stdin)
        reply, failed = judge.call(argv, stdin)
        _out(reply)
        return failed or 0
    # A private folder (mkdtemp's mode is 0700) for the answer, gone afterwards.
    root = _answer_root(env, opts.readonly_dirs)
    try:
        answer = tempfile.TemporaryDirectory(prefix="slopjudge-agent-", dir=root,
                                             ignore_cleanup_errors=True)
    except OSError as exc:  # a folder it may write to but not make one in, a full disk
        raise UsageError(f"cannot make the answer folder in {root}: {exc.strerror}") from None
    with answer as answer_dir:
        return judge.verify_loop(answer_dir)


def _dry_run(argv: list[str], stdin: bytes, *more: str) -> int:
    shown = shlex.join(argv) + (f"  # prompt on stdin ({len(stdin)} bytes)" if stdin else "")
    # A path that is not UTF-8 is shown as its bytes, as the command would pass it.
    _out("".join(f"{line}\n" for line in (shown, *more)).encode(errors="surrogateescape"))
    return 0


class _Judge:
    """One judge: its harness and model, and what its calls cost, summed over re-asks."""

    def __init__(self, opts: argparse.Namespace, env: dict[str, str], harness: Harness,
                 model: str) -> None:
        self.opts, self.env, self.harness, self.model = opts, env, harness, model
        self.child_env = {k: v for k, v in env.items() if k not in _SESSION_VARS}
        self.spent: dict[str, Any] | None = None

    def command(self, prompt: str, writable: list[str]) -> tuple[list[str], bytes]:
        o = self.opts
        return self.harness.argv(JudgeAttempt(
            model=self.model, prompt=prompt, allowed_tools=o.allowed_tools,
            disallowed_tools=o.disallowed_tools, writable_dirs=writable,
            readonly_dirs=o.readonly_dirs))

    def call(self, argv: list[str], stdin: bytes) -> tuple[bytes, int | None]:
        """Run the harness once: its reply, and the exit code to give when it failed."""
        res = procs.run(argv, input=stdin, env=self.child_env)
        if res.start_error:
            _err(f"{PROG}: cannot start harness: {res.start_error}")
            return b"", 2
        reply, reported = self.harness.parse_output(res.stdout)
        for line in _lines(res.stderr):
            _err(f"{PROG}: harness: {line}")
        # Printed after every call (the caller reads the last line: a refused or failed call
        # cost tokens too), timed by our own clock: the CLI's start-up is part of the call.
        part = {"model": self.model, **(reported or {}), "duration_ms": int(res.duration_s * 1000)}
        self.spent = usage_mod.add(self.spent, part)
        _err(usage_mod.usage_line(self.spent or {}))
        if not res.returncode:
            return reply, None
        cause = classify(res.stderr, res.stdout)
        code = _exit_code(res.returncode)
        _err(f"sr-agent: harness-failure: {cause}")
        _err(f"{PROG}: {self.harness.binary} exited with status {code}: {cause}")
        return reply, code

    def verify_loop(self, answer_dir: str) -> int:
        opts = self.opts
        path = os.path.join(answer_dir, "answer")
        prompt = base = opts.prompt + _ANSWER.format(path=path)
        for attempt in range(1, opts.attempts + 1):
            argv, stdin = self.command(prompt, [answer_dir, *opts.writable_dirs])
            if opts.dry_run:
                verify = shlex.join([opts.verify, path])
                return _dry_run(argv, stdin, f"verify: {verify} < {shlex.quote(path)}")
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
            text, failed = self.call(argv, stdin)
            if failed is not None:
                return failed
            data = read_or(path, b"")
            reply = text[:STDOUT_CAPTURE].decode("utf-8", "replace").strip()
            if not data and parse_json_object(reply) is not None:  # `claude -p`'s reply: one object
                data = reply.encode()
                write_atomic(path, data)
            if data:
                complaint = self.verify(path, data, attempt)
                if isinstance(complaint, int):
                    return complaint
            else:
                complaint = f"the agent wrote no output to {path}"
                _err(f"{PROG}: attempt {attempt}/{opts.attempts}: {complaint}")
            prompt = base + _REASK.format(path=path, complaint=complaint)
        _err(f"{PROG}: no answer passed the verifier (after {opts.attempts} attempts)")
        return 2

    def verify(self, path: str, data: bytes, attempt: int) -> int | str:
        """Hand the answer to the verifier: the exit code when it decided (0: the answer is
        printed; 2: a final rejection or no verifier), else its complaint for a re-ask."""
        where = f"attempt {attempt}/{self.opts.attempts}"
        facts = {"AGENT_OUTPUT": path, "ATTEMPT": str(attempt), "ATTEMPTS": str(self.opts.attempts)}
        env = dict(self.env)
        env.update((f"{p}_{k}", v) for p in ("SLOPJUDGE", "SLOPRAIL") for k, v in facts.items())
        vres = procs.run([self.opts.verify, path], input=data, env=env)
        if vres.start_error:
            _err(f"{PROG}: cannot run the verifier: {vres.start_error}")
            return 2
        # Verifier stderr goes out unprefixed so the caller sees its JUDGE-… lines.
        for line in _lines(vres.stderr):
            _err(line)
        for line in _lines(vres.stdout):
            _err(line if line.startswith("JUDGE-") else f"{PROG}: verifier ({where}): {line}")
        if vres.returncode == 0:
            _err(f"{PROG}: verified on {where}")
            _out(data)
            return 0
        if vres.returncode == 3:
            _err(f"{PROG}: the verifier rejected the answer on {where} (final)")
            return 2
        complaint = (vres.stderr + vres.stdout).decode("utf-8", "replace").strip()
        _err(f"{PROG}: {where}: the verifier asked for another answer")
        return complaint or f"the verifier exited with status {_exit_code(vres.returncode or 1)}"


def _on_signal(signum: int, frame: FrameType | None) -> None:
    # The exit a shell gives a signal's death; on the way out, procs.run kills the child's group.
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    env = dict(os.environ)
    old = {s: signal.signal(s, _on_signal) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        opts = parse_options(sys.argv[1:] if argv is None else argv, env)
        return run_agent(opts, env)
    except UsageError as exc:
        _err(f"{PROG}: {exc}")
        return 2
    except KeyboardInterrupt:
        return 130
    finally:
        for s, h in old.items():
            signal.signal(s, h)


if __name__ == "__main__":
    sys.exit(main())
