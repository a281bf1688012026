"""A few paths of a commit's tree written from git's objects (never the work tree the
change may have rewritten) into a private folder outside the workspace, for ``run
--rules-from REV``. A symbolic link is kept only where it resolves inside the folder.
"""

from __future__ import annotations

import os

from slopjudge.changes import gitio
from slopjudge.changes.diffparse import decode
from slopjudge.errors import ChangesetError
from slopjudge.fsutil import inside

_FILE_MODES = {"100644": 0o644, "100755": 0o755}


def private_folder(workspace: str) -> str:
    """A new folder only this user can enter, outside ``workspace`` (a temporary folder
    inside the repository would be one the change could name)."""
    import tempfile

    for parent in (tempfile.gettempdir(), "/tmp", "/var/tmp"):
        if os.path.isdir(parent) and not inside(parent, workspace):
            return tempfile.mkdtemp(prefix="slopjudge-rules-", dir=os.path.realpath(parent))
    raise ChangesetError(f"no temporary folder outside {workspace} to read the rules into")


def materialise(workspace: str, commit: str, paths: list[str], dest: str) -> list[str]:
    """Write the files under ``paths`` (workspace-relative) of ``commit``'s tree into
    ``dest`` at the same places (submodules and paths the commit lacks skipped); return
    the paths written."""
    wanted = sorted({p.strip("/") for p in paths if p and p.strip("/")})
    if not wanted:
        return []
    top = gitio.toplevel(workspace)
    listing = gitio.git(top, ["ls-tree", "-r", "-z", "--full-tree", commit, "--", *wanted])
    files: list[tuple[str, str, str]] = []  # (mode, sha, path)
    for entry in listing.split(b"\0"):
        if not entry:
            continue
        meta, _, name = entry.partition(b"\t")
        mode, kind, sha = decode(meta).split(" ")
        path = decode(name)
        if kind == "blob" and _plain(path) and (mode in _FILE_MODES or mode == "120000"):
            files.append((mode, sha, path))
    blobs = gitio.cat_blobs(top, sorted({sha for _, sha, _ in files}))
    root = os.path.realpath(dest)
    written: list[str] = []
    links: list[tuple[str, bytes]] = []
    for mode, sha, path in files:
        if sha not in blobs:
            raise ChangesetError(f"{commit}: object {sha} for {path} is missing")
        if mode == "120000":
            links.append((path, blobs[sha]))
            continue
        full = os.path.join(root, *path.split("/"))
        os.makedirs(os.path.dirname(full), mode=0o700, exist_ok=True)
        fd = os.open(full, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, _FILE_MODES[mode])
        with os.fdopen(fd, "wb") as fh:
            fh.write(blobs[sha])
        os.chmod(full, _FILE_MODES[mode])  # past the umask: a script keeps its executable bit
        written.append(path)
    # Links last, so no file above was written through one.
    written += _links(root, links)
    return sorted(written)


def _plain(path: str) -> bool:
    """A relative path of ordinary names (git never stores others; a damaged tree might)."""
    return "\0" not in path and all(p not in ("", ".", "..") for p in path.split("/"))


def _links(root: str, links: list[tuple[str, bytes]]) -> list[str]:
    """Create ``links`` (path, target) under ``root``; remove, until none is left, each
    one that resolves outside ``root`` (through other links too)."""
    made: list[str] = []
    for path, target in links:
        full = os.path.join(root, *path.split("/"))
        if os.path.isabs(os.fsdecode(target)) or b"\0" in target:
            continue
        os.makedirs(os.path.dirname(full), mode=0o700, exist_ok=True)
        os.symlink(target, full)
        made.append(path)
    changed = True
    while changed:
        changed = False
        for path in list(made):
            full = os.path.join(root, *path.split("/"))
            if not inside(full, root):
                os.unlink(full)
                made.remove(path)
                changed = True
    return made
