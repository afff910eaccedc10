"""Fusion plans (the legacy API: conv + bias + ReLU, BN inference + ReLU) and CTC loss on real kernels, against
float64 numpy; where MIOpen cannot build or run them on this device, the status and why."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import miopen

from .checks_conv import _conv_ref
from .common import NOT_BUILDABLE, REFUSED, desc, dev, handle, note, numeric, rng, verdict, zeros

F32 = "float32"
CONV_ROW = ("Fusion plan conv 3×3 + bias + ReLU", F32, "CreateFusionPlan, CompileFusionPlan, ExecuteFusionPlan")
BN_ROW = ("Fusion plan BN inference (spatial) + ReLU", F32, "CreateFusionPlan, CompileFusionPlan, ExecuteFusionPlan")
CTC_LOSS = ("CTCLoss", F32, "losses (softmax applied, blank 0)")
CTC_GRAD = ("CTCLoss", F32, "gradients (softmax applied, blank 0)")


def _outcome(row: tuple[str, str, str], what: str, call: Callable[[], object]) -> str | None:
    """None when `call` succeeds; else the row's outcome, its reason noted (7: not buildable, else refused)."""
    try:
        call()
    except miopen.MIOpenError as exc:
        st = int(exc.status)
        return note(row, NOT_BUILDABLE if st == 7 else REFUSED, f"{what}: status {st}"
                    + (" (its kernel fails to build)" if st == 7 else ""))
    return None


def _relu_plan(row: tuple[str, str, str], x: np.ndarray, want: np.ndarray,
               ops: Callable[[miopen.FusionPlanDescriptor], Callable[[miopen.OperatorArgs], None]]) -> str:
    h = handle()
    xd_, yd_ = desc(list(x.shape)), desc(list(want.shape))
    fp = miopen.create_fusion_plan(miopen.FusionDirection.miopenVerticalFusion, xd_)
    set_args = ops(fp)
    act = miopen.create_op_activation_forward(fp, miopen.ActivationMode.miopenActivationRELU)
    failed = _outcome(row, "miopenCompileFusionPlan", lambda: miopen.compile_fusion_plan(h, fp))
    if failed:
        return failed
    args = miopen.create_operator_args()
    set_args(args)
    miopen.set_op_args_activ_forward(args, act, 1.0, 0.0, 0.0, 0.0, 0.0)
    yb = zeros(want.size)
    failed = _outcome(row, "miopenExecuteFusionPlan",
                      lambda: miopen.execute_fusion_plan(h, fp, xd_, dev(x).ptr, yd_, yb.ptr, args))
    return failed or verdict(row, yb.read().reshape(want.shape), want, 1e-5)


@numeric(CONV_ROW, BN_ROW)
def fusion_plans() -> dict[tuple[str, str, str], str]:
    r = rng(40)
    x = r.standard_normal((1, 4, 6, 6)).astype(np.float32)
    w = r.standard_normal((4, 4, 3, 3)).astype(np.float32)
    b = r.standard_normal(4).astype(np.float32)
    want = np.maximum(_conv_ref(x.astype(np.float64), w.astype(np.float64), 1, 1, 1) + b.reshape(1, 4, 1, 1), 0)
    wb, bb = dev(w), dev(b)

    def conv_bias(fp: miopen.FusionPlanDescriptor) -> Callable[[miopen.OperatorArgs], None]:
        cd = miopen.create_convolution_descriptor()
        miopen.init_convolution_descriptor(cd, miopen.ConvolutionMode.miopenConvolution, 1, 1, 1, 1, 1, 1)
        conv = miopen.create_op_conv_forward(fp, cd, desc([4, 4, 3, 3]))
        bias = miopen.create_op_bias_forward(fp, desc([1, 4, 1, 1]))

        def set_args(args: miopen.OperatorArgs) -> None:
            miopen.set_op_args_conv_forward(args, conv, 1.0, 0.0, wb.ptr)
            miopen.set_op_args_bias_forward(args, bias, 1.0, 0.0, bb.ptr)
        _keep.append(cd)
        return set_args

    out = {CONV_ROW: _relu_plan(CONV_ROW, x, want, conv_bias)}
    x = (r.standard_normal((2, 4, 3, 3)) * 2 + 1).astype(np.float32)
    scale, bias = r.uniform(0.5, 2, 4).astype(np.float32), r.standard_normal(4).astype(np.float32)
    mean, var = r.standard_normal(4).astype(np.float32), r.uniform(0.5, 2, 4).astype(np.float32)
    c = (lambda a: a.reshape(1, 4, 1, 1).astype(np.float64))
    want = np.maximum(c(scale) * (x.astype(np.float64) - c(mean)) / np.sqrt(c(var) + 1e-5) + c(bias), 0)
    bufs = [dev(v) for v in (scale, bias, mean, var)]

    def bn(fp: miopen.FusionPlanDescriptor) -> Callable[[miopen.OperatorArgs], None]:
        op = miopen.create_op_batch_norm_inference(fp, miopen.BatchNormMode.miopenBNSpatial, desc([1, 4, 1, 1]))

        def set_args(args: miopen.OperatorArgs) -> None:
            miopen.set_op_args_batch_norm_inference(args, op, 1.0, 0.0, *(v.ptr for v in bufs), 1e-5)
        return set_args

    out[BN_ROW] = _relu_plan(BN_ROW, x, want, bn)
    return out


_keep: list[object] = []


def _ctc_loss(logits: np.ndarray, labels: list[int], ll: list[int], il: list[int]) -> np.ndarray:
    """-log p(label | x) per batch entry (softmax over classes, blank 0), by the CTC forward recursion in float64."""
    T, B, C = logits.shape
    e = np.exp(logits - logits.max(axis=2, keepdims=True))
    p = e / e.sum(axis=2, keepdims=True)
    out, at = np.zeros(B), 0
    for n in range(B):
        lab = labels[at:at + ll[n]]
        at += ll[n]
        ext = [0]
        for k in lab:
            ext += [k, 0]
        S = len(ext)
        a = np.zeros(S)
        a[0] = p[0, n, 0]
        if S > 1:
            a[1] = p[0, n, ext[1]]
        for t in range(1, il[n]):
            prev = a.copy()
            for s in range(S):
                v = prev[s] + (prev[s - 1] if s >= 1 else 0.0)
                if s >= 2 and ext[s] != 0 and ext[s] != ext[s - 2]:
                    v += prev[s - 2]
                a[s] = v * p[t, n, ext[s]]
        out[n] = -np.log(a[S - 1] + (a[S - 2] if S > 1 else 0.0))
    return out


@numeric(CTC_LOSS, CTC_GRAD)
def ctc_loss() -> dict[tuple[str, str, str], Any]:
    """Losses against the forward recursion; gradients (w.r.t. the logits) against its central differences."""
    h = handle()
    T, B, C = 6, 2, 4
    labels, ll, il = [1, 2, 2, 3, 1], [3, 2], [6, 5]
    logits = rng(41).standard_normal((T, B, C)).astype(np.float32)
    cd = miopen.create_ctc_loss_descriptor()
    miopen.set_ctc_loss_descriptor(cd, miopen.DataType.miopenFloat, 0, True)
    pd, gd = desc([T, B, C]), desc([T, B, C])
    algo = miopen.CTCLossAlgo.MIOPEN_CTC_LOSS_ALGO_DETERMINISTIC
    rows = (CTC_LOSS, CTC_GRAD)
    try:
        ws = miopen.get_ctc_loss_workspace_size(h, pd, gd, labels, ll, il, algo, cd)
    except miopen.MIOpenError as exc:
        st = int(exc.status)
        return {row: note(row, NOT_BUILDABLE if st == 7 else REFUSED, f"the workspace query: status {st}")
                for row in rows}
    losses, grads, wsb = zeros(B), zeros(T * B * C), zeros(max(ws, 1), np.uint8)
    failed = _outcome(CTC_LOSS, "miopenCTCLoss", lambda: miopen.ctc_loss(
        h, pd, dev(logits).ptr, labels, ll, il, losses.ptr, gd, grads.ptr, algo, cd, wsb.ptr, ws))
    if failed:
        note(CTC_GRAD, failed, "miopenCTCLoss failed (see the losses row)")
        return {CTC_LOSS: failed, CTC_GRAD: failed}
    x64 = logits.astype(np.float64)
    out = {CTC_LOSS: verdict(CTC_LOSS, losses.read(), _ctc_loss(x64, labels, ll, il), 1e-5)}
    eps, num = 1e-5, np.zeros_like(x64)
    for idx in np.ndindex(*x64.shape):
        up, dn = x64.copy(), x64.copy()
        up[idx] += eps
        dn[idx] -= eps
        num[idx] = (_ctc_loss(up, labels, ll, il) - _ctc_loss(dn, labels, ll, il))[idx[1]] / (2 * eps)
    out[CTC_GRAD] = verdict(CTC_GRAD, grads.read().reshape(T, B, C), num, 1e-4)
    return out
