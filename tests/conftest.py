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
