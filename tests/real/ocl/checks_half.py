"""Half precision (float16) against numpy, op by op, and the host-scalar encodings proven by numbers on half
tensors. On PoCL's CPU device (no cl_khr_fp16) no half kernel builds: every row is "not buildable" (status 7). NVIDIA's
OpenCL does not advertise cl_khr_fp16 either, yet many of MIOpen's half kernels build there: each op is run where
its half kernel builds and compared with a float64 reference of the half inputs; one that fails to build is recorded
with its status.

Encodings (annotations): Set/Scale/TransformTensor read alpha (beta) in the tensor's element type (`element_of`:
the typed API sends a half), OpTensor and the layers read float whatever the type (`scalar: float`). Each is proven
both ways: the typed call with a Python float, a c_float and a c_double is right, and the raw call with the other
encoding's bytes is misread.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

import numpy as np

import miopen

from .common import (CHECKED, NOT_BUILDABLE, WRONG, Row, close, desc, dev, handle, has_extension, note, numeric, rng,
                     status, verdict, zeros)
from .checks_layers import _act_ref, _lrn_ref, _pool_ref, _softmax_ref
from .checks_tensor import _op_ref

H = "float16"
NO_FP16 = "PoCL's CPU device has no cl_khr_fp16: no half kernel compiles (status 7)"
TOL = 4e-3  # half outputs: ~2^-11 relative rounding, a few operations deep
ENCODINGS: tuple[Callable[[float], object], ...] = (float, ctypes.c_float, ctypes.c_double)

TENSOR_ROWS: tuple[Row, ...] = (
    ("SetTensor", H, "alpha element-typed (float, c_float, c_double)"),
    ("ScaleTensor", H, "alpha element-typed (float, c_float, c_double)"),
    ("TransformTensor", H, "packed to padded; alpha, beta element-typed"),
    *((f"OpTensor {op}", H, "alpha1, alpha2, beta as float (float, c_float, c_double); broadcast B")
      for op in ("add", "mul", "min", "max")),
    ("host scalar `element_of` (element-typed)", H, "Set/Scale alpha as half; a float32 alpha is misread"),
    ("host scalar `scalar: float`", H, "OpTensor alpha1, alpha2, beta as float; half bits are misread"),
)
LAYER_ROWS: tuple[Row, ...] = (
    ("Activation (RELU, LOGISTIC, TANH, ELU)", H, "forward, backward"),
    ("Softmax V2 (ACCURATE, LOG × CHANNEL)", H, "forward, alpha 2, beta 0.5"),
    ("Pooling max", H, "forward, backward"),
    ("Pooling average", H, "forward, backward"),
    ("LRN within-channel", H, "forward"),
    ("BatchNorm spatial", H, "inference"),
    ("BatchNorm spatial", H, "training (running and saved statistics)"),
    ("BatchNorm per-activation", H, "inference"),
    ("host scalar `scalar: float` (layers)", H, "Activation, Pooling, BN: alpha 1, beta 0 as float (float, c_float, "
                                                "c_double); alpha 2 refused"),
)


def _not_built(row: Row, st: int) -> str:
    if st == 7:
        ext = "" if has_extension("cl_khr_fp16") else "; the device does not advertise cl_khr_fp16"
        return note(row, NOT_BUILDABLE, f"the half kernel fails to compile (status 7){ext}")
    return note(row, f"status {st}", f"MIOpen returned status {st}")


def _h(a: np.ndarray) -> np.ndarray:
    return np.asarray(a, np.float16)


def _f64(a: np.ndarray) -> np.ndarray:
    return np.asarray(a, np.float16).astype(np.float64)


def _hdesc(dims: list[int], strides: list[int] | None = None) -> miopen.TensorDescriptor:
    return desc(dims, strides, "miopenHalf")


def _raw_ptr(value: ctypes._SimpleCData) -> ctypes.c_void_p:  # type: ignore[type-arg]
    return ctypes.cast(ctypes.pointer(value), ctypes.c_void_p)


@numeric(*[(*row, NOT_BUILDABLE, NO_FP16) for row in TENSOR_ROWS])
def half_tensor() -> dict[Row, str]:
    h = handle()
    r = rng(60)
    out: dict[Row, str] = {}
    dims = [2, 3, 4, 5]
    n = int(np.prod(dims))
    d = _hdesc(dims)
    base = _h(r.standard_normal(n))
    # SetTensor / ScaleTensor: typed calls with each encoding; the raw call with float32 bits
    for op, call, want in (("SetTensor", miopen.set_tensor, lambda a: np.full(n, -1.75)),
                           ("ScaleTensor", miopen.scale_tensor, lambda a: _f64(base) * a)):
        row = (op, H, "alpha element-typed (float, c_float, c_double)")
        alpha = -1.75 if op == "SetTensor" else 2.5
        results = []
        for enc in ENCODINGS:
            b = dev(base, np.float16)
            st = status(lambda: call(h, d, b.ptr, enc(alpha)))
            if st:
                results.append(_not_built(row, st))
                break
            results.append(verdict(row, b.read(), want(alpha), TOL))
        out[row] = next((x for x in results if x != CHECKED), CHECKED)
    enc_row = ("host scalar `element_of` (element-typed)", H, "Set/Scale alpha as half; a float32 alpha is misread")
    if out[("SetTensor", H, "alpha element-typed (float, c_float, c_double)")] == CHECKED:
        b = dev(base, np.float16)
        st = miopen.raw.miopenSetTensor(h._cp, d._cp, ctypes.c_void_p(b.ptr), _raw_ptr(ctypes.c_float(-1.75)))
        err = float(np.max(np.abs(_f64(b.read()) + 1.75)))
        out[enc_row] = (note(enc_row, f"status {st}", f"the raw call with a float32 alpha returned status {st}") if st
                        else note(enc_row, CHECKED, f"typed (half) right; raw float32 alpha: max error {err:.3g}")
                        if err > 0.1 else note(enc_row, WRONG, f"a float32 alpha was read right too (error {err:.3g})"))
    else:
        out[enc_row] = _not_built(enc_row, 7)
    # TransformTensor into padded strides, alpha and beta in the element type
    row = ("TransformTensor", H, "packed to padded; alpha, beta element-typed")
    ystr = [90, 30, 6, 1]
    y0 = _h(r.standard_normal(180))
    yb = dev(y0, np.float16)
    st = status(lambda: miopen.transform_tensor(h, -1.5, d, dev(base, np.float16).ptr, 0.5,
                                                _hdesc(dims, ystr), yb.ptr))
    if st:
        out[row] = _not_built(row, st)
    else:
        from .common import strided_view

        want = -1.5 * _f64(base).reshape(dims) + 0.5 * strided_view(y0.astype(np.float64), dims, ystr)
        out[row] = verdict(row, strided_view(yb.read(), dims, ystr), want, TOL)
    # OpTensor: alpha1, alpha2, beta as float whatever the type; B broadcast
    bdims = [1, 3, 1, 5]
    a, bb, c = (_h(r.standard_normal(int(np.prod(x)))) for x in (dims, bdims, dims))
    ops = {"add": miopen.TensorOp.miopenTensorOpAdd, "mul": miopen.TensorOp.miopenTensorOpMul,
           "min": miopen.TensorOp.miopenTensorOpMin, "max": miopen.TensorOp.miopenTensorOpMax}
    a1, a2, beta = 1.5, -0.5, 2.0
    for name, op in ops.items():
        row = (f"OpTensor {name}", H, "alpha1, alpha2, beta as float (float, c_float, c_double); broadcast B")
        want = _op_ref(name, _f64(a).reshape(dims), _f64(bb).reshape(bdims), _f64(c).reshape(dims), a1, a2, beta)
        results = []
        for enc in ENCODINGS:
            cd = dev(c, np.float16)
            st = status(lambda: miopen.op_tensor(h, op, enc(a1), d, dev(a, np.float16).ptr, enc(a2), _hdesc(bdims),
                                                 dev(bb, np.float16).ptr, enc(beta), d, cd.ptr))
            if st:
                results.append(_not_built(row, st))
                break
            results.append(verdict(row, cd.read().reshape(dims), want, TOL))
        out[row] = next((x for x in results if x != CHECKED), CHECKED)
    enc_row = ("host scalar `scalar: float`", H, "OpTensor alpha1, alpha2, beta as float; half bits are misread")
    if out[("OpTensor add", H, "alpha1, alpha2, beta as float (float, c_float, c_double); broadcast B")] == CHECKED:
        cd, bdesc = dev(c, np.float16), _hdesc(bdims)  # bdesc held: a temporary's handle would be destroyed
        halves = [ctypes.c_uint16(int(np.float16(v).view(np.uint16))) for v in (a1, a2, beta)]
        st = miopen.raw.miopenOpTensor(h._cp, int(ops["add"]), _raw_ptr(halves[0]), d._cp,
                                       ctypes.c_void_p(dev(a, np.float16).ptr), _raw_ptr(halves[1]),
                                       bdesc._cp, ctypes.c_void_p(dev(bb, np.float16).ptr),
                                       _raw_ptr(halves[2]), d._cp, ctypes.c_void_p(cd.ptr))
        want = _op_ref("add", _f64(a).reshape(dims), _f64(bb).reshape(bdims), _f64(c).reshape(dims), a1, a2, beta)
        got = _f64(cd.read()).reshape(dims)
        err = float(np.nanmax(np.abs(got - want))) if np.isfinite(got).all() else float("inf")
        out[enc_row] = (note(enc_row, f"status {st}", f"the raw call with half bits returned status {st}") if st
                        else note(enc_row, CHECKED, f"typed (float) right; raw half bits: max error {err:.3g}")
                        if err > 0.1 else note(enc_row, WRONG, f"half bits were read right too (error {err:.3g})"))
    else:
        out[enc_row] = _not_built(enc_row, 7)
    return out


@numeric(*[(*row, NOT_BUILDABLE, NO_FP16) for row in LAYER_ROWS])
def half_layers() -> dict[Row, str]:
    h = handle()
    r = rng(61)
    out: dict[Row, str] = {}
    dims = [2, 4, 6, 6]
    n = int(np.prod(dims))
    d = _hdesc(dims)
    floats_ok: list[bool] = []
    # activation: forward and backward, the scaling factors in each encoding
    row = LAYER_ROWS[0]
    results = []
    for i, mode in enumerate(("RELU", "LOGISTIC", "TANH", "ELU")):
        a, b, g = 0.7, 1.3, 1.0
        x, dy = _h(r.uniform(-2, 2, n)), _h(r.standard_normal(n))
        ad = miopen.create_activation_descriptor()
        miopen.set_activation_descriptor(ad, getattr(miopen.ActivationMode, f"miopenActivation{mode}"), a, b, g)
        enc = ENCODINGS[i % 3]
        xd, yd, dxd = dev(x, np.float16), zeros(n, np.float16), zeros(n, np.float16)
        st = status(lambda: miopen.activation_forward(h, ad, enc(1.0), d, xd.ptr, enc(0.0), d, yd.ptr))
        if st:
            results.append(_not_built(row, st))
            break
        y64, grad = _act_ref(mode, _f64(x), a, b, g)
        results.append(verdict(row, yd.read(), y64, TOL))
        st = status(lambda: miopen.activation_backward(h, ad, 1.0, d, yd.ptr, d, dev(dy, np.float16).ptr, d, xd.ptr,
                                                       0.0, d, dxd.ptr))
        results.append(_not_built(row, st) if st else verdict(row, dxd.read(), _f64(dy) * grad, 2 * TOL))
        if i == 0:
            floats_ok.append(status(lambda: miopen.activation_forward(h, ad, 2.0, d, xd.ptr, 0.0, d, yd.ptr)) != 0)
    out[row] = next((x for x in results if x != CHECKED), CHECKED)
    # softmax V2 with alpha and beta (read as float)
    row = LAYER_ROWS[1]
    results = []
    sdims = [2, 5, 3, 2]
    sd = _hdesc(sdims)
    x = _h(r.uniform(-3, 3, sdims))
    for alg in ("ACCURATE", "LOG"):
        y0 = _h(r.standard_normal(sdims))
        yd = dev(y0, np.float16)
        st = status(lambda: miopen.softmax_forward_v2(h, 2.0, sd, dev(x, np.float16).ptr, 0.5, sd, yd.ptr,
                                                      getattr(miopen.SoftmaxAlgorithm, f"MIOPEN_SOFTMAX_{alg}"),
                                                      miopen.SoftmaxMode.MIOPEN_SOFTMAX_MODE_CHANNEL))
        if st:
            results.append(_not_built(row, st))
            break
        want = 2.0 * _softmax_ref(_f64(x), alg, "CHANNEL") + 0.5 * _f64(y0)
        results.append(verdict(row, yd.read().reshape(sdims), want, TOL))
    out[row] = next((x for x in results if x != CHECKED), CHECKED)
    # pooling max and average, forward and backward
    for row, name, mode in ((LAYER_ROWS[2], "max", miopen.PoolingMode.miopenPoolingMax),
                            (LAYER_ROWS[3], "avg", miopen.PoolingMode.miopenPoolingAverage)):
        k, s, p = 3, 2, 1
        pd = miopen.create_pooling_descriptor()
        miopen.set_2d_pooling_descriptor(pd, mode, k, k, p, p, s, s)
        o = miopen.get_pooling_forward_output_dim(pd, d)
        ydims = [o.n, o.c, o.h, o.w]
        ny = int(np.prod(ydims))
        ydesc = _hdesc(ydims)
        x, dy = _h(r.standard_normal(n)), _h(r.standard_normal(ny))
        ws = max(miopen.pooling_get_work_space_size_v2(pd, ydesc), 1)
        wsd, xd, yd, dxd = zeros(ws, np.uint8), dev(x, np.float16), zeros(ny, np.float16), zeros(n, np.float16)
        st = status(lambda: miopen.pooling_forward(h, pd, ctypes.c_double(1.0), d, xd.ptr, ctypes.c_float(0.0),
                                                   ydesc, yd.ptr, True, wsd.ptr, ws))
        if st:
            out[row] = _not_built(row, st)
            continue
        want_y, want_dx = _pool_ref(_f64(x).reshape(dims), _f64(dy).reshape(ydims), name, k, s, p)
        results = [verdict(row, yd.read().reshape(ydims), want_y, TOL)]
        st = status(lambda: miopen.pooling_backward(h, pd, 1.0, ydesc, yd.ptr, ydesc, dev(dy, np.float16).ptr, d,
                                                    xd.ptr, 0.0, d, dxd.ptr, wsd.ptr))
        results.append(_not_built(row, st) if st else verdict(row, dxd.read().reshape(dims), want_dx, 2 * TOL))
        floats_ok.append(status(lambda: miopen.pooling_forward(h, pd, 2.0, d, xd.ptr, 0.0, ydesc, yd.ptr, False,
                                                               None, 0)) != 0)
        out[row] = next((x for x in results if x != CHECKED), CHECKED)
    # LRN within-channel forward
    row = LAYER_ROWS[4]
    ld = miopen.create_lrn_descriptor()
    miopen.set_lrn_descriptor(ld, miopen.LRNMode.miopenLRNWithinChannel, 3, 0.5, 0.6, 1.0)
    x = _h(r.standard_normal(n))
    yd = zeros(n, np.float16)
    st = status(lambda: miopen.lrn_forward(h, ld, 1.0, d, dev(x, np.float16).ptr, 0.0, d, yd.ptr, False, None))
    if st:
        out[row] = _not_built(row, st)
    else:
        want, _ = _lrn_ref(_f64(x).reshape(dims), np.zeros(dims), True, 3, 0.5, 0.6, 1.0)
        out[row] = verdict(row, yd.read().reshape(dims), want, TOL)
    # batch norm: half x and y, the parameters in the type MIOpen derives
    eps, f = 1e-5, 0.25
    for (row_inf, row_train), mode, axes in (
            ((LAYER_ROWS[5], LAYER_ROWS[6]), miopen.BatchNormMode.miopenBNSpatial, (0, 2, 3)),
            ((LAYER_ROWS[7], None), miopen.BatchNormMode.miopenBNPerActivation, (0,))):
        bn = miopen.create_tensor_descriptor()
        miopen.derive_bn_tensor_descriptor(bn, d, mode)
        info = miopen.get_tensor_descriptor(bn)
        pdt = np.float16 if int(info.data_type) == int(miopen.DataType.miopenHalf) else np.float32
        bdims = list(info.dims_a)
        nb = int(np.prod(bdims))
        x = _h(r.standard_normal(n) * 2 + 1)
        x64 = _f64(x).reshape(dims)
        scale, bias = r.uniform(0.5, 2, nb).astype(pdt), r.standard_normal(nb).astype(pdt)
        rmean, rvar = r.standard_normal(nb).astype(pdt), r.uniform(0.5, 2, nb).astype(pdt)
        sc, bi, mu, var = (v.astype(np.float64).reshape(bdims) for v in (scale, bias, rmean, rvar))
        yd = zeros(n, np.float16)
        st = status(lambda: miopen.batch_normalization_forward_inference(
            h, mode, ctypes.c_float(1.0), ctypes.c_double(0.0), d, dev(x, np.float16).ptr, d, yd.ptr, bn,
            dev(scale, pdt).ptr, dev(bias, pdt).ptr, dev(rmean, pdt).ptr, dev(rvar, pdt).ptr, eps))
        out[row_inf] = (_not_built(row_inf, st) if st else
                        verdict(row_inf, yd.read().reshape(dims), sc * (x64 - mu) / np.sqrt(var + eps) + bi, TOL))
        if not st:
            floats_ok.append(status(lambda: miopen.batch_normalization_forward_inference(
                h, mode, 2.0, 0.0, d, dev(x, np.float16).ptr, d, yd.ptr, bn, dev(scale, pdt).ptr,
                dev(bias, pdt).ptr, dev(rmean, pdt).ptr, dev(rvar, pdt).ptr, eps)) != 0)
        if row_train is None:
            continue
        m = int(np.prod([dims[a] for a in axes]))
        bmean, bvar = x64.mean(axis=axes, keepdims=True), x64.var(axis=axes, keepdims=True)
        rm, rv, sm, siv, yd = dev(rmean, pdt), dev(rvar, pdt), zeros(nb, pdt), zeros(nb, pdt), zeros(n, np.float16)
        st = status(lambda: miopen.batch_normalization_forward_training(
            h, mode, 1.0, 0.0, d, dev(x, np.float16).ptr, d, yd.ptr, bn, dev(scale, pdt).ptr, dev(bias, pdt).ptr, f,
            rm.ptr, rv.ptr, eps, sm.ptr, siv.ptr))
        if st:
            out[row_train] = _not_built(row_train, st)
            continue
        results = [verdict(row_train, yd.read().reshape(dims), sc * (x64 - bmean) / np.sqrt(bvar + eps) + bi, TOL),
                   verdict(row_train, rm.read().reshape(bdims), (1 - f) * mu + f * bmean, TOL),
                   verdict(row_train, rv.read().reshape(bdims), (1 - f) * var + f * bvar * m / (m - 1), TOL),
                   verdict(row_train, sm.read().reshape(bdims), bmean, TOL),
                   verdict(row_train, siv.read().reshape(bdims), 1 / np.sqrt(bvar + eps), TOL)]
        out[row_train] = next((x for x in results if x != CHECKED), CHECKED)
    row = LAYER_ROWS[8]
    built = [out[LAYER_ROWS[i]] == CHECKED for i in (0, 2, 3, 5)]
    if not any(built):
        out[row] = _not_built(row, 7)
    else:
        out[row] = (note(row, CHECKED, f"{len(floats_ok)} ops: alpha 1 accepted and right, alpha 2 refused")
                    if all(floats_ok) else note(row, WRONG, "an alpha of 2 was accepted"))
    return out
