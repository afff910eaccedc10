"""The per-user cache: its folders, its entries, and loaded models kept between runs.

Everything in it is a pure function's memo (same input, same generator: same result), so a missing,
stale, unreadable, corrupt or foreign entry is a miss that only costs the work it would have saved (and is
written again); the output never depends on it. Trust: every folder from the root down is created 0700 and
every file 0600, and nothing is loaded from a folder or file that is not this user's or that others may write
(one warning names it). An entry (`read_entry`, `write_entry`) carries the SHA-256 of its key (with the
generator's `fingerprint`) and payload: it is used only where both match, before anything unpickles it.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from .. import GENERATOR_VERSION
from .digest import sha256
from .errors import shown

T = TypeVar("T")

if TYPE_CHECKING:
    from pickle import dumps as _dumps, loads as _loads
else:
    try:  # the C pickler alone, as `pickle` uses it: `pickle` itself (its pure-Python classes) costs every parse a
        from _pickle import dumps as _dumps, loads as _loads  # millisecond
    except ImportError:  # another interpreter
        from pickle import dumps as _dumps, loads as _loads


def pickled(obj: object) -> bytes:
    """`obj` as pickle's bytes (its highest protocol)."""
    return _dumps(obj, protocol=-1)


def unpickled(data: bytes) -> object:
    """What `pickled` made of an object."""
    return _loads(data)

#: loaded models kept (the least recently used are removed beyond it)
MAX_MODELS = 64
#: entries kept in any other folder of the cache
MAX_ENTRIES = 512
#: the largest entry read back (a bigger file is not one miogen wrote)
MAX_ENTRY_BYTES = 256 << 20
#: a temporary file older than this (seconds) is what a killed writer left
STALE_TMP_S = 3600
#: every entry starts with it, then the SHA-256 of its key and payload, then the payload
MAGIC = b"miogen-cache-1\0"
_PACKAGE = Path(__file__).resolve().parent.parent  # the whole generator package
_FINGERPRINT: list[str] = []
_WARNED: set[str] = set()


def root() -> str | None:
    """The cache's root folder: $MIOGEN_CACHE_DIR, else $XDG_CACHE_HOME/miogen, else ~/.cache/miogen; None where
    MIOGEN_CACHE_DIR is set to an empty string (the cache is off)."""
    folder = os.environ.get("MIOGEN_CACHE_DIR")
    if folder == "":
        return None
    if folder is None:
        folder = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
                              "miogen")
    return os.path.abspath(folder)


def untrusted(st: os.stat_result, directory: bool) -> str | None:
    """Why a cache folder (`directory`) or file with this lstat is not used, or None: it must be of that kind,
    this user's, and writable by nobody else (no group or other write bit)."""
    if directory and not stat.S_ISDIR(st.st_mode):
        return "not a directory"
    if not directory and not stat.S_ISREG(st.st_mode):
        return "not a regular file"
    uid = os.getuid() if hasattr(os, "getuid") else st.st_uid
    if st.st_uid != uid:
        return f"owned by uid {st.st_uid}, not by this user (uid {uid})"
    if st.st_mode & 0o022:
        return f"writable by {'group and others' if st.st_mode & 0o022 == 0o022 else 'group' if st.st_mode & 0o020 else 'others'} (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def warn(path: str | Path, why: str) -> None:
    """One warning per cache path and process: it is not used, and how to fix that."""
    text = str(path)
    if text in _WARNED:
        return
    _WARNED.add(text)
    print(f"miogen: warning: cache {shown(text)}: {why}; not used (miogen keeps its cache 0700 and its files 0600: "
          f"remove it, or chmod go-w it; MIOGEN_CACHE_DIR= turns the cache off)", file=sys.stderr)


def private_cache(name: str) -> Path | None:
    """The folder `name` of the per-user cache (under `root()`), private to this user: each folder from the root
    down is created 0700, and used only while every one of them is a directory this user owns that nobody else
    may write (else one warning, and None). None too where the cache is off or cannot be made."""
    top = root()
    if top is None:
        return None
    path = top
    try:
        os.makedirs(os.path.dirname(top), exist_ok=True)  # above the cache: the user's own folders
        for part in (None, *name.split("/")):
            if part is not None:
                path = os.path.join(path, part)
            with contextlib.suppress(FileExistsError):
                os.mkdir(path, 0o700)  # the umask only takes bits away
            why = untrusted(os.lstat(path), directory=True)
            if why is not None:
                warn(path, why)
                return None
    except OSError:
        return None
    return Path(path)


def fingerprint() -> str:
    """The generator as a cached result depends on it: its version, the Python version, its folder, and the path,
    size, mtime, ctime and inode of every module (subpackages too): a module rewritten in place, even to the same
    size and mtime, changes its ctime."""
    if not _FINGERPRINT:
        h = sha256(f"{GENERATOR_VERSION}\0{sys.version}\0{_PACKAGE}\0".encode())
        for stamp in sorted(_module_stamps(str(_PACKAGE), "")):  # every module, the support/ and audit/ packages too
            h.update(f"{stamp}\0".encode("utf-8", "surrogateescape"))
        _FINGERPRINT.append(h.hexdigest())
    return _FINGERPRINT[0]


def _module_stamps(folder: str, prefix: str) -> Iterator[tuple[str, int, int, int, int]]:
    """(path under the package, size, mtime, ctime, inode) of each module in `folder` and the folders below it."""
    for entry in os.scandir(folder):
        if entry.is_dir() and entry.name != "__pycache__":
            yield from _module_stamps(entry.path, f"{prefix}{entry.name}/")
        elif entry.name.endswith(".py"):
            st = entry.stat()
            yield f"{prefix}{entry.name}", st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino


def _entry(key: str) -> tuple[str, bytes]:
    """The file name of `key`'s entry and the bytes its digest covers first (the key, with the generator's
    fingerprint)."""
    full = f"{fingerprint()}\0{key}".encode("utf-8", "surrogateescape")
    return sha256(full).hexdigest(), full + b"\0"


def read_entry(folder: Path, key: str) -> bytes | None:
    """The payload `write_entry` stored for `key` in `folder`, or None: missing, not this user's regular file,
    writable by others (one warning), too large, or not exactly what was written for this key and generator
    (truncated, garbled, another key's or kind's entry): a miss, which the caller rebuilds and writes again."""
    name, head = _entry(key)
    path = folder / name
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        why = untrusted(os.fstat(fd), directory=False)
        if why is not None:
            warn(path, why)
            return None
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(MAX_ENTRY_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    start = len(MAGIC) + 32
    if len(data) > MAX_ENTRY_BYTES or not data.startswith(MAGIC):
        return None
    payload = data[start:]
    if sha256(head + payload).digest() != data[len(MAGIC):start]:
        return None
    with contextlib.suppress(OSError):
        os.utime(path)  # used now: the eviction of `write_entry` removes the least recently used
    return payload


def write_entry(folder: Path, key: str, payload: bytes, keep: int = MAX_ENTRIES) -> None:
    """Store `payload` for `key` in `folder` in one step (a 0600 temp file renamed), then drop the least recently
    used entries beyond `keep`. A cache that cannot be written only costs the next run the work."""
    import tempfile  # only here: a hit does without it

    name, head = _entry(key)
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")  # created 0600
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(MAGIC + sha256(head + payload).digest() + payload)
            os.replace(tmp, folder / name)
        except BaseException:
            os.unlink(tmp)
            raise
        entries = []
        for e in os.scandir(folder):
            if not e.name.startswith("."):
                entries.append(e)
            elif e.name.startswith(".tmp-") and e.stat().st_mtime < time.time() - STALE_TMP_S:
                os.unlink(e.path)  # left by a writer killed between writing and renaming
        if len(entries) > keep:
            entries.sort(key=lambda e: e.stat().st_mtime_ns)
            for e in entries[: len(entries) - keep]:
                os.unlink(e.path)
    except OSError:
        pass


def remembered(key: str, cls: type[T], build: Callable[[], T]) -> T:
    """`build()`, or the `cls` object an earlier `build()` of the same `key` (which must name every input)
    made with this generator (`fingerprint`), unpickled from the per-user cache (only an entry `read_entry`
    accepts is unpickled). Only results are kept: an error is raised again every time."""
    folder = private_cache("models")
    if folder is None:
        return build()
    data = read_entry(folder, f"model\0{cls.__module__}.{cls.__qualname__}\0{key}")
    if data is not None:
        try:
            obj = unpickled(data)
            if type(obj) is cls:
                return obj
        except Exception:  # noqa: BLE001 - a pickle of a class since changed: rebuilt below
            pass
    obj = build()
    try:
        payload = pickled(obj)
    except Exception:  # noqa: BLE001 - a result pickle cannot hold: the next run rebuilds it
        return obj
    write_entry(folder, f"model\0{cls.__module__}.{cls.__qualname__}\0{key}", payload, MAX_MODELS)
    return obj
