"""Session fixtures: the fixture header rendered into a package and its stub library built with gcc."""

from __future__ import annotations

import ctypes
import importlib
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

from miogen.prove import stublib
from miogen.semantics.resolved import Semantics
from miogen.semantics.annotations import load_annotations
from miogen.semantics.resolve import resolve
from miogen.spec.model import Spec
from miogen.base.files import write_tree as write
from miogen.render.plans import Plan
from miogen.render.package import banner, render, sha256_text
from miogen.spec.spec_io import dumps

from .helpers import CACHE_ENV, cached_header, compile_stub, FIXTURE_ANNOTATIONS, FIXTURE_HEADER, fixture_spec, planned, target


def pytest_configure(config: pytest.Config) -> None:
    """One compile cache for the run (`make test` sets CACHE_ENV for all its pytest runs); the xdist workers
    and the pytest runs the tests start inherit it. miogen's per-user cache (compiled templates, models, plans,
    the HIP preamble) is a folder of the tests' own unless MIOGEN_CACHE_DIR names one: the tests neither
    depend on nor push out what the user's holds."""
    config.addinivalue_line("markers", "long: runs for tens of seconds (scheduled first)")
    config.addinivalue_line("markers", "browser: builds the documentation site and drives a headless Chromium "
                                       "(minutes; `make docs-test`, not part of `make test`)")
    os.environ.setdefault("MIOGEN_CACHE_DIR", str(Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
                                                  / "miogen-tests"))
    if os.environ.get(CACHE_ENV) or hasattr(config, "workerinput"):
        return
    import shutil
    import tempfile

    cache = tempfile.mkdtemp(prefix="miogen-test-cache.")
    os.environ[CACHE_ENV] = cache
    config.add_cleanup(lambda: (os.environ.pop(CACHE_ENV, None), shutil.rmtree(cache, ignore_errors=True)))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests marked `long` (each tens of seconds) run first, so that the xdist workers (`--dist worksteal`)
    end together instead of one of them finishing a long test alone."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


def pytest_collection_finish(session: pytest.Session) -> None:
    """What is alive once the tests are collected (the imported modules, the parameters) lives as long as the
    session: the garbage collector's full collections (the automatic ones, and the gc.collect() tests call
    before they count destroy calls) need not walk it again."""
    import gc

    gc.collect()
    gc.freeze()


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
    pl = planned(spec, ann, target(), info, {"miopenCatForward": "3.1.0"})
    return pl, render(pl)


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    root = tmp_path_factory.mktemp("fixture_build")
    pl, files = fixture_files()
    write(files, root / "fixture_pkg")
    spec = pl.spec
    sem = resolve(spec, load_annotations(FIXTURE_ANNOTATIONS))
    stub_path = compile_stub(stublib.stub_source(spec, sem, FIXTURE_HEADER, "fixture stub", target().status_type,
                                             target().version_getter), root / "libstub.so", target(),
                             (FIXTURE_HEADER.parent.parent,))
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
        """Clear the stub's log and scripts (its version function keeps reporting the stub's release)."""
        self.miopen.miogen_stub_reset()

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


def test_release() -> str:
    """The release the runtime suite's stub library reports: $MIOGEN_TEST_RELEASE (`make test MIOPEN_VERSION=X`),
    else the newest committed one."""
    from .helpers import SPECS

    version = os.environ.get("MIOGEN_TEST_RELEASE") or (SPECS / "pinned").read_text().strip()
    if not (SPECS / f"{version}.yaml").is_file():
        pytest.exit(f"MIOGEN_TEST_RELEASE={version}: no committed spec specs/miopen/{version}.yaml", returncode=2)
    return version


def build_stub(version: str, root: Path) -> Path:
    """A stub libMIOpen of a committed release (declarations re-synthesised from its spec), reporting that release."""
    from miogen.spec.spec_io import load

    from .helpers import SPECS

    spec = load(SPECS / f"{version}.yaml")
    sem = resolve(spec, load_annotations(SPECS / "annotations.yaml"))
    header = cached_header(stublib.header_source(spec, f"MIOpen {version} declarations"), f"miopen-{version}.h",
                           root / f"miopen-{version}.h")
    return compile_stub(stublib.stub_source(spec, sem, header, f"MIOpen {version} stub", target().status_type,
                                            target().version_getter),
                        root / f"libMIOpen_stub-{version}.so", target())


@pytest.fixture(scope="session")
def runtime_libs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Libs]:
    import subprocess

    import miopen
    from miopen import hip

    from .helpers import REPO

    root = tmp_path_factory.mktemp("runtime_libs")
    version = test_release()
    lib_path = build_stub(version, root)
    hip_path = root / "libamdhip64_stub.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-O0", "-o", str(hip_path), str(REPO / "tests/fixtures/stub_hip.c")],
                   check=True)
    mi = ctypes.CDLL(str(lib_path))
    _configure_stub(mi)
    hl = ctypes.CDLL(str(hip_path))
    miopen.unload_library()
    miopen.load_library(mi)
    assert miopen.bound_release() == version
    hip.set_hip_library(hl)
    yield Libs(mi, hl)
    miopen.unload_library()
    hip.set_hip_library(None)


#: len(sys.modules) when the fixture libs last froze what was alive (gc.freeze)
_frozen_with = [0]


@pytest.fixture()
def libs(runtime_libs: Libs) -> Iterator[Libs]:
    """Stub libraries loaded, logs and scripts cleared, caches of the runtime emptied."""
    import miopen
    from miopen import hip

    import gc

    runtime_libs.miopen.miogen_stub_reset()  # no version left scripted by an earlier test
    miopen.load_library(runtime_libs.miopen)
    hip.set_hip_library(runtime_libs.hip)
    gc.collect()  # handles dropped by earlier tests are destroyed now, not in the middle of this one
    if len(sys.modules) != _frozen_with[0]:
        # modules imported since the last test (a release's layer, bound for the first time) live as long as the
        # session: the next collections need not walk them again
        gc.freeze()
        _frozen_with[0] = len(sys.modules)
    gc.disable()  # and no automatic collection interleaves destroy calls with what a test asserts
    runtime_libs.reset()
    try:
        yield runtime_libs
    finally:
        gc.enable()
    runtime_libs.miopen.miogen_stub_reset()


@pytest.fixture(autouse=True)
def _miopen_environment_restored() -> Iterator[None]:
    """MIOpen's variables (MIOPEN_*) as they were before each test: the runtime's OpenCL backend and
    `miopen.configure` put their values into os.environ, and a later test's child process must not inherit them."""
    before = {k: v for k, v in os.environ.items() if k.startswith("MIOPEN_")}
    yield
    for k in [k for k in os.environ if k.startswith("MIOPEN_") and k not in before]:
        del os.environ[k]
    os.environ.update(before)
