"""Releases added by the user (`miogen add-release HEADER`): release sub-packages rendered into a per-user folder.

The folder is `$MIOGEN_RELEASES_PATH` when set, else the platform's user data folder (`$XDG_DATA_HOME`, or
~/.local/share) + `miogen/releases`; under it, `<target>/vX_Y_Z/` holds `__init__.py`, `raw.py`, `api.py` and
`release.json` (its manifest). A release found there is bound only to a library of exactly its version that no
committed release matches. It is code, so it is imported only when it was rendered by this package's own miogen
(same generator version and support modules) and nobody else can change it: the folder, every folder above it up
to the releases root, and every file are owned by this user and writable by nobody else."""

from __future__ import annotations

import importlib.util
import json
import os
import stat
import sys
from typing import Any, NamedTuple

from . import _state
from ._selection import Version
from ._target import GENERATOR, RELEASES, SUPPORT_DIGEST, TARGET

#: the environment variable naming the folder of user-added releases
RELEASES_PATH_ENV = "MIOGEN_RELEASES_PATH"
#: each release folder's manifest
MANIFEST = "release.json"
_FILES = ("__init__.py", "raw.py", "api.py", MANIFEST)


class UserRelease(NamedTuple):
    """One release folder: its release, sub-package name, path, where it came from, and why it is refused ("" if not)."""

    release: str
    module: str
    path: str
    source: str
    refused: str


def releases_root() -> str:
    """The folder `miogen add-release` writes to and `import miopen` reads from (for this target)."""
    base = os.environ.get(RELEASES_PATH_ENV)
    if not base:
        data = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
        base = os.path.join(data, "miogen", "releases")
    return os.path.join(base, TARGET)


def _untrusted(path: str, uid: int) -> str:
    """Why `path` cannot be trusted as code ("" when it can): not ours, or writable by others."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        return f"{os.fsdecode(path)!r} cannot be read ({exc.strerror or exc})"
    if stat.S_ISLNK(st.st_mode):
        return f"{path!r} is a symbolic link"
    if st.st_uid != uid:
        return f"{path!r} is owned by another user (uid {st.st_uid})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"{path!r} can be written by others (mode {stat.S_IMODE(st.st_mode):o})"
    return ""


def _check(folder: str, root: str) -> tuple[dict[str, Any], str]:
    """(its manifest, why it is refused or "")."""
    uid = os.geteuid()
    for path in (root, folder, *(os.path.join(folder, f) for f in _FILES)):
        why = _untrusted(path, uid)
        if why:
            return {}, f"never imported: {why}"
    try:
        with open(os.path.join(folder, MANIFEST), encoding="utf-8") as f:
            manifest = json.load(f)
        if not isinstance(manifest, dict):
            raise ValueError("not an object")
    except (OSError, ValueError) as exc:
        return {}, f"its {MANIFEST} cannot be read ({exc}); add it again with `miogen add-release HEADER`"
    if (manifest.get("generator"), manifest.get("support")) != (GENERATOR, SUPPORT_DIGEST):
        return manifest, (f"rendered by another miogen (version {manifest.get('generator')}, support "
                          f"{manifest.get('support')}) than this package's ({GENERATOR}, support {SUPPORT_DIGEST}); "
                          f"render it again: miogen add-release {manifest.get('source') or 'HEADER'}")
    return manifest, ""


def scan() -> list[UserRelease]:
    """Every release folder under the releases root, oldest first (none when the root does not exist)."""
    root = releases_root()
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return []
    out: list[UserRelease] = []
    for name in names:
        folder = os.path.join(root, name)
        if not (name.startswith("v") and os.path.isdir(folder)):
            continue
        manifest, refused = _check(folder, root)
        release = str(manifest.get("release", "")) or name[1:].replace("_", ".")
        if not refused and (manifest.get("module") != name or release in RELEASES):
            refused = (f"its manifest names {manifest.get('module')!r}" if manifest.get("module") != name else
                       f"{release} is a committed release of this package (its own bindings serve)")
        out.append(UserRelease(release, name, folder, str(manifest.get("source", "")), refused))
    return sorted(out, key=_order)


def _order(rel: UserRelease) -> tuple[int, tuple[int, ...], str]:
    """Oldest release first; a release that is no version X.Y.Z (refused anyway) before them all."""
    try:
        return 1, Version.parse(rel.release), ""
    except ValueError:
        return 0, (), rel.release


def matching(version: tuple[int, int, int] | None) -> tuple[UserRelease | None, str]:
    """The usable user release of exactly `version` (or None), and why one of that version is refused ("")."""
    if version is None:
        return None, ""
    wanted = str(Version(*version))
    for rel in scan():
        if rel.release == wanted:
            return (None, f"the release folder {rel.path!r} is refused: {rel.refused}") if rel.refused else (rel, "")
    return None, ""


def import_release(rel: UserRelease) -> tuple[Any, Any]:
    """(raw, api) of a user release, imported as `<package>.<module>` from its folder."""
    name = f"{_state.PACKAGE}.{rel.module}"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, os.path.join(rel.path, "__init__.py"),
                                                      submodule_search_locations=[rel.path])
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot import the release folder {rel.path!r}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
    api = importlib.import_module(f"{name}.api")
    return importlib.import_module(f"{name}.raw"), api
