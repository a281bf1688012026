"""Settings (docs/settings.md): ``slopjudge.yaml`` or ``[tool.slopjudge]``, checked key by
key. Every hook reads them, from a signed cache while the file is unchanged."""

from __future__ import annotations

import os
import time

from slopjudge.errors import SlopjudgeError
from slopjudge.fsutil import find_workspace as find_workspace
from slopjudge.fsutil import write_atomic
from slopjudge.model import SIZE_ALIASES, field, fields, record
from slopjudge.resources import PACKAGE_DIR, data_path

TYPE_CHECKING = False  # not typing's: every hook reads settings
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

CONFIG_NAME = "slopjudge.yaml"
# Data shipped inside the package (templates, rubric), if the build includes it.
PACKAGED_TEMPLATES = data_path("templates")
PACKAGED_RUBRIC = data_path("RUBRIC.md")


class ConfigError(SlopjudgeError, ValueError):
    """``str()`` is ``path:line:col: message``."""

    def __init__(self, path: str, line: int, col: int, message: str) -> None:
        self.path, self.line, self.col, self.message = path, line, col, message
        super().__init__(f"{display_path(path)}:{line}:{col}: {message}")


@record
class Limits:
    """Judge cost limits (judging/budget.py); None: no limit."""

    max_judge_calls: int | None = None
    max_tokens: int | None = None
    max_cost_usd: float | None = None
    session_max_judge_calls: int | None = None
    session_max_tokens: int | None = None
    session_max_cost_usd: float | None = None

    def any(self, prefix: str = "") -> bool:
        """Whether a limit is set (``prefix="session_"``: a session's)."""
        return any(getattr(self, f.name) is not None for f in fields(Limits)
                   if f.name.startswith(prefix))


@record(kw_only=True)
class Settings(Limits):
    """The keys docs/settings.md describes, and the files they were read from."""

    workspace: str
    rules_dir: str
    template_dirs: list[str]
    runner: str | None = None
    stop_block_cap: int = 8
    hook_timeout: int = 660  # what install gives PreToolUse and Stop: each hook answers first
    unknown_tools: str = "deny"  # a tool slopjudge does not know, naming a guarded path
    rule_changes: str = "block"  # `run --rules-from`: needs_person blocks, or is shown (warn)
    jobs: int = 0  # script checks at once; 0: the CPU count
    judge_slots: int = 8  # judge calls at once, machine-wide (judging/slots.py)
    state_dir: str = ""  # default <workspace>/.slopjudge
    events_file: str = ""  # default <state_dir>/events.jsonl
    cache_dir: str = ""  # verdict cache; default <state_dir>/cache
    rubric_path: str | None = None
    config_files: list[str] = field(default_factory=list)  # files read, for the rules cache key
    max_prompt_tokens: int | None = None  # default for judge checks without their own
    # harness -> size alias -> model, passed to the runner as SLOPJUDGE_MODEL_ALIASES.
    model_aliases: dict[str, dict[str, str]] = field(default_factory=dict)
    exclude_generated: bool | list[str] = True  # or patterns (changes/authored.py)
    preview: bool | list[str] = False  # preview rules run: all, none, or these rule ids

    def __post_init__(self) -> None:
        self.state_dir = self.state_dir or os.path.join(self.workspace, ".slopjudge")
        self.events_file = self.events_file or os.path.join(self.state_dir, "events.jsonl")
        self.cache_dir = self.cache_dir or os.path.join(self.state_dir, "cache")


# kind -> the settings of that kind; paths resolve against the workspace.
_KINDS: dict[str, tuple[str, ...]] = {
    "path": ("rules_dir", "state_dir", "events_file", "cache_dir", "rubric_path"),
    "paths": ("template_dirs",),
    "str": ("runner",),
    "int": ("stop_block_cap", "jobs", "max_prompt_tokens", "max_judge_calls", "max_tokens",
            "session_max_judge_calls", "session_max_tokens"),
    "number": ("max_cost_usd", "session_max_cost_usd"),
    "count": ("judge_slots",),
    "seconds": ("hook_timeout",),
    "deny|ask|allow": ("unknown_tools",),
    "block|warn": ("rule_changes",),
    "aliases": ("model_aliases",),
    "generated": ("exclude_generated",),
    "preview": ("preview",),
}
_KEYS = {key: kind for kind, keys in _KINDS.items() for key in keys}


def display_path(path: str) -> str:
    """``path`` relative to the current directory when inside it, else absolute."""
    try:
        cwd = os.getcwd()
    except OSError:
        return path
    full = os.path.normpath(os.path.join(cwd, path))
    rel = os.path.relpath(full, cwd)
    return full if rel == os.pardir or rel.startswith(os.pardir + os.sep) else rel


# ---- reading slopjudge.yaml -------------------------------------------------

# File systems stamp mtimes from a coarse clock. A file written within this window before
# the key was taken could change again with the same size and mtime, so such a result is
# not cached (git's "racily clean" index entries).
RACY_WINDOW_NS = 50_000_000


def is_racy(stamp: list[int] | None, start_ns: int) -> bool:
    """Whether a file of ``stamp`` may change unseen; an mtime of a whole second is taken
    for one from a file system that stamps to the second (HFS+, ext3, some network ones)."""
    if stamp is None:
        return False
    window = 2_000_000_000 if stamp[1] % 1_000_000_000 == 0 else RACY_WINDOW_NS
    return stamp[1] >= start_ns - window


def file_stamp(path: str) -> list[int] | None:
    """What a cache keys a file by: size, mtime, mode (``chmod +x`` fixes a script without
    touching mtime), inode and ctime (a file put back with its old mtime, ``cp -p``); None
    when absent (a dangling symlink too)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns, st.st_mode, st.st_ino, st.st_ctime_ns]


def _read_yaml_config(path: str, text: str) -> tuple[dict[str, Any], dict[str, tuple[int, int]]]:
    from slopjudge.loading.loader import YamlProblem, _pos, parse_yaml

    try:
        loaded = parse_yaml(text)
    except YamlProblem as exc:
        (line, col), message = exc.args
        raise ConfigError(path, line, col, message) from None
    if loaded is None:
        return {}, {}
    if not isinstance(loaded, dict):
        raise ConfigError(path, 1, 1, "the settings file must be a mapping of `key: value`")
    # _pos: a key merged in by `<<: *anchor` has no place of its own, its mapping's then.
    return dict(loaded), {str(k): _pos(loaded, k, of_key=True) for k in loaded}


def pyproject_settings(text: str | None) -> object:
    """The ``tool.slopjudge`` of a pyproject.toml's text however it is written (a table, an
    inline ``slopjudge = {...}`` under ``[tool]``, a dotted key); None without one. Text
    that is not TOML: a marker holding it when it names slopjudge, so any change counts."""
    if text is None:
        return None
    import tomllib

    try:
        tool = tomllib.loads(text).get("tool")
    except ValueError:  # TOMLDecodeError
        return ("unparseable", "tool.slopjudge" in text, text if "slopjudge" in text else "")
    return tool.get("slopjudge") if isinstance(tool, dict) else None


def _read_pyproject(path: str, text: str) -> tuple[dict[str, Any], dict[str, tuple[int, int]]]:
    import re
    import tomllib

    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"\(at line (\d+), column (\d+)\)", str(exc))
        line, col = (int(m.group(1)), int(m.group(2))) if m else (1, 1)
        raise ConfigError(path, line, col, f"broken TOML: {exc}") from None
    tool = doc.get("tool")
    table = tool.get("slopjudge") if isinstance(tool, dict) else None
    if table is None:
        return {}, {}
    if not isinstance(table, dict):
        raise ConfigError(path, 1, 1, "`tool.slopjudge` must be a table")
    # tomllib keeps no positions: each key's line is found by text inside the table.
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.strip() == "[tool.slopjudge]"),
                 len(lines))
    end = next((i for i in range(start + 1, len(lines)) if lines[i].strip().startswith("[")),
               len(lines))
    return table, {m.group(2): (i + 1, len(m.group(1)) + 1) for i in range(start + 1, end)
                   if (m := re.match(r"(\s*)([A-Za-z0-9_-]+)\s*=", lines[i]))}


def _resolve(workspace: str, value: str) -> str:
    return os.path.normpath(os.path.join(workspace, os.path.expanduser(value)))


def suggest(word: str, options: Iterable[str]) -> str:
    """``; did you mean `x`?`` naming the closest of ``options``, if one is close."""
    import difflib  # only for a mistake: every hook imports this module

    close = difflib.get_close_matches(word, list(options), n=1)
    return f"; did you mean `{close[0]}`?" if close else ""


def _apply(
    path: str, data: dict[str, Any], pos: dict[str, tuple[int, int]], workspace: str
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        line, col = pos.get(str(key), (1, 1))
        kind = _KEYS.get(str(key))
        if kind is None:
            hint = suggest(str(key), _KEYS) or f"; known: {', '.join(_KEYS)}"
            raise ConfigError(path, line, col, f"unknown setting `{key}`{hint}")
        try:
            if value is not None:
                out[key] = _value(str(key), kind, value, workspace)
        except ValueError as exc:
            raise ConfigError(path, line, col, str(exc)) from None
    return out


# Settings that are true, false or a list (what the list holds); exclude_generated's
# patterns are read by changes/authored.py.
_LISTS_OR_BOOLS = {"preview": "rule ids",
                   "generated": "path patterns (`!pattern` keeps matching files judged)"}


# Number kinds: the type they read as, least, most, and the words for them. A timer past
# a day is past what the clock takes, and no hook's business.
_NUMBERS: dict[str, tuple[type[float], float, float, str]] = {
    "int": (int, 0, float("inf"), "a whole number >= 0"),
    "count": (int, 1, float("inf"), "a whole number >= 1"),
    "seconds": (int, 1, 86400, "a whole number of seconds from 1 to 86400"),
    "number": (float, 0, float("inf"), "a number >= 0"),
}


def _value(key: str, kind: str, value: Any, workspace: str) -> Any:
    """One setting's value as its kind says; ValueError says what is wrong with it."""
    if isinstance(value, str) and kind in ("generated", "paths"):  # a list of one
        value = [value]
    strings = isinstance(value, list) and all(isinstance(v, str) and v for v in value)
    if kind in _NUMBERS:
        read, least, most, words = _NUMBERS[kind]
        if (isinstance(value, bool) or not isinstance(value, (int, read))
                or not least <= value <= most):
            raise ValueError(f"`{key}` must be {words}")
        return read(value)
    if kind in ("str", "path"):
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"`{key}` must be a non-empty string")
        return _resolve(workspace, str(value)) if kind == "path" else str(value)
    if kind in _LISTS_OR_BOOLS:
        if not isinstance(value, bool) and not strings:
            raise ValueError(f"`{key}` must be true, false or a list of {_LISTS_OR_BOOLS[kind]}")
        return value
    if "|" in kind:  # one of these words
        if value not in kind.split("|"):
            raise ValueError(f"`{key}` must be one of {', '.join(kind.split('|'))}")
        return value
    if kind == "aliases":
        return _model_aliases(value)
    if not strings:
        raise ValueError(f"`{key}` must be a list of folders")
    return [_resolve(workspace, str(v)) for v in value]


def _model_aliases(value: Any) -> dict[str, dict[str, str]]:
    """``model_aliases: {claude: {size-sm: claude-haiku-4-5}, codex: {...}}``."""
    shape = "`model_aliases` maps a harness (claude, codex) to {size-xs..size-xl: model}"
    if not isinstance(value, dict):
        raise ValueError(shape)
    for harness, table in value.items():
        if harness not in ("claude", "codex") or not isinstance(table, dict):
            raise ValueError(f"{shape}; not {harness!r}")
        for alias, model in table.items():
            if alias not in SIZE_ALIASES:
                raise ValueError(f"`model_aliases.{harness}`: {alias!r} is not a size alias "
                                 f"({', '.join(SIZE_ALIASES)})")
            if not isinstance(model, str) or not model.strip():
                raise ValueError(f"`model_aliases.{harness}.{alias}` must name a model")
    return {str(h): {str(a): str(m).strip() for a, m in t.items()} for h, t in value.items()}


_SETTINGS_CODE = ("loading/config.py", "loading/loader.py", "model.py")


def _file_settings(path: str, workspace: str, cached: bool) -> dict[str, Any]:
    """The settings ``path`` gives, read once per change of it: a signed cache answers
    every hook after that, for whom reading YAML would cost more than the rest of its work
    (ruamel.yaml's import alone: 16-58 ms here)."""
    from slopjudge import __version__, cachesign
    from slopjudge.loading.rulecache import read_signed, write_signed

    start_ns, stamp = time.time_ns(), file_stamp(path)
    # `~` in a path setting resolves against HOME; the code that reads the values is in it.
    code = [file_stamp(os.path.join(PACKAGE_DIR, n)) for n in _SETTINGS_CODE]
    key = [__version__, code, workspace, os.path.expanduser("~"), path, stamp]
    # Beside the signing key, outside the workspace (the state folder may be one the
    # settings name); named by a MAC, as a hash would need hashlib. None: no key, no cache.
    name = cachesign.sign(os.fsencode(f"{workspace}\0{path}"), "settings file", workspace)
    cache = os.path.join(os.path.dirname(cachesign.key_path()), "settings", str(name)[:32])
    cached = cached and name is not None
    hit = read_signed(cache, "settings", workspace) if cached else None
    # Another version's entry (its own shape) is a miss, rewritten below.
    if isinstance(hit, dict) and hit.get("key") == key and isinstance(hit.get("values"), dict):
        return dict(hit["values"])
    try:  # newline="": TOML says which line breaks it takes, YAML reads any
        with open(path, encoding="utf-8", newline="") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(path, 1, 1, f"cannot read: {exc}") from None
    read = _read_pyproject if path.endswith(".toml") else _read_yaml_config
    values = _apply(path, *read(path, text), workspace)
    if cached and stamp is not None and not is_racy(stamp, start_ns):
        write_signed(cache, "settings", workspace, {"key": key, "values": values})
    return values


def load_settings(workspace: str, rules_dir: str | None = None, *,
                  source: str | None = None) -> Settings:
    """Settings for ``workspace``; ``rules_dir``: the ``--rules`` flag. ``source``: where
    the settings, a default RUBRIC.md and templates/ are read when not the workspace
    (``run --rules-from``'s copy of a commit); paths still name the workspace."""
    workspace = os.path.abspath(workspace)
    src = os.path.abspath(source) if source else workspace
    values: dict[str, Any] = {}
    # pyproject.toml is listed even without a table: adding one must invalidate the rules cache.
    config_files = [p for p in (os.path.join(src, CONFIG_NAME),
                                os.path.join(src, "pyproject.toml")) if os.path.isfile(p)][:1]
    for path in config_files:  # a commit's copy (`source`) is read once: not cached
        values = _file_settings(path, workspace, cached=source is None)

    if rules_dir is not None:
        values["rules_dir"] = os.path.abspath(rules_dir)
    values.setdefault("rules_dir", os.path.join(workspace, "rules"))
    if "template_dirs" not in values:
        values["template_dirs"] = ([os.path.join(workspace, "templates")]
                                   if os.path.isdir(os.path.join(src, "templates")) else [])
    if os.path.isdir(PACKAGED_TEMPLATES):
        # In a checkout the packaged folder links to templates/: list it once.
        real = {os.path.realpath(d) for d in values["template_dirs"]}
        if os.path.realpath(PACKAGED_TEMPLATES) not in real:
            values["template_dirs"].append(PACKAGED_TEMPLATES)
    if "rubric_path" not in values:
        if os.path.isfile(os.path.join(src, "RUBRIC.md")):
            values["rubric_path"] = os.path.join(workspace, "RUBRIC.md")
        elif os.path.isfile(PACKAGED_RUBRIC):
            values["rubric_path"] = PACKAGED_RUBRIC
    if os.environ.get("SLOPJUDGE_EVENTS_FILE"):
        values["events_file"] = os.path.abspath(os.environ["SLOPJUDGE_EVENTS_FILE"])
    if os.environ.get("SLOPJUDGE_RUNNER"):
        values["runner"] = os.environ["SLOPJUDGE_RUNNER"]
    return Settings(workspace=workspace, config_files=config_files, **values)


def ensure_state_ignored(state_dir: str) -> None:
    """A ``.gitignore`` of ``*`` in the state folder: a work-tree changeset includes
    untracked files, and the caches and event log must never show up in it."""
    marker = os.path.join(state_dir, ".gitignore")
    try:
        if not os.path.exists(marker):
            write_atomic(marker, "# slopjudge's state, caches and event log; never committed\n*\n")
    except OSError:
        pass  # a read-only state folder: whatever writes there will say so itself
