"""Convolution forward, backward data and backward weights through MIOpen's direct OpenCL solvers: Find
(MIOPEN_FIND_MODE=NORMAL) + the legacy calls, and Immediate with each solution id GetSolution lists afterwards,
against a float64 numpy cross-correlation."""

from __future__ import annotations

import numpy as np

import miopen

from .common import (CHECKED, NOT_BUILDABLE, REFUSED, close, desc, dev, handle, note, numeric, rng,
                     status, verdict, zeros)

F32 = "float32"
CASES = (  # (x dims, w dims, pad, stride, dilation)
    ([2, 3, 7, 6], [4, 3, 3, 3], 1, 1, 1),
    ([1, 4, 8, 8], [2, 4, 1, 1], 0, 2, 1),
    ([2, 2, 9, 7], [3, 2, 3, 3], 2, 2, 1),
)


def _conv_ref(x: np.ndarray, w: np.ndarray, p: int, s: int, dl: int) -> np.ndarray:
    N, C, H, W = x.shape
    K, _, R, S = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
    OH, OW = (H + 2 * p - dl * (R - 1) - 1) // s + 1, (W + 2 * p - dl * (S - 1) - 1) // s + 1
    y = np.zeros((N, K, OH, OW))
    for r in range(R):
        for t in range(S):
            patch = xp[:, :, r * dl:r * dl + s * (OH - 1) + 1:s, t * dl:t * dl + s * (OW - 1) + 1:s]
            y += np.einsum("nchw,kc->nkhw", patch, w[:, :, r, t])
    return y


def _grads(x: np.ndarray, w: np.ndarray, dy: np.ndarray, p: int, s: int, dl: int) -> tuple[np.ndarray, np.ndarray]:
    """(dx, dw) of the cross-correlation: the adjoint, by accumulation over the same patches."""
    N, C, H, W = x.shape
    K, _, R, S = w.shape
    OH, OW = dy.shape[2:]
    dxp = np.zeros((N, C, H + 2 * p, W + 2 * p))
    dw = np.zeros_like(w)
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
    for r in range(R):
        for t in range(S):
            sl = (slice(None), slice(None), slice(r * dl, r * dl + s * (OH - 1) + 1, s),
                  slice(t * dl, t * dl + s * (OW - 1) + 1, s))
            dxp[sl] += np.einsum("nkhw,kc->nchw", dy, w[:, :, r, t])
            dw[:, :, r, t] = np.einsum("nkhw,nchw->kc", dy, xp[sl])
    return dxp[:, :, p:p + H, p:p + W], dw


@numeric(("Convolution", F32, "forward: Find (NORMAL) + ConvolutionForward"),
         ("Convolution", F32, "backward data: Find (NORMAL) + ConvolutionBackwardData"),
         ("Convolution", F32, "backward weights: Find (NORMAL) + ConvolutionBackwardWeights"),
         ("Convolution", F32, "forward: Immediate (every solution listed after Find)"),
         ("Convolution", F32, "backward data: Immediate (every solution listed after Find)"),
         ("Convolution", F32, "backward weights: Immediate (every solution listed after Find)"),
         ("Convolution", F32, "legacy calls, alpha != 1 or beta != 0", REFUSED, "status 6 (NotImplemented)"),
         ("Convolution", F32, "backward weights, stride 2", NOT_BUILDABLE,
          "no solver of this build applies (the direct WrW solvers need stride 1; GEMM is off): Find fails, status 7"))
def convolution() -> dict[tuple[str, str, str], object]:
    h = handle()
    r = rng(20)
    solvers: dict[str, set[int]] = {"fwd": set(), "bwd": set(), "wrw": set()}
    for xdims, wdims, p, s, dl in CASES:
        cd = miopen.create_convolution_descriptor()
        miopen.init_convolution_descriptor(cd, miopen.ConvolutionMode.miopenConvolution, p, p, s, s, dl, dl)
        xd_, wd_ = desc(xdims), desc(wdims)
        o = miopen.get_convolution_forward_output_dim(cd, xd_, wd_)
        ydims = [o.n, o.c, o.h, o.w]
        yd_ = desc(ydims)
        x = r.standard_normal(int(np.prod(xdims))).astype(np.float32)
        w = r.standard_normal(int(np.prod(wdims))).astype(np.float32)
        dy = r.standard_normal(int(np.prod(ydims))).astype(np.float32)
        x64, w64, dy64 = (a.reshape(dm).astype(np.float64) for a, dm in ((x, xdims), (w, wdims), (dy, ydims)))
        want_y = _conv_ref(x64, w64, p, s, dl)
        want_dx, want_dw = _grads(x64, w64, dy64, p, s, dl)
        xb, wb, dyb = dev(x), dev(w), dev(dy)
        tag = f"{xdims} w{wdims} p{p} s{s}"
        # forward: Find, then the legacy call with the best algorithm
        ws = max(miopen.convolution_forward_get_work_space_size(h, wd_, xd_, cd, yd_), 1)
        wsb, yb = zeros(ws, np.uint8), zeros(len(dy))
        perf = miopen.find_convolution_forward_algorithm(h, xd_, xb.ptr, wd_, wb.ptr, cd, yd_, yb.ptr, 4, wsb.ptr,
                                                         ws, False)
        assert perf, f"Find forward {tag}: nothing found"
        yb = zeros(len(dy))
        miopen.convolution_forward(h, 1.0, xd_, xb.ptr, wd_, wb.ptr, cd, perf[0].fwd_algo, 0.0, yd_, yb.ptr, wsb.ptr,
                                   ws)
        close(yb.read().reshape(ydims), want_y, f"conv forward {tag}", 1e-5)
        assert status(lambda: miopen.convolution_forward(h, 2.0, xd_, xb.ptr, wd_, wb.ptr, cd, perf[0].fwd_algo,
                                                         0.0, yd_, yb.ptr, wsb.ptr, ws)) == 6
        for sol in miopen.convolution_forward_get_solution(h, wd_, xd_, cd, yd_, 8):
            wsz = max(sol.workspace_size, 1)
            yb, wsb2 = zeros(len(dy)), zeros(wsz, np.uint8)
            miopen.convolution_forward_immediate(h, wd_, wb.ptr, xd_, xb.ptr, cd, yd_, yb.ptr, wsb2.ptr, wsz,
                                                 sol.solution_id)
            close(yb.read().reshape(ydims), want_y, f"conv forward immediate {sol.solution_id} {tag}", 1e-5)
            solvers["fwd"].add(int(sol.solution_id))
        # backward data
        ws = max(miopen.convolution_backward_data_get_work_space_size(h, yd_, wd_, cd, xd_), 1)
        wsb, dxb = zeros(ws, np.uint8), zeros(len(x))
        perf = miopen.find_convolution_backward_data_algorithm(h, yd_, dyb.ptr, wd_, wb.ptr, cd, xd_, dxb.ptr, 4,
                                                               wsb.ptr, ws, False)
        assert perf, f"Find backward data {tag}: nothing found"
        dxb = zeros(len(x))
        miopen.convolution_backward_data(h, 1.0, yd_, dyb.ptr, wd_, wb.ptr, cd, perf[0].bwd_data_algo, 0.0, xd_,
                                         dxb.ptr, wsb.ptr, ws)
        close(dxb.read().reshape(xdims), want_dx, f"conv backward data {tag}", 1e-5)
        for sol in miopen.convolution_backward_data_get_solution(h, yd_, wd_, cd, xd_, 8):
            wsz = max(sol.workspace_size, 1)
            dxb, wsb2 = zeros(len(x)), zeros(wsz, np.uint8)
            miopen.convolution_backward_data_immediate(h, yd_, dyb.ptr, wd_, wb.ptr, cd, xd_, dxb.ptr, wsb2.ptr, wsz,
                                                       sol.solution_id)
            close(dxb.read().reshape(xdims), want_dx, f"conv backward data immediate {sol.solution_id} {tag}", 1e-5)
            solvers["bwd"].add(int(sol.solution_id))
        # backward weights
        ws = max(miopen.convolution_backward_weights_get_work_space_size(h, yd_, xd_, cd, wd_), 1)
        wsb, dwb = zeros(ws, np.uint8), zeros(len(w))
        if s != 1:  # no backward-weights solver of this build applies to a strided convolution: Find fails
            assert status(lambda: miopen.find_convolution_backward_weights_algorithm(
                h, yd_, dyb.ptr, xd_, xb.ptr, cd, wd_, dwb.ptr, 4, wsb.ptr, ws, False)) == 7
            continue
        perf = miopen.find_convolution_backward_weights_algorithm(h, yd_, dyb.ptr, xd_, xb.ptr, cd, wd_, dwb.ptr, 4,
                                                                  wsb.ptr, ws, False)
        assert perf, f"Find backward weights {tag}: nothing found"
        dwb = zeros(len(w))
        miopen.convolution_backward_weights(h, 1.0, yd_, dyb.ptr, xd_, xb.ptr, cd, perf[0].bwd_weights_algo, 0.0,
                                            wd_, dwb.ptr, wsb.ptr, ws)
        close(dwb.read().reshape(wdims), want_dw, f"conv backward weights {tag}", 1e-5)
        for sol in miopen.convolution_backward_weights_get_solution(h, yd_, xd_, cd, wd_, 8):
            wsz = max(sol.workspace_size, 1)
            dwb, wsb2 = zeros(len(w)), zeros(wsz, np.uint8)
            miopen.convolution_backward_weights_immediate(h, yd_, dyb.ptr, xd_, xb.ptr, cd, wd_, dwb.ptr, wsb2.ptr,
                                                          wsz, sol.solution_id)
            close(dwb.read().reshape(wdims), want_dw, f"conv backward weights immediate {sol.solution_id} {tag}",
                  1e-5)
            solvers["wrw"].add(int(sol.solution_id))
    assert all(solvers.values()), solvers
    out: dict[tuple[str, str, str], object] = {
        ("Convolution", F32, f"{d}: Find (NORMAL) + {c}"): CHECKED
        for d, c in (("forward", "ConvolutionForward"), ("backward data", "ConvolutionBackwardData"),
                     ("backward weights", "ConvolutionBackwardWeights"))}
    for d in ("forward", "backward data", "backward weights"):
        out[("Convolution", F32, f"{d}: Immediate (every solution listed after Find)")] = CHECKED
    out[("Convolution", F32, "legacy calls, alpha != 1 or beta != 0")] = REFUSED
    out[("Convolution", F32, "backward weights, stride 2")] = NOT_BUILDABLE
    out["solution ids"] = {k: sorted(v) for k, v in solvers.items()}
    return out


#: the solver each case's Find lists on PoCL (ConvOclDirectFwdGen 9, ConvOclDirectFwd 11, ConvOclDirectFwd1x1 13):
#: (forward, backward data); MIOpen does not check that an id applies, so only these are run without a Find
IMMEDIATE_IDS = ((11, 11), (13, 13), (9, 11))
NO_FP16 = "PoCL's CPU device has no cl_khr_fp16: no half kernel compiles (status 7)"


def _immediate(fwd_row: tuple[str, str, str], bwd_row: tuple[str, str, str], dtype: str, cases: tuple[tuple[list[int], list[int], int, int, int], ...],
               ids: tuple[tuple[int, int], ...], tol: float) -> dict[tuple[str, str, str], str]:
    """Forward and backward-data Immediate calls with the given solver ids, no Find before (a GPU's Find may hang)."""
    h = handle()
    r = rng(21)
    npdt, mdt = (np.float16, "miopenHalf") if dtype == "float16" else (np.float32, "miopenFloat")
    out = {fwd_row: CHECKED, bwd_row: CHECKED}
    for (xdims, wdims, p, s, dl), (fid, bid) in zip(cases, ids, strict=True):
        cd = miopen.create_convolution_descriptor()
        miopen.init_convolution_descriptor(cd, miopen.ConvolutionMode.miopenConvolution, p, p, s, s, dl, dl)
        xd_, wd_ = desc(xdims, dtype=mdt), desc(wdims, dtype=mdt)
        o = miopen.get_convolution_forward_output_dim(cd, xd_, wd_)
        ydims = [o.n, o.c, o.h, o.w]
        yd_ = desc(ydims, dtype=mdt)
        x, w, dy = (r.standard_normal(int(np.prod(dm))).astype(npdt) for dm in (xdims, wdims, ydims))
        x64, w64, dy64 = (a.reshape(dm).astype(np.float64) for a, dm in ((x, xdims), (w, wdims), (dy, ydims)))
        tag = f"{xdims} w{wdims} p{p} s{s}"
        for which, sid, call in (
                (fwd_row, fid, lambda yb, wsb, wsz, sid: miopen.convolution_forward_immediate(
                    h, wd_, dev(w, npdt).ptr, xd_, dev(x, npdt).ptr, cd, yd_, yb.ptr, wsb.ptr, wsz, sid)),
                (bwd_row, bid, lambda dxb, wsb, wsz, sid: miopen.convolution_backward_data_immediate(
                    h, yd_, dev(dy, npdt).ptr, wd_, dev(w, npdt).ptr, cd, xd_, dxb.ptr, wsb.ptr, wsz, sid))):
            if out[which] != CHECKED:
                continue
            fwd = which is fwd_row
            try:
                wsz = max((miopen.convolution_forward_get_solution_workspace_size(h, wd_, xd_, cd, yd_, sid) if fwd
                           else miopen.convolution_backward_data_get_solution_workspace_size(h, yd_, wd_, cd, xd_, sid)),
                          1)
            except miopen.MIOpenError as exc:
                out[which] = note(which, f"status {int(exc.status)}", f"solver {sid} on {tag}: workspace query: {exc}")
                continue
            res = zeros(len(dy) if fwd else len(x), npdt)
            st = status(lambda: call(res, zeros(wsz, np.uint8), wsz, sid))
            if st:
                out[which] = note(which, NOT_BUILDABLE if st == 7 else f"status {st}",
                                  f"solver {sid} on {tag}: status {st}" + (" (the kernel fails to build)" if st == 7
                                                                           else ""))
                continue
            want = _conv_ref(x64, w64, p, s, dl) if fwd else _grads(x64, w64, dy64, p, s, dl)[0]
            out[which] = verdict(which, res.read().reshape(ydims if fwd else xdims), want, tol)
    return out


def _id_rows(dtype: str) -> tuple[tuple[str, str, str], tuple[str, str, str]]:
    return (("Convolution", dtype, "forward: Immediate without a Find (solvers 9, 11, 13 by id)"),
            ("Convolution", dtype, "backward data: Immediate without a Find (solvers 11, 13 by id)"))


@numeric(("Convolution", F32, "forward: Immediate without a Find (solvers 9, 11, 13 by id)"),
         ("Convolution", F32, "backward data: Immediate without a Find (solvers 11, 13 by id)"),
         ("Convolution", "float16", "forward: Immediate without a Find (solvers 9, 11, 13 by id)", NOT_BUILDABLE,
          NO_FP16),
         ("Convolution", "float16", "backward data: Immediate without a Find (solvers 11, 13 by id)", NOT_BUILDABLE,
          NO_FP16))
def immediate_ids() -> dict[tuple[str, str, str], str]:
    out, half = (
        _immediate(*_id_rows(F32), F32, CASES, IMMEDIATE_IDS, 1e-5),
        _immediate(*_id_rows("float16"), "float16", CASES, IMMEDIATE_IDS, 1e-2))
    return {**out, **half}


@numeric(("Convolution 11×11", F32, "forward: Immediate without a Find (solver 11, the 11×11 solver off)"),
         ("Convolution 11×11", F32, "backward data: Immediate without a Find (solver 11, the 11×11 solver off)"))
def conv_11x11() -> dict[tuple[str, str, str], str]:
    """A large filter through the generic direct solver (run last, in a worker of its own: a GPU's queue may break)."""
    return _immediate(("Convolution 11×11", F32, "forward: Immediate without a Find (solver 11, the 11×11 solver off)"),
                      ("Convolution 11×11", F32,
                       "backward data: Immediate without a Find (solver 11, the 11×11 solver off)"), F32, (([1, 3, 20, 20], [2, 3, 11, 11], 0, 1, 1),), ((11, 11),), 1e-5)
