"""The `slopjudge` command: only the named command's module under ``commands/`` is imported,
and ``slopjudge hook <point>`` goes to the hooks without a parser (the PreToolUse fast path)."""

from __future__ import annotations

import os
import sys

from slopjudge import __version__
from slopjudge.errors import SlopjudgeError

TYPE_CHECKING = False  # not typing's: `slopjudge hook` imports this module first
if TYPE_CHECKING:
    import argparse
    from typing import Any

COMMANDS: dict[str, str] = {
    "init": "copy the default rule pack, templates and RUBRIC.md into a repository",
    "validate": "check every rule file and report all problems",
    "run": "run the rules on a change (a diff, a commit range, the index or the work tree)",
    "rules": "list the rules: stable or preview, on or off, and the measurement behind it",
    "payload": "print the JSON a rule's scripts and templates receive",
    "test": "run the rules' fixture cases under tests/rules/",
    "hook": "agent hook entry point: start, pre-tool, stop, subagent-stop",
    "install": "install slopjudge's hooks into an agent's settings",
    "uninstall": "remove slopjudge's hooks (and only those) from an agent's settings",
    "doctor": "say whether slopjudge's hooks are installed and will run (Codex: trusted)",
    "report": ("summarise the event log: events, agreement with labels, flips, cost, "
               "and an HTML page of it all (html)"),
    "replay": "re-judge recorded prompts through another runner and compare",
    "import": "convert another tool's rules (sloprail's .sloprail/) into rules/",
    "cite": "cite the words or tool output a change relies on (for rules that require it)",
}


def _command_module(name: str) -> Any:
    # `import` is a Python keyword: its module is named after what it imports.
    full = f"slopjudge.commands.{'import_sloprail' if name == 'import' else name}"
    __import__(full)  # import_module's import, without importlib (and the warnings it loads)
    return sys.modules[full]


def build_parser(command: str | None) -> argparse.ArgumentParser:
    import argparse  # not at the top: `slopjudge hook` never builds a parser

    parser = argparse.ArgumentParser(prog="slopjudge",
                                     description="Keep AI slop out of a repository.")
    parser.add_argument("--version", action="version", version=f"slopjudge {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    # A named command builds its own parser only: the others' would only be listed in help.
    for name in [command] if command else COMMANDS:
        p = sub.add_parser(name, help=COMMANDS[name], description=COMMANDS[name])
        if command:
            _command_module(name).add_arguments(p)
    return parser


class Terminated(KeyboardInterrupt):
    """SIGTERM (a cancelled CI job): stop as Ctrl-C does, running checks included."""


def _exit_now(code: int) -> None:
    """End without tearing the interpreter down (a full collection, every module's cleanup:
    a few ms on every tool call); the answer is out, events written, checks reaped."""
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:  # None: the descriptor was closed at start
                stream.flush()
        except (OSError, ValueError):
            os._exit(120)  # as the interpreter when its output cannot be flushed
    os._exit(code)


OWNS_PROCESS = False  # main() of the command itself, not a call from a program


def main(argv: list[str] | None = None, *, owns_process: bool | None = None) -> int:
    global OWNS_PROCESS
    OWNS_PROCESS = argv is None if owns_process is None else owns_process
    _child_exits_reported()
    args_list = sys.argv[1:] if argv is None else list(argv)
    if args_list[:1] == ["hook"]:  # any `hook` command imports the hooks: their points here
        from slopjudge.hooks import POINTS, main_fast

        # `hook <point>` or `hook <point> --harness NAME`: straight to the hooks.
        if (len(args_list) == 2 and args_list[1] in POINTS) or (
                len(args_list) == 4 and args_list[2] == "--harness"):
            code = main_fast(args_list[1], args_list[3] if len(args_list) == 4 else None)
            if argv is None:
                _exit_now(code)
            return code
    command = args_list[0] if args_list and args_list[0] in COMMANDS else None
    if command == "run" and argv is None:
        # A run ends with os._exit: collecting the imports' cycles would free next to nothing.
        import gc

        gc.disable()
    args = build_parser(command).parse_args(args_list)
    code = _run_command(_command_module(args.command), args)
    if argv is None and args.command == "run":
        # The report is out, its checks reaped: the teardown would only make a CI run slower.
        _exit_now(code)
    return code


def _child_exits_reported() -> None:
    """SIGCHLD back to its default when a parent handed it down ignored: each wait would
    read exit status 0, a refusal taken for a pass; a check's own children inherit it too."""
    import _signal

    try:
        if _signal.getsignal(_signal.SIGCHLD) == _signal.SIG_IGN:
            _signal.signal(_signal.SIGCHLD, _signal.SIG_DFL)
    except (ValueError, OSError):  # not the main thread: the caller owns signals
        pass


def _run_command(module: Any, args: argparse.Namespace) -> int:
    import signal

    def raise_terminated(signum: int, frame: object) -> None:
        raise Terminated()

    try:
        signal.signal(signal.SIGTERM, raise_terminated)
    except ValueError:  # not the main thread (slopjudge called as a library)
        pass
    try:
        return int(module.run(args))
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM as Terminated
        word, code = ("terminated", 143) if isinstance(exc, Terminated) else ("interrupted", 130)
        print(f"slopjudge: {word}", file=sys.stderr)
        return code
    except BrokenPipeError:
        return 1
    except SlopjudgeError as exc:
        print(f"slopjudge: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # never a traceback for the user; SLOPJUDGE_DEBUG=1 shows it
        if os.environ.get("SLOPJUDGE_DEBUG"):
            raise
        print(f"slopjudge: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
