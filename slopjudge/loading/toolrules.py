"""Harness tool rules (``Read``, ``Bash(git show:*)``, ``mcp__*``), one per item: the
runner joins them into ONE argument (sr-agent's contract), so an item that is two
rules, or whose parentheses do not balance, would silently change what the judge may do.
"""

from __future__ import annotations

import re
from fnmatch import fnmatchcase

# Tool names: built-ins (Read, Bash), MCP tools (mcp__server-name__tool), globs.
_NAME = re.compile(r"[A-Za-z0-9_*?][A-Za-z0-9_*?.:\-]*")


def split_tool_rules(text: str) -> list[str]:
    """Split a comma/whitespace separated list, keeping ``Bash(git show:*)`` whole;
    ValueError when the parentheses do not balance."""
    rules, depth = [""], 0
    for ch in text:
        depth += (ch == "(") - (ch == ")")
        if depth < 0:
            raise ValueError(f"unbalanced parentheses in `{text}`: a `)` closes nothing")
        if depth == 0 and (ch.isspace() or ch == ","):
            rules.append("")
        else:
            rules[-1] += ch
    if depth:
        raise ValueError(f"unbalanced parentheses in `{text}`: a `(` is never closed")
    return [r for r in rules if r]


def tool_rule_problem(item: object, *, deny: bool = False) -> str | None:
    """Why ``item`` is not exactly one well-formed tool rule (``deny``: one a judge's
    ``disallowed_tools`` may hold), or None when it is."""
    if not isinstance(item, str):
        return f"a tool rule must be a string, not {type(item).__name__}"
    if not item.strip():
        return "an empty tool rule"
    if item != item.strip():
        return f"`{item}` has surrounding spaces; write `{item.strip()}`"
    try:
        parts = split_tool_rules(item)
    except ValueError as exc:
        return str(exc)
    if len(parts) > 1:
        listed = ", ".join(f"`{p}`" for p in parts)
        return f"two rules in one item (`{item}`); write one rule per item: {listed}"
    name, paren, rest = item.partition("(")
    if paren:
        if not rest.endswith(")"):
            return f"unexpected text after `)` in `{item}`"
        if not rest[:-1].strip():
            return f"empty parentheses in `{item}`; write `{name}` to mean every use"
    if not name:
        return f"`{item}` has no tool name before `(`"
    if not _NAME.fullmatch(name):
        return f"`{name}` is not a tool name (letters, digits, `_`, `-`, `.`, `:`, `*`)"
    # A name matching Write or Edit, with only `*` and `/` in (), takes every path.
    if deny and any(fnmatchcase(tool, name) for tool in ("Write", "Edit")) and (
            not paren or set(rest[:-1].strip()) <= {"*", "/"}):
        return (f"`{item}` denies the judge writing its verdict file; "
                "deny narrower paths instead, e.g. `Write(src/**)`")
    return None
