"""Spend limits on judge calls, per run and per agent session: reserve before a call,
settle after, so parallel calls cannot pass a limit together (docs/runner-and-budgets.md,
"Budgets under any concurrency", is the contract)."""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import json
import math
import os
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from slopjudge.fsutil import write_atomic
from slopjudge.loading.config import Limits
from slopjudge.sessions import session_key, state_dir
from slopjudge.usage import total_tokens


@dataclass
class Rates:
    """What one estimated prompt token of a call has been counted at, at most: its
    tokens (input, output and cache, as the runner reported them) and its cost."""

    tokens: float = 0.0
    cost_usd: float = 0.0


@dataclass
class Spend:
    """What is spent, the estimates of the calls still running (call -> [tokens, cost]) and
    the rates: a run's, in memory, and an agent session's, in its record."""

    judge_calls: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    held: dict[str, list[float]] = field(default_factory=dict)
    rates: Rates | None = None

    def settle(self, want: Reservation, tokens: int, cost: float) -> None:
        """Call ``want`` is over: its estimate swapped for what it cost; the rates learnt."""
        self.held.pop(want.key, None)
        self.judge_calls += 1
        self.tokens += tokens
        self.cost_usd += cost
        size, rates = max(want.prompt_tokens, 1), self.rates or Rates()
        self.rates = Rates(max(rates.tokens, tokens / size), max(rates.cost_usd, cost / size))


# The limits a call's cost is estimated for, from the rates of the calls before it.
_ESTIMATED = ("max_tokens", "max_cost_usd", "session_max_tokens", "session_max_cost_usd")


class Budget:
    """The spend of one run (and of its agent session), shared by every judge thread. Until
    a call has settled no :class:`Rates` are known, so under a token or cost limit the
    first call runs alone: it measures them."""

    def __init__(self, limits: Limits, state_dir: str) -> None:
        self.limits = limits
        self.state_dir = state_dir
        self.run = Spend()
        self._changed = threading.Condition()
        self._ids = itertools.count(1)

    def acquire(self, session_id: str | None, prompt_tokens: int,
                wait_s: float = 600.0) -> Reservation | str:
        """Reserve one call about to start; or the reason it must not (nothing held).
        Waits (at most ``wait_s``) while the first call of the run measures the rates."""
        deadline = time.monotonic() + wait_s  # counted from the ask, not from the lock
        needs_rates = any(getattr(self.limits, k) is not None for k in _ESTIMATED)
        run = self.run

        def known() -> bool:
            if run.rates is None and self.limits.any("session_"):
                with contextlib.suppress(ValueError):  # the reservation says so
                    run.rates = _read_record(self.session_path(session_id)).rates
            return run.rates is not None or not needs_rates or not run.held

        with self._changed:
            if not self._changed.wait_for(known, deadline - time.monotonic()):
                return (f"budget: no estimate of a call's cost within {wait_s:g} s (the "
                        "first call is still running); this check was not judged")
            rates = run.rates or Rates(tokens=1.0)
            want = Reservation(f"{os.getpid()}.{next(self._ids)}", prompt_tokens,
                               math.ceil(prompt_tokens * max(rates.tokens, 1.0)),
                               prompt_tokens * rates.cost_usd)
            problem = self._over("", "in this run", run, want)
            if problem is None and self.limits.any("session_"):
                problem = self._session_update(session_id, lambda spend: self._over(
                    "session_", "in this agent session", spend, want, hold=True))
            if problem is not None:
                return problem
            run.held[want.key] = [want.tokens, want.cost_usd]
            return want

    def settle(self, session_id: str | None, want: Reservation,
               usage: dict[str, Any] | None) -> None:
        """The call is over: swap its estimate for what it cost (the prompt's estimated
        tokens when the runner reported none)."""
        spent = total_tokens(usage) if usage else want.prompt_tokens
        cost = float((usage or {}).get("cost_usd") or 0.0)
        with self._changed:
            self.run.settle(want, spent, cost)
            if self.limits.any("session_"):
                self._session_update(session_id, lambda spend: spend.settle(want, spent, cost))
            self._changed.notify_all()

    def _over(self, prefix: str, where: str, spent: Spend, want: Reservation,
              hold: bool = False) -> str | None:
        """Why the call ``want`` must not start, given ``spent`` (with what its running
        calls hold); None when it fits every limit (and, with ``hold``, it is held there)."""
        calls, max_tokens, max_cost = (getattr(self.limits, f"{prefix}max_{k}")
                                       for k in ("judge_calls", "tokens", "cost_usd"))
        tokens, cost = want.tokens, want.cost_usd
        held = spent.held.values()  # the running calls' estimates count as spent
        spent_calls = spent.judge_calls + len(held)
        spent_tokens = int(spent.tokens + sum(h[0] for h in held))
        spent_cost = spent.cost_usd + sum(h[1] for h in held)
        if calls is not None and spent_calls >= calls:
            return (f"budget {prefix}max_judge_calls ({calls}) is spent: {spent_calls} of "
                    f"{calls} judge calls made {where}; this check was not judged")
        if max_tokens is not None and spent_tokens + tokens > max_tokens:
            return (f"budget {prefix}max_tokens ({max_tokens:,}) would be exceeded: "
                    f"{spent_tokens:,} tokens spent or held {where}, and this call is estimated "
                    f"at {tokens:,} more; this check was not judged")
        if max_cost is not None and (spent_cost >= max_cost or spent_cost + cost > max_cost):
            return (f"budget {prefix}max_cost_usd (${max_cost:.4f}) would be exceeded: "
                    f"${spent_cost:.4f} spent or held {where}, and this call is estimated at "
                    f"${cost:.4f} more; this check was not judged")
        if hold:
            spent.held[want.key] = [want.tokens, want.cost_usd]
        return None

    # -- the session's spend, kept across hook calls --------------------------

    def session_path(self, session_id: str | None) -> str:
        return os.path.join(state_dir(self.state_dir), f"{session_key(session_id)}.spend.json")

    def _session_update(self, session_id: str | None,
                        change: Callable[[Spend], str | None]) -> str | None:
        """Read the session's spend, ``change`` it (a str: why not) and write it back, under
        an exclusive lock. Running calls are held there by process and call, so a call in
        another hook process of the session counts; a process that died holds nothing."""
        path = self.session_path(session_id)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path + ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                spend = _read_record(path)
            except ValueError as exc:
                # Fail closed: an unreadable record is a spent budget, said as such.
                return (f"budget: this agent session's spend record {path} cannot be read "
                        f"({exc}); delete it to reset the session's budget; "
                        "this check was not judged")
            problem = change(spend)
            if problem is None:
                write_atomic(path, json.dumps(asdict(spend)))
            return problem
        finally:
            os.close(fd)


@dataclass
class Reservation:
    """One running call's estimate, held against the limits until it settles."""

    key: str  # "<pid>.<n>": a dead process's calls are held no more
    prompt_tokens: int
    tokens: int
    cost_usd: float


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a signal 0 asks the kernel; /proc is Linux only)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's
        pass
    return True


def _read_record(path: str) -> Spend:
    """The session's spend, the calls still held (those of live processes) and its rates;
    a missing file is nothing spent. ValueError (one line) when the record cannot be read
    or is not one slopjudge writes: the caller fails closed."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except FileNotFoundError:
        return Spend()
    except OSError as exc:
        raise ValueError(exc.strerror or str(exc)) from None
    except ValueError as exc:
        raise ValueError(f"not JSON: {exc}") from None
    try:
        calls, tokens, cost_usd = (_count(data[k]) for k in ("judge_calls", "tokens", "cost_usd"))
        held = {key: [_count(t), _count(c)] for key, (t, c)
                in data["held"].items() if _alive(int(key.split(".", 1)[0]))}
        rates = data.get("rates")
        rates = None if rates is None else Rates(_count(rates["tokens"]), _count(rates["cost_usd"]))
    except (TypeError, KeyError, ValueError, AttributeError) as exc:
        raise ValueError(f"not a spend record ({type(exc).__name__}: {exc})") from None
    return Spend(int(calls), int(tokens), cost_usd, held, rates)


def _count(value: Any) -> float:
    """A number the record holds: non-negative (so never NaN), else ValueError."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise ValueError(f"{value!r} is not a count")
    return float(value)
