"""Find 2.0 computing (conv problem forward, against numpy), the HIP-only 3.x beta ops refused clearly, and OpTensor
on 1-D and 2-D tensors (computing only on a 3.3.0 rebuilt with the project's patch: differences.PATCH_OPTENSOR)."""

from __future__ import annotations

from typing import Any

import numpy as np

import miopen

from ..ocl.checks_conv import _conv_ref
from ..ocl.checks_tensor import _op_ref
from ..ocl.common import close, desc, dev, handle, queue, rng, zeros


def find2_conv_forward() -> dict[str, Any]:
    """miopenCreateConvProblem -> miopenFindSolutions -> miopenRunSolution for every solution found; returns
    {solver id: max abs error} (each asserted within 1e-5 of the float64 reference)."""
    h = handle()
    r = rng(330)
    xdims, wdims, p, s = [2, 3, 7, 6], [4, 3, 3, 3], 1, 1
    cd = miopen.create_convolution_descriptor()
    miopen.init_convolution_descriptor(cd, miopen.ConvolutionMode.miopenConvolution, p, p, s, s, 1, 1)
    xd_, wd_ = desc(xdims), desc(wdims)
    o = miopen.get_convolution_forward_output_dim(cd, xd_, wd_)
    ydims = [o.n, o.c, o.h, o.w]
    yd_ = desc(ydims)
    x = r.standard_normal(int(np.prod(xdims))).astype(np.float32)
    w = r.standard_normal(int(np.prod(wdims))).astype(np.float32)
    want = _conv_ref(x.reshape(xdims).astype(np.float64), w.reshape(wdims).astype(np.float64), p, s, 1)
    T = miopen.TensorArgumentId
    problem = miopen.create_conv_problem(cd, miopen.ProblemDirection.miopenProblemDirectionForward)
    miopen.set_problem_tensor_descriptor(problem, T.miopenTensorConvolutionX, xd_)
    miopen.set_problem_tensor_descriptor(problem, T.miopenTensorConvolutionW, wd_)
    miopen.set_problem_tensor_descriptor(problem, T.miopenTensorConvolutionY, yd_)
    sols = [sol for sol in miopen.find_solutions(h, problem, None, 8) if sol is not None]
    assert sols, "Find 2.0 found no solution"
    xb, wb = dev(x), dev(w)
    out: dict[str, Any] = {}
    for sol in sols:
        wsz = miopen.get_solution_workspace_size(sol)
        wsb, yb = zeros(max(wsz, 1), np.uint8), zeros(int(np.prod(ydims)))
        miopen.run_solution(h, sol, [miopen.TensorArgument(T.miopenTensorConvolutionX, None, xb.ptr),
                                     miopen.TensorArgument(T.miopenTensorConvolutionW, None, wb.ptr),
                                     miopen.TensorArgument(T.miopenTensorConvolutionY, None, yb.ptr)],
                            wsb.ptr if wsz else None, wsz)
        got = yb.read().reshape(ydims).astype(np.float64)
        err = float(np.abs(got - want).max())
        assert err <= 1e-5 * max(1.0, float(np.abs(want).max())), (miopen.get_solution_solver_id(sol), err)
        out[str(miopen.get_solution_solver_id(sol))] = err
    queue().finish()
    return out


def hip_only_ops() -> dict[str, str]:
    """The 3.x beta ops on this OpenCL build: {function: exception type name: message}."""
    from miopen.ops import _common  # noqa: F401 - the runtime installed (its status hook names the backend)

    h = handle()
    r = rng(7)
    x = r.standard_normal(2 * 4 * 8 * 8).astype(np.float32)
    xd_, xb = desc([2, 4, 8, 8]), dev(x)
    calls = {
        "miopenLayerNormForward": lambda: miopen.layer_norm_forward(
            h, miopen.NormMode.MIOPEN_ELEMENTWISE_AFFINE, xd_, xb.ptr, desc([8]), dev(np.ones(8)).ptr, desc([8]),
            dev(np.zeros(8)).ptr, 1e-5, 3, desc([2, 4, 8, 8]), zeros(x.size).ptr, desc([2, 4, 8]),
            zeros(64).ptr, desc([2, 4, 8]), zeros(64).ptr),
        "miopenGroupNormForward": lambda: miopen.group_norm_forward(
            h, miopen.NormMode.MIOPEN_ELEMENTWISE_AFFINE, xd_, xb.ptr, desc([4]), dev(np.ones(4)).ptr, desc([4]),
            dev(np.zeros(4)).ptr, 2, 1e-5, desc([2, 4, 8, 8]), zeros(x.size).ptr, desc([2, 2]), zeros(4).ptr,
            desc([2, 2]), zeros(4).ptr),
        "miopenCatForward": lambda: miopen.cat_forward(h, [xd_, xd_], [xb.ptr, xb.ptr], desc([2, 8, 8, 8]),
                                                       zeros(2 * x.size).ptr, 1),
        "miopenReduceExtremeForward": lambda: miopen.reduce_extreme_forward(
            h, xd_, xb.ptr, 1, miopen.ReduceExtremeOp.MIOPEN_REDUCE_EXTREME_ARGMAX, desc([2, 1, 8, 8]),
            zeros(128).ptr, desc([2, 1, 8, 8], dtype="miopenInt32"), zeros(128, np.int32).ptr),
    }
    out = {}
    for fn, call in calls.items():
        try:
            call()
            out[fn] = "ok"
        except miopen.MIOpenError as exc:
            out[fn] = f"{type(exc).__name__}: {exc}"
    return out


def layer_norm_hip_only() -> str:
    """LayerNormForward on this OpenCL build: the runtime's HipBuildRequiredError (a MIOpenUnknownError), naming
    the HIP build it needs."""
    from miopen.errors import HipBuildRequiredError

    h = handle()
    x = rng(7).standard_normal(2 * 4 * 8 * 8).astype(np.float32)
    try:
        miopen.layer_norm_forward(
            h, miopen.NormMode.MIOPEN_ELEMENTWISE_AFFINE, desc([2, 4, 8, 8]), dev(x).ptr, desc([8]),
            dev(np.ones(8)).ptr, desc([8]), dev(np.zeros(8)).ptr, 1e-5, 3, desc([2, 4, 8, 8]), zeros(x.size).ptr,
            desc([2, 4, 8]), zeros(64).ptr, desc([2, 4, 8]), zeros(64).ptr)
    except HipBuildRequiredError as exc:
        assert isinstance(exc, miopen.MIOpenError) and int(exc.status) == 7
        return str(exc)
    raise AssertionError("LayerNormForward did not fail on the OpenCL build")


def dropout_hip_only() -> str:
    """SetDropoutDescriptor on 3.3.0's OpenCL build (its PRNG-state kernel is HIP since 3.3.0): the runtime's
    HipBuildRequiredError (a MIOpenUnknownError)."""
    from miopen.errors import HipBuildRequiredError

    h = handle()
    dd = miopen.create_dropout_descriptor()
    ns = miopen.dropout_get_states_size(h)
    st = zeros(ns, np.uint8)
    try:
        miopen.set_dropout_descriptor(dd, h, 0.3, st.ptr, ns, 7, False, False,
                                      miopen.RNGType.MIOPEN_RNG_PSEUDO_XORWOW)
    except HipBuildRequiredError as exc:
        assert isinstance(exc, miopen.MIOpenError) and int(exc.status) == 7
        return str(exc)
    raise AssertionError("SetDropoutDescriptor did not fail on 3.3.0's OpenCL build")


def op_tensor_1d_2d() -> dict[str, float]:
    """OpTensor add, mul, min, max on 1-D and 2-D tensors, B full and broadcast (every axis), alpha1 1.5, alpha2 -2,
    beta 0 and 0.5, against float64 numpy; sizes that need more than one work-group and, in 3.3.0's kernels, more
    than one pass of the grid. Returns {"<op> <rank>-D": max abs error} (each case asserted within 2e-5)."""
    h = handle()
    r = rng(14)
    ops = {"add": miopen.TensorOp.miopenTensorOpAdd, "mul": miopen.TensorOp.miopenTensorOpMul,
           "min": miopen.TensorOp.miopenTensorOpMin, "max": miopen.TensorOp.miopenTensorOpMax}
    cases = [([1000], [1000]), ([1000], [1]), ([13, 37], [13, 37]), ([13, 37], [1, 37]), ([13, 37], [13, 1]),
             ([13, 37], [1, 1]), ([300, 70], [1, 70])]
    out: dict[str, float] = {}
    for dims, bdims in cases:
        a, b, c = (r.standard_normal(int(np.prod(x))).astype(np.float32) for x in (dims, bdims, dims))
        for beta in (0.0, 0.5):
            for name, op in ops.items():
                cd = dev(c)
                miopen.op_tensor(h, op, 1.5, desc(dims), dev(a).ptr, -2.0, desc(bdims), dev(b).ptr, beta,
                                 desc(dims), cd.ptr)
                want = _op_ref(name, a.reshape(dims).astype(np.float64), b.reshape(bdims).astype(np.float64),
                               c.reshape(dims).astype(np.float64), 1.5, -2.0, beta)
                err = close(cd.read().reshape(dims), want, f"OpTensor {name} {dims} B {bdims} beta {beta}")
                key = f"{name} {len(dims)}-D"
                out[key] = max(out.get(key, 0.0), err)
    return out
