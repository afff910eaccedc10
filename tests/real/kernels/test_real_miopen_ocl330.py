"""MIOpen 3.3.0's OpenCL build (../shared/real-miopen-ocl-330) on PoCL: Find 2.0 computing and the HIP-only beta
ops refused clearly, in worker processes (tests/real/ocl330). Without the library, pyopencl or an OpenCL device the tests skip, or fail under
MIOGEN_REQUIRE_REAL_MIOPEN_OCL_330=1 (.ci/run sets it). Kernel binaries are cached per machine
(`real_miopen.OPENCL_330.cache_dir()/kernels`), so only a machine's first run compiles them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ... import real_miopen
from ...real.client import Worker, run_check, shared_worker
from ...real.ocl.plan import FIND_ENV

LIB = real_miopen.OPENCL_330


@pytest.fixture(scope="module")
def v330() -> Iterator[Worker]:
    yield from shared_worker(LIB, FIND_ENV)


def run(w: Worker, name: str) -> Any:
    return run_check(w, name)


def test_find2_conv_forward(v330: Worker) -> None:
    """CreateConvProblem -> FindSolutions -> RunSolution: every solution found computes the forward convolution
    within 1e-5 of numpy (asserted in the check); the direct OpenCL solver 11 is among them."""
    got = run(v330, "ocl330.checks_v3:find2_conv_forward")
    assert "11" in got, got


def test_hip_only_op_says_it_needs_a_hip_build(v330: Worker) -> None:
    """LayerNormForward's status 7 on an OpenCL build becomes HipBuildRequiredError naming the HIP build."""
    text = run(v330, "ocl330.checks_v3:layer_norm_hip_only")
    assert "OpenCL build" in text and "use a HIP build of MIOpen" in text, text

