"""Activation, softmax, pooling, LRN and batch norm, forward and backward, against float64 numpy references
(MIOpen's formulas, from its rocm-5.2.3 kernels), over a few seeded random shapes, modes and scaling factors."""

from __future__ import annotations

import numpy as np

import miopen

from .common import CHECKED, REFUSED, close, desc, dev, handle, numeric, rng, status, zeros

F32 = "float32"
ACT_MODES = ("PASTHRU", "LOGISTIC", "TANH", "RELU", "SOFTRELU", "ABS", "POWER", "CLIPPEDRELU", "LEAKYRELU", "ELU")
ALPHA_ONE = "alpha != 1 or beta != 0"


def _act_ref(mode: str, x: np.ndarray, a: float, b: float, g: float) -> tuple[np.ndarray, np.ndarray]:
    """(y, dy/dx) of MIOpen's activation `mode` with parameters alpha, beta, gamma."""
    one = np.ones_like(x)
    if mode == "PASTHRU":
        return x, one
    if mode == "LOGISTIC":
        y = 1 / (1 + np.exp(-x))
        return y, y * (1 - y)
    if mode == "TANH":
        t = np.tanh(a * x)
        return b * t, a * b * (1 - t * t)
    if mode == "RELU":
        return np.maximum(x, 0), (x > 0) * one
    if mode == "SOFTRELU":
        return np.log1p(np.exp(x)), 1 / (1 + np.exp(-x))
    if mode == "ABS":
        return np.abs(x), np.sign(x)
    if mode == "POWER":
        v = a + b * x
        return v ** g, g * b * v ** (g - 1)
    if mode == "CLIPPEDRELU":
        return np.clip(x, 0, a), ((x > 0) & (x <= a)) * one
    if mode == "LEAKYRELU":
        return np.where(x > 0, x, a * x), np.where(x > 0, 1, a)
    assert mode == "ELU"
    return np.where(x > 0, x, a * (np.exp(x) - 1)), np.where(x > 0, 1, a * np.exp(x))


@numeric(("Activation (10 modes)", F32, "forward"), ("Activation (9 modes)", F32, "backward"),
         ("Activation POWER", F32, "backward", "wrong result",
          "upstream bug: ActivationFunction_Power_Diff (MIOpenNeuron.cl) never reads dy, dx = dy/dx alone"),
         ("Activation", F32, f"forward, {ALPHA_ONE}", REFUSED, "status 7 (UnknownError), y untouched"))
def activation() -> dict[tuple[str, str, str], str]:
    h = handle()
    r = rng(10)
    for i, mode in enumerate(ACT_MODES):
        dims = [int(d) for d in r.integers(1, 5, size=4)]
        n = int(np.prod(dims))
        a, b, g = (2.0, 0.5, 1.5) if mode == "POWER" else (float(r.uniform(0.2, 2)), float(r.uniform(0.5, 2)), 1.0)
        x = r.uniform(-2, 2, n).astype(np.float32)
        dy = r.standard_normal(n).astype(np.float32)
        ad = miopen.create_activation_descriptor()
        miopen.set_activation_descriptor(ad, getattr(miopen.ActivationMode, f"miopenActivation{mode}"), a, b, g)
        d = desc(dims)
        xd, yd, dyd, dxd = dev(x), zeros(n), dev(dy), zeros(n)
        miopen.activation_forward(h, ad, 1.0, d, xd.ptr, 0.0, d, yd.ptr)
        y64, grad = _act_ref(mode, x.astype(np.float64), a, b, g)
        close(yd.read(), y64, f"activation {mode} forward {dims}", 1e-5)
        miopen.activation_backward(h, ad, 1.0, d, yd.ptr, d, dyd.ptr, d, xd.ptr, 0.0, d, dxd.ptr)
        if mode == "POWER":  # the upstream bug: MIOpen's dx is dy/dx alone, dy is never read
            close(dxd.read(), grad, "activation POWER backward (dy ignored)", 1e-4)
        else:
            close(dxd.read(), dy * grad, f"activation {mode} backward {dims}", 1e-4)
        if i == 0:
            for alpha, beta in ((2.0, 0.0), (1.0, 0.5)):
                before = yd.read()
                assert status(lambda: miopen.activation_forward(h, ad, alpha, d, xd.ptr, beta, d, yd.ptr)) == 7
                assert (yd.read() == before).all()
    return {("Activation (10 modes)", F32, "forward"): CHECKED, ("Activation (9 modes)", F32, "backward"): CHECKED,
            ("Activation POWER", F32, "backward"): "wrong result",
            ("Activation", F32, f"forward, {ALPHA_ONE}"): REFUSED}


def _softmax_ref(x: np.ndarray, alg: str, mode: str) -> np.ndarray:
    axes = (1,) if mode == "CHANNEL" else (1, 2, 3)
    m = x.max(axis=axes, keepdims=True)
    e = np.exp(x - m)
    s = e.sum(axis=axes, keepdims=True)
    return (x - m - np.log(s)) if alg == "LOG" else e / s


def _softmax_bwd_ref(y: np.ndarray, dy: np.ndarray, alg: str, mode: str) -> np.ndarray:
    axes = (1,) if mode == "CHANNEL" else (1, 2, 3)
    if alg == "LOG":
        return dy - np.exp(y) * dy.sum(axis=axes, keepdims=True)
    return y * (dy - (dy * y).sum(axis=axes, keepdims=True))


@numeric(("Softmax V1", F32, "forward"), ("Softmax V1", F32, "backward"),
         ("Softmax V2 (FAST, ACCURATE, LOG × CHANNEL, INSTANCE)", F32, "forward, alpha and beta"),
         ("Softmax V2 (FAST, ACCURATE, LOG × CHANNEL, INSTANCE)", F32, "backward, alpha and beta"))
def softmax() -> dict[tuple[str, str, str], str]:
    h = handle()
    r = rng(11)
    dims = [2, 5, 3, 2]
    n = int(np.prod(dims))
    d = desc(dims)
    x = r.uniform(-3, 3, n).astype(np.float32)
    dy = r.standard_normal(n).astype(np.float32)
    x64, dy64 = x.reshape(dims).astype(np.float64), dy.reshape(dims).astype(np.float64)
    # V1: ACCURATE, CHANNEL; alpha 1, beta 0
    xd, yd, dyd, dxd = dev(x), zeros(n), dev(dy), zeros(n)
    miopen.softmax_forward(h, 1.0, d, xd.ptr, 0.0, d, yd.ptr)
    y = _softmax_ref(x64, "ACCURATE", "CHANNEL")
    close(yd.read().reshape(dims), y, "softmax V1 forward", 1e-5)
    miopen.softmax_backward(h, 1.0, d, yd.ptr, d, dyd.ptr, 0.0, d, dxd.ptr)
    close(dxd.read().reshape(dims), _softmax_bwd_ref(yd.read().reshape(dims).astype(np.float64), dy64, "ACCURATE",
                                                    "CHANNEL"), "softmax V1 backward", 1e-5)
    for i, (alg, mode) in enumerate((a, m) for a in ("FAST", "ACCURATE", "LOG") for m in ("CHANNEL", "INSTANCE")):
        alpha, beta = ((1.0, 0.0), (2.0, 0.5), (0.5, -1.0))[i % 3]
        A = getattr(miopen.SoftmaxAlgorithm, f"MIOPEN_SOFTMAX_{alg}")
        M = getattr(miopen.SoftmaxMode, f"MIOPEN_SOFTMAX_MODE_{mode}")
        y0 = r.standard_normal(n).astype(np.float32)
        yd = dev(y0)
        miopen.softmax_forward_v2(h, alpha, d, xd.ptr, beta, d, yd.ptr, A, M)
        want = alpha * _softmax_ref(x64, alg, mode) + beta * y0.reshape(dims)
        close(yd.read().reshape(dims), want, f"softmax V2 {alg} {mode} forward ({alpha}, {beta})", 1e-5)
        yv = _softmax_ref(x64, alg, mode).astype(np.float32)
        dx0 = r.standard_normal(n).astype(np.float32)
        dxd = dev(dx0)
        miopen.softmax_backward_v2(h, alpha, d, dev(yv).ptr, d, dyd.ptr, beta, d, dxd.ptr, A, M)
        want = alpha * _softmax_bwd_ref(yv.astype(np.float64), dy64, alg, mode) + beta * dx0.reshape(dims)
        close(dxd.read().reshape(dims), want, f"softmax V2 {alg} {mode} backward ({alpha}, {beta})", 1e-5)
    name = "Softmax V2 (FAST, ACCURATE, LOG × CHANNEL, INSTANCE)"
    return {("Softmax V1", F32, "forward"): CHECKED, ("Softmax V1", F32, "backward"): CHECKED,
            (name, F32, "forward, alpha and beta"): CHECKED, (name, F32, "backward, alpha and beta"): CHECKED}
