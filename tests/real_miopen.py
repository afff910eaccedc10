"""Where the tests find a real libMIOpen. Real builds live in ../shared (each unpacked into a cache
outside the repository, checked by its README's sha256):

- `HIPNOGPU` (../shared/real-miopen): the HIP backend without a GPU, host side only; or $MIOGEN_REAL_MIOPEN, or
  /opt/rocm. `MIOGEN_REQUIRE_REAL_MIOPEN=1` (set by .ci/run) turns a missing or unloadable library into a
  failure instead of a skip.
- `OPENCL` (../shared/real-miopen-ocl): MIOpen's OpenCL backend, whose kernels compute on PoCL (an OpenCL driver
  for the CPU); or $MIOGEN_REAL_MIOPEN_OCL. `MIOGEN_REQUIRE_REAL_MIOPEN_OCL=1` (also set by .ci/run) makes it
  required, with an OpenCL device to run on.
- `OPENCL_GEMM` (../shared/real-miopen-ocl-gemm): the same with MIOpenGEMM (libmiopengemm.so.1 unpacked beside it):
  RNN and the GEMM convolutions compute; $MIOGEN_REAL_MIOPEN_OCL_GEMM, required by
  `MIOGEN_REQUIRE_REAL_MIOPEN_OCL_GEMM=1`.
- `OPENCL_330` (../shared/real-miopen-ocl-330): MIOpen 3.3.0's OpenCL build; $MIOGEN_REAL_MIOPEN_OCL_330 (a file, or
  the folder of one, as `make real-miopen-ocl REAL_MIOPEN_OCL_ARGS="--release 3.3.0 ..."` writes it: WORK/out), required
  by `MIOGEN_REQUIRE_REAL_MIOPEN_OCL_330=1`.
"""

from __future__ import annotations

import functools
import hashlib
import lzma
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from .helpers import REPO


def _cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "miogen"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def has_sha256(path: Path, sha256: str) -> bool:
    """Whether the file `path` has this sha256; a match is remembered (size and mtime) in a stamp beside it, so a
    session does not hash 280 MB again."""
    if not path.is_file():
        return False
    st = path.stat()
    stamp = path.with_suffix(".verified")
    key = f"{st.st_size} {st.st_mtime_ns} {sha256}"
    try:
        if stamp.read_text() == key:
            return True
    except OSError:
        pass
    if _sha256(path) != sha256:
        return False
    stamp.write_text(key)
    return True


@dataclass(frozen=True)
class SharedLibrary:
    """One real libMIOpen build of ../shared: where it is, its sha256, how a user points at another, and the
    variable that makes it required."""

    folder: str
    sha256: str
    env: str
    require_env: str
    #: a Python snippet a throwaway process runs after loading the library (argv[1]); non-zero exit: unusable
    probe: str = ""
    #: other libraries of the build, unpacked beside libMIOpen.so.1 (which finds them through its $ORIGIN RUNPATH):
    #: (file name, sha256 of the unpacked file)
    companions: tuple[tuple[str, str], ...] = ()
    #: environment the build needs at run time (added to every worker's)
    env_vars: tuple[tuple[str, str], ...] = ()

    @property
    def shared(self) -> Path:
        """../shared/<folder> beside the checkout (one level further up for a git worktree in a subfolder)."""
        return next((d for d in (REPO.parent / "shared" / self.folder, REPO.parent.parent / "shared" / self.folder)
                     if d.is_dir()), REPO.parent / "shared" / self.folder)

    @property
    def required(self) -> bool:
        return os.environ.get(self.require_env) == "1"

    def cache_dir(self) -> Path:
        """A per-machine folder of this build, outside the repository, reused across runs."""
        return _cache_root() / self.folder / self.sha256[:16]

    def _unpack_one(self, name: str, sha256: str) -> Path | None:
        """../shared/<folder>/<name>.xz unpacked into the cache folder (checked by its sha256); None without it."""
        packed = self.shared / f"{name}.xz"
        if not packed.is_file():
            return None
        out = self.cache_dir() / name
        if has_sha256(out, sha256):
            return out
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(f".tmp{os.getpid()}")
        with lzma.open(packed) as src, tmp.open("wb") as dst:
            while chunk := src.read(1 << 20):
                dst.write(chunk)
        if _sha256(tmp) != sha256:
            tmp.unlink()
            raise RuntimeError(f"{packed} does not unpack to the library its README describes (sha256 differs)")
        tmp.replace(out)
        st = out.stat()
        out.with_suffix(".verified").write_text(f"{st.st_size} {st.st_mtime_ns} {sha256}")
        return out

    def _unpack_shared(self) -> Path | None:
        """libMIOpen.so.1 and its companions, side by side in the cache folder."""
        for name, sha in self.companions:
            if self._unpack_one(name, sha) is None:
                return None
        return self._unpack_one("libMIOpen.so.1", self.sha256)

    def find(self) -> tuple[Path | None, str]:
        """(path of the library, where it came from) or (None, why not)."""
        env = os.environ.get(self.env)
        if env:
            p = Path(env)
            if p.is_dir():
                p = next((c for c in (p / "libMIOpen.so.1", p / "lib" / "libMIOpen.so.1") if c.exists()),
                         p / "libMIOpen.so.1")
            return (p, f"${self.env}") if p.exists() else (None, f"${self.env}={env} does not exist")
        shared = self._unpack_shared()
        if shared is not None:
            return shared, str(self.shared)
        if self is HIPNOGPU:
            rocm = Path(os.environ.get("ROCM_PATH", "/opt/rocm")) / "lib" / "libMIOpen.so.1"
            if rocm.exists():
                return rocm, str(rocm.parent)
        return None, f"no real MIOpen: set {self.env}, or provide {self.shared}"

    def library_path(self) -> Path:
        """The library's path; skips the test (or fails it when required) when none loads."""
        return _library_path(self)

    def headers_dir(self) -> Path | None:
        """The include dir that belongs to the library, when it is the shared one."""
        inc = self.shared / "include"
        return inc if inc.is_dir() else None


@functools.cache
def _library_path(lib: SharedLibrary) -> Path:
    path, why = lib.find()
    if path is not None:
        # loaded in a throwaway process: this session keeps the stub library only
        code = "import ctypes, sys; ctypes.CDLL(sys.argv[1])\n" + lib.probe
        probe = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=120)
        if probe.returncode != 0:
            detail = (probe.stderr.strip().splitlines() or [f"exit status {probe.returncode}"])[-1]
            path, why = None, f"{path} is not usable here ({detail}); install its runtime dependencies (see .ci/run)"
    if path is None:
        if lib.required:
            pytest.fail(f"{lib.require_env}=1 but {why}")
        pytest.skip(why)
    return path


HIPNOGPU = SharedLibrary("real-miopen", "71a26ecfa455d0ff0704701eee75d2fabaef2c5c087621cc7cf9a76cbb7bd1ac",
                         "MIOGEN_REAL_MIOPEN", "MIOGEN_REQUIRE_REAL_MIOPEN")
#: the OpenCL build needs an OpenCL device too (PoCL's CPU device, Debian's pocl-opencl-icd) and pyopencl
OPENCL = SharedLibrary("real-miopen-ocl", "a9f4306d11a7f3442bec7aaf03c6aa92ef8dc700cc1ee6e8e43f2ba23089cc3f",
                       "MIOGEN_REAL_MIOPEN_OCL", "MIOGEN_REQUIRE_REAL_MIOPEN_OCL",
                       probe="import pyopencl as cl\n"
                             "sys.exit(0 if any(p.get_devices() for p in cl.get_platforms()) else 'no OpenCL device')\n")

_OCL_PROBE = ("import pyopencl as cl\n"
              "sys.exit(0 if any(p.get_devices() for p in cl.get_platforms()) else 'no OpenCL device')\n")
#: 2.17.0's OpenCL build with MIOpenGEMM (RNN and the GEMM convolution solvers compute); libmiopengemm.so.1 beside it
OPENCL_GEMM = SharedLibrary("real-miopen-ocl-gemm", "7a05ac345b2bccecca8ab868b1dfc26b1d3a890541155075b175c1a08ca84ec9",
                            "MIOGEN_REAL_MIOPEN_OCL_GEMM", "MIOGEN_REQUIRE_REAL_MIOPEN_OCL_GEMM", probe=_OCL_PROBE,
                            companions=(("libmiopengemm.so.1",
                                         "b9aa61a30a4fb7479074890a1bc28f16dcbd1d1938e8a072a3afade86466bd62"),))
#: MIOpen 3.3.0's OpenCL build; its direct convolution solvers are "deprecated" and enabled off AMD GPUs only by
#: MIOPEN_DEBUG_ENABLE_DEPRECATED_SOLVERS=1 (../shared/real-miopen-ocl-330/README.md)
OPENCL_330 = SharedLibrary("real-miopen-ocl-330", "dc3507e7d5b5d5224b0936652b0687c33ab25ab44db5bf08f23370c4406738a9",
                           "MIOGEN_REAL_MIOPEN_OCL_330", "MIOGEN_REQUIRE_REAL_MIOPEN_OCL_330", probe=_OCL_PROBE,
                           env_vars=(("MIOPEN_DEBUG_ENABLE_DEPRECATED_SOLVERS", "1"),))

# the HIPNOGPU build under its historical names
SHARED = HIPNOGPU.shared
SHARED_SHA256 = HIPNOGPU.sha256
REQUIRED = HIPNOGPU.required
find = HIPNOGPU.find
library_path = HIPNOGPU.library_path
headers_dir = HIPNOGPU.headers_dir
