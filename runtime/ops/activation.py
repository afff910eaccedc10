"""Activations: `activation_forward` / `activation_backward` for every `miopenActivationMode_t`.

MIOpen computes ``y = scale * f(x) + shift * y`` with ``f`` chosen by `mode` and parameterised by
the descriptor's alpha, beta and gamma:

========== ===================================  =========================================
mode       f(x)                                 defaults used when alpha/beta/gamma is None
========== ===================================  =========================================
PASTHRU    x                                    -
LOGISTIC   1 / (1 + e^-x)                       -
TANH       beta * tanh(alpha * x)               alpha = beta = 1
RELU       max(0, x)                            -
SOFTRELU   log(1 + e^x)                         -
ABS        abs(x)                               -
POWER      (alpha + beta * x) ^ gamma           alpha = 0, beta = 1, gamma = 1
CLIPPEDRELU min(alpha, max(0, x))               alpha required
LEAKYRELU  x if x > 0 else alpha * x            alpha = 0.01
ELU        x if x > 0 else alpha * (e^x - 1)    alpha = 1
CLAMP      min(beta, max(alpha, x))             alpha and beta required
========== ===================================  =========================================

Activations need no workspace. The private helpers at the bottom (`_float_arg`,
`_tensors`, ...) are shared by the other ops modules.
"""

from __future__ import annotations

from typing import TypeAlias

from .._args import enum_arg
from .._bound import EnumMap
from .._generated import api
from ..descriptors import _generation, cache_generation, cached_activation_descriptor, on_clear, scaling_params
from ..handles import inline_miopen_handle
from ..quirks import check_packed, memory_order
from ..tensor import layout_of
from ._common import (PLAIN_NUMBERS, PLAIN_OPTIONAL, ShapeMemo, _alike, _as, _desc, _float_arg, _scaling, _tensors,
                      resolve_handle)

__all__ = ["ActivationModeLike", "activation_forward", "activation_backward", "activation_mode",
           "activation_params"]

ActivationModeLike: TypeAlias = "api.ActivationMode | int | str"

_ACTIVATION_ALIASES: EnumMap[api.ActivationMode] = EnumMap("ActivationMode", prefix="miopenActivation", names={
    "passthrough": "miopenActivationPASTHRU", "identity": "miopenActivationPASTHRU",
    "sigmoid": "miopenActivationLOGISTIC", "softplus": "miopenActivationSOFTRELU",
    "clipped_relu": "miopenActivationCLIPPEDRELU", "leaky_relu": "miopenActivationLEAKYRELU"})

# (alpha, beta, gamma) defaults per mode; None: the caller must give the value
_DEFAULTS: dict[str, tuple[float | None, float | None, float | None]] = {
    "TANH": (1.0, 1.0, 0.0),
    "POWER": (0.0, 1.0, 1.0),
    "CLIPPEDRELU": (None, 0.0, 0.0),
    "LEAKYRELU": (0.01, 0.0, 0.0),
    "ELU": (1.0, 0.0, 0.0),
    "CLAMP": (None, None, 0.0),
}


def activation_mode(mode: ActivationModeLike) -> api.ActivationMode:
    """The `miopenActivationMode_t` of a member, its value, or a name ("relu", "miopenActivationRELU")."""
    return enum_arg(mode, api.ActivationMode, "mode", "activation", _ACTIVATION_ALIASES)


def activation_params(mode: ActivationModeLike, alpha: float | None = None, beta: float | None = None,
                      gamma: float | None = None, fn: str = "activation") -> tuple[float, float, float]:
    """The descriptor's (alpha, beta, gamma) for `mode`, with the per-mode defaults filled in."""
    m = activation_mode(mode)
    short = m.name.removeprefix("miopenActivation")
    defaults = _DEFAULTS.get(short, (0.0, 0.0, 0.0))
    out: list[float] = []
    for name, value, default in zip(("alpha", "beta", "gamma"), (alpha, beta, gamma), defaults, strict=True):
        if value is None:
            if default is None:
                raise ValueError(f"{fn}: mode {short} needs {name} (see miopen.ops.activation for the formulas)")
            out.append(default)
        else:
            out.append(_float_arg(value, name, fn))
    a, b, g = out
    if short == "CLIPPEDRELU" and a < 0:
        raise ValueError(f"{fn}: CLIPPEDRELU clips at alpha, which must be >= 0; got alpha={a}")
    if short == "CLAMP" and a > b:
        raise ValueError(f"{fn}: CLAMP needs alpha (lower bound) <= beta (upper bound); got alpha={a}, beta={b}")
    return a, b, g


# (mode, alpha, beta, gamma) as callers pass them (a name or member, None or floats) -> the checked values
_CHECKED: dict[tuple[object, ...], tuple[api.ActivationMode, float, float, float]] = {}
on_clear(_CHECKED.clear)  # members of the bound release: forgotten with it
# checked values -> the shared descriptor made for them, and the descriptor-cache generation it belongs to
_DESCS: dict[tuple[api.ActivationMode, float, float, float], tuple[api.ActivationDescriptor, int]] = {}
on_clear(_DESCS.clear)


def _activation_args(mode: ActivationModeLike, alpha: float | None, beta: float | None, gamma: float | None,
                     fn: str) -> tuple[api.ActivationMode, float, float, float]:
    """(mode, alpha, beta, gamma) checked, with the per-mode defaults (once per spelling; no MIOpen call)."""
    key: tuple[object, ...] | None = None
    if ((type(mode) is str or type(mode) is api.ActivationMode) and (alpha is None or type(alpha) is float)
            and (beta is None or type(beta) is float) and (gamma is None or type(gamma) is float)):
        key = (mode, alpha, beta, gamma)
        known = _CHECKED.get(key)
        if known is not None:
            return known
    m = activation_mode(mode)
    checked = (m, *activation_params(m, alpha, beta, gamma, fn))
    if key is not None:
        if len(_CHECKED) >= 256:
            _CHECKED.clear()
        _CHECKED[key] = checked
    return checked


def _activation_desc(checked: tuple[api.ActivationMode, float, float, float]) -> api.ActivationDescriptor:
    """The shared descriptor of checked activation parameters."""
    known = _DESCS.get(checked)
    if known is not None and known[1] == cache_generation() and not known[0].closed:
        return known[0]
    desc = cached_activation_descriptor(*checked)
    if len(_DESCS) >= 256:
        _DESCS.clear()
    _DESCS[checked] = (desc, cache_generation())
    return desc


def activation_forward(x: object, y: object, mode: ActivationModeLike, alpha: float | None = None,
                       beta: float | None = None, gamma: float | None = None, *, scale: float = 1.0,
                       shift: float = 0.0, handle: api.Handle | None = None, stream: object = None,
                       device: int | None = None) -> None:
    """y = scale * f(x) + shift * y (`miopenActivationForward`); x and y share dims and dtype."""
    xl, yl = layout_of(x), layout_of(y)
    key: tuple[object, ...] | None = None
    if (xl is not None and yl is not None and type(alpha) in PLAIN_OPTIONAL and type(beta) in PLAIN_OPTIONAL
            and type(gamma) in PLAIN_OPTIONAL and type(scale) in PLAIN_NUMBERS and type(shift) in PLAIN_NUMBERS):
        key = (xl[1], yl[1], mode, mode.__class__, alpha, beta, gamma, scale, shift)
        known = _FORWARD.get(key)
        if known is not None:
            desc, xd, yd, s_alpha, s_beta = known
            api.activation_forward(handle if handle is not None else inline_miopen_handle(stream, device), desc,
                                   s_alpha, xd, xl[0], s_beta, yd, yl[0])
            return
    fn = "activation_forward"
    generation = _generation[0]
    xt, yt = _as(fn, "x", x), _as(fn, "y", y)
    dtype = _alike(fn, x=xt, y=yt)
    xt, yt = memory_order(xt, yt)  # a channels-last x and y: element-wise, the same in memory order (packed)
    check_packed(fn, x=xt, y=yt)
    checked = _activation_args(mode, alpha, beta, gamma, fn)
    s_alpha, s_beta = _scaling(dtype, scale, shift, fn)
    h = resolve_handle(handle, stream, device)
    desc = _activation_desc(checked)
    xd = _desc(xt)
    yd = xd if yt.strides == xt.strides else _desc(yt)  # same dims, dtype and strides: the same descriptor
    if key is not None:
        _FORWARD.put(key, generation, (desc, xd, yd), (desc, xd, yd, s_alpha, s_beta))
    api.activation_forward(h, desc, s_alpha, xd, xt.ptr, s_beta, yd, yt.ptr)


#: activation_forward's fast path: (x and y layouts, mode and its type, alpha, beta, gamma, scale, shift) ->
#: (activation descriptor, x and y descriptors, blending factors)
_FORWARD: ShapeMemo[tuple[api.ActivationDescriptor, api.TensorDescriptor, api.TensorDescriptor, float, float]] = \
    ShapeMemo()


def activation_backward(y: object, dy: object, x: object, dx: object, mode: ActivationModeLike,
                        alpha: float | None = None, beta: float | None = None, gamma: float | None = None, *,
                        scale: float = 1.0, shift: float = 0.0, handle: api.Handle | None = None,
                        stream: object = None, device: int | None = None) -> None:
    """dx = scale * f'(x) * dy + shift * dx (`miopenActivationBackward`); y is the forward output."""
    yl, dyl, xl, dxl = layout_of(y), layout_of(dy), layout_of(x), layout_of(dx)
    key: tuple[object, ...] | None = None
    if (yl is not None and dyl is not None and xl is not None and dxl is not None and type(alpha) in PLAIN_OPTIONAL
            and type(beta) in PLAIN_OPTIONAL and type(gamma) in PLAIN_OPTIONAL and type(scale) in PLAIN_NUMBERS
            and type(shift) in PLAIN_NUMBERS):
        key = (yl[1], dyl[1], xl[1], dxl[1], mode, mode.__class__, alpha, beta, gamma, scale, shift)
        known = _BACKWARD.get(key)
        if known is not None:
            desc_, s_alpha_, s_beta_, yd_, dyd_, xd_, dxd_ = known
            api.activation_backward(handle if handle is not None else inline_miopen_handle(stream, device), desc_,
                                    s_alpha_, yd_, yl[0], dyd_, dyl[0], xd_, xl[0], s_beta_, dxd_, dxl[0])
            return
    fn = "activation_backward"
    generation = _generation[0]
    t = _tensors(fn, y=y, dy=dy, x=x, dx=dx)
    dtype = _alike(fn, **t)
    checked = _activation_args(mode, alpha, beta, gamma, fn)
    s_alpha, s_beta = _scaling(dtype, scale, shift, fn)
    h = resolve_handle(handle, stream, device)
    desc = _activation_desc(checked)
    yt, dyt, xt, dxt = t["y"], t["dy"], t["x"], t["dx"]
    yd, dyd, xd, dxd = _desc(yt), _desc(dyt), _desc(xt), _desc(dxt)
    if key is not None:
        _BACKWARD.put(key, generation, (desc, yd, dyd, xd, dxd), (desc, s_alpha, s_beta, yd, dyd, xd, dxd))
    api.activation_backward(h, desc, s_alpha, yd, yt.ptr, dyd, dyt.ptr, xd, xt.ptr, s_beta, dxd, dxt.ptr)


#: activation_backward's fast path: (the layouts of y, dy, x, dx, mode and its type, alpha, beta, gamma, scale,
#: shift) -> (activation descriptor, blending factors, the four tensor descriptors)
_BACKWARD: ShapeMemo[tuple[api.ActivationDescriptor, float, float, api.TensorDescriptor, api.TensorDescriptor,
                           api.TensorDescriptor, api.TensorDescriptor]] = ShapeMemo()
