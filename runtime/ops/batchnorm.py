"""Batch normalization: training forward, inference forward and backward (MIOpen's classic,
non-_V2 functions, which take one descriptor for weight, bias, mean and variance).

`mode` is "spatial" (statistics per channel: parameters of shape (1, C, 1, 1), or (1, C, 1, 1, 1)
for 5-D input) or "per_activation" (statistics per (c, h, w): parameters of shape (1, C, H, W)).
x may be 2-D (N, C), 3-D (N, C, L), 4-D or 5-D; 2-D and 3-D inputs are described as
(N, C, 1, 1) and (N, C, L, 1), as PyTorch does.

Parameter tensors (weight, bias, running/saved mean and variance, and their gradients) must be
contiguous and hold exactly the parameter shape: dims equal to it, or the same dims with size-1
axes dropped or added ((C,) for spatial, (C, H, W) for per-activation). They share one dtype:
x's dtype, or float32 when x is float16/bfloat16 (MIOpen's mixed precision).

`weight` is MIOpen's bnScale and `bias` its bnBias; `scale`/`shift` are the blending factors
(MIOpen's alpha/beta): y = scale * bn(x) + shift * y. Batch norm needs no workspace.
"""

from __future__ import annotations

from typing import TypeAlias

from .. import layout
from .._args import enum_arg
from .._bound import EnumMap
from .._generated import api
from ..descriptors import _generation, on_clear, tensor_descriptor_of
from ..errors import ShapeError
from ..handles import inline_miopen_handle
from ..quirks import check_packed
from ..tensor import Layout, LayoutRecord, Tensor, layout_of, record_layouts, same_dtype, same_layouts
from ._common import PLAIN_NUMBERS, ShapeMemo, _alike, _as, _desc, _float_arg, _scaling, _tensors, resolve_handle

__all__ = ["BatchNormModeLike", "batch_norm_mode", "bn_param_shape", "batch_norm_forward_training",
           "batch_norm_forward_inference", "batch_norm_backward"]

BatchNormModeLike: TypeAlias = "api.BatchNormMode | int | str"

_MODES: EnumMap[api.BatchNormMode] = EnumMap("BatchNormMode", {
    "spatial": "miopenBNSpatial", "per_activation": "miopenBNPerActivation", "peractivation": "miopenBNPerActivation"})
_MIXED = ("miopenHalf", "miopenBFloat16")  # data types whose scale/bias/mean/variance are float


def batch_norm_mode(mode: BatchNormModeLike, fn: str = "batch_norm") -> api.BatchNormMode:
    """A `miopenBatchNormMode_t` from a member, its value, or "spatial" / "per_activation"."""
    return enum_arg(mode, api.BatchNormMode, "mode", fn, _MODES)


def _x_view(fn: str, name: str, t: Tensor) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """x's dims and strides as MIOpen takes them (2-D/3-D padded to 4-D)."""
    if len(t.dims) in (4, 5):
        return t.dims, t.strides
    if t.ndim < 2 or t.ndim > 5:
        raise ShapeError(f"{fn}: {name} must be 2-D to 5-D (N, C, ...); got {t.ndim}-D dims {t.dims}")
    pad = max(0, 4 - t.ndim)
    return t.dims + (1,) * pad, t.strides + (1,) * pad


def _param_shape(x_dims: tuple[int, ...], m: api.BatchNormMode) -> tuple[int, ...]:
    """bn_param_shape for a checked mode and x's (padded) dims, remembered."""
    key = (x_dims, m)
    shape = _SHAPES.get(key)
    if shape is None:
        shape = bn_param_shape(x_dims, m)
        if len(_SHAPES) < 256:
            _SHAPES[key] = shape
    return shape


_SHAPES: dict[tuple[tuple[int, ...], api.BatchNormMode], tuple[int, ...]] = {}


def bn_param_shape(x_dims: tuple[int, ...] | list[int], mode: BatchNormModeLike) -> tuple[int, ...]:
    """The dims of the weight/bias/mean/variance tensors for input dims `x_dims` (as
    `miopenDeriveBNTensorDescriptor` derives them): spatial (1, C, 1, 1[, 1]), per-activation (1, C, H, W[, D])."""
    m = batch_norm_mode(mode, "bn_param_shape")
    dims = tuple(x_dims)
    if len(dims) < 2 or len(dims) > 5:
        raise ShapeError(f"bn_param_shape: x must be 2-D to 5-D; got dims {dims}")
    dims = dims + (1,) * max(0, 4 - len(dims))
    if m == api.BatchNormMode.miopenBNSpatial:
        return (1, dims[1]) + (1,) * (len(dims) - 2)
    return (1,) + dims[1:]


def _squeezed(dims: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(d for d in dims if d != 1)


# parameter sets that passed _check_params: (fn, x dtype, shape, mode, (name, dims, strides, dtype)...) -> dtype
_CHECKED: dict[tuple[object, ...], api.DataType] = {}


def _check_params(fn: str, x_dtype: api.DataType, shape: tuple[int, ...], mode: api.BatchNormMode,
                  params: dict[str, Tensor]) -> api.DataType:
    """Check the parameter tensors against the derived shape and each other; return their dtype."""
    key = (fn, x_dtype, shape, mode, *[(n, t.dims, t.strides, t.dtype) for n, t in params.items()])
    known = _CHECKED.get(key)
    if known is not None:
        return known
    dtype = _check_params_once(fn, x_dtype, shape, mode, params)
    if len(_CHECKED) < 256:
        _CHECKED[key] = dtype
    return dtype


def _check_params_once(fn: str, x_dtype: api.DataType, shape: tuple[int, ...], mode: api.BatchNormMode,
                       params: dict[str, Tensor]) -> api.DataType:
    short = "(C,)" if mode == api.BatchNormMode.miopenBNSpatial else f"{shape[1:]}"
    for name, t in params.items():
        if t.dims != shape and _squeezed(t.dims) != _squeezed(shape):
            raise ShapeError(f"{fn}: {name} must have the {_mode_name(mode)} parameter shape {shape} (or {short}) "
                             f"for this x; got dims {t.dims}")
        if not layout.is_packed(t.dims, t.strides):
            raise ShapeError(f"{fn}: {name} must be contiguous (packed); got dims {t.dims} strides {t.strides}")
    dtype = same_dtype(fn, **params)
    allowed = {x_dtype, api.DataType.miopenFloat} if x_dtype.name in _MIXED else {x_dtype}
    if dtype not in allowed:
        names = ", ".join(params)
        raise ShapeError(f"{fn}: {names} must be {' or '.join(sorted(d.name for d in allowed))} for x of dtype "
                         f"{x_dtype.name}; got {dtype.name}")
    return dtype


def _mode_name(mode: api.BatchNormMode) -> str:
    return "spatial" if mode == api.BatchNormMode.miopenBNSpatial else "per-activation"


def _pair(fn: str, a_name: str, a: object, b_name: str, b: object) -> bool:
    """True if both of an optional pair are given, False if neither; raise if only one is."""
    if (a is None) != (b is None):
        given, missing = (a_name, b_name) if b is None else (b_name, a_name)
        raise ValueError(f"{fn}: {given} and {missing} go together: pass both or neither (got {given} only)")
    return a is not None


def _ptr(t: Tensor | None) -> int | None:
    return None if t is None else t.ptr


def batch_norm_forward_training(x: object, y: object, weight: object, bias: object,
                                mode: BatchNormModeLike = "spatial", *, exp_avg_factor: float = 0.1,
                                epsilon: float = 1e-5, running_mean: object = None, running_var: object = None,
                                save_mean: object = None, save_inv_var: object = None, scale: float = 1.0,
                                shift: float = 0.0, handle: api.Handle | None = None, stream: object = None,
                                device: int | None = None) -> None:
    """Normalise x with the batch statistics (`miopenBatchNormalizationForwardTraining`).

    running_mean/running_var (both or neither) are updated in place:
    running = (1 - exp_avg_factor) * running + exp_avg_factor * batch_stat (1/(1+n) after n calls gives a
    cumulative average). save_mean/save_inv_var (both or neither) receive the batch mean and
    1/sqrt(var + epsilon) for `batch_norm_backward`.
    """
    xl, yl, wl, bl = layout_of(x), layout_of(y), layout_of(weight), layout_of(bias)
    opt = [None if t is None else layout_of(t) for t in (running_mean, running_var, save_mean, save_inv_var)]
    key: tuple[object, ...] | None = None
    if (xl is not None and yl is not None and wl is not None and bl is not None
            and _given(opt, running_mean, running_var, save_mean, save_inv_var)
            and type(exp_avg_factor) in PLAIN_NUMBERS and type(epsilon) in PLAIN_NUMBERS
            and type(scale) in PLAIN_NUMBERS and type(shift) in PLAIN_NUMBERS):
        key = (xl[1], yl[1], wl[1], bl[1], *[o and o[1] for o in opt], mode, mode.__class__, exp_avg_factor, epsilon,
               scale, shift)
        known = _TRAINING.get(key)
        if known is not None:
            m_, s_alpha_, s_beta_, x_desc_, y_desc_, p_desc_, factor_, eps_ = known
            rm, rv, sm, sv = [o and o[0] for o in opt]
            api.batch_normalization_forward_training(
                handle if handle is not None else inline_miopen_handle(stream, device), m_, s_alpha_, s_beta_,
                x_desc_, xl[0], y_desc_, yl[0], p_desc_, wl[0], bl[0], factor_, rm, rv, eps_, sm, sv)
            return
    fn = "batch_norm_forward_training"
    generation = _generation[0]
    xt, yt = _as(fn, "x", x), _as(fn, "y", y)
    x_dtype = _alike(fn, x=xt, y=yt)
    xv = _x_view(fn, "x", xt)
    yv = xv if yt.strides == xt.strides else _x_view(fn, "y", yt)
    m = batch_norm_mode(mode, fn)
    has_running = _pair(fn, "running_mean", running_mean, "running_var", running_var)
    has_saved = _pair(fn, "save_mean", save_mean, "save_inv_var", save_inv_var)
    params = _tensors(fn, weight=weight, bias=bias)
    if has_running:
        params.update(_tensors(fn, running_mean=running_mean, running_var=running_var))
    if has_saved:
        params.update(_tensors(fn, save_mean=save_mean, save_inv_var=save_inv_var))
    shape = _param_shape(xv[0], m)
    p_dtype = _check_params(fn, x_dtype, shape, m, params)
    factor = _float_arg(exp_avg_factor, "exp_avg_factor", fn, 0.0, 1.0)
    eps = _float_arg(epsilon, "epsilon", fn, 0.0, lo_open=True)
    s_alpha, s_beta = _scaling(x_dtype, scale, shift, fn)
    h = resolve_handle(handle, stream, device)
    x_desc = _desc(xt, *xv)
    y_desc = x_desc if yv is xv else _desc(yt, *yv)
    p_desc = tensor_descriptor_of(p_dtype, shape, None)
    if key is not None:
        _TRAINING.put(key, generation, (x_desc, y_desc, p_desc), (m, s_alpha, s_beta, x_desc, y_desc, p_desc, factor,
                                                                  eps))
    api.batch_normalization_forward_training(
        h, m, s_alpha, s_beta, x_desc, xt.ptr, y_desc, yt.ptr, p_desc,
        params["weight"].ptr, params["bias"].ptr, factor, _ptr(params.get("running_mean")),
        _ptr(params.get("running_var")), eps, _ptr(params.get("save_mean")), _ptr(params.get("save_inv_var")))


def _given(layouts: list[tuple[int, Layout] | None], *objs: object) -> bool:
    """Each optional tensor either not given or with a known layout (the fast paths' condition)."""
    for layout, obj in zip(layouts, objs):
        if layout is None and obj is not None:
            return False
    return True


#: batch_norm_forward_training's fast path: (the layouts of x, y, weight, bias and the optional statistics (None:
#: not given), mode and its type, exp_avg_factor, epsilon, scale, shift) -> (mode, blending factors, x, y and
#: parameter descriptors, factor, epsilon)
_TRAINING: ShapeMemo[tuple[api.BatchNormMode, float, float, api.TensorDescriptor, api.TensorDescriptor,
                           api.TensorDescriptor, float, float]] = ShapeMemo()


def batch_norm_forward_inference(x: object, y: object, weight: object, bias: object, running_mean: object,
                                 running_var: object, mode: BatchNormModeLike = "spatial", *,
                                 epsilon: float = 1e-5, scale: float = 1.0, shift: float = 0.0,
                                 handle: api.Handle | None = None, stream: object = None,
                                 device: int | None = None) -> None:
    """Normalise x with running_mean/running_var (`miopenBatchNormalizationForwardInference`).

    Passing None for both statistics makes MIOpen use the batch's own statistics.
    """
    fn = "batch_norm_forward_inference"
    objs = (x, y, weight, bias, running_mean, running_var)
    last = _LAST_INFERENCE[0]
    if (last is not None and mode is last[2] and epsilon is last[3] and scale is last[4] and shift is last[5]
            and last[6] == _generation[0] and same_layouts(objs, last[0])):  # the very objects of the last call
        m_, s_alpha_, s_beta_, x_desc_, y_desc_, p_desc_, eps_ = last[7]
        if x_desc_._ptr is not None and y_desc_._ptr is not None and p_desc_._ptr is not None:
            xp, yp, wp, bp, mp, vp = last[1]
            api.batch_normalization_forward_inference(
                handle if handle is not None else inline_miopen_handle(stream, device), m_, s_alpha_, s_beta_,
                x_desc_, xp, y_desc_, yp, p_desc_, wp, bp, mp, vp, eps_)  # type: ignore[arg-type]
            return
    generation = _generation[0]
    xl, yl, wl, bl = layout_of(x), layout_of(y), layout_of(weight), layout_of(bias)
    ml = None if running_mean is None else layout_of(running_mean)
    vl = None if running_var is None else layout_of(running_var)
    key: tuple[object, ...] | None = None
    if (xl is not None and yl is not None and wl is not None and bl is not None
            and (ml is not None or running_mean is None) and (vl is not None or running_var is None)
            and type(epsilon) in PLAIN_NUMBERS and type(scale) in PLAIN_NUMBERS and type(shift) in PLAIN_NUMBERS):
        key = (xl[1], yl[1], wl[1], bl[1], ml and ml[1], vl and vl[1], mode, mode.__class__, epsilon, scale, shift)
        known = _INFERENCE.get(key)
        if known is not None:
            record = record_layouts(objs, generation)
            if record is not None:
                ptrs = (xl[0], yl[0], wl[0], bl[0], ml and ml[0], vl and vl[0])
                _LAST_INFERENCE[0] = (record, ptrs, mode, epsilon, scale, shift, generation, known)
            m_, s_alpha_, s_beta_, x_desc_, y_desc_, p_desc_, eps_ = known
            api.batch_normalization_forward_inference(
                handle if handle is not None else inline_miopen_handle(stream, device), m_, s_alpha_, s_beta_,
                x_desc_, xl[0], y_desc_, yl[0], p_desc_, wl[0], bl[0], ml and ml[0], vl and vl[0], eps_)
            return
    xt, yt = _as(fn, "x", x), _as(fn, "y", y)
    x_dtype = _alike(fn, x=xt, y=yt)
    check_packed(fn, x=xt, y=yt)
    xv = _x_view(fn, "x", xt)
    yv = xv if yt.strides == xt.strides else _x_view(fn, "y", yt)
    m = batch_norm_mode(mode, fn)
    has_stats = _pair(fn, "running_mean", running_mean, "running_var", running_var)
    params = _tensors(fn, weight=weight, bias=bias)
    if has_stats:
        params.update(_tensors(fn, running_mean=running_mean, running_var=running_var))
    shape = _param_shape(xv[0], m)
    p_dtype = _check_params(fn, x_dtype, shape, m, params)
    eps = _float_arg(epsilon, "epsilon", fn, 0.0, lo_open=True)
    s_alpha, s_beta = _scaling(x_dtype, scale, shift, fn)
    h = resolve_handle(handle, stream, device)
    x_desc = _desc(xt, *xv)
    y_desc = x_desc if yv is xv else _desc(yt, *yv)
    p_desc = tensor_descriptor_of(p_dtype, shape, None)
    if key is not None:
        _INFERENCE.put(key, generation, (x_desc, y_desc, p_desc), (m, s_alpha, s_beta, x_desc, y_desc, p_desc, eps))
    api.batch_normalization_forward_inference(
        h, m, s_alpha, s_beta, x_desc, xt.ptr, y_desc, yt.ptr, p_desc,
        params["weight"].ptr, params["bias"].ptr, _ptr(params.get("running_mean")),
        _ptr(params.get("running_var")), eps)


#: batch_norm_forward_inference's fast path: (the layouts of x, y, weight, bias and the statistics (None when not
#: given), mode and its type, epsilon, scale, shift) -> (mode, blending factors, x, y and parameter descriptors,
#: epsilon)
_InferenceEntry: TypeAlias = tuple[api.BatchNormMode, float, float, api.TensorDescriptor, api.TensorDescriptor,
                                   api.TensorDescriptor, float]
_INFERENCE: ShapeMemo[_InferenceEntry] = ShapeMemo()
#: the last call that found its entry of `_INFERENCE`, for its very objects (tried first): what re-checks its
#: arrays (`record_layouts`), their addresses, its mode, epsilon, scale and shift objects, the descriptor-cache
#: generation and the entry
_LAST_INFERENCE: list[tuple[LayoutRecord, tuple[int | None, ...], object, object, object, object, int,
                            _InferenceEntry] | None] = [None]
on_clear(lambda: _LAST_INFERENCE.__setitem__(0, None))  # its descriptors go with the caches


def batch_norm_backward(x: object, dy: object, dx: object, weight: object, dweight: object, dbias: object,
                        mode: BatchNormModeLike = "spatial", *, epsilon: float = 1e-5, saved_mean: object = None,
                        saved_inv_var: object = None, scale: float = 1.0, shift: float = 0.0,
                        param_scale: float = 1.0, param_shift: float = 0.0, handle: api.Handle | None = None,
                        stream: object = None, device: int | None = None) -> None:
    """Gradients of batch norm (`miopenBatchNormalizationBackward`).

    dx = scale * dbn/dx + shift * dx; dweight/dbias = param_scale * grad + param_shift * old.
    saved_mean/saved_inv_var (both or neither) are the training forward's save_mean/save_inv_var;
    without them MIOpen recomputes the statistics from x. Use the forward's epsilon.
    """
    ls = [layout_of(v) for v in (x, dy, dx, weight, dweight, dbias)]
    opt = [None if v is None else layout_of(v) for v in (saved_mean, saved_inv_var)]
    key: tuple[object, ...] | None = None
    if (None not in ls and _given(opt, saved_mean, saved_inv_var) and type(epsilon) in PLAIN_NUMBERS
            and type(scale) in PLAIN_NUMBERS and type(shift) in PLAIN_NUMBERS
            and type(param_scale) in PLAIN_NUMBERS and type(param_shift) in PLAIN_NUMBERS):
        key = (*[v[1] for v in ls], *[o and o[1] for o in opt], mode, mode.__class__, epsilon,  # type: ignore[index]
               scale, shift, param_scale, param_shift)
        known = _BACKWARD.get(key)
        if known is not None:
            m_, d_alpha_, d_beta_, p_alpha_, p_beta_, xd_, dyd_, dxd_, pd_, eps_ = known
            (xp, _), (dyp, _), (dxp, _), (wp, _), (dwp, _), (dbp, _) = ls  # type: ignore[misc]
            api.batch_normalization_backward(
                handle if handle is not None else inline_miopen_handle(stream, device), m_, d_alpha_, d_beta_,
                p_alpha_, p_beta_, xd_, xp, dyd_, dyp, dxd_, dxp, pd_, wp, dwp, dbp, eps_, opt[0] and opt[0][0],
                opt[1] and opt[1][0])
            return
    fn = "batch_norm_backward"
    generation = _generation[0]
    t = _tensors(fn, x=x, dy=dy, dx=dx)
    x_dtype = _alike(fn, **t)
    xt, dyt, dxt = t["x"], t["dy"], t["dx"]
    xv, dyv, dxv = _x_view(fn, "x", xt), _x_view(fn, "dy", dyt), _x_view(fn, "dx", dxt)
    m = batch_norm_mode(mode, fn)
    has_saved = _pair(fn, "saved_mean", saved_mean, "saved_inv_var", saved_inv_var)
    params = _tensors(fn, weight=weight, dweight=dweight, dbias=dbias)
    if has_saved:
        params.update(_tensors(fn, saved_mean=saved_mean, saved_inv_var=saved_inv_var))
    shape = _param_shape(xv[0], m)
    p_dtype = _check_params(fn, x_dtype, shape, m, params)
    eps = _float_arg(epsilon, "epsilon", fn, 0.0, lo_open=True)
    d_alpha, d_beta = _scaling(x_dtype, scale, shift, fn)
    p_alpha, p_beta = _scaling(x_dtype, _float_arg(param_scale, "param_scale", fn),
                               _float_arg(param_shift, "param_shift", fn), fn)
    h = resolve_handle(handle, stream, device)
    xd, dyd, dxd = _desc(xt, *xv), _desc(dyt, *dyv), _desc(dxt, *dxv)
    pd = tensor_descriptor_of(p_dtype, shape, None)
    if key is not None:
        _BACKWARD.put(key, generation, (xd, dyd, dxd, pd), (m, d_alpha, d_beta, p_alpha, p_beta, xd, dyd, dxd, pd, eps))
    api.batch_normalization_backward(
        h, m, d_alpha, d_beta, p_alpha, p_beta, xd, xt.ptr, dyd, dyt.ptr, dxd,
        dxt.ptr, pd, params["weight"].ptr, params["dweight"].ptr, params["dbias"].ptr,
        eps, _ptr(params.get("saved_mean")), _ptr(params.get("saved_inv_var")))


#: batch_norm_backward's fast path: (the layouts of x, dy, dx, weight, dweight, dbias and the optional saved
#: statistics, mode and its type, epsilon, the four blending factors) -> (mode, blending factors, x, dy, dx and
#: parameter descriptors, epsilon)
_BACKWARD: ShapeMemo[tuple[api.BatchNormMode, float, float, float, float, api.TensorDescriptor, api.TensorDescriptor,
                           api.TensorDescriptor, api.TensorDescriptor, float]] = ShapeMemo()
