"""miogen as a package: a built wheel installed into a fresh venv works without the checkout, and mypy
in the make-built venv sees `miopen` from user code.

Offline: the wheel is built with --no-build-isolation (the setuptools of the test environment) and
installed with --no-index --no-deps; its dependencies (jinja2, pyyaml, libclang) come from the test
environment through a path entry, as a user's would from the registry.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path

import pytest

from miogen.spec.spec_io import dumps
from miogen.spec.releases import Version

from ..helpers import COMMITTED, FIXTURE_ANNOTATIONS, FIXTURE_HEADER, REPO, fixture_spec

# what the wheel is built from (specs/ is the source of truth for the packaged target files)
_SOURCES = ("codegen", "runtime", "generated", "specs", "pyproject.toml", "setup.py", "README.md")


def _run(cmd: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env={**clean, **env}, check=False)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A venv (no pip, no access to the checkout) with only the miogen wheel installed; returns its bin/."""
    root = tmp_path_factory.mktemp("wheel")
    src = root / "src"
    src.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in _SOURCES:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=ignore)
        else:
            shutil.copy2(path, src / name)
    r = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
              "--disable-pip-version-check", "-q", "-w", str(root / "dist"), str(src)], root)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Warning" not in r.stderr and "warning" not in r.stderr, r.stderr  # no build-backend warnings
    wheels = list((root / "dist").glob("miogen-*.whl"))
    assert len(wheels) == 1
    venv = root / "venv"
    r = _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], root)
    assert r.returncode == 0, r.stderr
    r = _run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "--no-index",
              "--no-deps", "--disable-pip-version-check", "-q", str(wheels[0])], root)
    assert r.returncode == 0, r.stdout + r.stderr
    # the dependencies from the test environment (a path entry: its .pth files, the editable miogen's
    # included, are not processed)
    site = Path(_run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                     root).stdout.strip())
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    yield venv / "bin"


def test_wheel_has_every_committed_release(installed: Path) -> None:
    """One sub-package per committed spec (setup.py finds the release directories of generated/)."""
    r = _run([str(installed / "python"), "-c", "import miopen._generated as g; print(g.__file__)"], installed)
    assert r.returncode == 0, r.stderr
    generated = Path(r.stdout.strip()).parent
    wanted = {v.module for v in COMMITTED.versions}
    assert {d.name for d in generated.iterdir() if (d / "__init__.py").is_file()} == wanted
    for name in wanted:
        assert {p.name for p in (generated / name).glob("*.py")} == {p.name for p in (REPO / "generated" / name).glob("*.py")}


def test_wheel_carries_the_target_files(installed: Path) -> None:
    r = _run([str(installed / "python"), "-c",
              "import miogen.spec.target as t, miopen, miopen.ops.conv; print(t.TARGETS_DIR); print(t.SPECS_DIR); "
              "print(miopen.__file__)"], installed)
    assert r.returncode == 0, r.stderr
    targets, specs, miopen_file = r.stdout.split()
    site = Path(miopen_file).parent.parent
    assert Path(targets) == site / "miogen" / "targets" and specs == "None"
    assert str(REPO) not in r.stdout  # nothing comes from the checkout
    for name in ("miopen/target.yaml", "miopen/annotations.yaml", "miopen/shims/miopen/config.h",
                 "miopen/shims/miopen/export.h", "miopen/shims/hip/hip_runtime_api.h", "cudnn/target.yaml"):
        assert (Path(targets) / name).is_file(), name


def test_wheel_installs_the_generator_as_miogen(installed: Path) -> None:
    """The generator is the package `miogen` (from the folder codegen/): `python -m miogen` runs, and no
    top-level `codegen` is installed."""
    python = str(installed / "python")
    r = _run([python, "-m", "miogen", "--version"], installed)
    assert r.returncode == 0 and r.stdout.startswith("miogen"), r.stdout + r.stderr
    r = _run([python, "-c", "import importlib.util as u; print(u.find_spec('codegen'))"], installed)
    assert r.returncode == 0 and r.stdout.strip() == "None", r.stdout + r.stderr
    site = Path(_run([python, "-c", "import miopen; print(miopen.__file__)"], installed).stdout.strip()).parent.parent
    assert not (site / "codegen").exists() and (site / "miogen" / "cli.py").is_file()


def test_installed_miogen_parses_checks_renders_and_diffs(installed: Path, tmp_path: Path) -> None:
    miogen = str(installed / "miogen")
    spec = tmp_path / "spec.yaml"
    r = _run([miogen, "parse", str(FIXTURE_HEADER), "--beta", "-o", str(spec)], tmp_path)
    assert r.returncode == 0, r.stderr
    assert spec.read_text() == dumps(fixture_spec(True))  # the packaged shims and target give the same spec
    r = _run([miogen, "check", str(spec), "--annotations", str(FIXTURE_ANNOTATIONS)], tmp_path)
    assert r.returncode == 0 and "ok: MIOpen 3.4.1" in r.stdout, r.stderr
    r = _run([miogen, "render", str(spec), "--annotations", str(FIXTURE_ANNOTATIONS), "-o", str(tmp_path / "pkg")],
             tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "pkg" / "api.py").is_file() and (tmp_path / "pkg" / "raw.py").is_file()
    stable = tmp_path / "stable.yaml"
    assert _run([miogen, "parse", str(FIXTURE_HEADER), "-o", str(stable)], tmp_path).returncode == 0
    r = _run([miogen, "diff", str(stable), str(spec)], tmp_path)
    assert r.returncode == 0 and "## MIOpen 3.4.1 → 3.4.1" in r.stdout, r.stderr
    r = _run([miogen, "header-version", str(FIXTURE_HEADER)], tmp_path)
    assert r.stdout == "3.4.1\n", r.stderr


def test_installed_miogen_ships_its_templates_compiled(installed: Path, tmp_path: Path) -> None:
    """The wheel holds every template compiled (setup.py's build step), so a render with the per-user cache empty
    compiles none: it stores no compiled template there, only the other work it did."""
    python = str(installed / "python")
    r = _run([python, "-c", "from miogen.render import jinja_env as j; print(j.SHIPPED); print(j.TEMPLATES)"],
             installed)
    assert r.returncode == 0, r.stderr
    shipped, templates = map(Path, r.stdout.split())
    assert len(list(shipped.iterdir())) == len(list(templates.rglob("*.j2"))) > 0
    spec = tmp_path / "spec.yaml"
    spec.write_text(dumps(fixture_spec(True)))
    cache = tmp_path / "cache"
    r = _run([str(installed / "miogen"), "render", str(spec), "--annotations", str(FIXTURE_ANNOTATIONS), "-o",
              str(tmp_path / "pkg")], tmp_path, MIOGEN_CACHE_DIR=str(cache))
    assert r.returncode == 0, r.stderr
    stored = {p.parent.name.partition("-")[0] for p in cache.rglob("*") if p.is_file()}
    assert "models" in stored and "templates" not in stored, stored


def test_installed_miogen_upgrade_and_abi_check(installed: Path, tmp_path: Path) -> None:
    miogen = str(installed / "miogen")
    # upgrade needs the user's spec directory when there is no checkout
    r = _run([miogen, "upgrade", str(FIXTURE_HEADER)], tmp_path)
    assert r.returncode == 2 and "pass --specs DIR" in r.stderr, r.stderr
    specs = tmp_path / "specs"
    specs.mkdir()
    from miogen.base.record import replace

    (specs / "3.4.0.yaml").write_text(dumps(replace(fixture_spec(True), version=Version(3, 4, 0))))
    (specs / "pinned").write_text("3.4.0\n")
    shutil.copy(FIXTURE_ANNOTATIONS, specs / "annotations.yaml")
    r = _run([miogen, "upgrade", str(FIXTURE_HEADER), "--specs", str(specs), "--verify", "true"], tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (specs / "pinned").read_text() == "3.4.1\n" and (specs / "3.4.1.yaml").is_file()
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    r = _run([miogen, "abi-check", str(FIXTURE_HEADER), "--annotations", str(FIXTURE_ANNOTATIONS)], tmp_path,
             TMPDIR=str(tmp))
    assert r.returncode == 0, r.stdout + r.stderr
    assert " 0 mismatches; " in r.stdout and ", 0 failing" in r.stdout, r.stdout
    assert list(tmp.iterdir()) == []


def test_installed_import_miopen(installed: Path, tmp_path: Path) -> None:
    from ..conftest import build_stub

    pinned = (REPO / "specs" / "miopen" / "pinned").read_text().strip()
    # importing needs no library, nor do names; the first call binds the loaded library's release (a stub of the
    # pinned one)
    r = _run([str(installed / "python"), "-c",
              "import miopen; from miopen.ops import activation, conv; assert miopen.RELEASES and miopen.raw; "
              "from miopen._generated import _handles; print(miopen.RELEASES[-1], _handles.Handle.__name__)"],
             tmp_path)  # no library here: nothing may bind a release
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [pinned, "Handle"]
    stub = build_stub(pinned, tmp_path)
    r = _run([str(installed / "python"), "-c",
              "import miopen; assert miopen.raw.miopenStatus_t and miopen.MIOPEN_VERSION is None; "
              "miopen.create_tensor_descriptor(); print(miopen.MIOPEN_VERSION, miopen.Handle.__name__)"],
             tmp_path, MIOPEN_LIBRARY=str(stub))
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [pinned, "Handle"]


# ---------------------------------------------------------------------------- mypy sees `miopen`

_USER_CODE = '''\
import miopen
from miopen.ops import activation

handle: miopen.Handle = miopen.create()
desc = miopen.create_tensor_descriptor()
miopen.set_4d_tensor_descriptor(desc, miopen.DataType.miopenFloat, 1, 3, 8, 8)
dims: list[int] = miopen.get_tensor_descriptor(desc).dims_a
count: str = miopen.get_tensor_descriptor_size(desc)
miopen.set_4d_tensor_descriptor(desc, "float", 1, 3, 8, 8)
miopen.create_tensor_descriptor(desc)
activation.activation_forward(1, 2, "relu", alpha="one")
'''
# (line, error code) of each planted mistake, and nothing else
_EXPECTED = [(8, "assignment"), (9, "arg-type"), (10, "call-arg"), (11, "arg-type")]


def test_mypy_sees_miopen_in_user_code(tmp_path: Path) -> None:
    """The make-built venv's mypy, run on a user's file outside the checkout, type-checks its use of
    `miopen` (the editable install must not hide the package behind an import hook)."""
    user = tmp_path / "user.py"
    user.write_text(_USER_CODE)
    r = _run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--no-error-summary",
              "--cache-dir", str(tmp_path / "cache"), "--show-error-codes", "user.py"], tmp_path)
    found = [(int(m.group(1)), m.group(2)) for m in re.finditer(r"^user\.py:(\d+): error: .*\[([\w-]+)\]$",
                                                                  r.stdout, re.M)]
    assert found == _EXPECTED, r.stdout + r.stderr
    assert "import-not-found" not in r.stdout and "import-untyped" not in r.stdout
