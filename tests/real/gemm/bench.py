"""Speed of the GEMM build's kernels on the checks' OpenCL device (run in a worker: `speed`), rows in the format of
tests/real/ocl/bench.py: an LSTM inference step and a 1×1 GEMM convolution (Immediate with the GEMM solution, its
result checked once against numpy), through the typed API; and one LSTM step through the runtime op
(`RNN.forward_inference`) against the two typed calls it makes (benchmarks/ocl_dispatch.py's row on PoCL)."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

import numpy as np

import miopen
from ..ocl.bench import _time
from ..ocl.common import cl, device, queue
from .checks_rnn import Case, Setup, zeros

Side = Callable[[], object]


def _lstm(h: miopen.Handle) -> tuple[str, dict[str, Side | None], int]:
    case = Case("miopenLSTM", bidirectional=False, layers=1, skip=False, bias=True)
    s = Setup(case, 5)
    s.h = h
    y, hy, cy = zeros(3 * 2 * 3), zeros(2 * 3), zeros(2 * 3)
    ws = zeros(max(s.ws_bytes // 4, 1))
    _KEEP.append((s, y, hy, cy, ws))
    assert s.cx is not None
    cxp = s.cx.ptr
    return ("rnn_forward_inference LSTM (seq 3, batch 2, input 4, hidden 3)", {
        "typed": lambda: miopen.rnn_forward_inference(h, s.rd, s.xd, s.x.ptr, s.hd, s.hx.ptr, s.hd, cxp, s.wd,
                                                      s.w.ptr, s.yd, y.ptr, s.hd, hy.ptr, s.hd, cy.ptr, ws.ptr,
                                                      s.ws_bytes)}, 4 * (s.nw + 3 * 2 * 4 + 3 * 2 * 3))


def _lstm_step(q: Any) -> tuple[str, dict[str, Side | None], int]:
    """One LSTM step (sequence 1, batch 4, input 8, hidden 16) on pyopencl Arrays: the runtime op and the typed calls
    it makes (the workspace size, the forward pass) on the op's own handle and scratch."""
    import pyopencl.array as cla

    from miopen.descriptors import tensor_descriptor
    from miopen.handles import inline_miopen_handle
    from miopen.ops.rnn import RNN
    from miopen.workspace import scratch

    B, I, H = 4, 8, 16
    r = np.random.default_rng(7)
    h = inline_miopen_handle(q)
    rnn = RNN(I, H, 1, mode="lstm", stream=q)
    nw = rnn.params_size(stream=q) // 4

    def arr(*shape: int) -> Any:
        return cla.to_device(q, r.uniform(-0.5, 0.5, shape).astype(np.float32))

    x, hx, cx, w, y, hy, cy = arr(1, B, I), arr(1, B, H), arr(1, B, H), arr(nw), arr(1, B, H), arr(1, B, H), arr(1, B, H)
    op: Side = lambda: rnn.forward_inference(x, hx, cx, w, y, hy, cy, stream=q)  # noqa: E731
    op()
    xd, yd = rnn.x_descriptors((B,)), rnn.y_descriptors((B,))
    hd, wd = tensor_descriptor(rnn.dtype, rnn.hidden_dims(B)), tensor_descriptor(rnn.dtype, (nw,))
    p = [a.base_data.int_ptr for a in (x, hx, cx, w, y, hy, cy)]
    wsp = scratch(0, q).get(miopen.get_rnn_workspace_size(h, rnn.desc, xd), q.int_ptr)  # the op's scratch
    _KEEP.append((rnn, x, hx, cx, w, y, hy, cy))

    def typed() -> None:
        nbytes = miopen.get_rnn_workspace_size(h, rnn.desc, xd)
        miopen.rnn_forward_inference(h, rnn.desc, xd, p[0], hd, p[1], hd, p[2], wd, p[3], yd, p[4], hd, p[5], hd, p[6],
                                     wsp, nbytes)

    return (f"RNN.forward_inference, one LSTM step (1, {B}, {I}) -> {H} (2 MIOpen calls)", {"typed": typed, "op": op},
            4 * (nw + B * I + 6 * B * H))


def _gemm_conv(q: Any, h: miopen.Handle, large: bool) -> tuple[str, dict[str, Side | None], int]:
    """A 1×1 forward convolution by Immediate with GemmFwd1x1_0_1 (solution 88) named directly: no Find first
    (NVIDIA's OpenCL did not answer a Find in NORMAL mode)."""
    import pyopencl.array as cla

    xs, ws_ = ((32, 64, 56, 56), (64, 64, 1, 1)) if large else ((2, 8, 6, 5), (6, 8, 1, 1))
    ys = (xs[0], ws_[0], xs[2], xs[3])
    r = np.random.default_rng(6)
    x, w = (cla.to_device(q, r.standard_normal(s).astype(np.float32)) for s in (xs, ws_))
    y = cla.zeros(q, ys, np.float32)
    d = {}
    for name, shape in (("x", xs), ("w", ws_), ("y", ys)):
        d[name] = miopen.create_tensor_descriptor()
        miopen.set_tensor_descriptor(d[name], miopen.DataType.miopenFloat, list(shape), None)
    cd = miopen.create_convolution_descriptor()
    miopen.init_convolution_descriptor(cd, miopen.ConvolutionMode.miopenConvolution, 0, 0, 1, 1, 1, 1)
    sid = GEMM_1X1
    wsz = miopen.convolution_forward_get_solution_workspace_size(h, d["w"], d["x"], cd, d["y"], sid)
    wsb = cla.zeros(q, max(wsz, 1), np.uint8)
    _KEEP.append((x, w, y, d, cd, wsb))
    xp, wp, yp = x.data.int_ptr, w.data.int_ptr, y.data.int_ptr
    call: Side = lambda: miopen.convolution_forward_immediate(  # noqa: E731
        h, d["w"], wp, d["x"], xp, cd, d["y"], yp, wsb.data.int_ptr if wsz else None, wsz, sid)
    call()
    q.finish()
    want = np.einsum("nchw,kc->nkhw", x.get(q).astype(np.float64), w.get(q)[:, :, 0, 0].astype(np.float64))
    err = float(np.abs(y.get(q) - want).max())
    assert err <= 1e-4 * max(1.0, float(np.abs(want).max())), f"GEMM 1x1 convolution: max abs error {err}"
    return (f"convolution_forward_immediate 1x1 GEMM (solution {sid}) {xs}x{ws_}", {"typed": call},
            4 * (int(np.prod(xs)) + int(np.prod(ws_)) + int(np.prod(ys))))


#: GemmFwd1x1_0_1, the 1×1 stride-1 GEMM solution of 2.17.0
GEMM_1X1 = 88
_KEEP: list[object] = []


def speed(rounds: int = 6, small_number: int = 200, large_number: int = 5, large: bool = True) -> dict[str, object]:
    """The LSTM step and the GEMM convolution (small, and large unless `large` is off): medians per side."""
    pcl = cl()
    dev = device()
    # a profiling queue on the checks' context: the RNN set-up's buffers live there
    q = pcl.CommandQueue(queue().context, properties=pcl.command_queue_properties.PROFILING_ENABLE)
    h = miopen.create_with_stream(q.int_ptr)
    cases = [(False, small_number, _lstm(h)), (False, small_number, _lstm_step(q)),
             (False, small_number, _gemm_conv(q, h, False))]
    if large:
        cases.append((True, large_number, _gemm_conv(q, h, True)))
    rows = []
    for big, number, (name, sides, nbytes) in cases:
        live = {k: v for k, v in sides.items() if v is not None}
        for call in live.values():
            call()
        q.finish()
        got: dict[str, list[tuple[float, ...]]] = {k: [] for k in live}
        for k in range(rounds):
            for side, call in list(live.items())[::1 if k % 2 == 0 else -1]:  # the order of the sides alternates
                got[side].append(_time(q, call, number))
        med = {side: tuple(statistics.median(v[i] for v in vals) for i in range(4)) for side, vals in got.items()}
        rows.append({"case": name, "large": big, "bytes": nbytes, "number": number, "rounds": rounds,
                     **{side: med.get(side) for side in ("raw", "typed", "op")}})
    return {"device": f"{dev.platform.name.strip()}: {dev.name.strip()}", "driver": dev.driver_version, "rows": rows}
