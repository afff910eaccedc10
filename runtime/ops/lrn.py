"""Local response normalization on 4-D (N, C, H, W) tensors.

y = x / (k + alpha / n * sum(x_j^2 over the window)) ^ beta, the window being n channels
("cross_channel", as in AlexNet) or n x n pixels of one channel ("within_channel").

`lrn_forward` returns an `LRNState`: the LRN descriptor and, with ``do_backward=True``, the
workspace MIOpen fills with the normalisation scale (a persistent buffer sized by
`miopenLRNGetWorkSpaceSize`; never shared scratch). `lrn_backward` needs that state; pass
``state=`` to the next forward of the same shape to reuse its buffer.
"""

from __future__ import annotations

from typing import TypeAlias

from .._args import enum_arg
from .._bound import EnumMap
from .._generated import api
from .._generated._handles import LRNDescriptor
from ..descriptors import lrn_descriptor
from .. import quirks
from ..errors import ShapeError
from ..layout import is_packed
from ..tensor import Tensor, same_dims, same_dtype
from ..workspace import PersistentBuffer
from ._common import (OpState, _bool_arg, _check_rank, _desc, _device, _float_arg, _persistent, _scaling, _tensors,
                      resolve_handle)
from .activation import activation_forward
from .tensor_ops import op_tensor

__all__ = ["LRNModeLike", "LRNState", "lrn_mode", "lrn_forward", "lrn_backward"]

LRNModeLike: TypeAlias = "api.LRNMode | int | str"

_MODES: EnumMap[api.LRNMode] = EnumMap("LRNMode", {
    "cross_channel": "miopenLRNCrossChannel", "crosschannel": "miopenLRNCrossChannel",
    "within_channel": "miopenLRNWithinChannel", "withinchannel": "miopenLRNWithinChannel"})


def lrn_mode(mode: LRNModeLike, fn: str = "lrn") -> api.LRNMode:
    """A `miopenLRNMode_t` from a member, its value, or "cross_channel" / "within_channel"."""
    return enum_arg(mode, api.LRNMode, "mode", fn, _MODES)


class LRNState(OpState[LRNDescriptor]):
    """What `lrn_backward` needs from `lrn_forward`: the descriptor, the shape and the workspace
    (None when the forward ran with ``do_backward=False``)."""

    def __init__(self, desc: api.LRNDescriptor, params: tuple[api.LRNMode, int, float, float, float],
                 dims: tuple[int, ...], dtype: api.DataType, device: int) -> None:
        self.desc = desc
        self.params = params
        self.dims = dims
        self.dtype = dtype
        self.device = device
        self.workspace: PersistentBuffer | None = None
        self.do_backward = False
        self._closed = False

    def __repr__(self) -> str:
        ws = "closed" if self._closed else (f"workspace {self.workspace.nbytes} bytes" if self.workspace else
                                            "no workspace")
        return f"<LRNState {self.params[0].name} n={self.params[1]} dims={self.dims} {self.dtype.name} {ws}>"


def lrn_forward(x: object, y: object, mode: LRNModeLike = "cross_channel", n: int = 5, alpha: float = 1e-4,
                beta: float = 0.75, k: float = 1.0, *, do_backward: bool = True, state: LRNState | None = None,
                scale: float = 1.0, shift: float = 0.0, handle: api.Handle | None = None, stream: object = None,
                device: int | None = None) -> LRNState:
    """y = scale * lrn(x) + shift * y (`miopenLRNForward`); returns the state `lrn_backward` needs."""
    fn = "lrn_forward"
    t = _tensors(fn, x=x, y=y)
    for name, tensor in t.items():
        _check_rank(fn, name, tensor, (4,), "4-D (N, C, H, W)")
    dims = same_dims(fn, **t)
    dtype = same_dtype(fn, **t)
    m = lrn_mode(mode, fn)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"{fn}: n (the window size) must be a positive int; got {n!r}")
    params = (m, n, _float_arg(alpha, "alpha", fn), _float_arg(beta, "beta", fn), _float_arg(k, "k", fn))
    backward = _bool_arg(do_backward, "do_backward", fn)
    s_alpha, s_beta = _scaling(dtype, scale, shift, fn)
    dev = _device(device)
    if state is not None:
        if not isinstance(state, LRNState):
            raise TypeError(f"{fn}: state must be an LRNState from lrn_forward; got {type(state).__name__}")
        if state.closed:
            raise ValueError(f"{fn}: state is closed")
        ours = (params, dims, dtype, dev)
        theirs = (state.params, state.dims, state.dtype, state.device)
        if ours != theirs:
            raise ShapeError(f"{fn}: state comes from another LRN ((mode, n, alpha, beta, k), dims, dtype, device) = "
                             f"{theirs}; this call is {ours}")
    h = resolve_handle(handle, stream, device)
    xt, yt = t["x"], t["y"]
    x_desc, y_desc = _desc(xt), _desc(yt)
    # MIOpen's cross-channel kernel returns |x|·s^-beta for negative x where the probe finds that bug: compute
    # y = x · s^-beta from the scale s it stores in its workspace instead (runtime/quirks.py)
    fix = m == api.LRNMode.miopenLRNCrossChannel and quirks.lrn_sign_bug(h)
    if fix and not (is_packed(xt.dims, xt.strides) and is_packed(yt.dims, yt.strides)):
        raise ShapeError(f"{fn}: the loaded MIOpen's cross-channel LRN gives wrong signs for negative x; the runtime "
                         f"corrects it for packed x and y only; got x strides {xt.strides}, y strides {yt.strides}")
    fresh = state is None
    desc = lrn_descriptor(*params) if state is None else state.desc
    new_ws: PersistentBuffer | None = None
    ws: PersistentBuffer | None = None
    try:
        if backward or fix:
            nbytes = api.lrn_get_work_space_size(y_desc)
            ws = None if state is None else state.workspace
            if ws is None or ws.nbytes < nbytes:
                ws = new_ws = _persistent(nbytes, dev, "LRN workspace", stream)
        if fix:
            assert ws is not None and ws.ptr is not None
            with PersistentBuffer(yt.nbytes, dev, "LRN scale power", ws.allocator, stream=ws._stream) as tmp:
                api.lrn_forward(h, desc, 1.0, x_desc, xt.ptr, 0.0, y_desc, tmp.data_ptr(), True, ws.ptr)
                scale_t = Tensor.make(ws.ptr, yt.dims, dtype)
                pow_t = Tensor.make(tmp.data_ptr(), yt.dims, dtype)
                activation_forward(scale_t, pow_t, "power", 0.0, 1.0, -params[3], handle=h)  # s^-beta
                op_tensor("mul", xt, pow_t, yt, s_alpha, 1.0, s_beta, handle=h)
        else:
            api.lrn_forward(h, desc, s_alpha, x_desc, xt.ptr, s_beta, y_desc, yt.ptr, backward,
                            None if ws is None else ws.ptr)
    except BaseException:
        if new_ws is not None:
            new_ws.close()
        if fresh:
            desc.close()
        raise
    if state is None:
        state = LRNState(desc, params, dims, dtype, dev)
    if new_ws is not None and state.workspace is not None:
        state.workspace.close()
    if ws is not None:
        state.workspace = ws
    state.do_backward = backward
    return state


def lrn_backward(y: object, dy: object, x: object, dx: object, state: LRNState | None, *, scale: float = 1.0,
                 shift: float = 0.0, handle: api.Handle | None = None, stream: object = None,
                 device: int | None = None) -> None:
    """dx = scale * dlrn(dy) + shift * dx (`miopenLRNBackward`), with the state of the forward that made y."""
    fn = "lrn_backward"
    if state is None:
        raise ValueError(f"{fn}: state is required: pass the LRNState that lrn_forward(..., do_backward=True) "
                         f"returned")
    if not isinstance(state, LRNState):
        raise TypeError(f"{fn}: state must be the LRNState from lrn_forward; got {type(state).__name__}")
    if state.closed:
        raise ValueError(f"{fn}: state is closed (its workspace was freed)")
    t = _tensors(fn, y=y, dy=dy, x=x, dx=dx)
    for name, tensor in t.items():
        if tensor.dims != state.dims:
            raise ShapeError(f"{fn}: {name} must have the forward's dims {state.dims} (state comes from another "
                             f"shape?); got {tensor.dims}")
    dtype = same_dtype(fn, **t)
    if dtype != state.dtype:
        raise ShapeError(f"{fn}: tensors are {dtype.name} but the forward ran on {state.dtype.name}")
    if not state.do_backward or state.workspace is None:
        raise ValueError(f"{fn}: LRN backward needs the forward's workspace, but the forward ran with "
                         f"do_backward=False; run lrn_forward(..., do_backward=True)")
    dev = _device(device)
    if dev != state.device:
        raise ValueError(f"{fn}: state belongs to device {state.device}, this call runs on device {dev}")
    s_alpha, s_beta = _scaling(dtype, scale, shift, fn)
    h = resolve_handle(handle, stream, device)
    yt, dyt, xt, dxt = t["y"], t["dy"], t["x"], t["dx"]
    api.lrn_backward(h, state.desc, s_alpha, _desc(yt), yt.ptr, _desc(dyt), dyt.ptr, _desc(xt), xt.ptr, s_beta,
                     _desc(dxt), dxt.ptr, state.workspace.ptr)
