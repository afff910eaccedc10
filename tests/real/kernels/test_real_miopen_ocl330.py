"""MIOpen 3.3.0's OpenCL build (../shared/real-miopen-ocl-330) on PoCL: Find 2.0 computing and the HIP-only beta
ops refused clearly, in worker processes (tests/real/ocl330). Without the library, pyopencl or an OpenCL device the tests skip, or fail under
MIOGEN_REQUIRE_REAL_MIOPEN_OCL_330=1 (.ci/run sets it). Kernel binaries are cached per machine
(`real_miopen.OPENCL_330.cache_dir()/kernels`), so only a machine's first run compiles them.
$MIOGEN_REAL_MIOPEN_OCL_330 points the tests at a rebuild (`make real-miopen-ocl REAL_MIOPEN_OCL_ARGS="--release 3.3.0
..."`, with the project's patches): on it the rows `differences.UNPATCHED` lists compute."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import pytest

from ... import real_miopen
from ...real.client import Worker, run_check, shared_worker
from ...real.ocl import coverage  # noqa: F401 - importing the checks registers their claims
from ...real.ocl.common import CLAIMS
from ...real.ocl.plan import FIND_ENV, SPECIAL
from ...real.ocl330 import differences

LIB = real_miopen.OPENCL_330


@pytest.fixture(scope="module")
def v330() -> Iterator[Worker]:
    yield from shared_worker(LIB, FIND_ENV)


def run(w: Worker, name: str) -> Any:
    return run_check(w, name)


@functools.cache
def patched() -> bool:
    """Whether the library under test is not ../shared's unpatched one (by its sha256): a rebuild by the project's
    recipe, which applies scripts/real-miopen-ocl-patches/3.3.0."""
    return not real_miopen.has_sha256(LIB.library_path(), differences.UNPATCHED_SHA256)


def test_find2_conv_forward(v330: Worker) -> None:
    """CreateConvProblem -> FindSolutions -> RunSolution: every solution found computes the forward convolution
    within 1e-5 of numpy (asserted in the check); the direct OpenCL solver 11 is among them."""
    got = run(v330, "ocl330.checks_v3:find2_conv_forward")
    assert "11" in got, got


def test_hip_only_op_says_it_needs_a_hip_build(v330: Worker) -> None:
    """LayerNormForward's status 7 on an OpenCL build becomes HipBuildRequiredError naming the HIP build."""
    text = run(v330, "ocl330.checks_v3:layer_norm_hip_only")
    assert "OpenCL build" in text and "use a HIP build of MIOpen" in text, text



def test_find2_convolution_every_direction(v330: Worker) -> None:
    """Convolution problems forward, backward data and backward weights (3×3 pad 1 and 1×1): FindSolutions finds
    a solution in every direction and each computes within 1e-5 of float64 numpy (asserted in the check)."""
    got = run(v330, "ocl330.checks_find2:conv")
    assert len(got) == 6 and all(isinstance(v, dict) and v for v in got.values()), got


def test_find2_softmax(v330: Worker) -> None:
    """Softmax problems (ACCURATE, LOG × CHANNEL, INSTANCE; alpha and beta from the descriptor) forward and
    backward: every solution right against numpy (asserted in the check)."""
    got = run(v330, "ocl330.checks_find2:softmax")
    assert len(got) == 8 and all(isinstance(v, dict) and v for v in got.values()), got


def test_find2_single_activation_bias_batchnorm_not_implemented(v330: Worker) -> None:
    """Activation, bias and batch-norm problems alone: 3.3.0 creates them but FindSolutions answers
    NotImplemented (status 6; src/problem.cpp has no solver for them outside a fused problem)."""
    assert run(v330, "ocl330.checks_find2:single_ops") == {
        "activation forward": "status 6", "bias forward": "status 6", "batch norm inference": "status 6"}


def test_find2_fused_problems(v330: Worker) -> None:
    """fuse_problems: convolution + bias + ReLU and batch-norm inference + ReLU find OpenCL fusion solvers whose
    results match numpy (asserted in the check)."""
    got = run(v330, "ocl330.checks_find2:fused")
    assert set(got) == {"conv + bias + relu", "batch norm inference + relu"}, got
    assert all(isinstance(v, dict) and v for v in got.values()), got


def test_runtime_planner_find2_and_auto(v330: Worker) -> None:
    """miopen.ops.conv with ConvPlanner("find2") and ConvPlanner("auto") computes forward, backward data and
    backward weights right (asserted in the check); "auto" plans with Find 2.0 on 3.3.0."""
    got = run(v330, "ocl330.checks_find2:runtime_planner")
    for mode in ("find2", "auto"):
        assert {d: m for d, (m, _) in got[mode].items()} == dict.fromkeys(
            ("forward", "backward data", "backward weights"), "find2"), got


@pytest.mark.parametrize("name", sorted(CLAIMS))
def test_numeric_suite_on_330(v330: Worker, name: str) -> None:
    """Every numeric check of tests/real/ocl (typed API, runtime ops, Caffe2 ops) run on 3.3.0: it proves exactly
    the rows it claims on 2.17.0, with 2.17.0's outcome except where tests/real/ocl330/differences.py says 3.3.0
    differs (and why; its `UNPATCHED` rows only on ../shared's library)."""
    if name in SPECIAL:
        fresh, env = SPECIAL[name]
        w = Worker(LIB.library_path(), None, cache=None if fresh else LIB.cache_dir() / "kernels",
                   extra_env={**env, **dict(LIB.env_vars)})
        try:
            got = run(w, name)
        finally:
            w.close()
            w.cleanup()
    else:
        got = run(v330, name)
    proved = {row: outcome for row, outcome in got.items() if isinstance(row, tuple)}
    assert proved == differences.expected(CLAIMS[name], patched=patched())


def test_optensor_1d_2d(v330: Worker) -> None:
    """OpTensor add, mul, min, max on 1-D and 2-D tensors, B full and broadcast, against numpy (each case within 2e-5,
    asserted in the check). Computes on a 3.3.0 rebuilt with the project's patch; on ../shared's unpatched library
    the call fails with status 7 (asserted by the numeric suite above), so this test skips saying what it needs."""
    if not patched():
        pytest.skip(differences.NEEDS_PATCH)
    got = run(v330, "ocl330.checks_v3:op_tensor_1d_2d")
    assert set(got) == {f"{op} {rank}-D" for op in ("add", "mul", "min", "max") for rank in (1, 2)}, got


def test_dropout_says_it_needs_a_hip_build(v330: Worker) -> None:
    """3.3.0 builds its dropout kernels from HIP on every backend: SetDropoutDescriptor's status 7 on the OpenCL build
    becomes HipBuildRequiredError (on 2.17.0's OpenCL build dropout computes: tests/real/ocl/checks_misc.py)."""
    text = run(v330, "ocl330.checks_v3:dropout_hip_only")
    assert "miopenSetDropoutDescriptor" in text and "use a HIP build of MIOpen" in text, text
