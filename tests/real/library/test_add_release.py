"""A pip user adds the release of their MIOpen: `miogen add-release HEADER` from an installed wheel, no checkout.

The wheel is built from a copy of the tree with one committed release (2.17.0, whose real header and real library
lie in ../shared/real-miopen) taken out, so that release is new to it. Its real header is added; a library of that
release (a stub of it; the real HIPNOGPU build where it loads) then binds exactly that release, not the older
neighbour (NEIGHBOUR); `python -m miopen` lists it with where it came from. A folder rendered by another miogen,
one that others can write to, and one owned by another user are never imported."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path

import pytest

from miogen.spec.records import dumps_records, load_records

from miogen.spec.releases import Releases, Version

from ...helpers import REPO, SPECS
from ...real_miopen import HIPNOGPU

RELEASE = "2.17.0"  # taken out of the wheel: its real header is in ../shared/real-miopen
HEADER = HIPNOGPU.shared / "include" / "miopen" / "miopen.h"
_SOURCES = ("codegen", "runtime", "specs", "pyproject.toml", "setup.py", "README.md")
#: the committed release a library of RELEASE binds when RELEASE is not there: the newest older one
NEIGHBOUR = str(max(v for v in Releases.of(SPECS).versions if v < Version.parse(RELEASE)))


def _run(cmd: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "MIOPEN_LIBRARY")}
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env={**clean, **env}, check=False,
                          timeout=600)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """bin/ of a fresh venv holding only a wheel built without RELEASE."""
    if not HEADER.is_file():
        if HIPNOGPU.required:
            pytest.fail(f"{HEADER} is missing")
        pytest.skip(f"no real {RELEASE} header at {HEADER}")
    root = tmp_path_factory.mktemp("addrelease")
    src = root / "src"
    src.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in _SOURCES:
        path = REPO / name
        (shutil.copytree(path, src / name, ignore=ignore) if path.is_dir() else shutil.copy2(path, src / name))
    specs = src / "specs" / "miopen"
    (specs / f"{RELEASE}.yaml").unlink()
    records = load_records(specs)
    del records[Version.parse(RELEASE)]
    (specs / "releases.yaml").write_text(dumps_records(records))
    r = _run([sys.executable, "-m", "miogen", "render", *map(str, sorted(specs.glob("*.*.*.yaml"))), "--annotations",
              str(specs / "annotations.yaml"), "--history", str(specs), "-o", str(src / "generated")], root,
             MIOGEN_CACHE_DIR="")
    assert r.returncode == 0, r.stderr
    r = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
              "--disable-pip-version-check", "-q", "-w", str(root / "dist"), str(src)], root)
    assert r.returncode == 0, r.stdout + r.stderr
    venv = root / "venv"
    assert _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], root).returncode == 0
    r = _run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "--no-index",
              "--no-deps", "--disable-pip-version-check", "-q", *map(str, (root / "dist").glob("*.whl"))], root)
    assert r.returncode == 0, r.stdout + r.stderr
    site = Path(_run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                     root).stdout.strip())
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    yield venv / "bin"


@pytest.fixture(scope="module")
def added(installed: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The releases folder after `miogen add-release HEADER` (run from a folder that is no checkout)."""
    work = tmp_path_factory.mktemp("user")
    releases = work / "releases"
    r = _run([str(installed / "miogen"), "add-release", str(HEADER)], work, MIOGEN_RELEASES_PATH=str(releases))
    assert r.returncode == 0, r.stdout + r.stderr
    for phase in ("parse", "diff", "gate", "render"):
        assert f"add-release [{phase}]" in r.stdout
    assert f"wrote {releases / 'miopen' / 'v2_17_0'}" in r.stdout
    return releases


def _bind(installed: Path, releases: Path, library: str, cwd: Path) -> list[str]:
    """[bound release, whether the user release module was imported, warnings...] from a fresh process."""
    code = ("import sys, warnings\nimport miopen\nfrom miopen._generated import _support\n"
            "with warnings.catch_warnings(record=True) as w:\n    warnings.simplefilter('always')\n"
            "    miopen.load_library()\n"
            "print(_support.bound_release()); print('miopen._generated.v2_17_0' in sys.modules)\n"
            "print(hasattr(miopen, 'set_4d_tensor_descriptor_ex'))\n"
            "for x in w: print('warning:', x.message)\n")
    r = _run([str(installed / "python"), "-c", code], cwd, MIOGEN_RELEASES_PATH=str(releases), MIOPEN_LIBRARY=library)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout.splitlines()


def test_the_wheel_lacks_the_release(installed: Path, tmp_path: Path) -> None:
    r = _run([str(installed / "python"), "-c", "import miopen; print(' '.join(miopen.RELEASES))"], tmp_path)
    assert RELEASE not in r.stdout.split() and r.returncode == 0


def test_a_stub_of_the_added_release_binds_it(installed: Path, added: Path, tmp_path: Path) -> None:
    from ...conftest import build_stub

    stub = str(build_stub(RELEASE, tmp_path))
    out = _bind(installed, added, stub, tmp_path)
    assert out[:3] == [RELEASE, "True", "True"], out
    assert not [line for line in out if line.startswith("warning:")], out
    r = _run([str(installed / "python"), "-m", "miopen"], tmp_path, MIOGEN_RELEASES_PATH=str(added),
             MIOPEN_LIBRARY=stub)
    assert r.returncode == 0, r.stdout + r.stderr
    line = next(x for x in r.stdout.splitlines() if x.startswith(f"  {RELEASE} ") and "v2_17_0" in x)
    assert str(HEADER) in line and "bound to a library of exactly this version" in line
    assert f"Selected release: {RELEASE} " in r.stdout


def test_the_real_library_binds_the_added_release(installed: Path, added: Path, tmp_path: Path) -> None:
    lib, why = HIPNOGPU.find()
    if lib is None:
        if HIPNOGPU.required:
            pytest.fail(why)
        pytest.skip(why)
    assert _bind(installed, added, str(lib), tmp_path)[:2] == [RELEASE, "True"]


def _copy(added: Path, tmp_path: Path) -> Path:
    releases = tmp_path / "releases"
    shutil.copytree(added, releases)
    return releases


@pytest.mark.parametrize("damage", ["another generator", "writable by others", "group-writable file",
                                    "another owner"])
def test_a_folder_it_cannot_trust_is_never_imported(installed: Path, added: Path, tmp_path: Path, damage: str) -> None:
    from ...conftest import build_stub

    releases = _copy(added, tmp_path)
    folder = releases / "miopen" / "v2_17_0"
    if damage == "another generator":
        manifest = json.loads((folder / "release.json").read_text())
        (folder / "release.json").write_text(json.dumps({**manifest, "generator": "0.0.1"}))
        os.chmod(folder / "release.json", 0o600)
        why = f"render it again: miogen add-release {HEADER}"
    elif damage == "writable by others":
        os.chmod(folder, 0o777)
        why = "can be written by others"
    elif damage == "group-writable file":
        os.chmod(folder / "api.py", 0o660)
        why = "can be written by others"
    else:
        if os.geteuid() != 0:
            pytest.skip("changing a file's owner needs root")
        os.chown(folder / "raw.py", 12345, 12345)
        why = "owned by another user"
    stub = str(build_stub(RELEASE, tmp_path))
    out = _bind(installed, releases, stub, tmp_path)
    assert out[:2] == [NEIGHBOUR, "False"], out  # the older neighbour, with the reason in a warning
    assert any(why in line for line in out if line.startswith("warning:")), out
    r = _run([str(installed / "python"), "-m", "miopen"], tmp_path, MIOGEN_RELEASES_PATH=str(releases),
             MIOPEN_LIBRARY=stub)
    assert any(x.startswith(f"  {RELEASE} ") and "refused" in x and why in x for x in r.stdout.splitlines()), r.stdout


def test_upgrade_without_specs_points_at_add_release(installed: Path, tmp_path: Path) -> None:
    r = _run([str(installed / "miogen"), "upgrade", str(HEADER)], tmp_path)
    assert r.returncode == 2 and "miogen add-release HEADER" in r.stderr, r.stderr


def test_both_sides_agree_on_the_folder(tmp_path: Path) -> None:
    """The generator writes where the package reads, for every way the folder is chosen."""
    from miogen.workflow.addrelease import releases_root

    code = "from miopen._generated._userreleases import releases_root; print(releases_root())"
    for env in ({"MIOGEN_RELEASES_PATH": str(tmp_path / "a")}, {"XDG_DATA_HOME": str(tmp_path / "b")},
                {"HOME": str(tmp_path / "c")}):
        clean = {k: v for k, v in os.environ.items() if k not in ("MIOGEN_RELEASES_PATH", "XDG_DATA_HOME")}
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**clean, **env},
                           check=True)
        mine = subprocess.run([sys.executable, "-c", "from miogen.workflow.addrelease import releases_root; "
                               "print(releases_root('miopen'))"], capture_output=True, text=True,
                              env={**clean, **env}, check=True)
        assert r.stdout == mine.stdout and r.stdout.strip().startswith(str(tmp_path)), (env, r.stdout, mine.stdout)
    assert releases_root("miopen").name == "miopen"
