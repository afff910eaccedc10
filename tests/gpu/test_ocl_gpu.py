"""The real MIOpen OpenCL kernels on a GPU: every check of the numeric suite (`tests/gpu/ocl_suite.py`) on the
first GPU's OpenCL device gives each row the outcome committed for that driver and release
(`docs/ocl-results/<name>.json`, matched by the platform's name and the library's release): MIOpen 2.17.0 (with the
RNN, GEMM-convolution and Find 2.0 rows of the MIOpenGEMM and 3.3.0 builds where those are found) and MIOpen 3.3.0.
Needs the OpenCL libMIOpen builds of ../shared ($MIOGEN_REAL_MIOPEN_OCL, ..._OCL_GEMM, ..._OCL_330) and pyopencl;
without an OpenCL GPU it skips, or fails under MIOGEN_REQUIRE_GPU=1. On the device machine
`tests/gpu/ocl_nvidia.sh --pytest` runs it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from ..real_miopen import OPENCL, OPENCL_330, OPENCL_GEMM, SharedLibrary
from .ocl_suite import EXTRA, EXTRA_ENV, RESULTS, run_suite


def _skip(why: str) -> None:
    if os.environ.get("MIOGEN_REQUIRE_GPU") == "1":
        pytest.fail(f"MIOGEN_REQUIRE_GPU=1 but {why}")
    pytest.skip(why)


def _gpu_platform() -> str:
    """The name of the first OpenCL platform with a GPU device."""
    try:
        import pyopencl as cl

        platforms = cl.get_platforms()
    except Exception as exc:  # no pyopencl, or no OpenCL driver at all
        _skip(f"no OpenCL ({type(exc).__name__}: {exc})")
        raise
    for p in platforms:
        try:
            if p.get_devices(device_type=cl.device_type.GPU):
                return str(p.name).strip()
        except cl.Error:  # a platform without GPU devices answers DEVICE_NOT_FOUND
            continue
    _skip("no OpenCL GPU device")
    raise AssertionError


def _committed(platform: str, release: str) -> tuple[str, dict[tuple[str, str, str], str]]:
    """The results file of MIOpen `release` whose device is on `platform`, and its outcome of each row (the Find
    probe's rows apart)."""
    for path in sorted(RESULTS.glob("*.json")):
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        if (str(data.get("device", "")).partition(":")[0].strip() == platform
                and str(data.get("library", "")).startswith(f"MIOpen {release} ")):
            return path.name, {(op, dt, p): outcome for op, dt, p, outcome, *_ in data["rows"] if "[probe:" not in p}
    raise AssertionError(f"no committed results for the OpenCL platform {platform!r} in {RESULTS}: run "
                         f"`python -m tests.gpu.ocl_suite --lib LIB --name NAME --out docs/ocl-results` on it first")


#: the builds whose extra rows join the 2.17.0 run when they are found (ocl_suite's --gemm-lib, --v330-lib)
EXTRA_BUILDS: dict[str, SharedLibrary] = {"gemm": OPENCL_GEMM, "v330": OPENCL_330}


@pytest.mark.parametrize("release, library", [("2.17.0", OPENCL), ("3.3.0", OPENCL_330)], ids=["2.17.0", "3.3.0"])
def test_the_numeric_suite_on_the_gpu_gives_the_committed_outcomes(release: str, library: SharedLibrary,
                                                                     tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    platform = _gpu_platform()
    lib, why = library.find()
    if lib is None:
        _skip(why)
    assert lib is not None
    name, want = _committed(platform, release)
    extra: dict[str, Path] = {}
    if library is OPENCL:
        for build, shared in EXTRA_BUILDS.items():
            found, _ = shared.find()
            if found is not None:
                extra[build] = found
            else:  # its rows are not run: not compared
                want = {row: v for row, v in want.items() if row not in {r for _, r in EXTRA[build]}}
    for var, value in library.env_vars:
        monkeypatch.setenv(var, value)
    assert set(EXTRA_ENV) == set(EXTRA_BUILDS)
    monkeypatch.setenv("MIOGEN_OCL_PLATFORM", platform)  # the workers' checks run on this platform's first device
    result = run_suite(lib, tmp_path / "cache", find_timeout=float(os.environ.get("OCL_FIND_TIMEOUT", "120")),
                       bench=False, extra=extra)
    got = {(op, dt, p): outcome for op, dt, p, outcome, *_ in result["rows"]}
    diff = {row: (want.get(row, "absent"), got.get(row, "absent")) for row in want.keys() | got.keys()
            if want.get(row) != got.get(row)}
    assert not diff, f"{result['device']}: rows whose outcome differs from {name} (committed, now):\n" + "\n".join(
        f"  {' | '.join(row)}: {was} -> {now}" for row, (was, now) in sorted(diff.items()))
