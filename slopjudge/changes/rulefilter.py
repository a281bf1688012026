"""Rule filtering: which changed files a rule's ``paths``/``exclude`` admit, and its diff."""

from __future__ import annotations

from slopjudge.model import Changeset, FileChange
from slopjudge.pathglob import match, matcher

TYPE_CHECKING = False  # not typing's: the PreToolUse fast path imports this module
if TYPE_CHECKING:
    from typing import Any


def split(
    changeset: Changeset, paths: list[str], exclude: list[str]
) -> tuple[list[FileChange], list[dict[str, str]]]:
    """Files a rule's ``paths``/``exclude`` admit, and the others as
    ``{"path", "status"}``. A file is admitted when its path (or, for a
    rename, its old path) matches ``paths`` (empty: everything) and its path
    does not match ``exclude``.

    A proposed edit outside the workspace carries an absolute path: ``paths``
    are workspace-relative, so only a rule with no ``paths`` (or an absolute
    pattern) sees it. A rule guarding where files are written still can.
    """
    files: list[FileChange] = []
    others: list[dict[str, str]] = []
    admits = matcher(tuple(paths))
    excludes = matcher(tuple(exclude))
    for f in changeset.files:
        if f.path.startswith("/"):
            wanted = not paths or any(p.startswith("/") and match(p, f.path) for p in paths)
        else:
            wanted = not paths or admits(f.path) or (
            f.status == "R" and f.old_path is not None and admits(f.old_path))
        if wanted and not (exclude and excludes(f.path)):
            files.append(f)
        else:
            others.append({"path": f.path, "status": f.status})
    return files, others


def unified_diff(files: list[FileChange]) -> str:
    """The whole diff a rule sees: each of its files' diffs in order."""
    out: list[str] = []
    for f in files:
        if not f.diff:
            continue
        out.append(f.diff if f.diff.endswith("\n") else f.diff + "\n")
    return "".join(out)


def by_match(
    source: str, files: list[FileChange], others: list[dict[str, str]],
    event: dict[str, Any],
) -> tuple[list[FileChange], list[dict[str, str]], list[str]]:
    """The files a rule's ``match`` admits (loading/matchexpr.py), evaluated per file on
    sloprail's file scope: ``path``, ``status``, ``markers`` (the new content's),
    ``oldMarkers``, ``event`` (that file's event) and ``tool``. A file it cannot be
    decided on is kept and named in the third list: the caller fails closed on it."""
    from slopjudge.loading.matchexpr import MatchRuntimeError, compile_match
    from slopjudge.payload import file_event

    match = compile_match(source)
    kept: list[FileChange] = []
    problems: list[str] = []
    for f in files:
        ev = file_event(event, {"path": f.path, "status": f.status, "oldPath": f.old_path,
                                "oldContent": f.old_content, "newContent": f.new_content})
        env = {"path": f.path, "status": f.status, "markers": ev["newMarkers"],
               "oldMarkers": ev["oldMarkers"], "event": ev, "tool": event.get("tool_name")}
        try:
            admitted = match.evaluate(env)
        except MatchRuntimeError as exc:
            problems.append(f"{f.path}: {exc}")
            admitted = True
        if admitted:
            kept.append(f)
        else:
            others.append({"path": f.path, "status": f.status})
    return kept, others, problems


def event_matches(source: str, event: dict[str, Any]) -> bool:
    """A rule's ``match`` on an event about no file: a shell command is sloprail's
    ``PreCommandInvoke`` (``event.raw``, ``event.invocations``), another tool call its
    ``PreToolUse``, a stop ``Stop``. Raises MatchRuntimeError when it cannot decide."""
    from slopjudge.loading.matchexpr import compile_match

    kind = event.get("kind")
    if kind == "pre-tool":
        kind = "PreCommandInvoke" if event.get("raw") is not None else "PreToolUse"
    elif kind in ("stop", "subagent-stop"):
        kind = "Stop"
    ev = dict(event, kind=kind, on=event.get("kind"), tool=event.get("tool_name"))
    return compile_match(source).evaluate({"event": ev, "tool": event.get("tool_name")})
