"""The one library search (`_search.library_candidates`, driven by specs/miopen/target.yaml): ROCm installed as
TheRock's rocm-sdk wheels, a conda environment, spack prefixes, and the order of every place; each found by
`python -m miopen` in a process of its own with a copy of the stub library where that install puts it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ..conftest import Libs
from ..helpers import REPO

#: every variable that steers the search (the target's facts), cleared for each run
_SEARCH_ENV = ("MIOPEN_LIBRARY", "ROCM_PATH", "CONDA_PREFIX", "CMAKE_PREFIX_PATH", "PYTHONPATH")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _SEARCH_ENV}
    env.update(extra)
    return env


def _report(env: dict[str, str]) -> tuple[int, dict[str, Any], str]:
    r = subprocess.run([sys.executable, "-m", "miopen", "--json"], capture_output=True, text=True, cwd=REPO,
                       env=env, timeout=300)
    assert "Traceback" not in r.stdout + r.stderr, r.stdout + r.stderr
    text = subprocess.run([sys.executable, "-m", "miopen"], capture_output=True, text=True, cwd=REPO, env=env,
                          timeout=300).stdout
    return r.returncode, json.loads(r.stdout), text


@pytest.fixture(scope="module")
def stub(runtime_libs: Libs) -> str:
    path: str = runtime_libs.miopen._name
    return path


def _place(stub: str, folder: Path) -> Path:
    folder.mkdir(parents=True)
    target = folder / "libMIOpen.so.1"
    shutil.copy(stub, target)
    return target


def test_therock_wheel_layout_is_found(stub: str, tmp_path: Path) -> None:
    """`pip install rocm[libraries]` puts libMIOpen.so.1 in <site-packages>/_rocm_sdk_libraries_<family><nonce>/lib."""
    site = tmp_path / "venv" / "lib" / "python3.12" / "site-packages"
    lib = _place(stub, site / "_rocm_sdk_libraries_gfx94X_dcgpu_7_10_0" / "lib")
    (site / "_rocm_sdk_core_7_10_0" / "lib").mkdir(parents=True)  # core: HIP's wheel, no MIOpen in it
    status, info, text = _report(_env(PYTHONPATH=str(site)))
    assert status == 0, info
    assert info["library"]["path"] == str(lib)
    loaded = next(t for t in info["search"] if t["result"] == "loaded")
    assert loaded["origin"] == f"wheel _rocm_sdk_libraries_gfx94X_dcgpu_7_10_0/lib in {site}"
    assert f"[loaded] {lib} (wheel _rocm_sdk_libraries_gfx94X_dcgpu_7_10_0/lib in {site})" in text


def test_a_site_without_the_wheel_is_listed_as_searched(tmp_path: Path) -> None:
    """Every place is listed, the ones that found nothing too: the wheel pattern in each site-packages folder, the
    conda prefix, /opt/rocm, the loader path."""
    site = tmp_path / "site-packages"
    site.mkdir()
    code = ("import json, miopen._generated._support as s\n"
            "print(json.dumps(s._candidates()))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120,
                       env=_env(PYTHONPATH=str(site), CONDA_PREFIX=str(tmp_path / "conda")))
    origins = [tuple(x) for x in json.loads(r.stdout)]
    assert (f"wheel _rocm_sdk_libraries_*/lib in {site}",
            f"{site}/_rocm_sdk_libraries_*/lib/libMIOpen.so.1") in origins
    assert ("$CONDA_PREFIX/lib", f"{tmp_path}/conda/lib/libMIOpen.so.1") in origins
    assert ("/opt/rocm/lib", "/opt/rocm/lib/libMIOpen.so.1") in origins
    assert ("loader path", "libMIOpen.so.1") in origins


def test_conda_prefix_is_found(stub: str, tmp_path: Path) -> None:
    lib = _place(stub, tmp_path / "conda" / "envs" / "rocm" / "lib")
    status, info, text = _report(_env(CONDA_PREFIX=str(tmp_path / "conda" / "envs" / "rocm")))
    assert status == 0 and info["library"]["path"] == str(lib), info
    assert f"[loaded] {lib} ($CONDA_PREFIX/lib)" in text


def test_spack_prefixes_are_found_in_their_order(stub: str, tmp_path: Path) -> None:
    """$CMAKE_PREFIX_PATH (what `spack load` extends) is a list: each prefix is searched, in its order."""
    first, second = tmp_path / "spack" / "hip-6.2", tmp_path / "spack" / "miopen-hip-6.2"
    lib = _place(stub, second / "lib64")
    status, info, _ = _report(_env(CMAKE_PREFIX_PATH=f"{first}{os.pathsep}{second}"))
    assert status == 0 and info["library"]["path"] == str(lib), info
    origins = [t["origin"] for t in info["search"]]
    assert origins.index(f"$CMAKE_PREFIX_PATH ({first})/lib") < origins.index(f"$CMAKE_PREFIX_PATH ({second})/lib64")


def test_the_order_of_every_place(stub: str, tmp_path: Path) -> None:
    """$ROCM_PATH, then the conda and spack prefixes, then the wheels of this interpreter, then /opt/rocm, then the
    loader path; the first that loads wins (each run removes the winner of the previous one)."""
    site = tmp_path / "site-packages"
    places = {
        "rocm": _place(stub, tmp_path / "rocm" / "lib"),
        "conda": _place(stub, tmp_path / "conda" / "lib"),
        "spack": _place(stub, tmp_path / "spack" / "lib"),
        "wheel": _place(stub, site / "_rocm_sdk_libraries_gfx110X_dgpu" / "lib"),
    }
    env = _env(ROCM_PATH=str(tmp_path / "rocm"), CONDA_PREFIX=str(tmp_path / "conda"),
               CMAKE_PREFIX_PATH=str(tmp_path / "spack"), PYTHONPATH=str(site))
    status, info, _ = _report(env)
    order = [t["origin"] for t in info["search"]]
    firsts = [order.index(o) for o in (f"{tmp_path}/rocm/lib", "$CONDA_PREFIX/lib", "$CMAKE_PREFIX_PATH/lib",
                                        f"wheel _rocm_sdk_libraries_gfx110X_dgpu/lib in {site}", "/opt/rocm/lib",
                                        "loader path")]
    assert firsts == sorted(firsts), order
    for name in ("rocm", "conda", "spack", "wheel"):
        status, info, _ = _report(env)
        assert status == 0 and info["library"]["path"] == str(places[name]), (name, info["search"])
        places[name].unlink()
    # an explicit $MIOPEN_LIBRARY is the only candidate, wheels or not
    status, info, _ = _report({**env, "MIOPEN_LIBRARY": stub})
    assert [t["origin"] for t in info["search"]] == ["$MIOPEN_LIBRARY"]
