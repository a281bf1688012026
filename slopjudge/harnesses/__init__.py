"""Coding agents slopjudge plugs into: one module per agent, one registry.

An agent (a *harness*) is everything slopjudge must know to guard one coding
agent and to run it as a judge, behind :class:`AgentHarness`:

- its **hook payload reader** (:meth:`~AgentHarness.read_payload`): the agent's
  payload as the hooks read it (Claude Code's shape);
- its **answer writer**: how a PreToolUse deny or ask, a Stop block and the
  notice at the end of a blocked turn are spelled so that the agent acts on
  them and the person sees them;
- its **install writer**: the settings file and hook events ``slopjudge
  install`` writes, what it tells the person after, and what ``slopjudge
  doctor`` checks (Codex: which hooks it trusts);
- its **judge command** (:meth:`~AgentHarness.judge`): the
  :class:`~slopjudge.hookspec.Harness` that runs it as a judge.

``registry.HARNESSES`` maps a name (``slopjudge install NAME``, ``slopjudge hook POINT
--harness NAME``, ``slopjudge-agent --harness NAME``) to an instance;
``mypy --strict`` holds every entry to the protocol. Adding Cursor or Gemini CLI
is one module here plus its entry; a test registers one from a module of its own
(``register``).

Standard library only at import time, and no ``typing``: the PreToolUse hook
imports this package on every tool call.
"""
