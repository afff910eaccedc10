"""benchmarks/run_all.py without timing anything: `--strict` turns a missed goal into exit status 1, and the release
of a header is derived from it (its version.h, else the committed spec of its sha256) or refused, never assumed."""

from __future__ import annotations

import hashlib
import importlib.util
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

from ..helpers import REPO, SPECS


@pytest.fixture
def run_all(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.setattr(sys, "path", list(sys.path))  # the script puts the repository and benchmarks/ on it
    spec = importlib.util.spec_from_file_location("bench_run_all", REPO / "benchmarks" / "run_all.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("results", "strict", "status"), [
    ((True, None, False), True, 1),
    ((True, None, False), False, 0),
    ((True, None, True), True, 0),
])
def test_strict_exits_1_on_a_missed_goal(run_all: ModuleType, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str], results: tuple[bool | None, ...],
                                         strict: bool, status: int) -> None:
    """main() with every measurement replaced by rows of the given results: the table printed, and the exit status
    `make bench BENCH_ARGS=--strict` ends with (the Makefile runs the script as its recipe)."""
    rows = [(f"row {n}", "<= 1", "measured", ok) for n, ok in enumerate(results)]
    monkeypatch.setattr(run_all, "process_rounds", lambda args, tmp: rows[:-1])
    monkeypatch.setattr(run_all, "all_releases", lambda headers: rows[-1])
    monkeypatch.setattr(run_all, "call_rows", lambda tmp: [])
    monkeypatch.setattr(run_all, "opencl_rows", lambda: [])
    assert run_all.main(["--strict"] if strict else []) == status
    out = capsys.readouterr().out
    assert out.count("| MISS |") == results.count(False) and out.count("| PASS |") == results.count(True)


def _version_h(folder: Path, major: str, minor: str, patch: str) -> None:
    folder.joinpath("version.h").write_text(f"#define MIOPEN_VERSION_MAJOR {major}\n#define MIOPEN_VERSION_MINOR "
                                            f"{minor}\n#define MIOPEN_VERSION_PATCH {patch}\n")


def test_the_release_of_a_header_is_derived_or_refused(run_all: ModuleType, tmp_path: Path) -> None:
    """A version.h beside the header gives the release (the parse reads it too); without one, or where it declares
    none, the committed spec whose header has the same sha256 gives it (and the parse is told); a header neither
    tells is refused, naming the header, why its version.h does not tell, and the option to pass."""
    specs = tmp_path / "specs"
    specs.mkdir()
    shutil.copy(SPECS / "target.yaml", specs / "target.yaml")
    header = tmp_path / "h" / "miopen.h"
    header.parent.mkdir()
    header.write_text("/* a header */\n")
    sha = hashlib.sha256(header.read_bytes()).hexdigest()
    with pytest.raises(SystemExit, match=rf"cannot tell the release of {header} \(no version.h beside it.*--version"):
        run_all.header_release(header, specs)
    (specs / "3.1.0.yaml").write_text(f"schema_version: 1\nversion: 3.1.0\nheader:\n  name: miopen.h\n  sha256: "
                                      f"{'0' * 64}\n")
    (specs / "3.4.0.yaml").write_text(f"schema_version: 1\nversion: 3.4.0\nheader:\n  name: miopen.h\n  sha256: "
                                      f"{sha}\n")
    assert run_all.header_release(header, specs) == ("3.4.0", True)
    _version_h(header.parent, "2", "20", "0")
    assert run_all.header_release(header, specs) == ("2.20.0", False)
    _version_h(header.parent, "@MIOpen_VERSION_MAJOR@", "0", "0")  # a source tree's template: the sha256 decides
    assert run_all.header_release(header, specs) == ("3.4.0", True)
    (specs / "3.4.0.yaml").unlink()
    with pytest.raises(SystemExit, match=r"version.h: MIOPEN_VERSION_MAJOR is @MIOpen_VERSION_MAJOR@.*--version"):
        run_all.header_release(header, specs)
