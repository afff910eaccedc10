"""What needs which package: `import miopen` needs neither the generator's dependencies (jinja2, pyyaml, libclang)
nor the OpenCL extra; the `miogen` command names a missing dependency in one line; the OpenCL path is the extra
`miogen[opencl]`. Each case runs in a process of its own, with an import hook that makes the packages missing."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from ..conftest import Libs
from ..helpers import REPO

#: a process where importing any of argv[1] (comma-separated top-level names) fails as if it were not installed
_BLOCK = """import importlib.abc, sys
BLOCK = set(sys.argv.pop(1).split(","))
class Missing(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.partition(".")[0] in BLOCK:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, Missing())
"""
GENERATOR_DEPENDENCIES = ("jinja2", "markupsafe", "yaml", "clang")


def _run(blocked: tuple[str, ...], body: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _BLOCK + body, ",".join(blocked), *args], capture_output=True,
                          text=True, cwd=REPO, timeout=300)


def test_import_miopen_needs_no_generator_dependency_nor_opencl(runtime_libs: Libs) -> None:
    stub = runtime_libs.miopen._name
    body = ("import miopen, sys\nmiopen.configure(find_mode='normal')\nmiopen.load_library(sys.argv[1])\n"
            "print(miopen.bound_release(), sorted(m for m in sys.modules if m.partition('.')[0] in "
            f"{(*GENERATOR_DEPENDENCIES, 'numpy', 'pyopencl')!r}))\n")
    r = _run((*GENERATOR_DEPENDENCIES, "numpy", "pyopencl"), body, stub)
    assert r.returncode == 0 and r.stdout.split()[1:] == ["[]"], r.stdout + r.stderr
    # and the blocker works: a module that imports one of them fails
    r = _run(("yaml",), "import yaml\n")
    assert r.returncode == 1 and "No module named 'yaml'" in r.stderr
    r = _run(GENERATOR_DEPENDENCIES, "import sys\nsys.argv[1:] = ['--library', sys.argv[1], '--json']\n"
             "from miopen.__main__ import main\nsys.exit(main())\n", stub)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize(("blocked", "package", "args"), [
    ("yaml", "pyyaml", ["check", "specs/miopen/3.5.2.yaml"]),
    ("jinja2", "jinja2", ["render", "specs/miopen/3.5.2.yaml", "-o", "{out}"]),
    ("markupsafe", "jinja2 (its markupsafe)", ["render", "specs/miopen/3.5.2.yaml", "-o", "{out}"]),
])
def test_the_miogen_command_names_a_missing_package(blocked: str, package: str, args: list[str],
                                                    tmp_path: Path) -> None:
    body = ("import sys\nsys.argv[0] = 'miogen'\nfrom miogen.__main__ import command\nsys.exit(command())\n")
    r = _run((blocked,), body, *(a.format(out=tmp_path / "out") for a in args))
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    assert r.stderr.startswith(f"miogen: the Python package {package!r} is missing (import {blocked} failed"), r.stderr
    assert f"pip install {package.split()[0]}" in r.stderr


def test_libclang_missing_is_named_too(tmp_path: Path) -> None:
    body = ("import sys\nsys.argv[0] = 'miogen'\nfrom miogen.__main__ import command\nsys.exit(command())\n")
    r = _run(("clang",), body, "parse", str(REPO / "tests/fixtures/include/miopen/miopen.h"), "-o", str(tmp_path))
    assert r.returncode != 0 and "Traceback" not in r.stderr, r.stderr
    assert "libclang is not installed: pip install libclang" in r.stderr, r.stderr


def test_the_opencl_path_is_an_extra() -> None:
    """numpy and pyopencl: not needed by miogen or `import miopen`, installed with `pip install miogen[opencl]`."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    opencl = project["optional-dependencies"]["opencl"]
    assert sorted(d.split(">")[0] for d in opencl) == ["numpy", "pyopencl"]
    assert not any(d.startswith(("numpy", "pyopencl")) for d in project["dependencies"])
