"""N-d pooling (2-D on (N, C, H, W), 3-D on (N, C, D, H, W)): max, average, average-inclusive.

`pooling_forward` returns a `PoolingState`: the pooling descriptor and, for max pooling run
with ``do_backward=True``, the index workspace MIOpen fills with the positions of the maxima
(a persistent buffer sized by `miopenPoolingGetWorkSpaceSizeV2`; never shared scratch).
`pooling_backward` needs that state. Pass ``state=`` to the next forward of the same shape to
reuse its buffer instead of allocating a new one (stream order keeps this safe as long as the
previous backward was queued first). A state made without ``state=`` holds the shared pooling descriptor
of its (mode, window, pads, strides), cached like the activation descriptors: do not modify it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeAlias

from .._args import enum_arg
from .._bound import EnumMap
from .._generated import api
from .._generated._handles import PoolingDescriptor
from .. import backend as _backend
from ..descriptors import _generation, cache_generation, cached_pooling_descriptor, on_clear
from ..errors import ShapeError
from ..handles import inline_miopen_handle
from ..quirks import check_packed
from ..tensor import Tensor, layout_of, same_dtype
from ..workspace import PersistentBuffer
from ._common import (OpState, PLAIN_NUMBERS, ShapeMemo, _as, _bool_arg, _desc, _device, _int_tuple, _persistent,
                      _scaling, _tensors, plain_geometry, resolve_handle)

__all__ = ["PoolingModeLike", "PoolingState", "pooling_mode", "pooling_forward", "pooling_backward"]

PoolingModeLike: TypeAlias = "api.PoolingMode | int | str"

_MODES: EnumMap[api.PoolingMode] = EnumMap("PoolingMode", {
    "max": "miopenPoolingMax", "average": "miopenPoolingAverage", "avg": "miopenPoolingAverage",
    "average_inclusive": "miopenPoolingAverageInclusive", "avg_inclusive": "miopenPoolingAverageInclusive"})


def pooling_mode(mode: PoolingModeLike, fn: str = "pooling") -> api.PoolingMode:
    """A `miopenPoolingMode_t` from a member, its value, or "max" / "average" / "average_inclusive"."""
    return enum_arg(mode, api.PoolingMode, "mode", fn, _MODES)


class PoolingState(OpState[PoolingDescriptor]):
    """What `pooling_backward` needs from `pooling_forward`: the descriptor, the shapes, and the
    max-pooling index workspace (None for average pooling or ``do_backward=False``)."""

    def __init__(self, desc: api.PoolingDescriptor, mode: api.PoolingMode, window: tuple[int, ...],
                 pads: tuple[int, ...], strides: tuple[int, ...], x_dims: tuple[int, ...], y_dims: tuple[int, ...],
                 dtype: api.DataType, device: int) -> None:
        self.desc = desc
        self.mode = mode
        self.window = window
        self.pads = pads
        self.strides = strides
        self.x_dims = x_dims
        self.y_dims = y_dims
        self.dtype = dtype
        self.device = device
        self.workspace: PersistentBuffer | None = None
        self.do_backward = False
        self._closed = False
        # ((x strides, y strides, descriptor-cache generation), x descriptor, y descriptor) of the last forward
        #: the last call's (strides key, x and y descriptors, MIOpen's output dims and index workspace size for
        #: them (None until asked)): what a call on the same layout does not ask MIOpen again
        self._layout: tuple[tuple[object, ...], api.TensorDescriptor, api.TensorDescriptor, tuple[int, ...],
                            int | None] | None = None
        #: pooling_forward's fast path: the last call's (layouts and arguments, device, x and y descriptors,
        #: blending factors, index workspace bytes, descriptor-cache generation), all checked
        self._fast: tuple[tuple[object, ...], int, api.TensorDescriptor, api.TensorDescriptor, float, float,
                          int, object] | None = None

    @property
    def needs_workspace(self) -> bool:
        return self.mode == api.PoolingMode.miopenPoolingMax

    def __repr__(self) -> str:
        ws = "closed" if self._closed else (f"workspace {self.workspace.nbytes} bytes" if self.workspace else
                                            "no workspace")
        return (f"<PoolingState {self.mode.name} window={self.window} x={self.x_dims} y={self.y_dims} "
                f"{self.dtype.name} {ws}>")


_GEOMETRY: dict[tuple[object, ...], tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]] = {}
#: ids of (shared descriptor, x descriptor) -> (those descriptors, held, and MIOpen's output dims for them): what
#: a call without a state does not ask again (forgotten with the cached descriptors)
_OUT_DIMS: dict[tuple[int, int], tuple[object, object, tuple[int, ...]]] = {}
on_clear(_OUT_DIMS.clear)


def _geometry(fn: str, nd: int, window: object, pads: object, strides: object
              ) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """(window, pads, strides) as nd-tuples, checked; remembered for exactly typed ints and tuples of ints."""
    key: tuple[object, ...] | None = None
    if plain_geometry(window) and plain_geometry(pads) and plain_geometry(strides):
        key = (nd, window, pads, strides)
        known = _GEOMETRY.get(key)
        if known is not None:
            return known
    win = _int_tuple(window, "window", fn, nd, 1)
    pad = _int_tuple(pads, "pads", fn, nd, 0)
    stride = win if strides is None else _int_tuple(strides, "strides", fn, nd, 1)
    if key is not None and len(_GEOMETRY) < 256:
        _GEOMETRY[key] = (win, pad, stride)
    return win, pad, stride


def _check_dims(fn: str, t: dict[str, Tensor]) -> None:
    for name, tensor in t.items():
        if tensor.ndim not in (4, 5):
            raise ShapeError(f"{fn}: {name} must be 4-D (N, C, H, W) or 5-D (N, C, D, H, W); got {tensor.ndim}-D "
                             f"dims {tensor.dims}")


def pooling_forward(x: object, y: object, mode: PoolingModeLike, window: int | Sequence[int],
                    pads: int | Sequence[int] = 0, strides: int | Sequence[int] | None = None, *,
                    do_backward: bool = True, state: PoolingState | None = None, scale: float = 1.0,
                    shift: float = 0.0, handle: api.Handle | None = None, stream: object = None,
                    device: int | None = None) -> PoolingState:
    """y = scale * pool(x) + shift * y (`miopenPoolingForward`); returns the state backward needs.

    window, pads and strides have one value per spatial dim (or one int for all); strides default
    to the window. y's dims must be those MIOpen computes (`miopenGetPoolingNdForwardOutputDim`).
    """
    xl, yl = layout_of(x), layout_of(y)
    if (state is None and xl is not None and yl is not None and type(do_backward) is bool
            and type(scale) in PLAIN_NUMBERS and type(shift) in PLAIN_NUMBERS
            and (type(window) is int or plain_geometry(window)) and (type(pads) is int or plain_geometry(pads))
            and (strides is None or type(strides) is int or plain_geometry(strides))):
        # a call without a state on a shape seen before, needing no index workspace: a new state of its checks
        key: tuple[object, ...] | None = (xl[1], yl[1], mode, mode.__class__, window, pads, strides, do_backward,
                                          scale, shift)
        hit = _STATELESS.get(key)
        if hit is not None:
            dev = _backend.current().current_device() if device is None else device
            attrs, desc_, x_desc_, y_desc_, s_alpha_, s_beta_ = hit
            api.pooling_forward(handle if handle is not None else inline_miopen_handle(stream, dev), desc_,
                                s_alpha_, x_desc_, xl[0], s_beta_, y_desc_, yl[0], do_backward, None, 0)
            made = _new_state(PoolingState)
            made.__dict__.update(attrs)
            made.device = dev
            return made
    elif (type(state) is PoolingState and xl is not None and yl is not None and type(do_backward) is bool
            and type(scale) in PLAIN_NUMBERS and type(shift) in PLAIN_NUMBERS and state._fast is not None
            and not state._closed and (type(window) is int or plain_geometry(window))
            and (type(pads) is int or plain_geometry(pads))
            and (strides is None or type(strides) is int or plain_geometry(strides))):
        # the state's last call, again (everything but the device and the addresses compared, checked before)
        key = (xl[1], yl[1], mode, mode.__class__, window, pads, strides, do_backward, scale, shift)
        fast = state._fast
        try:
            same = fast[0] == key
        except Exception:  # noqa: BLE001 - a mode whose == raises: the full path reports it
            same = False
        if same and fast[7] == _generation[0] and fast[2]._ptr is not None and fast[3]._ptr is not None:
            dev = _backend.current().current_device() if device is None else device
            index = state.workspace
            nbytes = fast[6]
            if dev == state.device and (nbytes == 0 or (index is not None and index.nbytes >= nbytes)):
                api.pooling_forward(handle if handle is not None else inline_miopen_handle(stream, dev), state.desc,
                                    fast[4], fast[2], xl[0], fast[5], fast[3], yl[0], do_backward,
                                    None if index is None or not nbytes else index.ptr, nbytes)
                state.do_backward = do_backward
                return state
    else:
        key = None
    fn = "pooling_forward"
    generation = _generation[0]
    xt, yt = _as(fn, "x", x), _as(fn, "y", y)
    check_packed(fn, x=xt, y=yt)
    if len(xt.dims) not in (4, 5) or len(yt.dims) not in (4, 5):
        _check_dims(fn, {"x": xt, "y": yt})
    dtype = xt.dtype if yt.dtype is xt.dtype else same_dtype(fn, x=xt, y=yt)
    rank = len(xt.dims)
    if len(yt.dims) != rank or yt.dims[:2] != xt.dims[:2]:
        raise ShapeError(f"{fn}: y must have x's rank, N and C (pooling keeps them); got x dims {xt.dims}, "
                         f"y dims {yt.dims}")
    m = pooling_mode(mode, fn)
    nd = rank - 2
    win, pad, stride = _geometry(fn, nd, window, pads, strides)
    backward = _bool_arg(do_backward, "do_backward", fn)
    s_alpha, s_beta = _scaling(dtype, scale, shift, fn)
    dev = _device(device)
    if state is not None:
        if not isinstance(state, PoolingState):
            raise TypeError(f"{fn}: state must be a PoolingState from pooling_forward; got {type(state).__name__}")
        if state.closed:
            raise ValueError(f"{fn}: state is closed")
        ours = (m, win, pad, stride, xt.dims, yt.dims, dtype, dev)
        theirs = (state.mode, state.window, state.pads, state.strides, state.x_dims, state.y_dims, state.dtype,
                  state.device)
        if ours != theirs:
            raise ShapeError(f"{fn}: state comes from another pooling (mode, window, pads, strides, x dims, y dims, "
                             f"dtype, device) = {theirs}; this call is {ours}")
    h = resolve_handle(handle, stream, dev)
    # the tensor descriptors of the state's last call, when x and y have its strides again
    layout_key = (xt.strides, yt.strides, cache_generation())
    known = None if state is None else state._layout
    if known is not None and known[0] == layout_key and not known[1].closed and not known[2].closed:
        x_desc, y_desc, out, ws_bytes = known[1], known[2], known[3], known[4]
    else:
        x_desc, y_desc, out, ws_bytes = _desc(xt), _desc(yt), None, None
    desc = cached_pooling_descriptor(m, win, pad, stride) if state is None else state.desc
    new_ws: PersistentBuffer | None = None
    ws: PersistentBuffer | None = None
    try:
        if out is None and state is None:
            seen = _OUT_DIMS.get((id(desc), id(x_desc)))
            if seen is not None and seen[0] is desc and seen[1] is x_desc:
                out = seen[2]
        if out is None:
            out = tuple(api.get_pooling_nd_forward_output_dim(desc, x_desc, rank))
            if state is None:
                if len(_OUT_DIMS) >= 256:
                    _OUT_DIMS.clear()
                _OUT_DIMS[(id(desc), id(x_desc))] = (desc, x_desc, out)
        if out != yt.dims:
            raise ShapeError(f"{fn}: y must have dims {out} for x dims {xt.dims}, window {win}, pads {pad}, strides "
                             f"{stride}; got {yt.dims}")
        nbytes = 0
        if backward and m == api.PoolingMode.miopenPoolingMax:
            nbytes = ws_bytes = api.pooling_get_work_space_size_v2(desc, y_desc) if ws_bytes is None else ws_bytes
            ws = None if state is None else state.workspace
            if ws is None or ws.nbytes < nbytes:
                ws = new_ws = _persistent(nbytes, dev, "pooling index workspace", stream)
        api.pooling_forward(h, desc, s_alpha, x_desc, xt.ptr, s_beta, y_desc, yt.ptr, backward,
                            None if ws is None else ws.ptr, nbytes)
    except BaseException:
        if new_ws is not None:
            new_ws.close()
        raise
    stateless = state is None
    if state is None:
        state = PoolingState(desc, m, win, pad, stride, xt.dims, yt.dims, dtype, dev)
        state._owns_desc = False
    if new_ws is not None and state.workspace is not None:
        state.workspace.close()  # outgrown: the forward above ran with the new one
    if ws is not None:
        state.workspace = ws
    state.do_backward = backward
    state._layout = (layout_key, x_desc, y_desc, out, ws_bytes)
    if (xl is not None and yl is not None and type(scale) in PLAIN_NUMBERS and type(shift) in PLAIN_NUMBERS
            and plain_geometry(window) and plain_geometry(pads) and plain_geometry(strides)):
        try:
            state._fast = ((xl[1], yl[1], mode, mode.__class__, window, pads, strides, backward, scale, shift), dev,
                           x_desc, y_desc, s_alpha, s_beta, nbytes, layout_key[2])
            hash(state._fast[0])  # an unhashable mode: never compared on the fast path
        except TypeError:
            state._fast = None
    if stateless and key is not None and nbytes == 0:
        _STATELESS.put(key, generation, (desc, x_desc, y_desc),
                       (dict(vars(state)), desc, x_desc, y_desc, s_alpha, s_beta))
    return state


#: pooling_forward's fast path without a state (and without an index workspace): (x and y layouts, mode and its
#: type, window, pads, strides, do_backward, scale, shift) -> (the attributes of the state it made, whose device
#: each call sets; the pooling, x and y descriptors, blending factors)
_STATELESS: ShapeMemo[tuple[dict[str, object], PoolingDescriptor, api.TensorDescriptor, api.TensorDescriptor, float,
                            float]] = ShapeMemo()
_new_state = object.__new__


def pooling_backward(y: object, dy: object, x: object, dx: object, state: PoolingState | None, *,
                     scale: float = 1.0, shift: float = 0.0, handle: api.Handle | None = None,
                     stream: object = None, device: int | None = None) -> None:
    """dx = scale * dpool(dy) + shift * dx (`miopenPoolingBackward`) with the state of the forward that
    produced y (max pooling: run with ``do_backward=True``, for its index workspace)."""
    yl, dyl, xl, dxl = layout_of(y), layout_of(dy), layout_of(x), layout_of(dx)
    if (type(state) is PoolingState and not state._closed and yl is not None and dyl is not None and xl is not None
            and dxl is not None and type(scale) in PLAIN_NUMBERS and type(shift) in PLAIN_NUMBERS):
        key = (yl[1], dyl[1], xl[1], dxl[1], state.y_dims, state.x_dims, state.dtype, scale, shift)
        known = _BACKWARD.get(key)
        index = state.workspace
        if known is not None and (not state.needs_workspace or (state.do_backward and index is not None)):
            dev = _backend.current().current_device() if device is None else device
            if dev == state.device:
                s_alpha_, s_beta_, yd_, dyd_, xd_, dxd_ = known
                api.pooling_backward(handle if handle is not None else inline_miopen_handle(stream, dev), state.desc,
                                     s_alpha_, yd_, yl[0], dyd_, dyl[0], xd_, xl[0], s_beta_, dxd_, dxl[0],
                                     index.ptr if state.needs_workspace and index is not None else None)
                return
    else:
        key = None
    fn = "pooling_backward"
    generation = _generation[0]
    if state is None:
        raise ValueError(f"{fn}: state is required: pass the PoolingState that pooling_forward(..., "
                         f"do_backward=True) returned")
    if not isinstance(state, PoolingState):
        raise TypeError(f"{fn}: state must be the PoolingState from pooling_forward; got {type(state).__name__}")
    if state.closed:
        raise ValueError(f"{fn}: state is closed (its index workspace was freed)")
    t = _tensors(fn, y=y, dy=dy, x=x, dx=dx)
    _check_dims(fn, t)
    for name in ("y", "dy"):
        if t[name].dims != state.y_dims:
            raise ShapeError(f"{fn}: {name} must have the forward output's dims {state.y_dims} (state comes from "
                             f"another shape?); got {t[name].dims}")
    for name in ("x", "dx"):
        if t[name].dims != state.x_dims:
            raise ShapeError(f"{fn}: {name} must have the forward input's dims {state.x_dims} (state comes from "
                             f"another shape?); got {t[name].dims}")
    dtype = same_dtype(fn, **t)
    if dtype != state.dtype:
        raise ShapeError(f"{fn}: tensors are {dtype.name} but the forward ran on {state.dtype.name}")
    if state.needs_workspace and (not state.do_backward or state.workspace is None):
        raise ValueError(f"{fn}: max pooling backward needs the index workspace, but the forward ran with "
                         f"do_backward=False; run pooling_forward(..., do_backward=True)")
    dev = _device(device)
    if dev != state.device:
        raise ValueError(f"{fn}: state belongs to device {state.device}, this call runs on device {dev}")
    s_alpha, s_beta = _scaling(dtype, scale, shift, fn)
    h = resolve_handle(handle, stream, dev)
    yt, dyt, xt, dxt = t["y"], t["dy"], t["x"], t["dx"]
    ws = state.workspace.ptr if state.needs_workspace and state.workspace is not None else None
    yd, dyd, xd, dxd = _desc(yt), _desc(dyt), _desc(xt), _desc(dxt)
    if key is not None:
        _BACKWARD.put(key, generation, (yd, dyd, xd, dxd), (s_alpha, s_beta, yd, dyd, xd, dxd))
    api.pooling_backward(h, state.desc, s_alpha, yd, yt.ptr, dyd, dyt.ptr, xd, xt.ptr, s_beta, dxd, dxt.ptr, ws)


#: pooling_backward's fast path: (the layouts of y, dy, x, dx, the state's y and x dims and dtype, scale, shift) ->
#: (blending factors, the four descriptors); the state's own checks (device, index workspace) run on every call
_BACKWARD: ShapeMemo[tuple[float, float, api.TensorDescriptor, api.TensorDescriptor, api.TensorDescriptor,
                           api.TensorDescriptor]] = ShapeMemo()
