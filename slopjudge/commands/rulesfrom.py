"""``run --rules-from REV``: a change judged by another commit's rules, so that a pull
request cannot weaken the rules that judge it nor run its own rule scripts in the job; a
change to what decides the judging is ``needs_person`` (docs/ci.md)."""

from __future__ import annotations

import os
import shutil

from slopjudge.changes import gitio, revtree
from slopjudge.errors import ChangesetError
from slopjudge.hooks.backstop import changed_files
from slopjudge.loading.config import ConfigError, Settings, ensure_state_ignored, load_settings
from slopjudge.loading.rulecache import enabled
from slopjudge.model import Changeset, CheckResult, Finding, LoadResult, fields
from slopjudge.resources import in_package

# The pseudo-check that carries the outcome in every report and in the event log.
RULE, CHECK = "slopjudge", "rule-changes"
HEADLINE = "rule changes need a person"
# Read from REV before its settings say where the rest is.
_FIRST = ("slopjudge.yaml", "pyproject.toml", "RUBRIC.md", "templates")


class RulesFrom:
    """REV's rules written out in ``folder`` (:meth:`close` removes it) and its settings:
    ``settings`` as the run uses them (the workspace's state, REV's rules), ``in_workspace``
    as they name the workspace's files (what a change may not touch)."""

    def __init__(self, rev: str, folder: str, settings: Settings,
                 in_workspace: Settings) -> None:
        self.rev, self.folder = rev, folder
        self.settings, self.in_workspace = settings, in_workspace

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)

    def shown(self, text: str) -> str:
        """``text`` with the private folder's paths named as ``REV:path``."""
        return text.replace(self.folder + os.sep, f"{self.rev}:").replace(self.folder, self.rev)


def open_rules(workspace: str, rev: str) -> RulesFrom:
    """REV's rules and settings for judging a change in ``workspace``; ChangesetError or
    ConfigError (REV unknown, git failing, its settings not loading), one line naming REV."""
    if not rev.strip():
        raise ChangesetError("--rules-from was given an empty value")
    try:
        commit = gitio.resolve(workspace, rev)
    except ChangesetError:
        raise ChangesetError(f"--rules-from {rev}: not a commit in this repository") from None
    folder = revtree.private_folder(workspace)
    try:
        ws = os.path.abspath(workspace)
        revtree.materialise(workspace, commit, list(_FIRST), folder)
        try:
            in_ws = load_settings(ws, source=folder)
        except ConfigError as exc:
            raise ConfigError(exc.path.replace(folder + os.sep, f"{rev}:"), exc.line, exc.col,
                              exc.message) from None
        # The rules folder, template folders and rubric the settings name in the workspace.
        named = [in_ws.rules_dir, *in_ws.template_dirs, in_ws.rubric_path or ""]
        more = [rel for p in named if p and (rel := _inside(ws, p)) and rel not in _FIRST]
        revtree.materialise(workspace, commit, more, folder)
        return RulesFrom(rev, folder, _in_folder(in_ws, folder), in_ws)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise


def _inside(ws: str, path: str) -> str | None:
    """``path`` relative to the workspace ``ws`` ('/'-separated) when it is a file or
    folder inside it, not the packaged one: what REV's tree holds for it."""
    rel = os.path.relpath(os.path.normpath(path), ws)
    if in_package(path) or rel in (".", "..") or rel.startswith(".." + os.sep):
        return None
    return rel.replace(os.sep, "/")


def _in_folder(in_ws: Settings, folder: str) -> Settings:
    """``in_ws`` with the rules, templates and rubric it names inside the workspace
    taken from ``folder`` instead; state, events and caches stay the workspace's."""

    def moved(path: str) -> str:
        rel = _inside(in_ws.workspace, path)
        return os.path.join(folder, *rel.split("/")) if rel else path

    values = {f.name: getattr(in_ws, f.name) for f in fields(in_ws)}
    values.update(rules_dir=moved(in_ws.rules_dir),
                  template_dirs=[moved(d) for d in in_ws.template_dirs],
                  rubric_path=moved(in_ws.rubric_path) if in_ws.rubric_path else None)
    return Settings(**values)


def load(rf: RulesFrom) -> LoadResult:
    """REV's rules, loaded afresh (the rules cache is keyed by files on disk; these are
    new on every run), their error paths named ``REV:path``."""
    # Here, not at the top: `run` imports this module on every call, and the rule loader
    # (ruamel.yaml, jinja2, jsonschema) costs about 85 ms, which a cached run never pays.
    from slopjudge.loading.loader import load_rules

    s = rf.settings
    ensure_state_ignored(s.state_dir)
    result = load_rules(s.rules_dir, workspace=s.workspace, template_dirs=s.template_dirs)
    for error in result.errors:
        error.path = rf.shown(error.path)
    return enabled(result, s)


def rule_changes(changeset: Changeset, rf: RulesFrom) -> CheckResult | None:
    """The needs_person result for the files of ``changeset`` that decide the
    judging under REV's settings; None when it touches none of them."""
    touched = changed_files(changeset, rf.in_workspace)
    if not touched:
        return None
    words = {"A": "added", "M": "changed", "D": "deleted", "R": "renamed"}
    findings = [Finding(path=path.split(" [", 1)[0], line=None,
                        message=f"{HEADLINE}: {path} {words.get(status, status)}")
                for path, status in touched]
    listed = ", ".join(f"{p} ({words.get(s, s)})" for p, s in touched[:20])
    more = f" and {len(touched) - 20} more" if len(touched) > 20 else ""
    reason = (f"{HEADLINE}: this change touches what decides the judging (the rules, rubric, "
              f"settings, templates or hook configuration as {rf.rev} defines them): "
              f"{listed}{more}.\nThe rules of {rf.rev} judged the rest of the change; a "
              "person must review these files before they take effect.")
    return CheckResult(id=f"{RULE}/{CHECK}", rule=RULE, check=CHECK, kind="script",
                       outcome="needs_person", reason=reason, findings=findings)
