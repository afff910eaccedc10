"""The real MIOpen 2.17.0 OpenCL kernels on a GPU: every check of the numeric suite (`tests/gpu/ocl_suite.py`) on the
first GPU's OpenCL device gives each row the outcome committed for that driver (`docs/ocl-results/<name>.json`,
matched by the platform's name). Needs the OpenCL libMIOpen (../shared/real-miopen-ocl, $MIOGEN_REAL_MIOPEN_OCL)
and pyopencl; without an OpenCL GPU it skips, or fails under MIOGEN_REQUIRE_GPU=1. On the device machine
`tests/gpu/ocl_nvidia.sh --pytest` runs it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from ..real_miopen import OPENCL
from .ocl_suite import RESULTS, run_suite


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


def _committed(platform: str) -> tuple[str, dict[tuple[str, str, str], str]]:
    """The results file whose device is on `platform`, and its outcome of each row (the Find probe's rows apart)."""
    for path in sorted(RESULTS.glob("*.json")):
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        if str(data.get("device", "")).partition(":")[0].strip() == platform:
            return path.name, {(op, dt, p): outcome for op, dt, p, outcome, *_ in data["rows"] if "[probe:" not in p}
    raise AssertionError(f"no committed results for the OpenCL platform {platform!r} in {RESULTS}: run "
                         f"`python -m tests.gpu.ocl_suite --lib LIB --name NAME --out docs/ocl-results` on it first")


def test_the_numeric_suite_on_the_gpu_gives_the_committed_outcomes(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    platform = _gpu_platform()
    lib, why = OPENCL.find()
    if lib is None:
        _skip(why)
    assert lib is not None
    name, want = _committed(platform)
    monkeypatch.setenv("MIOGEN_OCL_PLATFORM", platform)  # the workers' checks run on this platform's first device
    result = run_suite(lib, tmp_path / "cache", find_timeout=float(os.environ.get("OCL_FIND_TIMEOUT", "120")),
                       bench=False)
    got = {(op, dt, p): outcome for op, dt, p, outcome, *_ in result["rows"]}
    diff = {row: (want.get(row, "absent"), got.get(row, "absent")) for row in want.keys() | got.keys()
            if want.get(row) != got.get(row)}
    assert not diff, f"{result['device']}: rows whose outcome differs from {name} (committed, now):\n" + "\n".join(
        f"  {' | '.join(row)}: {was} -> {now}" for row, (was, now) in sorted(diff.items()))
