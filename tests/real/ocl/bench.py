"""Speed of the real kernels on the checks' OpenCL device (run in a worker: `speed`): for each op, the raw ctypes
call, the typed call and the runtime op on the same kernels and buffers, interleaved in rounds.

Per call: CPU time of the enqueueing loop (process time, before the final clFinish, which a driver may spin in),
wall time to the end of the work, and GPU time between two profiling markers around the loop (OpenCL profiling
events: the kernels and the gaps between them). Small tensors measure dispatch, large ones the kernels.
"""

from __future__ import annotations

import ctypes
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import miopen
from miopen.ops import activation, batchnorm, pooling, softmax, tensor_ops

from .common import cl, device

F1, F0 = ctypes.c_float(1.0), ctypes.c_float(0.0)
Side = Callable[[], object]


def _vp(x: Any) -> ctypes.c_void_p:
    return ctypes.c_void_p(int(x))


def _cases(q: Any, h: miopen.Handle, large: bool) -> list[tuple[str, dict[str, Side | None], int]]:
    """(name, {side: call}, bytes moved per call) for the small or large shapes."""
    import pyopencl.array as cla

    raw = miopen.raw
    hp = h._cp
    r = np.random.default_rng(5)

    def arr(shape: tuple[int, ...]) -> Any:
        return cla.to_device(q, r.standard_normal(shape).astype(np.float32))

    def d4(shape: tuple[int, ...]) -> miopen.TensorDescriptor:
        d = miopen.create_tensor_descriptor()
        miopen.set_tensor_descriptor(d, miopen.DataType.miopenFloat, list(shape), None)
        return d

    keep: list[object] = []
    out: list[tuple[str, dict[str, Side | None], int]] = []
    shp = (64, 64, 128, 128) if large else (1, 4, 8, 8)
    nbytes = 4 * int(np.prod(shp))
    x, y = arr(shp), arr(shp)
    d = d4(shp)
    keep += [x, y, d]
    # activation relu
    ad = miopen.create_activation_descriptor()
    miopen.set_activation_descriptor(ad, miopen.ActivationMode.miopenActivationRELU, 0.0, 0.0, 0.0)
    xp, yp = x.data.int_ptr, y.data.int_ptr
    out.append((f"activation_forward relu {shp}", {
        "raw": lambda: raw.miopenActivationForward(hp, ad._cp, ctypes.byref(F1), d._cp, _vp(xp), ctypes.byref(F0),
                                                   d._cp, _vp(yp)),
        "typed": lambda: miopen.activation_forward(h, ad, 1.0, d, xp, 0.0, d, yp),
        "op": lambda: activation.activation_forward(x, y, "relu", stream=q)}, 2 * nbytes))
    # op_tensor add (c = a + b)
    b, c = arr(shp), arr(shp)
    keep += [b, c, ad]
    bp, cp = b.data.int_ptr, c.data.int_ptr
    add = int(miopen.TensorOp.miopenTensorOpAdd)
    out.append((f"op_tensor add {shp}", {
        "raw": lambda: raw.miopenOpTensor(hp, add, ctypes.byref(F1), d._cp, _vp(xp), ctypes.byref(F1), d._cp, _vp(bp),
                                          ctypes.byref(F0), d._cp, _vp(cp)),
        "typed": lambda: miopen.op_tensor(h, miopen.TensorOp.miopenTensorOpAdd, 1.0, d, xp, 1.0, d, bp, 0.0, d, cp),
        "op": lambda: tensor_ops.op_tensor("add", x, b, c, 1.0, 1.0, 0.0, stream=q)}, 3 * nbytes))
    # softmax (accurate, channel)
    sshp = (256, 1000, 16, 16) if large else (2, 10, 1, 1)
    sx, sy = arr(sshp), arr(sshp)
    sd = d4(sshp)
    keep += [sx, sy, sd]
    sxp, syp = sx.data.int_ptr, sy.data.int_ptr
    accurate, channel = miopen.SoftmaxAlgorithm.MIOPEN_SOFTMAX_ACCURATE, miopen.SoftmaxMode.MIOPEN_SOFTMAX_MODE_CHANNEL
    out.append((f"softmax_forward {sshp}", {
        "raw": lambda: raw.miopenSoftmaxForward_V2(hp, ctypes.byref(F1), sd._cp, _vp(sxp), ctypes.byref(F0), sd._cp,
                                                   _vp(syp), int(accurate), int(channel)),
        # the typed call the op ends in: the V2 entry point, with the op's algorithm and mode
        "typed": lambda: miopen.softmax_forward_v2(h, 1.0, sd, sxp, 0.0, sd, syp, accurate, channel),
        "op": lambda: softmax.softmax_forward(sx, sy, stream=q)}, 2 * 4 * int(np.prod(sshp))))
    # pooling max 2x2 stride 2, no index saving
    pd = miopen.create_pooling_descriptor()
    miopen.set_2d_pooling_descriptor(pd, miopen.PoolingMode.miopenPoolingMax, 2, 2, 0, 0, 2, 2)
    pshp = (shp[0], shp[1], shp[2] // 2, shp[3] // 2)
    py = arr(pshp)
    pyd = d4(pshp)
    keep += [pd, py, pyd]
    pyp = py.data.int_ptr
    out.append((f"pooling_forward max 2x2 {shp}", {
        "raw": lambda: raw.miopenPoolingForward(hp, pd._cp, ctypes.byref(F1), d._cp, _vp(xp), ctypes.byref(F0),
                                                pyd._cp, _vp(pyp), False, None, ctypes.c_size_t(0)),
        "typed": lambda: miopen.pooling_forward(h, pd, 1.0, d, xp, 0.0, pyd, pyp, False, None, 0),
        "op": lambda: pooling.pooling_forward(x, py, "max", 2, 0, 2, do_backward=False, stream=q)},
        nbytes + nbytes // 4))
    # batch norm inference, spatial
    C = shp[1]
    bn = d4((1, C, 1, 1))
    pw, pb, pm, pv = (cla.to_device(q, v.astype(np.float32)) for v in
                      (r.uniform(0.5, 2, (1, C, 1, 1)), r.standard_normal((1, C, 1, 1)),
                       r.standard_normal((1, C, 1, 1)), r.uniform(0.5, 2, (1, C, 1, 1))))
    keep += [bn, pw, pb, pm, pv]
    pp = [v.data.int_ptr for v in (pw, pb, pm, pv)]
    spatial = int(miopen.BatchNormMode.miopenBNSpatial)
    out.append((f"batch_norm_forward_inference spatial {shp}", {
        "raw": lambda: raw.miopenBatchNormalizationForwardInference(
            hp, spatial, ctypes.byref(F1), ctypes.byref(F0), d._cp, _vp(xp), d._cp, _vp(yp), bn._cp,
            *[_vp(p) for p in pp], ctypes.c_double(1e-5)),
        "typed": lambda: miopen.batch_normalization_forward_inference(
            h, miopen.BatchNormMode.miopenBNSpatial, 1.0, 0.0, d, xp, d, yp, bn, *pp, 1e-5),
        "op": lambda: batchnorm.batch_norm_forward_inference(x, y, pw, pb, pm, pv, "spatial", epsilon=1e-5,
                                                             stream=q)}, 2 * nbytes))
    # convolution forward, 3x3 pad 1, solver 11 (ConvOclDirectFwd) by id: the runtime's planner runs a Find first
    xs, ws_ = ((32, 64, 56, 56), (64, 64, 3, 3)) if large else ((1, 3, 7, 6), (4, 3, 3, 3))
    cx, cw = arr(xs), arr(ws_)
    cd = miopen.create_convolution_descriptor()
    miopen.init_convolution_descriptor(cd, miopen.ConvolutionMode.miopenConvolution, 1, 1, 1, 1, 1, 1)
    xd_, wd_ = d4(xs), d4(ws_)
    o = miopen.get_convolution_forward_output_dim(cd, xd_, wd_)
    ys = (o.n, o.c, o.h, o.w)
    cy, yd_ = arr(ys), d4(ys)
    keep += [cx, cw, cd, xd_, wd_, cy, yd_]
    cxp, cwp, cyp = cx.data.int_ptr, cw.data.int_ptr, cy.data.int_ptr
    sid = 11
    out.append((f"convolution_forward_immediate 3x3 (solver 11) {xs}x{ws_}", {
        "raw": lambda: raw.miopenConvolutionForwardImmediate(hp, wd_._cp, _vp(cwp), xd_._cp, _vp(cxp), cd._cp,
                                                             yd_._cp, _vp(cyp), None, ctypes.c_size_t(0),
                                                             ctypes.c_uint64(sid)),
        "typed": lambda: miopen.convolution_forward_immediate(h, wd_, cwp, xd_, cxp, cd, yd_, cyp, None, 0, sid),
        "op": None}, 4 * (int(np.prod(xs)) + int(np.prod(ws_)) + int(np.prod(ys)))))
    _KEEP.append(keep)
    return out


_KEEP: list[object] = []


def _time(q: Any, call: Side, number: int) -> tuple[float, float, float, float]:
    """(CPU s, wall s, GPU s, the calling thread's CPU s) per call over `number` calls. The process's CPU time
    also holds the driver's own threads (NVIDIA's run beside the caller while kernels complete); the thread's
    holds only what the caller ran: the op layer's Python and the enqueueing."""
    pcl = cl()
    q.finish()
    e0 = pcl.enqueue_marker(q)
    c0, t0, w0 = time.process_time(), time.thread_time(), time.perf_counter()
    for _ in range(number):
        call()
    c1, t1 = time.process_time(), time.thread_time()
    e1 = pcl.enqueue_marker(q)
    q.finish()
    w1 = time.perf_counter()
    gpu = (e1.profile.end - e0.profile.end) * 1e-9
    return (c1 - c0) / number, (w1 - w0) / number, gpu / number, (t1 - t0) / number


def speed(rounds: int = 6, small_number: int = 400, large_number: int = 40, large: bool = True
          ) -> dict[str, object]:
    """Every case on small and large shapes: {side: (cpu, wall, gpu, thread cpu) medians} per case, and the device. The sides
    take turns going first (the first loop after a drain ran slower on PoCL); a large case's loop is long enough
    (`large_number` calls) that its first call, after the drain, weighs little on the per-call CPU figure."""
    pcl = cl()
    dev = device()
    q = pcl.CommandQueue(pcl.Context([dev]), properties=pcl.command_queue_properties.PROFILING_ENABLE)
    h = miopen.create_with_stream(q.int_ptr)
    rows = []
    for big, number in ((False, small_number), (True, large_number))[:2 if large else 1]:
        for name, sides, nbytes in _cases(q, h, big):
            live = {k: v for k, v in sides.items() if v is not None}
            for call in live.values():  # warm: kernel builds, the runtime's caches
                call()
            q.finish()
            got: dict[str, list[tuple[float, ...]]] = {k: [] for k in live}
            for k in range(rounds):
                for side, call in list(live.items())[::1 if k % 2 == 0 else -1]:  # the order of the sides alternates
                    got[side].append(_time(q, call, number))
            med = {side: tuple(statistics.median(v[i] for v in vals) for i in range(4)) for side, vals in got.items()}
            rows.append({"case": name, "large": big, "bytes": nbytes, "number": number, "rounds": rounds,
                         **{side: med.get(side) for side in sides}})
    return {"device": f"{dev.platform.name.strip()}: {dev.name.strip()}", "driver": dev.driver_version, "rows": rows}
