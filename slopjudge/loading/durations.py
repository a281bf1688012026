"""Go-style durations (``30s``, ``2m``, ``1m30s``, ``500ms``, ``1h``) as seconds.

Rule files borrow sloprail's duration syntax, so a timeout written for one
reads the same in the other. A bare number is refused: ``timeout: 30`` could
mean seconds or minutes, and guessing wrong either kills a good check early
or lets a hung one hold the hook.
"""

from __future__ import annotations

import re

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0,
          "h": 3600.0}
_PART = r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)"
_BARE_NUMBER = re.compile(r"[+-]?(\d+(?:\.\d*)?|\.\d+)")


class DurationError(ValueError):
    """A duration that cannot be read; the message is one line for a person."""


def parse_duration(value: object) -> float:
    """Seconds in ``value`` (``<number><unit>`` parts, as Go's ``time.ParseDuration``
    reads them, totalling > 0); raise :class:`DurationError` saying how to write it."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        n = str(int(value)) if float(value).is_integer() else str(value)
        raise DurationError(f"`{n}` has no unit; write `{n}s` (or `2m`, `500ms`, `1h`)")
    if not isinstance(value, str):
        raise DurationError(f"`{value}` is not a duration; write one like `30s` or `2m`")
    text = value.strip()
    if _BARE_NUMBER.fullmatch(text):
        n = text.lstrip("+")
        raise DurationError(f"`{text}` has no unit; write `{n}s` (or `2m`, `500ms`, `1h`)")
    if text.startswith("-"):
        raise DurationError(f"`{text}` is negative; a timeout must be > 0")
    body = text[1:] if text.startswith("+") else text
    if not body:
        raise DurationError("an empty duration; write one like `30s` or `2m`")
    if not re.fullmatch(f"(?:{_PART})+", body):
        raise DurationError(
            f"`{text}` is not a duration; write one like `30s`, `2m`, `1m30s`, `500ms` or `1h`")
    total = sum(float(n) * _UNITS[unit] for n, unit in re.findall(_PART, body))
    if total <= 0:
        raise DurationError(f"`{text}` is zero; a timeout must be > 0")
    return total
