"""GEMM convolutions on real kernels (MIOpen 2.17.0 OpenCL + MIOpenGEMM, PoCL): forward, backward data and backward
weights through Find (NORMAL mode) + the legacy calls and through Immediate with every solution GetSolution lists
(the GEMM ones among them), against tests/real/ocl/checks_conv.py's float64 cross-correlation; and the runtime's
planner modes (runtime/algo.py) on them."""

from __future__ import annotations

from typing import Any

import numpy as np

import miopen

from ..ocl.checks_conv import _conv_ref, _grads
from ..ocl.common import close, desc, dev, handle, queue, rng, zeros

CASES = (  # (x dims, w dims, pad, stride): 1x1 (GEMM's home), 3x3, and the strided backward weights only GEMM does
    ([2, 8, 6, 5], [6, 8, 1, 1], 0, 1),
    ([2, 4, 7, 6], [5, 4, 3, 3], 1, 1),
    ([2, 6, 9, 8], [4, 6, 3, 3], 1, 2),
    ([1, 8, 8, 8], [4, 8, 1, 1], 0, 2),
)


def _algo_name(a: object) -> str:
    return str(getattr(a, "name", a))


def find_and_immediate() -> dict[str, Any]:
    """{case: {direction: {"find": algorithm name, "immediate": {solution id: (algorithm, max abs error)}}}}; every
    result is asserted against the reference inside."""
    h = handle()
    r = rng(88)
    out: dict[str, Any] = {}
    for xdims, wdims, p, s in CASES:
        cd = miopen.create_convolution_descriptor()
        miopen.init_convolution_descriptor(cd, miopen.ConvolutionMode.miopenConvolution, p, p, s, s, 1, 1)
        xd_, wd_ = desc(xdims), desc(wdims)
        o = miopen.get_convolution_forward_output_dim(cd, xd_, wd_)
        ydims = [o.n, o.c, o.h, o.w]
        yd_ = desc(ydims)
        x, w, dy = (r.standard_normal(int(np.prod(d))).astype(np.float32) for d in (xdims, wdims, ydims))
        x64, w64, dy64 = (a.reshape(d).astype(np.float64) for a, d in ((x, xdims), (w, wdims), (dy, ydims)))
        want = {"fwd": _conv_ref(x64, w64, p, s, 1)}
        want["bwd"], want["wrw"] = _grads(x64, w64, dy64, p, s, 1)
        xb, wb, dyb = dev(x), dev(w), dev(dy)
        tag = f"x{xdims} w{wdims} p{p} s{s}"
        res: dict[str, Any] = {}
        # forward
        ws = max(miopen.convolution_forward_get_work_space_size(h, wd_, xd_, cd, yd_), 1)
        wsb, yb = zeros(ws, np.uint8), zeros(len(dy))
        perf = miopen.find_convolution_forward_algorithm(h, xd_, xb.ptr, wd_, wb.ptr, cd, yd_, yb.ptr, 8, wsb.ptr, ws,
                                                         True)
        yb = zeros(len(dy))
        miopen.convolution_forward(h, 1.0, xd_, xb.ptr, wd_, wb.ptr, cd, perf[0].fwd_algo, 0.0, yd_, yb.ptr, wsb.ptr,
                                   ws)
        res["fwd"] = {"find": [_algo_name(pf.fwd_algo) for pf in perf],
                      "find err": close(yb.read().reshape(ydims), want["fwd"], f"forward {tag}", 1e-5), "immediate": {}}
        for sol in miopen.convolution_forward_get_solution(h, wd_, xd_, cd, yd_, 16):
            wsz = max(sol.workspace_size, 1)
            yb, wsb2 = zeros(len(dy)), zeros(wsz, np.uint8)
            miopen.convolution_forward_immediate(h, wd_, wb.ptr, xd_, xb.ptr, cd, yd_, yb.ptr, wsb2.ptr, wsz,
                                                 sol.solution_id)
            res["fwd"]["immediate"][int(sol.solution_id)] = (
                _algo_name(sol.algorithm),
                close(yb.read().reshape(ydims), want["fwd"], f"forward immediate {sol.solution_id} {tag}", 1e-5))
        # backward data
        ws = max(miopen.convolution_backward_data_get_work_space_size(h, yd_, wd_, cd, xd_), 1)
        wsb, dxb = zeros(ws, np.uint8), zeros(len(x))
        perf = miopen.find_convolution_backward_data_algorithm(h, yd_, dyb.ptr, wd_, wb.ptr, cd, xd_, dxb.ptr, 8,
                                                               wsb.ptr, ws, True)
        dxb = zeros(len(x))
        miopen.convolution_backward_data(h, 1.0, yd_, dyb.ptr, wd_, wb.ptr, cd, perf[0].bwd_data_algo, 0.0, xd_,
                                         dxb.ptr, wsb.ptr, ws)
        res["bwd"] = {"find": [_algo_name(pf.bwd_data_algo) for pf in perf],
                      "find err": close(dxb.read().reshape(xdims), want["bwd"], f"backward data {tag}", 1e-5),
                      "immediate": {}}
        for sol in miopen.convolution_backward_data_get_solution(h, yd_, wd_, cd, xd_, 16):
            wsz = max(sol.workspace_size, 1)
            dxb, wsb2 = zeros(len(x)), zeros(wsz, np.uint8)
            miopen.convolution_backward_data_immediate(h, yd_, dyb.ptr, wd_, wb.ptr, cd, xd_, dxb.ptr, wsb2.ptr, wsz,
                                                       sol.solution_id)
            res["bwd"]["immediate"][int(sol.solution_id)] = (
                _algo_name(sol.algorithm),
                close(dxb.read().reshape(xdims), want["bwd"], f"backward data immediate {sol.solution_id} {tag}",
                      1e-5))
        # backward weights
        ws = max(miopen.convolution_backward_weights_get_work_space_size(h, yd_, xd_, cd, wd_), 1)
        wsb, dwb = zeros(ws, np.uint8), zeros(len(w))
        perf = miopen.find_convolution_backward_weights_algorithm(h, yd_, dyb.ptr, xd_, xb.ptr, cd, wd_, dwb.ptr, 8,
                                                                  wsb.ptr, ws, True)
        dwb = zeros(len(w))
        miopen.convolution_backward_weights(h, 1.0, yd_, dyb.ptr, xd_, xb.ptr, cd, perf[0].bwd_weights_algo, 0.0,
                                            wd_, dwb.ptr, wsb.ptr, ws)
        res["wrw"] = {"find": [_algo_name(pf.bwd_weights_algo) for pf in perf],
                      "find err": close(dwb.read().reshape(wdims), want["wrw"], f"backward weights {tag}", 1e-5),
                      "immediate": {}}
        for sol in miopen.convolution_backward_weights_get_solution(h, yd_, xd_, cd, wd_, 16):
            wsz = max(sol.workspace_size, 1)
            dwb, wsb2 = zeros(len(w)), zeros(wsz, np.uint8)
            miopen.convolution_backward_weights_immediate(h, yd_, dyb.ptr, xd_, xb.ptr, cd, wd_, dwb.ptr, wsb2.ptr,
                                                          wsz, sol.solution_id)
            res["wrw"]["immediate"][int(sol.solution_id)] = (
                _algo_name(sol.algorithm),
                close(dwb.read().reshape(wdims), want["wrw"], f"backward weights immediate {sol.solution_id} {tag}",
                      1e-5))
        out[tag] = res
    queue().finish()
    return out
