"""The per-user cache: its folder, and loaded models kept between runs.

Everything in it is a pure function's memo (same input, same generator: same result), so a missing,
stale, unreadable or corrupt entry only costs the work it would have saved; the output never depends on it.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import stat
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from . import GENERATOR_VERSION
from .digest import sha256

T = TypeVar("T")

#: loaded models kept (the least recently used are removed beyond it)
MAX_MODELS = 64
#: a temporary file older than this (seconds) is what a killed writer left
STALE_TMP_S = 3600
_PACKAGE = Path(__file__).resolve().parent
_FINGERPRINT: list[str] = []


def private_cache(name: str) -> Path | None:
    """The folder `name` of the per-user cache: under $MIOGEN_CACHE_DIR, else $XDG_CACHE_HOME/miogen, else
    ~/.cache/miogen; private to this user (created 0700; one that is not a directory this user owns, or that
    others may write, is not used). MIOGEN_CACHE_DIR set to an empty string turns the cache off. None where
    there is no such directory."""
    root = os.environ.get("MIOGEN_CACHE_DIR")
    if root == "":
        return None
    if root is None:
        root = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
                            "miogen")
    path = os.path.join(root, name)
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        st = os.lstat(path)
        uid = os.getuid() if hasattr(os, "getuid") else st.st_uid
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != uid or st.st_mode & 0o022:
            return None
    except OSError:
        return None
    return Path(path)


def fingerprint() -> str:
    """The generator as a cached result depends on it: its version, the Python version, its folder, and the path,
    size and mtime of every module (subpackages too), as CPython's own bytecode cache tells a changed source."""
    if not _FINGERPRINT:
        h = sha256(f"{GENERATOR_VERSION}\0{sys.version}\0{_PACKAGE}\0".encode())
        for stamp in sorted(_module_stamps(str(_PACKAGE), "")):  # every module, the support/ and audit/ packages too
            h.update(f"{stamp}\0".encode())
        _FINGERPRINT.append(h.hexdigest())
    return _FINGERPRINT[0]


def _module_stamps(folder: str, prefix: str) -> Iterator[tuple[str, int, int]]:
    """(path under the package, size, mtime) of each module in `folder` and the folders below it."""
    for entry in os.scandir(folder):
        if entry.is_dir() and entry.name != "__pycache__":
            yield from _module_stamps(entry.path, f"{prefix}{entry.name}/")
        elif entry.name.endswith(".py"):
            st = entry.stat()
            yield f"{prefix}{entry.name}", st.st_size, st.st_mtime_ns


def remembered(key: str, cls: type[T], build: Callable[[], T]) -> T:
    """`build()`, or the `cls` object an earlier `build()` of the same `key` (which must name every input)
    made with this generator (`fingerprint`), unpickled from the per-user cache. Only results are kept: an
    error is raised again every time."""
    folder = private_cache("models")
    if folder is None:
        return build()
    path = folder / sha256(f"{fingerprint()}\0{key}".encode()).hexdigest()
    try:
        with open(path, "rb") as fh:
            obj = pickle.load(fh)
        if type(obj) is cls:
            with contextlib.suppress(OSError):
                os.utime(path)  # used now: the eviction below removes the least recently used
            return obj
    except Exception:  # noqa: BLE001 - missing, unreadable, corrupt or stale: rebuilt below
        pass
    obj = build()
    _store(folder, path, obj)
    return obj


def _store(folder: Path, path: Path, obj: object) -> None:
    """Write `obj` to `path` in one step (a temp file renamed), then drop the oldest entries beyond MAX_MODELS."""
    import tempfile  # only here: a hit does without it

    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as fh:
                pickle.dump(obj, fh, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
        entries = []
        for e in os.scandir(folder):
            if not e.name.startswith("."):
                entries.append(e)
            elif e.name.startswith(".tmp-") and e.stat().st_mtime < time.time() - STALE_TMP_S:
                os.unlink(e.path)  # left by a writer killed between writing and renaming
        if len(entries) > MAX_MODELS:
            entries.sort(key=lambda e: e.stat().st_mtime_ns)
            for e in entries[: len(entries) - MAX_MODELS]:
                os.unlink(e.path)
    except Exception:  # noqa: BLE001 - unwritable, or a result pickle cannot hold: the next run rebuilds it
        pass
