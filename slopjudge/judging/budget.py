"""Spend limits on judge calls: per run, and per agent session across hook calls.

Settings (``slopjudge.yaml`` / ``[tool.slopjudge]``), each unset by default:

- ``max_judge_calls``, ``max_tokens``, ``max_cost_usd``: one run (one
  ``slopjudge run``, one hook call);
- ``session_max_judge_calls``, ``session_max_tokens``, ``session_max_cost_usd``:
  one agent session, summed over its hook calls in
  ``<state_dir>/state/<session>.spend.json``.

Before each model call the judge asks :meth:`Budget.acquire`; a call that
would go over a limit is not made and its check is an ``error`` naming the
limit and how far it is spent. Calls answered from the verdict cache are
never counted. A call is counted when it starts (so parallel calls cannot
all slip under the limit at once), its prompt's estimated tokens are held
against ``max_tokens`` while it runs, and :meth:`Budget.settle` replaces the
estimate with what the runner reported.

Standard library only.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any

from slopjudge.fsutil import write_atomic
from slopjudge.loading.config import Limits
from slopjudge.model import fields, record
from slopjudge.sessions import session_key, state_dir
from slopjudge.usage import total_tokens


@record
class Spend:
    judge_calls: int = 0
    tokens: int = 0
    cost_usd: float = 0.0


def _over(prefix: str, where: str, limits: Limits, spent: Spend, prompt_tokens: int) -> str | None:
    calls = getattr(limits, f"{prefix}max_judge_calls")
    tokens = getattr(limits, f"{prefix}max_tokens")
    cost = getattr(limits, f"{prefix}max_cost_usd")
    if calls is not None and spent.judge_calls >= calls:
        return (f"budget {prefix}max_judge_calls ({calls}) is spent: {spent.judge_calls} of "
                f"{calls} judge calls made {where}; this check was not judged")
    if tokens is not None and spent.tokens + prompt_tokens > tokens:
        return (f"budget {prefix}max_tokens ({tokens:,}) would be exceeded: {spent.tokens:,} "
                f"tokens spent {where}, and this call's prompt is about {prompt_tokens:,} more; "
                "this check was not judged")
    if cost is not None and spent.cost_usd >= cost:
        return (f"budget {prefix}max_cost_usd (${cost:.4f}) is spent: ${spent.cost_usd:.4f} "
                f"{where}; this check was not judged")
    return None


class Budget:
    """The spend of one run (and of its agent session), shared by every judge thread."""

    def __init__(self, limits: Limits, state_dir: str | None = None) -> None:
        self.limits = limits
        self.state_dir = state_dir
        self.run = Spend()
        self._held = 0  # estimated prompt tokens of calls still running
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: Any) -> Budget | None:
        limits = Limits(**{f.name: getattr(settings, f.name, None) for f in fields(Limits)})
        return cls(limits, getattr(settings, "state_dir", None)) if limits.any() else None

    def acquire(self, session_id: str | None, prompt_tokens: int) -> str | None:
        """Count one call about to start; or the reason it must not (nothing counted)."""
        with self._lock:
            held = Spend(self.run.judge_calls, self.run.tokens + self._held, self.run.cost_usd)
            problem = _over("", "in this run", self.limits, held, prompt_tokens)
            if problem is None and self.limits.session() and self.state_dir:
                problem = self._session_update(session_id, prompt_tokens, reserve=True)
            if problem is not None:
                return problem
            self.run.judge_calls += 1
            self._held += prompt_tokens
            return None

    def settle(self, session_id: str | None, prompt_tokens: int,
               usage: dict[str, Any] | None) -> None:
        """The call is over: swap its estimate for what it cost (the estimate if unreported)."""
        spent = total_tokens(usage) if usage else prompt_tokens
        cost = float((usage or {}).get("cost_usd") or 0.0)
        with self._lock:
            self._held -= prompt_tokens
            self.run.tokens += spent
            self.run.cost_usd += cost
            if self.limits.session() and self.state_dir:
                self._session_update(session_id, 0, reserve=False, tokens=spent, cost=cost)

    # -- the session's spend, kept across hook calls --------------------------

    def session_path(self, session_id: str | None) -> str:
        assert self.state_dir is not None
        return os.path.join(state_dir(self.state_dir), f"{session_key(session_id)}.spend.json")

    def _session_update(self, session_id: str | None, prompt_tokens: int, *, reserve: bool,
                        tokens: int = 0, cost: float = 0.0) -> str | None:
        """Read, check and write the session's spend under an exclusive lock."""
        path = self.session_path(session_id)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path + ".lock", os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        try:
            try:
                import fcntl

                fcntl.flock(fd, fcntl.LOCK_EX)
            except ImportError:  # pragma: no cover - not POSIX
                pass
            try:
                spent = read_session_spend(path)
            except ValueError as exc:
                # Fail closed: an unreadable record is a spent budget, said as such.
                return (f"budget: this agent session's spend record {path} cannot be read "
                        f"({exc}); delete it to reset the session's budget; "
                        "this check was not judged")
            if reserve:
                problem = _over("session_", "in this agent session", self.limits, spent,
                                prompt_tokens)
                if problem is not None:
                    return problem
                spent.judge_calls += 1
            spent.tokens += tokens
            spent.cost_usd += cost
            write_atomic(path, json.dumps({"judge_calls": spent.judge_calls,
                                           "tokens": spent.tokens, "cost_usd": spent.cost_usd}))
            return None
        finally:
            os.close(fd)


def read_session_spend(path: str) -> Spend:
    """A session's spend so far; a missing file is nothing spent. ValueError (one line)
    when the record cannot be read: the caller fails closed."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except FileNotFoundError:
        return Spend()
    except OSError as exc:
        raise ValueError(exc.strerror or str(exc)) from None
    except ValueError as exc:
        raise ValueError(f"not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")

    def num(key: str) -> float:
        v = data.get(key)
        return v if isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 else 0

    return Spend(int(num("judge_calls")), int(num("tokens")), float(num("cost_usd")))
