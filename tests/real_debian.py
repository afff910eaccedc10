"""Where the tests find the real Debian-built libMIOpen releases, and how a worker runs them.

`scripts/real_miopen_debian.sh` (make real-miopen-debian) builds a Debian sid root with each library and caches it;
`$MIOGEN_REAL_MIOPEN_DEBIAN` names another root folder (the one holding `root/` and `libraries`). The libraries need
a newer glibc than this machine may have, so their workers run on the root's own loader and Python (no chroot),
with the stand-in GPU (tests/fixtures/standin_gpu) first on the loader path. `MIOGEN_REQUIRE_REAL_MIOPEN_DEBIAN=1`
(set by .ci/run) turns a missing root into a failure instead of a skip.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from .helpers import REPO

REQUIRED = os.environ.get("MIOGEN_REQUIRE_REAL_MIOPEN_DEBIAN") == "1"
LIBDIRS = ("usr/lib/x86_64-linux-gnu", "lib/x86_64-linux-gnu")
STANDIN = REPO / "tests" / "fixtures" / "standin_gpu"
#: Debian's upstream version of the ROCm release -> the MIOpen release its libmiopen1 reports (version.h); what
#: these tests were written against (a root with other versions still runs, with the versions the libraries report)
KNOWN = {"6.4.3": "3.4.0", "7.2.4": "3.5.1"}


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "miogen" / "real-miopen-debian"


@dataclass(frozen=True)
class Library:
    """One real library in the root: its Debian package version and its path inside the root."""

    root: Path
    debian_version: str
    inside: str

    @property
    def path(self) -> Path:
        return self.root / self.inside.lstrip("/")

    @property
    def upstream(self) -> str:
        """"6.4.3" of "6.4.3+dfsg-1+b1" (an epoch dropped)."""
        return self.debian_version.split(":")[-1].split("+")[0].split("-")[0]

    @property
    def hip_soname(self) -> str:
        return f"libamdhip64.so.{self.hip_major}"

    @property
    def hip_major(self) -> str:
        return self.upstream.split(".")[0]

    @property
    def expected_release(self) -> str | None:
        return KNOWN.get(self.upstream)


def find() -> tuple[list[Library], str]:
    """(the libraries of the cached root, where it is) or ([], why not)."""
    env = os.environ.get("MIOGEN_REAL_MIOPEN_DEBIAN")
    base = Path(env) if env else cache_dir() / "current"
    manifest, root = base / "libraries", base / "root"
    if not (base / "complete").is_file() or not manifest.is_file():
        return [], (f"no real Debian MIOpen root at {base}: run `make real-miopen-debian` "
                    "(scripts/real_miopen_debian.sh)")
    libs = []
    for line in manifest.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            version, inside = line.split()
            libs.append(Library(root, version, inside))
    missing = [str(lib.path) for lib in libs if not lib.path.exists()]
    if missing or not libs:
        return [], f"{manifest} names libraries the root lacks: {', '.join(missing) or '(none)'}"
    return libs, str(base)


def libraries() -> list[Library]:
    """The libraries, or [] (collection must not fail: the tests skip or fail in `require`)."""
    return find()[0]


def require() -> None:
    """Skip (or fail under MIOGEN_REQUIRE_REAL_MIOPEN_DEBIAN=1) without a root."""
    libs, why = find()
    if not libs:
        if REQUIRED:
            pytest.fail(f"MIOGEN_REQUIRE_REAL_MIOPEN_DEBIAN=1 but {why}")
        pytest.skip(why)


def build_standin(root: Path, out: Path) -> Path:
    """Compile the stand-in GPU against the root's HIP header, once per HIP major, each in a folder of its own
    (`out/6/libamdhip64.so.6`, `out/7/...`) with the unversioned `libamdhip64.so` beside it (hipRTC 7 opens that
    name to ask the device's architecture): `out`, whose `<major>/` goes first on the loader path."""
    out.mkdir(parents=True, exist_ok=True)
    # the root's <hip/...> alone: its other headers (glibc's, once the compiler packages are in) are not this gcc's
    include = out / "include"
    include.mkdir(exist_ok=True)
    if not (include / "hip").is_symlink():
        (include / "hip").symlink_to(root / "usr" / "include" / "hip")
    for major, version in (("6", "60443484"), ("7", "70253211")):
        (out / major).mkdir(exist_ok=True)
        done = subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-Wall", "-Wextra", "-Werror", f"-I{include}",
                        f"-DSTANDIN_HIP_VERSION={version}", f"-Wl,--version-script={STANDIN / 'standin_hip.map'}",
                        f"-Wl,-soname,libamdhip64.so.{major}", "-o", str(out / major / f"libamdhip64.so.{major}"),
                        str(STANDIN / "standin_hip.c")], capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"the stand-in GPU does not compile against {include}/hip:\n{done.stderr}")
        unversioned = out / major / "libamdhip64.so"
        if not unversioned.is_symlink():
            unversioned.symlink_to(f"libamdhip64.so.{major}")
    return out


def assemble_package(out: Path) -> Path:
    """The `miopen` package as installed (runtime/ with generated/ as `_generated`), for an interpreter without the
    checkout's virtual environment: the folder to put on its PYTHONPATH."""
    pkg = out / "miopen"
    if pkg.exists():
        shutil.rmtree(pkg)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(REPO / "runtime", pkg, ignore=ignore)
    shutil.copytree(REPO / "generated", pkg / "_generated", ignore=ignore)
    return out


def interpreter(root: Path, standin: Path) -> tuple[str, ...]:
    """The root's Python on the root's loader, the stand-in GPU first on its library path."""
    path = ":".join([str(standin), *(str(root / d) for d in LIBDIRS)])
    return (str(root / "lib64" / "ld-linux-x86-64.so.2"), "--library-path", path, str(root / "usr" / "bin" / "python3"))


def has_compilers(base: Path) -> bool:
    """Whether the root was built with MIOpen's kernel compilers (scripts/real_miopen_debian.sh writes `compilers`)."""
    marker = base / "compilers"
    return marker.is_file() and not marker.read_text().startswith("none")


def chroot_interpreter(root: Path, standin: Path) -> tuple[str, ...]:
    """The root's Python inside the root (tests/real/debian_chroot.sh: an overlay, this machine's /tmp and the
    checkout at their own paths), the stand-in GPU first on its library path: what MIOpen 3.4.0 needs to run the
    compilers it starts by absolute path."""
    return ("sh", str(REPO / "tests" / "real" / "debian_chroot.sh"), str(root), str(standin), str(REPO),
            "/usr/bin/python3")
