"""The check kinds' registry (protocol: ``hookspec.CheckKind``); each imports its module
when a check of that kind first runs, so a run of scripts never loads the judge's code."""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: rule selection on the hook fast path imports this
if TYPE_CHECKING:
    from slopjudge.hookspec import CheckContext, CheckKind
    from slopjudge.model import CheckKindName, CheckResult


def _script(ctx: CheckContext) -> CheckResult:
    from slopjudge.checks.script import run_script

    return run_script(ctx)


def _judge(ctx: CheckContext) -> CheckResult:
    from slopjudge.checks.judge import run_judge

    return run_judge(ctx)


# Keyed by model.CheckKindName, the one list of kinds (the loader returns one, a
# Check and its result carry one): mypy holds the two to each other.
CHECK_KINDS: dict[CheckKindName, CheckKind] = {"script": _script, "judge": _judge}
