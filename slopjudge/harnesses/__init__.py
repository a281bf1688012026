"""Coding agents slopjudge plugs into: one module per agent (its hook payload reader,
answer writer, install writer and judge command) and one registry, ``registry.HARNESSES``
(the names ``install``, ``hook --harness`` and ``slopjudge-agent --harness`` take).
CONTRIBUTING.md says how to add one. Standard library only at import time, and no
``typing``: the PreToolUse hook imports this package on every tool call.
"""
