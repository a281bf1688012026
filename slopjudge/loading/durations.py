"""Go-style durations (``30s``, ``2m``, ``1m30s``, ``500ms``, ``1h``) as seconds.

Rule files borrow sloprail's duration syntax, so a timeout written for one
reads the same in the other. A bare number is refused: ``timeout: 30`` could
mean seconds or minutes, and guessing wrong either kills a good check early
or lets a hung one hold the hook.
"""

from __future__ import annotations

import re

_UNITS: dict[str, float] = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_BARE_NUMBER = re.compile(r"[+-]?(\d+(?:\.\d*)?|\.\d+)")


class DurationError(ValueError):
    """A duration that cannot be read; the message is one line for a person."""


def _number_text(value: float | int) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def parse_duration(value: object) -> float:
    """Seconds in ``value``; raise :class:`DurationError` saying how to write it.

    Accepts a sequence of ``<number><unit>`` parts (units ns, us, ms, s, m, h),
    as Go's ``time.ParseDuration`` does, and requires the total to be > 0.
    """
    if isinstance(value, bool) or value is None:
        raise DurationError(f"`{value}` is not a duration; write one like `30s` or `2m`")
    if isinstance(value, (int, float)):
        n = _number_text(value)
        raise DurationError(f"`{n}` has no unit; write `{n}s` (or `2m`, `500ms`, `1h`)")
    if not isinstance(value, str):
        raise DurationError(f"`{value}` is not a duration; write one like `30s` or `2m`")
    text = value.strip()
    if _BARE_NUMBER.fullmatch(text):
        n = text.lstrip("+")
        raise DurationError(f"`{text}` has no unit; write `{n}s` (or `2m`, `500ms`, `1h`)")
    if text.startswith("-"):
        raise DurationError(f"`{text}` is negative; a timeout must be > 0")
    pos = 0
    total = 0.0
    parts = 0
    body = text[1:] if text.startswith("+") else text
    while pos < len(body):
        m = _PART.match(body, pos)
        if not m:
            raise DurationError(
                f"`{text}` is not a duration; write one like `30s`, `2m`, `1m30s`, `500ms` or `1h`"
            )
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
        parts += 1
    if parts == 0:
        raise DurationError("an empty duration; write one like `30s` or `2m`")
    if total <= 0:
        raise DurationError(f"`{text}` is zero; a timeout must be > 0")
    return total


def format_duration(seconds: float) -> str:
    """The shortest Go-style spelling of ``seconds`` (``90`` -> ``1m30s``)."""
    if seconds <= 0:
        return "0s"
    if seconds < 1:
        return f"{_number_text(round(seconds * 1000, 3))}ms"
    whole = int(seconds)
    frac = seconds - whole
    h, rest = divmod(whole, 3600)
    m, s = divmod(rest, 60)
    out = ""
    if h:
        out += f"{h}h"
    if m:
        out += f"{m}m"
    if s or frac or not out:
        out += f"{_number_text(round(s + frac, 3))}s"
    return out
