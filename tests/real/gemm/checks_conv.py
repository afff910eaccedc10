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


#: Find without exhaustive search: on an empty perf-db an exhaustive Find tunes the direct solvers' configurations
#: too (minutes of kernel builds under PoCL), and the GEMM algorithm is listed either way
EXHAUSTIVE = False


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
                                                         EXHAUSTIVE)
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
                                                               wsb.ptr, ws, EXHAUSTIVE)
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
                                                                  wsb.ptr, ws, EXHAUSTIVE)
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


def planner_modes() -> dict[str, Any]:
    """miopen.ops.conv with each ConvPlanner mode on the GEMM cases (pyopencl arrays, forward, backward data,
    backward weights), each result asserted against numpy: {mode: {case: {direction: (plan mode, algo or
    solution id, fallback)}}}; "auto" plans with the legacy Find (2.17.0 has no Find 2.0), "find2" is refused
    before any call, and immediate mode under a zero workspace cap falls back to a zero-workspace solution."""
    import pyopencl.array as cla

    from miopen.algo import AlgoCache, ConvPlanner
    from miopen.errors import WorkspaceLimitError
    from miopen.ops import conv as conv_ops

    r = rng(89)
    q = queue()
    out: dict[str, Any] = {}
    planners = {"immediate": ConvPlanner("immediate", cache=AlgoCache()),
                "find": ConvPlanner("find", cache=AlgoCache()),
                "auto": ConvPlanner("auto", cache=AlgoCache()),
                "immediate, no workspace": ConvPlanner("immediate", cache=AlgoCache(), workspace_limit_bytes=0)}
    for name, planner in planners.items():
        out[name] = {}
        for xdims, wdims, p, s in CASES:
            x, w = r.standard_normal(xdims).astype(np.float32), r.standard_normal(wdims).astype(np.float32)
            want_y = _conv_ref(x.astype(np.float64), w.astype(np.float64), p, s, 1)
            dy = r.standard_normal(want_y.shape).astype(np.float32)
            want_dx, want_dw = _grads(x.astype(np.float64), w.astype(np.float64), dy.astype(np.float64), p, s, 1)
            geo = {"pads": p, "strides": s, "dilations": 1}
            xa, wa, dya = (cla.to_device(q, a) for a in (x, w, dy))
            ya, dxa, dwa = (cla.zeros(q, sh, np.float32) for sh in (want_y.shape, xdims, wdims))
            tag = f"x{xdims} w{wdims} p{p} s{s}"
            res = {}
            for d, call, a, b, o, want in (
                    ("fwd", conv_ops.conv_forward, xa, wa, ya, want_y),
                    ("bwd", conv_ops.conv_backward_data, dya, wa, dxa, want_dx),
                    ("wrw", conv_ops.conv_backward_weights, dya, xa, dwa, want_dw)):
                try:
                    plan = call(a, b, o, planner=planner, stream=q, **geo)
                except WorkspaceLimitError as exc:  # no solution within the cap
                    res[d] = ("refused", type(exc).__name__, str(exc)[:120])
                    continue
                q.finish()
                close(o.get(q), want, f"{name} {d} {tag}", 1e-5)
                res[d] = (plan.mode, plan.algo if plan.mode == "find" else plan.solution_id, plan.fallback)
            out[name][tag] = res
    try:
        conv_ops.conv_forward(cla.to_device(q, np.ones((1, 1, 3, 3), np.float32)),
                              cla.to_device(q, np.ones((1, 1, 1, 1), np.float32)),
                              cla.zeros(q, (1, 1, 3, 3), np.float32), planner=ConvPlanner("find2"), stream=q,
                              pads=0, strides=1, dilations=1)
    except miopen.MissingSymbolError as exc:
        out["find2"] = str(exc)
    else:
        raise AssertionError("ConvPlanner('find2') planned on 2.17.0, which has no Find 2.0")
    return out
