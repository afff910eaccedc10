"""`python -m miopen`: releases, library search, selection and features; with the stub library, with none, with a
refused version, and with the real 2.17.0. Each run is a process of its own (the report loads and binds a library)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from miogen.spec.releases import Releases, Version
from miogen.spec.spec_io import load

from .. import conftest
from ..conftest import Libs
from ..helpers import REPO, SPECS

#: the release the session's stub library reports (`make test MIOPEN_VERSION=X`; the pinned one by default)
STUB_RELEASE = conftest.test_release()
RELEASES = [str(v) for v in Releases.of(SPECS).versions]
_ENV_NAMES = ("MIOPEN_LIBRARY", "ROCM_PATH", "MIOPEN_SKIP_VERSION_CHECK")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _ENV_NAMES}
    env.update(extra)
    return env


def _run(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    r = subprocess.run([sys.executable, "-m", "miopen", *args], capture_output=True, text=True, cwd=REPO,
                       env=env or _env(), timeout=300)
    assert "Traceback" not in r.stdout + r.stderr, r.stdout + r.stderr
    return r


def _script(body: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`body` (which may script the stub) and then `python -m miopen ARGS`, in one fresh process."""
    code = (f"import ctypes, sys\n{body}\nfrom miopen.__main__ import main\nsys.exit(main({list(args)!r}))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=env or _env(),
                       timeout=300)
    assert "Traceback" not in r.stdout + r.stderr, r.stdout + r.stderr
    return r


def _scripted_version(path: str, version: str) -> str:
    major, minor, patch = Version.parse(version)
    return (f"lib = ctypes.CDLL({path!r})\n"
            "lib.miogen_stub_set_out.argtypes = [ctypes.c_char_p, ctypes.c_longlong]\n"
            f"lib.miogen_stub_set_out(b'miopenGetVersion/major', {major})\n"
            f"lib.miogen_stub_set_out(b'miopenGetVersion/minor', {minor})\n"
            f"lib.miogen_stub_set_out(b'miopenGetVersion/patch', {patch})\n")


@pytest.fixture(scope="module")
def stub(runtime_libs: Libs) -> str:
    """The path of the session's stub libMIOpen (built from STUB_RELEASE's spec; it reports that release)."""
    path: str = runtime_libs.miopen._name
    return path


def test_with_the_stub_library(stub: str) -> None:
    r = _run(["--library", stub])
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    for version in RELEASES:  # every release the package has bindings for, each with the ROCm release its spec records
        shipped = load(SPECS / f"{version}.yaml").release or "-"
        assert any(x.startswith(f"  {version} ") and shipped in x for x in out.splitlines()), version
    assert f"[loaded] {stub} (--library)" in out
    assert f"Library: {stub}\n  version: {STUB_RELEASE}" in out
    assert f"Selected release: {STUB_RELEASE} (policy compatible)" in out and "warning:" not in out
    assert "Features (miopen.has_feature):" in out
    for name in ("find2", "immediate", "tensor_desc_v2", "get_version"):
        assert f"  {name} " in out
    assert out.rstrip().endswith("exit status 0: a library was found and bound")


def test_every_release_says_what_it_is_proven_against(stub: str) -> None:
    """Each committed release has its record (specs/miopen/releases.yaml): the real header it was parsed from, and
    the real-library rows name test files that exist; `python -m miopen` shows the records, text and JSON."""
    import re

    from miogen.spec.records import load_records

    from miopen._generated._releases import PROVEN

    records = load_records(SPECS)
    assert sorted(map(str, records)) == sorted(RELEASES) == sorted(PROVEN)
    for version, record in records.items():
        assert record.header, version
        assert PROVEN[str(version)] == {k: v for k, v in record.__dict__.items() if v and k != "shipped_in"}
        for test_file in re.findall(r"tests/[\w/]+\.py", record.library):
            assert (REPO / test_file).is_file(), (version, test_file)
    assert any(record.library for record in records.values())
    out = _run(["--library", stub]).stdout
    for version, proof in PROVEN.items():
        line = next(x for x in out.splitlines() if x.startswith(f"  {version} ") and "header: " in x)
        assert all(text in line for text in proof.values()), (version, line)
    info = json.loads(_run(["--library", stub, "--json"]).stdout)
    assert {r["miopen"]: r["proven"] for r in info["releases"]} == PROVEN


def test_search_lists_every_candidate_until_the_library(stub: str, tmp_path: Path) -> None:
    """$MIOPEN_LIBRARY, when set, is the only candidate: a missing file is named with why (no fall-through to
    $ROCM_PATH, even where a library lies there); the library found there ends the search."""
    missing = tmp_path / "nowhere" / "libMIOpen.so.1"
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "libMIOpen.so.1").symlink_to(stub)
    r = _run([], _env(MIOPEN_LIBRARY=str(missing), ROCM_PATH=str(tmp_path)))
    out = r.stdout
    assert r.returncode == 1, out
    assert f"[failed] {missing} ($MIOPEN_LIBRARY): no such file" in out
    assert f"{tmp_path}/lib/libMIOpen.so.1" not in out
    assert f"$MIOPEN_LIBRARY is set to '{missing}', which does not load; fix it, or unset $MIOPEN_LIBRARY" in out
    assert f"$MIOPEN_LIBRARY='{missing}'" in out and f"$ROCM_PATH='{tmp_path}'" in out
    r = _run([], _env(ROCM_PATH=str(tmp_path)))  # unset: the install root's library
    assert r.returncode == 0 and f"[loaded] {tmp_path}/lib/libMIOpen.so.1 ({tmp_path}/lib)" in r.stdout, r.stdout
    r = _run(["--json"], _env(MIOPEN_LIBRARY=stub))
    info = json.loads(r.stdout)
    assert r.returncode == 0
    assert info["search"][0] == {"origin": "$MIOPEN_LIBRARY", "path": stub, "result": "loaded", "detail": ""}
    assert all(t["result"] == "not tried" for t in info["search"][1:])
    assert info["library"]["path"] == stub and info["library"]["version"] == STUB_RELEASE
    assert info["library"]["backend"] == "HIP" and "  backend: HIP" in _run([], _env(MIOPEN_LIBRARY=stub)).stdout
    assert info["selection"] == {"release": STUB_RELEASE, "policy": "compatible", "warnings": [], "refused": None}
    assert [r["miopen"] for r in info["releases"]] == RELEASES
    assert {f["name"] for f in info["features"]} >= {"find2", "immediate", "get_version"}
    assert info["error"] is None


def test_without_a_library(tmp_path: Path) -> None:
    """No candidate loads: a "none found" section naming every place searched, exit status 1, no traceback."""
    missing = [("$MIOPEN_LIBRARY", str(tmp_path / "a" / "libMIOpen.so.1")),
               ("loader path", "libMIOpen-not-installed-anywhere.so.1")]
    body = f"import miopen._generated._support as s\ns._candidates = lambda: {missing!r}\n"
    r = _script(body)
    assert r.returncode == 1, r.stdout + r.stderr
    out = r.stdout
    assert f"[failed] {missing[0][1]} ($MIOPEN_LIBRARY): no such file" in out
    assert "[failed] libMIOpen-not-installed-anywhere.so.1 (loader path): " in out
    assert "Library: none found\n  no MIOpen library found; set $MIOPEN_LIBRARY" in out
    assert "Selected release" not in out and "Features" not in out
    assert out.rstrip().endswith("exit status 1: no usable library (none found, or its version refused)")
    r = _script(body, "--json")
    info = json.loads(r.stdout)
    assert r.returncode == 1 and info["library"] is None and info["selection"] is None and info["features"] == []
    assert "no MIOpen library found" in info["error"]
    assert [t["result"] for t in info["search"]] == ["failed", "failed"]
    # the real command with a path that does not exist
    r = _run(["--library", str(tmp_path / "libMIOpen.so.1")])
    assert r.returncode == 1 and "Library: none found" in r.stdout and "no such file" in r.stdout


def test_a_refused_version_shows_the_error(stub: str) -> None:
    r = _script(_scripted_version(stub, "1.0.0"), "--library", stub)
    assert r.returncode == 1, r.stdout + r.stderr
    out = r.stdout
    assert f"Library: {stub}\n  version: 1.0.0" in out
    assert "Selected release: none (policy compatible)" in out
    assert f"  refused: {stub} is MIOpen 1.0.0: it is older than every supported release; these bindings support " \
           f"MIOpen {', '.join(RELEASES)}" in out
    assert "Features" not in out
    r = _script(_scripted_version(stub, "1.0.0"), "--library", stub, "--json")
    info: dict[str, Any] = json.loads(r.stdout)
    assert r.returncode == 1 and info["selection"]["release"] is None
    assert "older than every supported release" in info["selection"]["refused"]
    assert info["error"].startswith("the library's version was refused: ")


def test_a_neighbouring_patch_binds_with_the_selection_warning(stub: str) -> None:
    major, minor, patch = Version.parse(STUB_RELEASE)
    # an uncommitted patch of its major.minor nearer to the stub's release than to any other committed patch
    patches = [v.patch for v in map(Version.parse, RELEASES) if v[:2] == (major, minor) and v != (major, minor, patch)]
    other = next(f"{major}.{minor}.{q}" for q in (patch + 1, patch - 1, patch + 2) if q >= 0
                 and all(abs(q - patch) < abs(q - x) for x in patches))
    r = _script(_scripted_version(stub, other), "--library", stub)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"Selected release: {STUB_RELEASE} (policy compatible)" in r.stdout
    assert f"  warning: {stub} is MIOpen {other}; bound to the bindings of {STUB_RELEASE} (another patch release)" in r.stdout


def test_the_version_switch_is_shown_and_checked(stub: str) -> None:
    r = _script(_scripted_version(stub, "1.0.0"), "--library", stub, env=_env(MIOPEN_SKIP_VERSION_CHECK="1"))
    assert r.returncode == 0 and "(policy off)" in r.stdout and "$MIOPEN_SKIP_VERSION_CHECK='1'" in r.stdout
    r = _run(["--library", stub], _env(MIOPEN_SKIP_VERSION_CHECK="maybe"))
    assert r.returncode == 1 and "expected 1/true/yes or 0/false/no" in r.stdout


def test_usage_errors_exit_2() -> None:
    r = subprocess.run([sys.executable, "-m", "miopen", "--no-such-option"], capture_output=True, text=True,
                       cwd=REPO, env=_env(), timeout=120)
    assert r.returncode == 2 and "usage: python -m miopen" in r.stderr
    r = subprocess.run([sys.executable, "-m", "miopen", "--help"], capture_output=True, text=True, cwd=REPO,
                       env=_env(), timeout=120)
    assert r.returncode == 0 and "--library PATH" in r.stdout and "Exit status: 0" in r.stdout


@pytest.mark.real_library
def test_with_the_real_miopen_2_17_0() -> None:
    from ..real_miopen import library_path

    path = str(library_path())
    r = _run(["--library", path, "--json"])
    assert r.returncode == 0, r.stdout + r.stderr
    info = json.loads(r.stdout)
    assert info["library"] == {"path": path, "version": "2.17.0", "version_error": None, "backend": "HIP"}
    assert info["selection"] == {"release": "2.17.0", "policy": "compatible", "warnings": [], "refused": None}
    features = {f["name"]: f for f in info["features"]}
    assert features["get_version"]["available"] and features["immediate"]["available"]
    assert not features["find2"]["available"] and "the library lacks miopenCreateConvProblem" in features["find2"]["why_not"]
    assert not features["deterministic_attr"]["available"]
    r = _run([], _env(MIOPEN_LIBRARY=path))
    assert r.returncode == 0 and f"[loaded] {path} ($MIOPEN_LIBRARY)" in r.stdout
    assert "Selected release: 2.17.0 (policy compatible)" in r.stdout


def test_no_path_option_or_library_variable_blocks_on_a_fifo(tmp_path: Path) -> None:
    """Every path option of `python -m miopen` (read from its parser), and $MIOPEN_LIBRARY / $ROCM_PATH, given a
    FIFO or a device: refused or skipped before the loader opens it, never a hang."""
    from miopen.__main__ import parser

    fifo = tmp_path / "libMIOpen.so.1"
    os.mkfifo(fifo)
    options = [a.option_strings[0] for a in parser()._actions if a.metavar == "PATH"]
    assert options == ["--library"]
    for option in options:
        for bad in (str(fifo), "/dev/zero", str(tmp_path)):
            r = _run([option, bad])
            assert r.returncode == 2 and f"{bad}: not a regular file" in r.stderr, r.stderr
    r = _run(["--json"], _env(MIOPEN_LIBRARY=str(fifo), ROCM_PATH=str(tmp_path)))
    info = json.loads(r.stdout)
    assert info["search"][0] == {"origin": "$MIOPEN_LIBRARY", "path": str(fifo), "result": "failed",
                                 "detail": "not a regular file (a FIFO, socket or device), not a shared library"}
    # the library search of the bindings themselves (miopen.load_library) skips it the same way
    code = ("import miopen, sys\ntry:\n    miopen.load_library(sys.argv[1])\nexcept miopen.LibraryNotFoundError as e:\n"
            "    print(e)\n")
    r = subprocess.run([sys.executable, "-c", code, str(fifo)], capture_output=True, text=True, cwd=REPO,
                       env=_env(), timeout=60)
    assert f"from {fifo}: not a regular file" in r.stdout, r.stdout + r.stderr
