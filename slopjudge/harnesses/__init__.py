"""Coding agents slopjudge plugs into: one module per agent, one registry.

Each module holds an object behind ``registry.AgentHarness``: the agent's hook
payload reader, its answer writer, its install writer (settings file, hook events,
trust checks for ``doctor``) and its judge command. ``registry.HARNESSES`` maps a
name (``slopjudge install NAME``, ``hook POINT --harness NAME``, ``slopjudge-agent
--harness NAME``) to it. CONTRIBUTING.md says how to add one.

Standard library only at import time, and no ``typing``: the PreToolUse hook
imports this package on every tool call.
"""
