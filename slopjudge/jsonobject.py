"""JSON read and written through json's C scanner and encoder without importing
:mod:`json` (its decoder's regular expressions cost a PreToolUse hook), and a child's
whole output read as one JSON object or nothing: a reply that is not exactly one
object (a script check's, a harness's) is not an answer."""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: the hooks' fast path reads JSON through here
if TYPE_CHECKING:
    from typing import Any

_BLANKS = " \t\n\r"
_SCAN: Any = None
_ENCODERS: dict[Any, Any] = {}


def _scanner() -> Any:
    """``json``'s own C scanner, set up as ``json.loads`` sets it up; False without it."""
    global _SCAN
    if _SCAN is None:
        try:
            from _json import make_scanner
        except ImportError:
            _SCAN = False
            return _SCAN

        class Context:  # what JSONDecoder() passes the scanner by default
            strict = True
            object_hook = None
            object_pairs_hook = None
            parse_float = float
            parse_int = int
            parse_constant = {"-Infinity": float("-inf"), "Infinity": float("inf"),
                              "NaN": float("nan")}.__getitem__

        _SCAN = make_scanner(Context())  # type: ignore[arg-type]
    return _SCAN


def loads(data: str | bytes) -> Any:
    """``json.loads(data)``: the same value, and the same error (``json`` reports it)."""
    if scan := _scanner():
        try:
            text = data.decode("utf-8") if isinstance(data, bytes) else data
            value, end = scan(text, len(text) - len(text.lstrip(_BLANKS)))
            if not text[end:].strip(_BLANKS):
                return value
        except Exception:  # noqa: BLE001 - json says what is wrong, below
            pass
    import json

    return json.loads(data)


def _not_serializable(value: object) -> Any:
    raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")


def dumps(value: Any, *, ensure_ascii: bool = True,
          separators: tuple[str, str] = (", ", ": "), default: Any = None) -> str:
    """``json.dumps(value, ensure_ascii=..., separators=..., default=...)``: the same
    text, through the C encoder ``json.dumps`` uses, set up as it sets it up
    (``json`` itself where that encoder is missing)."""
    key = (ensure_ascii, separators, default)
    encode = _ENCODERS.get(key)
    if encode is None:
        try:
            from _json import encode_basestring, encode_basestring_ascii, make_encoder

            quote = encode_basestring_ascii if ensure_ascii else encode_basestring
            args = (default or _not_serializable, quote, None, separators[1], separators[0],
                    False, False, True)  # indent, ..., sort_keys, skipkeys, allow_nan
            make_encoder({}, *args)  # this Python's signature, checked once

            def encode(value: Any) -> str:
                # A new encoder per call: its circular-reference markers are per call in json.
                return "".join(make_encoder({}, *args)(value, 0))
        except (ImportError, TypeError):
            import json

            def encode(value: Any) -> str:
                return json.dumps(value, ensure_ascii=ensure_ascii, separators=separators,
                                  default=default)
        _ENCODERS[key] = encode
    return str(encode(value))


def parse_json_object(text: str) -> dict[str, Any] | None:
    """``text`` (surrounding blanks aside) as a JSON object; None when it is anything else."""
    text = text.strip()
    if not text.startswith("{"):
        return None
    try:
        value = loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
