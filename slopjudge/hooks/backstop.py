"""The Stop backstop: protected files that changed in the session refuse, whichever
tool changed them (protect-rules stops only the edits it can see before they run).

The protected set comes from the settings, not the rule pack, so deleting or breaking
protect-rules switches nothing off; only a person can accept such a change.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from slopjudge.hooks import common, state
from slopjudge.loading.config import pyproject_settings
from slopjudge.resources import in_package

if TYPE_CHECKING:
    from collections.abc import Iterable

    from slopjudge.changes.authored import Policy

# Paths relative to the workspace, whatever the settings say.
FIXED = (
    "RUBRIC.md", "slopjudge.yaml", "slopjudge.yml", ".claude/settings.json",
    ".claude/settings.local.json", ".codex/hooks.json", ".codex/config.toml",
    ".claude/hooks/slopjudge", ".codex/hooks/slopjudge",
)
FIXED_TREES = ("rules", ".slopjudge", "templates")


def protected(settings: Any) -> tuple[set[str], set[str]]:
    """The protected files and folders, relative to the workspace."""
    trees = {*FIXED_TREES, *_owned(settings, [settings.rules_dir, settings.state_dir,
                                               *_templates(settings)])}
    files = set(FIXED) | {f for f in _owned(settings, settings.config_files)
                          if not f.endswith("pyproject.toml")}
    if settings.rubric_path and not in_package(settings.rubric_path):
        files.update(_owned(settings, [settings.rubric_path]))
    return files, trees


def leave_out_policy(settings: Any, include_generated: bool = False) -> Policy:
    """Which files of a change go unjudged (:mod:`slopjudge.changes.authored`); no protected one."""
    from slopjudge.changes.authored import Policy

    files, trees = protected(settings)

    def test(path: str) -> bool:  # a file or folder: protected, or holding a protected file
        return is_protected(path, files, trees) or any(
            f.startswith(path + "/") for f in (*files, *trees))

    value = settings.exclude_generated
    return Policy(enabled=not include_generated and value is not False,
                  patterns=value if isinstance(value, list) else [],
                  protected=test, workspace=settings.workspace)


def _owned(settings: Any, paths: Iterable[str | None]) -> list[str]:
    """Those of ``paths`` inside the workspace (links resolved), relative to it."""
    ws = os.path.realpath(settings.workspace)
    found = (os.path.relpath(os.path.realpath(p), ws).replace(os.sep, "/") for p in paths if p)
    return [rel for rel in found if rel not in (".", "..") and not rel.startswith("../")]


def _templates(settings: Any) -> list[str]:
    """The template folders the project owns: not the copies slopjudge ships, which
    live wherever it is installed (a venv inside the workspace included)."""
    return [d for d in settings.template_dirs if d and not in_package(d)]


def is_protected(path: str, files: set[str], trees: set[str]) -> bool:
    return path in files or any(path == t or path.startswith(t + "/") for t in trees)


def changed_files(changeset: Any, settings: Any) -> list[tuple[str, str]]:
    """``(path, status)`` of each protected file the changeset touches."""
    files, trees = protected(settings)
    found: dict[str, str] = {}
    for f in changeset.files:
        for path in filter(None, (f.path, f.old_path)):
            if is_protected(path, files, trees):
                found.setdefault(path, f.status if path == f.path else "D")
            elif os.path.basename(path) == "pyproject.toml" and path == f.path and (f.binary or (
                    pyproject_settings(f.old_content) != pyproject_settings(f.new_content))):
                found.setdefault(f"{path} [tool.slopjudge]", f.status)
    return sorted(found.items())


# Stop messages are bounded; the list stays short enough to leave the advice in.
MAX_LISTED = 20
_STATUS = {"A": "added", "M": "changed", "D": "deleted", "R": "renamed",
           "ignored": "added, hidden from git by an ignore rule"}


def message(changes: list[tuple[str, str]], baseline_tree: str | None) -> str:
    lines = ["slopjudge: protected files changed in this session (they hold the rules, rubric, "
             "settings, hook config and git configuration that judge it):"]
    # Rule and settings files first: with a long list they are what a person looks for.
    listed = sorted(changes, key=lambda c: (not c[0].endswith((".yaml", ".yml", ".json",
                                                                ".toml", "]")), c[0]))
    lines += [f"- {path} ({_STATUS.get(status, status)})" for path, status in listed[:MAX_LISTED]]
    if len(changes) > MAX_LISTED:
        lines.append(f"- … and {len(changes) - MAX_LISTED} more (`git status` lists them)")
    # Git keeps no history of its own folder: what changed there is undone by hand.
    inside_git = [p for p, _ in changes if p.startswith(".git/") or os.path.isabs(p)]
    changes = [c for c in changes if c[0] not in inside_git]
    undo = []
    if changes:
        paths = [p.split(" [", 1)[0] for p, _ in changes]
        if len(changes) > MAX_LISTED:  # their top folders
            paths = sorted({p.split("/", 1)[0] for p in paths})
        source = f" --source={baseline_tree}" if baseline_tree else ""
        undo.append(f"`git restore{source} --worktree -- {' '.join(paths)}`")
        if any(status == "A" for _, status in changes):
            undo[0] += "; that leaves added files in place: delete them too"
    if inside_git:
        undo.append(f"undo by hand {', '.join(inside_git)} (git keeps no history of its own "
                    "folder): remove an added hook, take the setting back out of the config")
    lines += [
        "An agent may not change these, whatever tool it uses. Do not change them back or "
        "work around this yourself: say in your reply which file changed and why.",
        "A person must review the change. To keep it: start a new agent session (its "
        "baseline is the files as they are then). To undo it: " + "; ".join(undo) + ".",
    ]
    return "\n".join(lines)


def check_session(settings: Any, session_id: str | None) -> tuple[str | None, Any, bool]:
    """The refusal for protected files changed since the baseline (None: none changed;
    one that cannot be read refuses too), the session's changeset it compared (None when
    it could not be read; Stop judges the same one) and whether that ran from a recorded
    baseline (else from HEAD)."""
    from slopjudge.changes import changeset
    from slopjudge.changes.gitio import Background

    # The ignored files are listed while the changeset is read: two git reads at once.
    ignored = Background(ignored_files, settings)
    baseline = tree = None
    with common.fail_closed() as failure:
        try:
            # Files the project does not author are not judged; protected ones always are.
            policy = leave_out_policy(settings)
            # What is ignored is what the committed .gitignore files say (at the baseline,
            # or HEAD): one the session writes hides nothing. slopjudge's state is its own.
            policy.own_ignores = [f"/{rel}/" for rel in _owned(settings, [settings.state_dir])]
            baseline = state.load_baseline(settings.state_dir, session_id)
            tree = baseline["tree"] if baseline else None
            policy.ignores_from = tree or "HEAD"
            if tree is None:
                cs = changeset.from_working_tree(settings.workspace, base="HEAD", policy=policy)
            else:
                cs = changeset.from_tree_to_worktree(settings.workspace, tree, policy)
        finally:
            ignored.wait()
    if failure:
        return ("slopjudge could not compare the protected files (rules, rubric, settings, "
                f"hook config) with the session baseline: {failure.why}. "
                "A person must look at this."), None, False
    changes = changed_files(cs, settings)
    with common.fail_closed() as failure:
        changes += git_internals(settings, baseline)
        changes += [c for c in ignored.result() if c[0] not in dict(changes)]
    if failure:
        return ("slopjudge could not list the git-ignored files among the rules and templates "
                "or read the git folder's configuration and hooks: "
                f"{failure.why}. A person must look at this."), cs, tree is not None
    return (message(changes, tree) if changes else None), cs, tree is not None


def git_internals(settings: Any, baseline: dict[str, Any] | None) -> list[tuple[str, str]]:
    """The git folder's config, hooks and info files changed since the baseline (a planted
    hook runs at the next commit; a filter or fsmonitor set there, in every git command)."""
    from slopjudge.changes import gitio

    then = baseline.get("git") if baseline else None
    if then is None:
        return []  # no baseline, or one recorded before slopjudge kept these
    now = gitio.internals(settings.workspace)
    return sorted([(p, "A" if p not in then else "M") for p, d in now.items()
                   if then.get(p) != d] + [(p, "D") for p in then if p not in now])


def ignored_files(settings: Any) -> list[tuple[str, str]]:
    """Files git ignores inside the rules and template folders, as ``(path, "ignored")``: the
    snapshot cannot see them, and an ignored ``rules/_lib/x.py`` runs inside slopjudge. No
    tool of slopjudge's writes there (checks write no bytecode), so a person must look."""
    from slopjudge.changes import changeset

    ws = os.path.realpath(settings.workspace)
    trees = [t for t in _owned(settings, [settings.rules_dir, *_templates(settings)])
             if os.path.isdir(os.path.join(ws, t))]
    if not trees:
        return []
    return [(path, "ignored") for path in changeset.ignored_paths(ws, trees)]
