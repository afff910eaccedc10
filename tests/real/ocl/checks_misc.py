"""What MIOpen 2.17.0 refuses or cannot build here, pinned: reduce, dropout, and the Find pitfalls (fp16:
`checks_half`)."""

from __future__ import annotations

import numpy as np

import miopen

from .common import NOT_BUILDABLE, REFUSED, desc, dev, handle, note, numeric, status, verdict, zeros


REDUCE_ROW = ("ReduceTensor", "float32", "ADD over one dimension, alpha 1, beta 0")
#: why 2.17.0's OpenCL build cannot reduce on a device other than AMD's (docs/real-miopen.md)
REDUCE_WHY = ("the workspace query already fails: it asks the OpenCL device the AMD-only "
              "CL_DEVICE_WAVEFRONT_WIDTH_AMD (status 7); past it (the GEMM build falls back to 64) its kernels are "
              "composable-kernel HIP sources, which do not build for an OpenCL device (status 7)")


@numeric((*REDUCE_ROW, NOT_BUILDABLE, REDUCE_WHY))
def reduce() -> dict[tuple[str, str, str], str]:
    """The workspace query, then (where it answers: 3.x falls back to a wavefront of 64) the reduction against
    numpy."""
    h = handle()
    dims, cdims = [2, 3, 4], [2, 1, 4]
    a, c = desc(dims), desc(cdims)
    rd = miopen.create_reduce_tensor_descriptor()
    miopen.set_reduce_tensor_descriptor(rd, miopen.ReduceTensorOp.MIOPEN_REDUCE_TENSOR_ADD, miopen.DataType.miopenFloat,
                                        miopen.NanPropagation.MIOPEN_NOT_PROPAGATE_NAN,
                                        miopen.ReduceTensorIndices.MIOPEN_REDUCE_TENSOR_NO_INDICES,
                                        miopen.IndicesType.MIOPEN_32BIT_INDICES)
    got = status(lambda: miopen.get_reduction_workspace_size(h, rd, a, c))
    if got:
        return {REDUCE_ROW: note(REDUCE_ROW, NOT_BUILDABLE if got == 7 else f"status {got}",
                                 REDUCE_WHY if got == 7 else f"the workspace query: status {got}")}
    ws = miopen.get_reduction_workspace_size(h, rd, a, c)
    x = np.random.default_rng(32).standard_normal(dims).astype(np.float32)
    cb, wb = zeros(int(np.prod(cdims))), zeros(max(ws, 1), np.uint8)
    got = status(lambda: miopen.reduce_tensor(h, rd, None, 0, wb.ptr, ws, 1.0, a, dev(x).ptr, 0.0, c, cb.ptr))
    if got:
        return {REDUCE_ROW: note(REDUCE_ROW, {7: NOT_BUILDABLE, 6: REFUSED}.get(got, f"status {got}"),
                                 f"miopenReduceTensor: status {got}" + (" (its kernel fails to build)" if got == 7
                                                                        else ""))}
    return {REDUCE_ROW: verdict(REDUCE_ROW, cb.read().reshape(cdims), x.astype(np.float64).sum(1, keepdims=True),
                                1e-5)}


@numeric(("Dropout", "float32", "forward (PRNG states, reserve space)"), ("Dropout", "float32", "backward"))
def dropout() -> dict[tuple[str, str, str], str]:
    """y is x/(1-p) where kept and 0 where dropped, about a fraction p dropped; dx is dy/(1-p) where kept."""
    h = handle()
    rate, n = 0.3, 4096
    dd = miopen.create_dropout_descriptor()
    ns = miopen.dropout_get_states_size(h)
    st = zeros(ns, np.uint8)
    got = status(lambda: miopen.set_dropout_descriptor(dd, h, rate, st.ptr, ns, 7, False, False,
                                                       miopen.RNGType.MIOPEN_RNG_PSEUDO_XORWOW))
    if got:  # the PRNG states are made by a kernel: on a device where it does not build, no dropout at all
        why = f"miopenSetDropoutDescriptor: status {got}" + (" (its PRNG-state kernel fails to build)" if got == 7
                                                             else "")
        return {row: note(row, NOT_BUILDABLE if got == 7 else f"status {got}", why)
                for row in (("Dropout", "float32", "forward (PRNG states, reserve space)"),
                            ("Dropout", "float32", "backward"))}
    d = desc([4, 4, 16, 16])
    rs = miopen.dropout_get_reserve_space_size(d)
    rsd = zeros(rs, np.uint8)
    x = np.random.default_rng(30).uniform(0.5, 2, n).astype(np.float32)
    y = zeros(n)
    miopen.dropout_forward(h, dd, d, d, dev(x).ptr, d, y.ptr, rsd.ptr, rs)
    got = y.read()
    kept = got != 0
    assert np.allclose(got[kept], x[kept] / (1 - rate), rtol=1e-6), "kept elements are not x/(1-p)"
    assert abs((~kept).mean() - rate) < 0.05, f"dropped fraction {(~kept).mean()} for p={rate}"
    dy = np.random.default_rng(31).standard_normal(n).astype(np.float32)
    dx = zeros(n)
    miopen.dropout_backward(h, dd, d, d, dev(dy).ptr, d, dx.ptr, rsd.ptr, rs)
    assert np.allclose(dx.read(), np.where(kept, dy / (1 - rate), 0), rtol=1e-6, atol=1e-7)
    return {("Dropout", "float32", "forward (PRNG states, reserve space)"): "checked",
            ("Dropout", "float32", "backward"): "checked"}


def _problem() -> tuple[object, ...]:
    h = handle()
    cd = miopen.create_convolution_descriptor()
    miopen.init_convolution_descriptor(cd, miopen.ConvolutionMode.miopenConvolution, 1, 1, 1, 1, 1, 1)
    return h, desc([1, 2, 5, 5]), desc([2, 2, 3, 3]), cd, desc([1, 2, 5, 5])


@numeric(("Convolution", "float32", "GetSolutionCount before any Find", REFUSED,
          "status 6 (NotImplemented): its fallback considers only dynamic solvers"))
def solution_count_before_find() -> dict[tuple[str, str, str], str]:
    """Run in a worker with a fresh find-db (a Find of an earlier run would answer)."""
    h, x, w, cd, y = _problem()
    assert status(lambda: miopen.convolution_forward_get_solution_count(h, w, x, cd, y)) == 6
    return {("Convolution", "float32", "GetSolutionCount before any Find"): REFUSED}


@numeric(("Convolution", "float32", "Find in the default mode (DYNAMIC_HYBRID)", REFUSED,
          "status 7: the mode skips every OpenCL solver; set MIOPEN_FIND_MODE=NORMAL"))
def find_default_mode() -> dict[tuple[str, str, str], str]:
    """Run in a worker without MIOPEN_FIND_MODE (MIOpen reads it once per process)."""
    h, x, w, cd, y = _problem()
    xb, wb, yb = zeros(50), zeros(36), zeros(50)
    got = status(lambda: miopen.find_convolution_forward_algorithm(h, x, xb.ptr, w, wb.ptr, cd, y, yb.ptr, 4, None, 0,
                                                                   False))
    assert got == 7, got
    return {("Convolution", "float32", "Find in the default mode (DYNAMIC_HYBRID)"): REFUSED}
