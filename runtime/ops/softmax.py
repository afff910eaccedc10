"""Softmax and log-softmax (`miopenSoftmaxForward_V2` / `miopenSoftmaxBackward_V2`).

`mode` "channel" (MIOpen's default) normalises over C for every (n, spatial) position;
"instance" normalises over C*H*W for every n. `algorithm` is "accurate" (subtracts the max),
"fast" (does not), or "log" (log-softmax; `log_softmax_forward`/`log_softmax_backward` set it).

MIOpen's softmax takes 4-D (N, C, H, W) tensors: 2-D (N, C) and 3-D (N, C, L) tensors are
described as (N, C, 1, 1) and (N, C, L, 1). Softmax needs no workspace.
"""

from __future__ import annotations

from typing import TypeAlias

from .._args import enum_arg
from .._bound import EnumMap
from .._generated import api
from ..descriptors import _generation
from ..errors import ShapeError
from ..handles import inline_miopen_handle
from ..quirks import check_packed
from ..tensor import Tensor, layout_of
from ._common import PLAIN_NUMBERS, ShapeMemo, _alike, _as, _desc, _scaling, _tensors, resolve_handle

__all__ = ["SoftmaxAlgorithmLike", "SoftmaxModeLike", "softmax_forward", "softmax_backward", "log_softmax_forward",
           "log_softmax_backward", "softmax_algorithm", "softmax_mode"]

SoftmaxAlgorithmLike: TypeAlias = "api.SoftmaxAlgorithm | int | str"
SoftmaxModeLike: TypeAlias = "api.SoftmaxMode | int | str"

_ALGORITHMS: EnumMap[api.SoftmaxAlgorithm] = EnumMap("SoftmaxAlgorithm", prefix="MIOPEN_SOFTMAX_")
_MODES: EnumMap[api.SoftmaxMode] = EnumMap("SoftmaxMode", prefix="MIOPEN_SOFTMAX_MODE_")


def softmax_algorithm(algorithm: SoftmaxAlgorithmLike, fn: str = "softmax") -> api.SoftmaxAlgorithm:
    return enum_arg(algorithm, api.SoftmaxAlgorithm, "algorithm", fn, _ALGORITHMS)


def softmax_mode(mode: SoftmaxModeLike, fn: str = "softmax") -> api.SoftmaxMode:
    return enum_arg(mode, api.SoftmaxMode, "mode", fn, _MODES)


def _as_4d(fn: str, name: str, t: Tensor) -> tuple[tuple[int, ...], tuple[int, ...]]:
    if len(t.dims) == 4:
        return t.dims, t.strides
    if t.ndim < 2 or t.ndim > 4:
        raise ShapeError(f"{fn}: {name} must be 2-D (N, C), 3-D (N, C, L) or 4-D (N, C, H, W); got {t.ndim}-D dims "
                         f"{t.dims}")
    pad = 4 - t.ndim
    return t.dims + (1,) * pad, t.strides + (1,) * pad


def softmax_forward(x: object, y: object, *, algorithm: SoftmaxAlgorithmLike = "accurate",
                    mode: SoftmaxModeLike = "channel", scale: float = 1.0, shift: float = 0.0,
                    handle: api.Handle | None = None, stream: object = None, device: int | None = None) -> None:
    """y = scale * softmax(x) + shift * y; x and y share dims (2-D to 4-D) and dtype."""
    _forward("softmax_forward", x, y, algorithm, mode, scale, shift, handle, stream, device)


def log_softmax_forward(x: object, y: object, *, mode: SoftmaxModeLike = "channel", scale: float = 1.0,
                        shift: float = 0.0, handle: api.Handle | None = None, stream: object = None,
                        device: int | None = None) -> None:
    """y = scale * log_softmax(x) + shift * y (algorithm LOG)."""
    _forward("log_softmax_forward", x, y, api.SoftmaxAlgorithm.MIOPEN_SOFTMAX_LOG, mode, scale, shift, handle,
             stream, device)


def softmax_backward(y: object, dy: object, dx: object, *, algorithm: SoftmaxAlgorithmLike = "accurate",
                     mode: SoftmaxModeLike = "channel", scale: float = 1.0, shift: float = 0.0,
                     handle: api.Handle | None = None, stream: object = None, device: int | None = None) -> None:
    """dx = scale * dsoftmax(y, dy) + shift * dx; y is the forward output. Use the forward's algorithm and mode."""
    _backward("softmax_backward", y, dy, dx, algorithm, mode, scale, shift, handle, stream, device)


def log_softmax_backward(y: object, dy: object, dx: object, *, mode: SoftmaxModeLike = "channel",
                         scale: float = 1.0, shift: float = 0.0, handle: api.Handle | None = None,
                         stream: object = None, device: int | None = None) -> None:
    """The gradient of `log_softmax_forward`; y is its output."""
    _backward("log_softmax_backward", y, dy, dx, api.SoftmaxAlgorithm.MIOPEN_SOFTMAX_LOG, mode, scale, shift,
              handle, stream, device)


#: the forwards' fast path: (fn, x and y layouts, algorithm, mode and their types, scale, shift) -> (x and y
#: descriptors, algorithm, mode, blending factors)
_FORWARD: ShapeMemo[tuple[api.TensorDescriptor, api.TensorDescriptor, api.SoftmaxAlgorithm, api.SoftmaxMode, float,
                          float]] = ShapeMemo()


def _forward(fn: str, x: object, y: object, algorithm: SoftmaxAlgorithmLike, mode: SoftmaxModeLike,
             scale: float, shift: float, handle: api.Handle | None, stream: object, device: int | None) -> None:
    xl, yl = layout_of(x), layout_of(y)
    key: tuple[object, ...] | None = None
    if xl is not None and yl is not None and type(scale) in PLAIN_NUMBERS and type(shift) in PLAIN_NUMBERS:
        key = (fn, xl[1], yl[1], algorithm, algorithm.__class__, mode, mode.__class__, scale, shift)
        known = _FORWARD.get(key)
        if known is not None:
            xd_, yd_, algo_, m_, s_alpha_, s_beta_ = known
            api.softmax_forward_v2(handle if handle is not None else inline_miopen_handle(stream, device), s_alpha_,
                                   xd_, xl[0], s_beta_, yd_, yl[0], algo_, m_)
            return
    generation = _generation[0]
    xt, yt = _as(fn, "x", x), _as(fn, "y", y)
    dtype = _alike(fn, x=xt, y=yt)
    check_packed(fn, x=xt, y=yt)
    xd = _as_4d(fn, "x", xt)
    yd = xd if yt.strides == xt.strides else _as_4d(fn, "y", yt)
    algo = softmax_algorithm(algorithm, fn)
    m = softmax_mode(mode, fn)
    s_alpha, s_beta = _scaling(dtype, scale, shift, fn, blend=True)
    h = resolve_handle(handle, stream, device)
    x_desc = _desc(xt, *xd)
    y_desc = x_desc if yd is xd else _desc(yt, *yd)
    if key is not None:
        _FORWARD.put(key, generation, (x_desc, y_desc), (x_desc, y_desc, algo, m, s_alpha, s_beta))
    api.softmax_forward_v2(h, s_alpha, x_desc, xt.ptr, s_beta, y_desc, yt.ptr, algo, m)


def _backward(fn: str, y: object, dy: object, dx: object, algorithm: SoftmaxAlgorithmLike, mode: SoftmaxModeLike,
              scale: float, shift: float, handle: api.Handle | None, stream: object, device: int | None) -> None:
    yl, dyl, dxl = layout_of(y), layout_of(dy), layout_of(dx)
    key: tuple[object, ...] | None = None
    if (yl is not None and dyl is not None and dxl is not None and type(scale) in PLAIN_NUMBERS
            and type(shift) in PLAIN_NUMBERS):
        key = (fn, yl[1], dyl[1], dxl[1], algorithm, algorithm.__class__, mode, mode.__class__, scale, shift)
        known = _BACKWARD.get(key)
        if known is not None:
            yd_, dyd_, dxd_, algo_, m_, s_alpha_, s_beta_ = known
            api.softmax_backward_v2(handle if handle is not None else inline_miopen_handle(stream, device), s_alpha_,
                                    yd_, yl[0], dyd_, dyl[0], s_beta_, dxd_, dxl[0], algo_, m_)
            return
    generation = _generation[0]
    t = _tensors(fn, y=y, dy=dy, dx=dx)
    dtype = _alike(fn, **t)
    yt, dyt, dxt = t["y"], t["dy"], t["dx"]
    yv, dyv, dxv = _as_4d(fn, "y", yt), _as_4d(fn, "dy", dyt), _as_4d(fn, "dx", dxt)
    algo = softmax_algorithm(algorithm, fn)
    m = softmax_mode(mode, fn)
    s_alpha, s_beta = _scaling(dtype, scale, shift, fn, blend=True)
    h = resolve_handle(handle, stream, device)
    yd, dyd, dxd = _desc(yt, *yv), _desc(dyt, *dyv), _desc(dxt, *dxv)
    if key is not None:
        _BACKWARD.put(key, generation, (yd, dyd, dxd), (yd, dyd, dxd, algo, m, s_alpha, s_beta))
    api.softmax_backward_v2(h, s_alpha, yd, yt.ptr, dyd, dyt.ptr, s_beta, dxd, dxt.ptr, algo, m)


#: the backwards' fast path: (fn, the layouts of y, dy, dx, algorithm, mode and their types, scale, shift) -> (the
#: three descriptors, algorithm, mode, blending factors)
_BACKWARD: ShapeMemo[tuple[api.TensorDescriptor, api.TensorDescriptor, api.TensorDescriptor, api.SoftmaxAlgorithm,
                           api.SoftmaxMode, float, float]] = ShapeMemo()
