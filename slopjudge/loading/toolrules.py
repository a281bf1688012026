"""Harness tool rules: ``Read``, ``Grep``, ``Bash(git show:*)``, ``mcp__*``.

A judge's ``allowed_tools``/``disallowed_tools`` and a rule's ``tools`` hold
one rule per item. The runner joins them with spaces into ONE argument
(sr-agent's contract), so an item that is really two rules, or whose
parentheses do not balance, would silently change what the judge may do;
slopjudge refuses such items at load time instead.
"""

from __future__ import annotations

import re
from fnmatch import fnmatchcase

# Tool names: built-ins (Read, Bash), MCP tools (mcp__server-name__tool), globs.
_NAME = re.compile(r"[A-Za-z0-9_*?][A-Za-z0-9_*?.:\-]*")
# The tools a judge needs to write its verdict file.
_VERDICT_TOOLS = ("Write", "Edit")


def _unbalanced(text: str) -> str | None:
    """Why the parentheses in ``text`` do not balance, or None when they do."""
    depth = 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                return "a `)` closes nothing"
    return "a `(` is never closed" if depth else None


def split_tool_rules(text: str) -> list[str]:
    """Split a comma/whitespace separated list, keeping ``Bash(git show:*)`` whole.

    Raise ValueError when the parentheses do not balance.
    """
    if _unbalanced(text):
        raise ValueError(f"unbalanced parentheses in `{text}`")
    rules: list[str] = []
    depth = 0
    current: list[str] = []
    for ch in text:
        depth += (ch == "(") - (ch == ")")
        if depth == 0 and (ch.isspace() or ch == ","):
            if current:
                rules.append("".join(current))
                current = []
            continue
        current.append(ch)
    if current:
        rules.append("".join(current))
    return rules


def parse_tool_rule(item: str) -> tuple[str, str | None]:
    """``Bash(git show:*)`` -> (``Bash``, ``git show:*``); ``Read`` -> (``Read``, None).

    Assumes :func:`tool_rule_problem` found nothing.
    """
    if "(" not in item:
        return item, None
    name, _, rest = item.partition("(")
    return name, rest[: rest.rfind(")")]


def tool_rule_problem(item: object) -> str | None:
    """Why ``item`` is not exactly one well-formed tool rule, or None when it is."""
    if not isinstance(item, str):
        return f"a tool rule must be a string, not {type(item).__name__}"
    if not item.strip():
        return "an empty tool rule"
    if item != item.strip():
        return f"`{item}` has surrounding spaces; write `{item.strip()}`"
    unbalanced = _unbalanced(item)
    if unbalanced:
        return f"unbalanced parentheses in `{item}`: {unbalanced}"
    parts = split_tool_rules(item)
    if len(parts) > 1:
        listed = ", ".join(f"`{p}`" for p in parts)
        return f"two rules in one item (`{item}`); write one rule per item: {listed}"
    name, spec = (item, None)
    if "(" in item:
        name, _, rest = item.partition("(")
        close = rest.rfind(")")
        if rest[close + 1 :]:
            return f"unexpected text after `)` in `{item}`"
        spec = rest[:close]
        if not spec.strip():
            return f"empty parentheses in `{item}`; write `{name}` to mean every use"
    if not name:
        return f"`{item}` has no tool name before `(`"
    if not _NAME.fullmatch(name):
        return f"`{name}` is not a tool name (letters, digits, `_`, `-`, `.`, `:`, `*`)"
    return None


def _covers_everything(spec: str | None) -> bool:
    # `Write`, `Write(*)`, `Edit(/**)`, `Edit(//**)`: nothing but wildcards and slashes.
    return spec is None or (spec.strip() != "" and set(spec.strip()) <= {"*", "/"})


def denies_verdict_write(item: str) -> bool:
    """True when a ``disallowed_tools`` item would stop the judge writing its verdict."""
    if tool_rule_problem(item) is not None:
        return False
    name, spec = parse_tool_rule(item)
    if not any(fnmatchcase(tool, name) for tool in _VERDICT_TOOLS):
        return False
    return _covers_everything(spec)

