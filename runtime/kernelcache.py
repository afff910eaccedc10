"""MIOpen's compiled-kernel cache, and the one line a process prints before MIOpen first compiles kernels.

MIOpen compiles each kernel the first time a problem needs it (seconds each on a GPU, up to minutes on a CPU
through PoCL) and keeps the binaries in its kernel cache (`$MIOPEN_CUSTOM_CACHE_DIR`, default ~/.cache/miopen);
later processes load them. When a process creates its first pooled handle and that cache holds no kernel database
yet, miopen says so once, on the `miopen` logger (a warning: shown on stderr unless logging is configured otherwise),
so that a first run that sits compiling does not look hung. `MIOGEN_COMPILE_NOTICE=0` turns it off.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from ._generated._envflags import env_flag

__all__ = ["NOTICE_ENV", "cache_dir", "is_empty", "notice_once"]

#: the switch: `0`/`false`/`no` silences the notice (parsed strictly: anything else but a yes-word is an error)
NOTICE_ENV = "MIOGEN_COMPILE_NOTICE"
#: the suffixes of MIOpen's kernel databases (`*.kdb` system, `*.ukdb` user: SQLite files of compiled kernels)
_DATABASES = (".kdb", ".ukdb")
_lock = threading.Lock()
_done = [False]


def cache_dir(environ: os._Environ[str] | dict[str, str] | None = None) -> Path:
    """The kernel cache MIOpen uses: `$MIOPEN_CUSTOM_CACHE_DIR`, else ~/.cache/miopen."""
    env = os.environ if environ is None else environ
    custom = env.get("MIOPEN_CUSTOM_CACHE_DIR")
    return Path(custom).expanduser() if custom else Path.home() / ".cache" / "miopen"


def is_empty(folder: Path, depth: int = 3) -> bool:
    """Whether `folder` holds no kernel database within `depth` levels (MIOpen keeps them under a folder per
    release); a missing or unreadable folder is empty."""
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_file(follow_symlinks=False) and entry.name.endswith(_DATABASES):
                    return False
                if depth > 1 and entry.is_dir(follow_symlinks=False) and not is_empty(Path(entry.path), depth - 1):
                    return False
    except OSError:
        return True
    return True


def notice_once(backend: str) -> bool:
    """Log the compile notice if this process has not, the switch allows it and the kernel cache is empty; returns
    whether it logged. Called by the handle pool when it creates a handle (not on an op's hot path)."""
    if _done[0]:
        return False
    with _lock:
        if _done[0]:
            return False
        _done[0] = True
    if not env_flag(NOTICE_ENV, default=True):
        return False
    folder = cache_dir()
    if not is_empty(folder):
        return False
    import logging  # only here: importing the runtime stays cheap

    how_long = "up to minutes each on a CPU through PoCL" if backend == "OpenCL" else "seconds each"
    logging.getLogger("miopen").warning(
        "miopen: MIOpen's kernel cache (%s) is empty: the first call of each op compiles its kernels once on this "
        "machine (%s); later runs reuse them (%s=0 silences this)", folder, how_long, NOTICE_ENV)
    return True
