"""Where the tests find a real libMIOpen: $MIOGEN_REAL_MIOPEN, else ../shared/real-miopen (unpacked into a cache
outside the repository), else /opt/rocm. `MIOGEN_REQUIRE_REAL_MIOPEN=1` (set by .ci/run) turns a missing or
unloadable library into a failure instead of a skip."""

from __future__ import annotations

import functools
import hashlib
import lzma
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import REPO

# ../shared/real-miopen beside the checkout (one level further up for a git worktree in a subfolder)
SHARED = next((d for d in (REPO.parent / "shared" / "real-miopen", REPO.parent.parent / "shared" / "real-miopen")
               if d.is_dir()), REPO.parent / "shared" / "real-miopen")
#: sha256 of the unpacked libMIOpen.so.1 in ../shared/real-miopen (its README gives it)
SHARED_SHA256 = "71a26ecfa455d0ff0704701eee75d2fabaef2c5c087621cc7cf9a76cbb7bd1ac"
REQUIRED = os.environ.get("MIOGEN_REQUIRE_REAL_MIOPEN") == "1"


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "miogen" / "real-miopen" / SHARED_SHA256[:16]


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _verified(path: Path) -> bool:
    """Whether `path` is the library the README describes; the sha256 of a file already checked is remembered
    (size and mtime) in a stamp beside it, so a session does not hash 280 MB again."""
    if not path.is_file():
        return False
    st = path.stat()
    stamp = path.with_suffix(".verified")
    key = f"{st.st_size} {st.st_mtime_ns} {SHARED_SHA256}"
    try:
        if stamp.read_text() == key:
            return True
    except OSError:
        pass
    if _sha256(path) != SHARED_SHA256:
        return False
    stamp.write_text(key)
    return True


def _unpack_shared() -> Path | None:
    packed = SHARED / "libMIOpen.so.1.xz"
    if not packed.is_file():
        return None
    out = _cache_dir() / "libMIOpen.so.1"
    if _verified(out):
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(f".tmp{os.getpid()}")
    with lzma.open(packed) as src, tmp.open("wb") as dst:
        while chunk := src.read(1 << 20):
            dst.write(chunk)
    if _sha256(tmp) != SHARED_SHA256:
        tmp.unlink()
        raise RuntimeError(f"{packed} does not unpack to the library its README describes (sha256 differs)")
    tmp.replace(out)
    st = out.stat()
    out.with_suffix(".verified").write_text(f"{st.st_size} {st.st_mtime_ns} {SHARED_SHA256}")
    return out


@functools.cache
def find() -> tuple[Path | None, str]:
    """(path of a real libMIOpen, where it came from) or (None, why not)."""
    env = os.environ.get("MIOGEN_REAL_MIOPEN")
    if env:
        p = Path(env)
        if p.is_dir():
            p = next((c for c in (p / "libMIOpen.so.1", p / "lib" / "libMIOpen.so.1") if c.exists()), p / "libMIOpen.so.1")
        return (p, "$MIOGEN_REAL_MIOPEN") if p.exists() else (None, f"$MIOGEN_REAL_MIOPEN={env} does not exist")
    shared = _unpack_shared()
    if shared is not None:
        return shared, str(SHARED)
    rocm = Path(os.environ.get("ROCM_PATH", "/opt/rocm")) / "lib" / "libMIOpen.so.1"
    if rocm.exists():
        return rocm, str(rocm.parent)
    return None, "no real MIOpen: set MIOGEN_REAL_MIOPEN, or provide ../shared/real-miopen or /opt/rocm"


@functools.cache
def library_path() -> Path:
    """The real library's path; skips the test (or fails it under MIOGEN_REQUIRE_REAL_MIOPEN=1) when none loads."""
    path, why = find()
    if path is not None:
        # loaded in a throwaway process: this session keeps the stub library only
        probe = subprocess.run([sys.executable, "-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1])", str(path)],
                               capture_output=True, text=True, timeout=120)
        if probe.returncode != 0:
            detail = (probe.stderr.strip().splitlines() or [f"exit status {probe.returncode}"])[-1]
            path, why = None, f"{path} does not load ({detail}); install its runtime dependencies (see .ci/run)"
    if path is None:
        if REQUIRED:
            pytest.fail(f"MIOGEN_REQUIRE_REAL_MIOPEN=1 but {why}")
        pytest.skip(why)
    return path


def headers_dir() -> Path | None:
    """The include dir that belongs to the real library, when it is the shared one."""
    inc = SHARED / "include"
    return inc if inc.is_dir() else None
