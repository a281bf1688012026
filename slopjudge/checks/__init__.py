"""The check kinds, one module each: ``script`` and ``judge`` (with ``prepare``).

:data:`CHECK_KINDS` is the registry (protocol: ``hookspec.CheckKind``). Each
entry imports its module when a check of that kind first runs, so a run of
script checks never loads the judge's code.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: rule selection on the hook fast path imports this
if TYPE_CHECKING:
    from slopjudge.hookspec import CheckContext, CheckKind
    from slopjudge.model import CheckResult


def _script(ctx: CheckContext) -> CheckResult:
    from slopjudge.checks.script import run_script

    return run_script(ctx)


def _judge(ctx: CheckContext) -> CheckResult:
    from slopjudge.checks.judge import run_judge

    return run_judge(ctx)


CHECK_KINDS: dict[str, CheckKind] = {"script": _script, "judge": _judge}
