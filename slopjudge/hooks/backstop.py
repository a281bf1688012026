"""The Stop backstop: protected files that changed in the session refuse.

protect-rules stops the edits it can see before they run; a file can still
change through a script, an interpreter or a command it cannot read. At
every Stop the backstop compares the session baseline (HEAD when none was
recorded) with the work tree and refuses when any protected file differs,
whichever tool changed it.

It does not depend on the rule pack: the protected set comes from the
settings (the rules folder, the rubric, the template folders of the
repository, ``slopjudge.yaml``, ``[tool.slopjudge]`` in ``pyproject.toml``,
the agents' hook config, ``.slopjudge/``), so deleting or breaking
protect-rules switches nothing off. Only a person can accept such a change:
the message says how.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from slopjudge.hooks import common, state
from slopjudge.resources import in_package

if TYPE_CHECKING:
    from slopjudge.changes.authored import Policy

# Paths relative to the workspace, whatever the settings say.
FIXED = (
    "RUBRIC.md", "slopjudge.yaml", "slopjudge.yml", ".claude/settings.json",
    ".claude/settings.local.json", ".codex/hooks.json", ".codex/config.toml",
    ".claude/hooks/slopjudge", ".codex/hooks/slopjudge",
)
FIXED_TREES = ("rules", ".slopjudge", "templates")


def _inside(ws: str, path: str | None) -> str | None:
    """``path`` relative to the workspace, or None when it lies outside it."""
    if not path:
        return None
    full = os.path.normpath(os.path.join(ws, path))
    rel = os.path.relpath(full, ws).replace(os.sep, "/")
    return None if rel == "." or rel.startswith("../") or rel == ".." else rel


def protected(settings: Any) -> tuple[set[str], set[str]]:
    """The protected files and folders, relative to the workspace."""
    ws = os.path.realpath(settings.workspace)
    files = set(FIXED)
    trees = set(FIXED_TREES)
    for folder in [settings.rules_dir, settings.state_dir, *_project_templates(settings)]:
        rel = _inside(ws, os.path.realpath(folder)) if folder else None
        if rel:
            trees.add(rel)
    rubric = _inside(ws, os.path.realpath(settings.rubric_path)) \
        if settings.rubric_path and not in_package(settings.rubric_path) else None
    if rubric:
        files.add(rubric)
    for config in getattr(settings, "config_files", None) or []:
        rel = _inside(ws, os.path.realpath(config))
        if rel and not rel.endswith("pyproject.toml"):
            files.add(rel)
    return files, trees


def is_protected_by(settings: Any) -> Any:
    """A test of one workspace-relative path (file or folder): protected, or holding
    a protected file."""
    files, trees = protected(settings)

    def test(path: str) -> bool:
        return is_protected(path, files, trees) or any(
            f.startswith(path + "/") for f in (*files, *trees))

    return test


def leave_out_policy(settings: Any, include_generated: bool = False) -> Policy:
    """Which files of a change are not judged, as the settings (and ``--include-generated``)
    say (:mod:`slopjudge.changes.authored`); never a protected one."""
    from slopjudge.changes.authored import Policy

    value = getattr(settings, "exclude_generated", True)
    return Policy(enabled=not include_generated and value is not False,
                  patterns=value if isinstance(value, list) else [],
                  protected=is_protected_by(settings), workspace=settings.workspace)


def _project_templates(settings: Any) -> list[str]:
    """The template folders the project owns: not the copies slopjudge ships, which
    live wherever it is installed (a venv inside the workspace included)."""
    return [d for d in settings.template_dirs if d and not in_package(d)]


def is_protected(path: str, files: set[str], trees: set[str]) -> bool:
    return path in files or any(path == t or path.startswith(t + "/") for t in trees)


def _slopjudge_table(text: str | None) -> object:
    """``[tool.slopjudge]`` of a pyproject.toml; a marker when it does not parse."""
    if text is None:
        return None
    import tomllib

    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError):
        return ("unparseable", "tool.slopjudge" in text, text if "slopjudge" in text else "")
    tool = data.get("tool")
    return tool.get("slopjudge") if isinstance(tool, dict) else None


def changed_files(changeset: Any, settings: Any) -> list[tuple[str, str]]:
    """``(path, status)`` of each protected file the changeset touches."""
    files, trees = protected(settings)
    found: dict[str, str] = {}
    for f in changeset.files:
        for path in (f.path, f.old_path):
            if not path:
                continue
            if is_protected(path, files, trees):
                found.setdefault(path, f.status if path == f.path else "D")
            elif os.path.basename(path) == "pyproject.toml" and path == f.path and (
                    _slopjudge_table(f.old_content) != _slopjudge_table(f.new_content)
                    or (f.binary and "pyproject.toml" in path)):
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
    inside_git = [p for p, _ in changes if _in_git_folder(p)]
    changes = [c for c in changes if not _in_git_folder(c[0])]
    folders = sorted({p.split(" [", 1)[0] if "/" not in p else p.split("/", 1)[0]
                      for p, _ in changes})
    paths = " ".join(p.split(" [", 1)[0] for p, _ in changes) if len(changes) <= MAX_LISTED \
        else " ".join(folders)
    undo = (f"`git restore --source={baseline_tree} --worktree -- {paths}`"
            if baseline_tree else f"`git restore --worktree -- {paths}`")
    undo_git = (f"{', '.join(inside_git)} (git keeps no history of its own folder): "
                "remove an added hook, take the setting back out of the config")
    undo_all = ("; " if changes else "").join(
        ([undo + ("; that leaves added files in place: delete them too" if any(
            status == "A" for _, status in changes) else "")] if changes else [])
        + ([f"undo by hand {undo_git}"] if inside_git else []))
    lines += [
        "An agent may not change these, whatever tool it uses. Do not change them back or "
        "work around this yourself: say in your reply which file changed and why.",
        "A person must review the change. To keep it: start a new agent session (its "
        "baseline is the files as they are then). To undo it: " + undo_all + ".",
    ]
    return "\n".join(lines)


def _in_git_folder(path: str) -> bool:
    return path.startswith(".git/") or os.path.isabs(path)


def check(settings: Any, session_id: str | None) -> str | None:
    """The refusal for protected files changed since the baseline, or None.

    Fails closed: a baseline or work tree that cannot be read is a refusal too.
    """
    return check_session(settings, session_id)[0]


def session_changeset(settings: Any, session_id: str | None) -> tuple[Any, str | None]:
    """The session's change and the baseline tree it runs from; without a recorded
    baseline, the change from HEAD and None."""
    from slopjudge.changes import changeset

    # Files the project does not author are not judged; protected ones always are.
    policy = leave_out_policy(settings)
    # What is ignored is what the committed .gitignore files say (at the baseline, or
    # HEAD): one the session writes or edits hides nothing. slopjudge's state is its own.
    state_dir = _inside(os.path.realpath(settings.workspace),
                        os.path.realpath(settings.state_dir))
    policy.own_ignores = [f"/{state_dir}/"] if state_dir else []
    baseline = state.load_baseline(settings.state_dir, session_id)
    if baseline is None:
        policy.ignores_from = "HEAD"
        return changeset.from_working_tree(settings.workspace, base="HEAD", policy=policy), None
    tree = baseline["tree"]
    policy.ignores_from = tree
    return changeset.from_tree_to_worktree(settings.workspace, tree, policy), tree


def check_session(settings: Any, session_id: str | None) -> tuple[str | None, Any, bool]:
    """:func:`check`'s answer, plus the session's changeset it compared (None when it
    could not be read) and whether that ran from a recorded baseline (else from HEAD).

    The Stop hook judges that same changeset: one snapshot of the work tree per stop.
    """
    from slopjudge.changes.gitio import Background

    # The ignored files are listed while the changeset is read: two git reads at once.
    ignored = Background(ignored_files, settings)
    with common.fail_closed() as failure:
        try:
            cs, tree = session_changeset(settings, session_id)
        finally:
            ignored.wait()
    if failure:
        return ("slopjudge could not compare the protected files (rules, rubric, settings, "
                f"hook config) with the session baseline: {failure.why}. "
                "A person must look at this."), None, False
    changes = changed_files(cs, settings)
    with common.fail_closed() as failure:
        changes += git_internals(settings, session_id)
        changes += [c for c in ignored.result() if c[0] not in dict(changes)]
    if failure:
        return ("slopjudge could not list the git-ignored files among the rules and templates "
                "or read the git folder's configuration and hooks: "
                f"{failure.why}. A person must look at this."), cs, tree is not None
    return (message(changes, tree) if changes else None), cs, tree is not None


def git_internals(settings: Any, session_id: str | None) -> list[tuple[str, str]]:
    """The git folder's configuration, hooks and info files changed since the baseline
    (a hook planted there runs at the person's next commit; a filter or fsmonitor set
    there runs in every git command)."""
    from slopjudge.changes import gitio

    baseline = state.load_baseline(settings.state_dir, session_id)
    then = baseline.get("git") if baseline else None
    if then is None:
        return []  # no baseline, or one recorded before slopjudge kept these
    now = gitio.internals(settings.workspace)
    return sorted([(p, "A" if p not in then else "M") for p, d in now.items()
                   if then.get(p) != d] + [(p, "D") for p in then if p not in now])


def ignored_files(settings: Any) -> list[tuple[str, str]]:
    """Files git ignores inside the rules and template folders, as ``(path, "ignored")``.

    A change the snapshot cannot see (``.gitignore`` or ``.git/info/exclude`` written
    first) would otherwise slip past the backstop, and rule scripts import their
    folder's helpers: an ignored ``rules/_lib/x.py`` runs inside slopjudge. No tool of
    slopjudge's writes there (Python checks write no bytecode), so any such file is one
    a person must look at."""
    from slopjudge.changes import changeset

    ws = os.path.realpath(settings.workspace)
    trees = []
    for folder in [settings.rules_dir, *_project_templates(settings)]:
        rel = _inside(ws, os.path.realpath(folder)) if folder else None
        if rel and os.path.isdir(os.path.join(ws, rel)):
            trees.append(rel)
    if not trees:
        return []
    out = changeset.ignored_paths(ws, trees)
    return [(path, "ignored") for path in out]
