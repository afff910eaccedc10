"""Session fixtures: the fixture header rendered into a package and its stub library built with gcc."""

from __future__ import annotations

import ctypes
import importlib
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

from codegen import abi
from codegen.annotate import Semantics, load_annotations, resolve
from codegen.model import Spec
from codegen.render import Plan, banner, plan, render, sha256_text, write
from codegen.spec_io import dumps

from .helpers import FIXTURE_ANNOTATIONS, FIXTURE_HEADER, fixture_spec, target


@dataclass
class Built:
    pkg: ModuleType
    stub: ctypes.CDLL
    spec: Spec
    sem: Semantics
    plan: Plan
    files: dict[str, str]
    root: Path


def fixture_files() -> tuple[Plan, dict[str, str]]:
    spec = fixture_spec()
    ann = load_annotations(FIXTURE_ANNOTATIONS)
    info = banner("fixture.spec.yaml", sha256_text(dumps(spec)), sha256_text(FIXTURE_ANNOTATIONS.read_text()))
    pl = plan(spec, ann, target(), info, {"miopenCatForward": "3.1.0"})
    return pl, render(pl)


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    root = tmp_path_factory.mktemp("fixture_build")
    pl, files = fixture_files()
    write(files, root / "fixture_pkg")
    spec = pl.spec
    sem = resolve(spec, load_annotations(FIXTURE_ANNOTATIONS))
    stub_path = abi.compile_cpp(abi.stub_source(spec, sem, FIXTURE_HEADER, "fixture stub", target().status_type), root / "libstub.so",
                                target(), shared=True)
    sys.path.insert(0, str(root))
    try:
        pkg = importlib.import_module("fixture_pkg")
    finally:
        sys.path.remove(str(root))
    stub = ctypes.CDLL(str(stub_path))
    stub.miogen_stub_log.restype = ctypes.c_char_p
    stub.miogen_stub_set_status.argtypes = [ctypes.c_char_p, ctypes.c_int]
    pkg._support.load_library(stub)
    yield Built(pkg, stub, spec, sem, pl, files, root)
    pkg._support.unload_library()


@pytest.fixture()
def fx(built: Built) -> Iterator[Built]:
    """The built fixture with a clean stub log and the stub loaded."""
    built.pkg._support.load_library(built.stub)
    built.stub.miogen_stub_reset()
    yield built
    built.stub.miogen_stub_reset()


# ---------------------------------------------------------------------------- the runtime's libraries


@dataclass
class Libs:
    """The real generated `miopen` package driven through a stub libMIOpen (built from the pinned spec)
    and a stub libamdhip64."""

    miopen: ctypes.CDLL
    hip: ctypes.CDLL

    def log(self, fn: str | None = None) -> list[dict[str, str]]:
        out = []
        for line in (self.miopen.miogen_stub_log() or b"").decode().splitlines():
            name, *items = line.split("\t")
            if fn is None or name == fn:
                entry = {"": name}
                entry.update(dict(item.partition("=")[::2] for item in items))
                out.append(entry)
        return out

    def reset(self) -> None:
        """Clear the stub's log and scripts; script the pinned release as the runtime version."""
        import miopen

        self.miopen.miogen_stub_reset()
        for part, value in zip(("major", "minor", "patch"), miopen.MIOPEN_VERSION.split("."), strict=True):
            self.set_out(f"miopenGetVersion/{part}", int(value))

    def calls(self) -> list[str]:
        return [e[""] for e in self.log()]

    def set_out(self, key: str, value: int | float) -> None:
        if isinstance(value, float):
            self.miopen.miogen_stub_set_out_f(key.encode(), value)
        else:
            self.miopen.miogen_stub_set_out(key.encode(), value)

    def set_status(self, fn: str | None, status: int, once: bool = False) -> None:
        if once:
            assert fn is not None
            self.miopen.miogen_stub_set_status_once(fn.encode(), status)
        else:
            self.miopen.miogen_stub_set_status(fn.encode() if fn else None, status)


def _configure_stub(lib: ctypes.CDLL) -> None:
    lib.miogen_stub_log.restype = ctypes.c_char_p
    lib.miogen_stub_set_status.argtypes = [ctypes.c_char_p, ctypes.c_int]
    lib.miogen_stub_set_status_once.argtypes = [ctypes.c_char_p, ctypes.c_int]
    lib.miogen_stub_set_out.argtypes = [ctypes.c_char_p, ctypes.c_longlong]
    lib.miogen_stub_set_out_f.argtypes = [ctypes.c_char_p, ctypes.c_double]
    lib.miogen_stub_calls.argtypes = [ctypes.c_char_p]
    lib.miogen_stub_calls.restype = ctypes.c_longlong


@pytest.fixture(scope="session")
def runtime_libs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Libs]:
    import subprocess

    import miopen
    from codegen.spec_io import load
    from miopen import hip

    from .helpers import REPO, SPECS

    root = tmp_path_factory.mktemp("runtime_libs")
    version = (SPECS / "pinned").read_text().strip()
    spec = load(SPECS / f"{version}.yaml")
    sem = resolve(spec, load_annotations(SPECS / "annotations.yaml"))
    header = root / "miopen.h"
    header.write_text(abi.header_source(spec, f"MIOpen {version} declarations"))
    lib_path = abi.compile_cpp(abi.stub_source(spec, sem, header, "runtime stub", target().status_type),
                               root / "libMIOpen_stub.so", target(), shared=True)
    hip_path = root / "libamdhip64_stub.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-O0", "-o", str(hip_path), str(REPO / "tests/fixtures/stub_hip.c")],
                   check=True)
    mi = ctypes.CDLL(str(lib_path))
    _configure_stub(mi)
    hl = ctypes.CDLL(str(hip_path))
    miopen.load_library(mi)
    hip.set_hip_library(hl)
    yield Libs(mi, hl)
    miopen.unload_library()
    hip.set_hip_library(None)


@pytest.fixture()
def libs(runtime_libs: Libs) -> Iterator[Libs]:
    """Stub libraries loaded, logs and scripts cleared, caches of the runtime emptied."""
    import miopen
    from miopen import hip

    import gc

    miopen.load_library(runtime_libs.miopen)
    hip.set_hip_library(runtime_libs.hip)
    gc.collect()  # handles dropped by earlier tests are destroyed now, not in the middle of this one
    gc.disable()  # and no automatic collection interleaves destroy calls with what a test asserts
    runtime_libs.reset()
    try:
        yield runtime_libs
    finally:
        gc.enable()
    runtime_libs.miopen.miogen_stub_reset()
