"""Rule filtering: which changed files a rule's ``paths``/``exclude`` admit, and its diff."""

from __future__ import annotations

from slopjudge.model import Changeset, FileChange
from slopjudge.pathglob import matcher


def split(
    changeset: Changeset, paths: list[str], exclude: list[str]
) -> tuple[list[FileChange], list[dict[str, str]]]:
    """Files a rule's ``paths`` (a rename's old path too; empty: all) and ``exclude``
    admit, and the others as ``{"path", "status"}``. A proposed edit outside the
    workspace has an absolute path: only a rule without ``paths``, or with an absolute
    one, sees it."""
    files: list[FileChange] = []
    others: list[dict[str, str]] = []
    admits = matcher(tuple(paths))
    absolute = matcher(tuple(p for p in paths if p.startswith("/")))
    excludes = matcher(tuple(exclude))
    for f in changeset.files:
        outside = f.path.startswith("/")
        wanted = not paths or (absolute if outside else admits)(f.path) or (
            not outside and f.status == "R" and f.old_path is not None and admits(f.old_path))
        if wanted and not excludes(f.path):
            files.append(f)
        else:
            others.append({"path": f.path, "status": f.status})
    return files, others


def unified_diff(files: list[FileChange]) -> str:
    """The whole diff a rule sees: each of its files' diffs in order."""
    return "".join(f.diff if f.diff.endswith("\n") else f.diff + "\n" for f in files if f.diff)
