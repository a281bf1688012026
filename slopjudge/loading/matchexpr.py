"""A rule's ``match:``: sloprail's match expressions (expr-lang's grammar, the part rules
use: docs/sloprail.md). A wrong type is a runtime error, never "no match": the caller
fails closed on it. Standard library only: the PreToolUse hook evaluates these.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # not typing's: the PreToolUse fast path imports this module
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    Fn = Callable[[dict[str, Any], Any], Any]


class MatchError(Exception):
    """A match expression that does not compile at ``offset``."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.offset = offset


class MatchRuntimeError(Exception):
    pass


_NO_ELEM = object()
_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)
  | (?P<num>\d+(?:\.\d+)?)
  | (?P<name>[A-Za-z_$][A-Za-z0-9_$]*)
  | (?P<op>\?\?|\?\.|&&|\|\||==|!=|<=|>=|[<>!.()\[\],\#+\-])
""", re.VERBOSE | re.DOTALL)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "0": "\0",
            "a": "\a", "b": "\b", "f": "\f", "v": "\v"}
_WORD_OPS = ("in", "matches", "contains", "startsWith", "endsWith")
_BINARY = {"or": 10, "||": 10, "and": 15, "&&": 15, "==": 20, "!=": 20, "<": 20, ">": 20,
           "<=": 20, ">=": 20, **{w: 20 for w in _WORD_OPS}, "+": 30, "-": 30, "??": 500}
_UNARY_PRECEDENCE = 50
_PREDICATES = ("any", "all", "none", "one", "filter", "map", "count")
_FUNCTIONS = (*_PREDICATES, "len", "lower", "upper", "trim")


def _unquote(text: str, at: int) -> str:
    if text[0] == "`":
        return text[1:-1]

    def escape(m: re.Match[str]) -> str:
        esc = m.group(1)
        if len(esc) == 5:
            return chr(int(esc[1:], 16))
        if esc not in _ESCAPES:
            raise MatchError(f"unknown escape `\\{esc}` in a string", at + m.start() + 1)
        return _ESCAPES[esc]

    return re.sub(r"\\(u[0-9a-fA-F]{4}|.)", escape, text[1:-1], flags=re.DOTALL)


def _tokens(src: str) -> list[tuple[str, Any, int]]:
    out: list[tuple[str, Any, int]] = []
    at = 0
    while at < len(src):
        m = _TOKEN.match(src, at)
        if m is None:
            raise MatchError(f"unexpected `{src[at]}`", at)
        kind = m.lastgroup or ""
        text = m.group()
        if kind == "str":
            out.append(("lit", _unquote(text, at), at))
        elif kind == "num":
            out.append(("lit", float(text) if "." in text else int(text), at))
        elif kind == "name" and text in ("true", "false", "nil"):
            out.append(("lit", {"true": True, "false": False, "nil": None}[text], at))
        elif kind in ("name", "op"):
            out.append((kind, text, at))
        at = m.end()
    out.append(("end", "", len(src)))
    return out


def regex(pattern: str) -> re.Pattern[str]:
    """An RE2 pattern as Python reads it (``\\z`` is Python's ``\\Z``)."""
    return re.compile(re.sub(r"(?<!\\)((?:\\\\)*)\\z", r"\1\\Z", pattern))


class _Parser:
    """Pratt parser over the tokens; every node is a closure ``(env, elem) -> value``."""

    def __init__(self, src: str) -> None:
        self.toks = _tokens(src)
        self.i = 0
        self.predicate_depth = 0

    def peek(self, ahead: int = 0) -> tuple[str, Any, int]:
        return self.toks[min(self.i + ahead, len(self.toks) - 1)]

    def take(self) -> tuple[str, Any, int]:
        tok = self.toks[self.i]
        self.i += 1
        return tok

    def at_op(self, text: str) -> bool:
        kind, value, _ = self.peek()
        return kind == "op" and value == text

    def expect(self, text: str) -> None:
        kind, value, at = self.take()
        if kind != "op" or value != text:
            raise MatchError(f"expected `{text}`, found {_shown(kind, value)}", at)

    def parse(self) -> Fn:
        node = self.expr(0)
        kind, value, at = self.peek()
        if kind != "end":
            raise MatchError(f"unexpected {_shown(kind, value)}", at)
        return node

    def binary_op(self) -> tuple[str, int, int] | None:
        """The binary operator at the cursor: (name, precedence, tokens it spans)."""
        kind, value, _ = self.peek()
        if kind in ("op", "name") and value in _BINARY:
            return value, _BINARY[value], 1
        if kind == "name" and value == "not":
            k2, v2, _ = self.peek(1)
            if k2 == "name" and v2 in _WORD_OPS:
                return "not " + v2, 20, 2
        return None

    def expr(self, min_prec: int) -> Fn:
        left = self.unary()
        while True:
            op = self.binary_op()
            if op is None or op[1] <= min_prec:
                return left
            name, prec, span = op
            at = self.peek()[2]
            self.i += span
            right = self.expr(prec)
            left = _binary(name, left, right, at, self._literal_regex(name, right, at))

    def _literal_regex(self, name: str, right: Fn, at: int) -> re.Pattern[str] | None:
        if not name.endswith("matches") or not hasattr(right, "literal"):
            return None
        value = getattr(right, "literal")  # noqa: B009 (set on a closure by _const)
        if not isinstance(value, str):
            raise MatchError("`matches` needs a string pattern", at)
        try:
            return regex(value)
        except re.error as exc:
            raise MatchError(f"bad regular expression {value!r}: {exc}", at) from None

    def unary(self) -> Fn:
        kind, value, at = self.peek()
        if (kind == "name" and value == "not") or (kind == "op" and value in ("!", "-")):
            self.take()
            operand = self.expr(_UNARY_PRECEDENCE if value != "-" else 90)
            if value == "-":
                return lambda env, el: -_number(operand(env, el), at)
            return lambda env, el: not _bool(operand(env, el), "not", at)
        return self.postfix(self.primary())

    def primary(self) -> Fn:
        kind, value, at = self.take()
        if kind == "lit":
            return _const(value)
        if kind == "op" and value == "(":
            node = self.expr(0)
            self.expect(")")
            return node
        if kind == "op" and value == "[":
            items = self.items("]")
            return lambda env, el: [f(env, el) for f in items]
        if kind == "op" and value in ("#", "."):
            if not self.predicate_depth:
                raise MatchError(f"`{value}` is the current element: only inside a "
                                 "predicate such as any(list, .kind == \"x\")", at)
            if value == "#":
                return lambda env, el: el
            name, at2 = self.field_name(".")
            return lambda env, el: _member(el, name, at2, False)
        if kind == "name":
            if self.at_op("("):
                return self.call(value, at)
            if value not in NAMES:
                known = ", ".join(sorted(NAMES))
                raise MatchError(f"unknown name `{value}` (this rule's match reads {known})", at)
            return lambda env, el: env.get(value)
        raise MatchError(f"unexpected {_shown(kind, value)}", at)

    def call(self, name: str, at: int) -> Fn:
        if name not in _FUNCTIONS:
            raise MatchError(f"unknown function `{name}` ({', '.join(_FUNCTIONS)})", at)
        self.expect("(")
        args = self.items(")", predicate=name in _PREDICATES)
        want = 2 if name in _PREDICATES else 1
        if len(args) != want:
            raise MatchError(f"`{name}` takes {want} argument{'s' * (want > 1)}, "
                             f"not {len(args)}", at)
        return _function(name, args, at)

    def postfix(self, node: Fn) -> Fn:
        while True:
            kind, value, at = self.peek()
            if kind != "op" or value not in (".", "?.", "["):
                return node
            self.take()
            if value == "[":
                index = self.expr(0)
                self.expect("]")
                node = _index(node, index, at)
                continue
            name, at2 = self.field_name(value)
            node = _field(node, name, at2, value == "?.")

    def items(self, close: str, predicate: bool = False) -> list[Fn]:
        """Expressions separated by commas up to ``close``; a predicate's second one is
        where ``#`` and ``.field`` name the current element."""
        out: list[Fn] = []
        while not self.at_op(close):
            inner = predicate and len(out) == 1
            self.predicate_depth += inner
            out.append(self.expr(0))
            self.predicate_depth -= inner
            if not self.at_op(","):
                break
            self.take()
        self.expect(close)
        return out

    def field_name(self, after: str) -> tuple[str, int]:
        kind, name, at = self.take()
        if kind != "name":
            raise MatchError(f"expected a field name after `{after}`, found "
                             f"{_shown(kind, name)}", at)
        return name, at


def _shown(kind: str, value: Any) -> str:
    return "the end of the expression" if kind == "end" else f"`{value}`"


def _const(value: Any) -> Fn:
    def fn(env: dict[str, Any], el: Any) -> Any:
        return value

    fn.literal = value  # type: ignore[attr-defined]
    return fn


def _type(value: Any) -> str:
    return "nil" if value is None else {bool: "bool", int: "int", float: "float", str: "string",
                                        list: "array", dict: "map"}.get(type(value), "value")


def _bool(value: Any, op: str, at: int) -> bool:
    if not isinstance(value, bool):
        raise MatchRuntimeError(f"`{op}` at {at + 1} needs a bool, got {_type(value)}")
    return value


def _number(value: Any, at: int) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise MatchRuntimeError(f"a number is needed at {at + 1}, got {_type(value)}")
    return value


def _string(value: Any, op: str, at: int) -> str:
    if not isinstance(value, str):
        raise MatchRuntimeError(f"`{op}` at {at + 1} needs a string, got {_type(value)}")
    return value


def _member(obj: Any, name: str, at: int, optional: bool) -> Any:
    if obj is None and optional:
        return None
    if isinstance(obj, dict):
        return obj.get(name)
    raise MatchRuntimeError(f"cannot read `.{name}` (at {at + 1}) from {_type(obj)}")


def _field(node: Fn, name: str, at: int, optional: bool) -> Fn:
    return lambda env, el: _member(node(env, el), name, at, optional)


def _index(node: Fn, index: Fn, at: int) -> Fn:
    def fn(env: dict[str, Any], el: Any) -> Any:
        obj, key = node(env, el), index(env, el)
        if isinstance(obj, dict) and isinstance(key, str):
            return obj.get(key)
        if isinstance(obj, (list, str)) and isinstance(key, int) and not isinstance(key, bool):
            if -len(obj) <= key < len(obj):
                return obj[key]
            raise MatchRuntimeError(f"index {key} (at {at + 1}) is out of range")
        raise MatchRuntimeError(f"cannot index {_type(obj)} with {_type(key)} (at {at + 1})")

    return fn


def _compare(op: str, a: Any, b: Any, at: int) -> bool:
    if op in ("==", "!="):
        same = a == b and (isinstance(a, bool) == isinstance(b, bool))
        return same if op == "==" else not same
    if not (isinstance(a, str) and isinstance(b, str)):
        a, b = _number(a, at), _number(b, at)
    return bool(a < b if op == "<" else a > b if op == ">" else a <= b if op == "<=" else a >= b)


def _word(op: str, a: Any, b: Any, at: int, pattern: re.Pattern[str] | None) -> bool:
    if op == "in":
        if isinstance(b, list):
            return any(_compare("==", a, x, at) for x in b)
        if isinstance(b, dict):
            if isinstance(a, (list, dict)):  # unhashable: never a key
                raise MatchRuntimeError(
                    f"`in` (at {at + 1}) needs a key to look up in a map, got {_type(a)}")
            return a in b
        raise MatchRuntimeError(f"`in` (at {at + 1}) needs an array or a map, got {_type(b)}")
    text = _string(a, op, at)
    if op == "matches":
        if pattern is None:
            try:
                pattern = regex(_string(b, op, at))
            except re.error as exc:
                raise MatchRuntimeError(f"bad regular expression {b!r}: {exc}") from None
        return pattern.search(text) is not None
    other = _string(b, op, at)
    if op == "contains":
        return other in text
    return text.startswith(other) if op == "startsWith" else text.endswith(other)


def _binary(op: str, left: Fn, right: Fn, at: int, pattern: re.Pattern[str] | None) -> Fn:
    if op in ("or", "||", "and", "&&"):
        stop = op in ("or", "||")

        def logic(env: dict[str, Any], el: Any) -> bool:
            if _bool(left(env, el), op, at) == stop:
                return stop
            return _bool(right(env, el), op, at)

        return logic
    if op == "??":
        def coalesce(env: dict[str, Any], el: Any) -> Any:
            value = left(env, el)
            return right(env, el) if value is None else value

        return coalesce
    if op in ("+", "-"):
        def arith(env: dict[str, Any], el: Any) -> Any:
            a, b = left(env, el), right(env, el)
            if op == "+" and isinstance(a, str) and isinstance(b, str):
                return a + b
            return _number(a, at) + _number(b, at) * (1 if op == "+" else -1)

        return arith
    negate = op.startswith("not ")
    word = op[4:] if negate else op

    def test(env: dict[str, Any], el: Any) -> bool:
        a, b = left(env, el), right(env, el)
        got = (_word(word, a, b, at, pattern) if word in _WORD_OPS
               else _compare(word, a, b, at))
        return not got if negate else got

    return test


def _function(name: str, args: list[Fn], at: int) -> Fn:
    if name in _PREDICATES:
        items_fn, pred = args

        def over(env: dict[str, Any], el: Any) -> Any:
            items = items_fn(env, el)
            if not isinstance(items, list):
                raise MatchRuntimeError(f"`{name}` (at {at + 1}) needs an array, "
                                        f"got {_type(items)}")
            if name == "map":
                return [pred(env, x) for x in items]
            hits = [x for x in items if _bool(pred(env, x), name, at)]
            return {"any": bool(hits), "all": len(hits) == len(items), "none": not hits,
                    "one": len(hits) == 1, "filter": hits, "count": len(hits)}[name]

        return over
    (arg,) = args

    def one(env: dict[str, Any], el: Any) -> Any:
        value = arg(env, el)
        if name == "len":
            if isinstance(value, (str, list, dict)):
                return len(value)
            raise MatchRuntimeError(f"`len` (at {at + 1}) of {_type(value)}")
        text = _string(value, name, at)
        return {"lower": text.lower, "upper": text.upper, "trim": text.strip}[name]()

    return one


class Match:
    def __init__(self, src: str) -> None:
        self._fn = _Parser(src).parse()

    def evaluate(self, env: dict[str, Any]) -> bool:
        """True or False; :class:`MatchRuntimeError` when it cannot be decided."""
        try:
            value = self._fn(env, _NO_ELEM)
        except RecursionError:
            raise MatchRuntimeError("the expression nests too deeply") from None
        if not isinstance(value, bool):
            raise MatchRuntimeError(f"the expression gives {_type(value)}, not a bool")
        return value


# The names a rule's match reads: the file's own facts (on an event about files),
# the event itself, and the tool call.
NAMES = frozenset({"path", "status", "markers", "oldMarkers", "trailers", "event", "tool"})
_COMPILED: dict[str, Match] = {}


def compile_match(src: str) -> Match:
    """``src`` compiled (cached per process); :class:`MatchError` when it does not compile."""
    found = _COMPILED.get(src)
    if found is None:
        if not src.strip():
            raise MatchError("an empty match: leave `match` out to match everything", 0)
        try:
            found = _COMPILED[src] = Match(src)
        except RecursionError:
            raise MatchError("the expression nests too deeply", 0) from None
    return found
