"""Python script checks run as a batch: one child (``batchchild.py``, held as any check
process) runs them one after the other, so a run pays for one Python start and one import
of what they share. What it keeps and how it fails closed (a check it could not answer
runs alone): docs/runner-and-budgets.md, "Python scripts of one run share a child"."""

from __future__ import annotations

import os
import sys
import threading

from slopjudge.checks.script import check_env, payload_bytes, python_env, script_result
from slopjudge.hookspec import CheckContext
from slopjudge.model import CheckResult
from slopjudge.procs import ProcResult, is_python_script, run

TYPE_CHECKING = False  # not typing's: a PreToolUse hook running checks imports this module
if TYPE_CHECKING:
    from collections.abc import Iterable

# A batch holds every payload at once (here and in the child); past this many bytes of
# its files' text its checks run alone, each payload held only while its own check runs
# (as many at once as run at once). A change that big takes far longer to judge than a
# Python start per check costs.
MAX_PAYLOADS = 8 << 20

CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "batchchild.py")


def batchable(ctx: CheckContext) -> bool:
    """A Python script the child can run as its own process would."""
    check = ctx.check
    return (check.kind == "script" and check.each == "changeset" and not check.needs
            and check.script is not None and os.path.isabs(check.script)
            and bool(sys.executable) and is_python_script(check.script)
            and os.path.isfile(check.script) and os.access(check.script, os.R_OK))


def plan(contexts: Iterable[CheckContext], parts: int) -> dict[str, Batch]:
    """Each batched check's batch: the batchable checks dealt into at most ``parts``
    batches of two or more (fewer checks run alone)."""
    chosen = [ctx for ctx in contexts if batchable(ctx)]
    # About how many bytes the payloads are: their files' text, before encoding.
    size = sum(len(f.diff) + len(f.old_content or "") + len(f.new_content or "")
               for ctx in chosen for f in ctx.changeset.files)
    if len(chosen) < 2 or size > MAX_PAYLOADS:
        return {}
    parts = max(1, min(parts, len(chosen) // 2))
    batches = [Batch(chosen[n::parts]) for n in range(parts)]
    return {ctx.check.full_id: b for b in batches for ctx in b.contexts}


class Batch:
    """Some checks' scripts in one child; run once, by the first check that asks."""

    def __init__(self, contexts: list[CheckContext]) -> None:
        self.contexts = contexts
        self.lock = threading.Lock()
        self.results: dict[str, CheckResult | None] | None = None

    def result(self, ctx: CheckContext, slot: threading.BoundedSemaphore) -> CheckResult | None:
        """``ctx``'s result; None when it must run alone. ``slot``: held while the
        child runs (it takes a CPU as a lone script would)."""
        with self.lock:
            if self.results is None:
                with slot:
                    self.results = self._run()
        return self.results.get(ctx.check.full_id)

    def _run(self) -> dict[str, CheckResult | None]:
        import marshal

        given = [(ctx.check.script, ctx.rule.dir, python_env(check_env(ctx), ctx.rule.dir),
                  payload_bytes(ctx)) for ctx in self.contexts]
        pipes = [os.pipe() for _ in range(2 * len(given))]  # each script's stdout, stderr
        jobs = [(*job, pipes[2 * n][1], pipes[2 * n + 1][1]) for n, job in enumerate(given)]
        first = self.contexts[0]
        proc = run([sys.executable, CHILD], input=marshal.dumps(jobs),
                   timeout=min(ctx.check.timeout for ctx in self.contexts),
                   cwd=first.rule.dir, env=jobs[0][2], registry=first.processes, pipes=pipes)
        started: set[int] = set()  # the child's report: S before a script, E after it
        ended: dict[int, tuple[int | None, int]] = {}
        for line in proc.stdout.decode("ascii", "replace").splitlines():
            word = line.split()
            if len(word) == 2 and word[0] == "S" and word[1].isdigit():
                started.add(int(word[1]))
            elif len(word) == 4 and word[0] == "E":
                ended[int(word[1])] = (int(word[2]), int(word[3]) // 1000)
        out: dict[str, CheckResult | None] = {}
        for n, ctx in enumerate(self.contexts):
            if n in ended:
                status, ms = ended[n]
            elif n in started and not proc.timed_out and proc.start_error is None:
                # It ended the child (a signal, os._exit): its own process would have ended.
                status, ms = proc.returncode, int(proc.duration_s * 1000)
            else:
                out[ctx.check.full_id] = None  # not run, or cut short by the batch's timeout
                continue
            own = ProcResult(status, proc.pipes[2 * n], proc.pipes[2 * n + 1])
            out[ctx.check.full_id] = script_result(ctx.check, own, ms)
        return out
