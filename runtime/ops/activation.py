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

Activations need no workspace. The private helpers at the bottom (`_enum_arg`, `_float_arg`,
`_tensors`, ...) are shared by the other ops modules.
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Mapping
from enum import IntEnum
from typing import TypeAlias, TypeVar

from .. import hip
from .._bound import EnumMap
from .._generated import api
from ..descriptors import scaling_params, tensor_descriptor
from ..errors import ScalingRuleError, ShapeError
from ..tensor import Tensor, as_tensor, same_dims, same_dtype
from ..workspace import PersistentBuffer
from ._common import resolve_handle

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
    return _enum_arg(mode, api.ActivationMode, "mode", "activation", _ACTIVATION_ALIASES)


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


def activation_forward(x: object, y: object, mode: ActivationModeLike, alpha: float | None = None,
                       beta: float | None = None, gamma: float | None = None, *, scale: float = 1.0,
                       shift: float = 0.0, handle: api.Handle | None = None, stream: object = None,
                       device: int | None = None) -> None:
    """y = scale * f(x) + shift * y (`miopenActivationForward`); x and y share dims and dtype."""
    fn = "activation_forward"
    t = _tensors(fn, x=x, y=y)
    dims = same_dims(fn, **t)
    dtype = same_dtype(fn, **t)
    m = activation_mode(mode)
    a, b, g = activation_params(m, alpha, beta, gamma, fn)
    s_alpha, s_beta = _scaling(dtype, scale, shift, fn)
    h = resolve_handle(handle, stream, device)
    xt, yt = t["x"], t["y"]
    desc = api.create_activation_descriptor()
    try:
        api.set_activation_descriptor(desc, m, a, b, g)
        api.activation_forward(h, desc, s_alpha, _desc(xt), xt.ptr, s_beta, _desc(yt), yt.ptr)
    finally:
        desc.close()


def activation_backward(y: object, dy: object, x: object, dx: object, mode: ActivationModeLike,
                        alpha: float | None = None, beta: float | None = None, gamma: float | None = None, *,
                        scale: float = 1.0, shift: float = 0.0, handle: api.Handle | None = None,
                        stream: object = None, device: int | None = None) -> None:
    """dx = scale * f'(x) * dy + shift * dx (`miopenActivationBackward`); y is the forward output."""
    fn = "activation_backward"
    t = _tensors(fn, y=y, dy=dy, x=x, dx=dx)
    dims = same_dims(fn, **t)
    dtype = same_dtype(fn, **t)
    m = activation_mode(mode)
    a, b, g = activation_params(m, alpha, beta, gamma, fn)
    s_alpha, s_beta = _scaling(dtype, scale, shift, fn)
    h = resolve_handle(handle, stream, device)
    yt, dyt, xt, dxt = t["y"], t["dy"], t["x"], t["dx"]
    desc = api.create_activation_descriptor()
    try:
        api.set_activation_descriptor(desc, m, a, b, g)
        api.activation_backward(h, desc, s_alpha, _desc(yt), yt.ptr, _desc(dyt), dyt.ptr, _desc(xt), xt.ptr, s_beta,
                                _desc(dxt), dxt.ptr)
    finally:
        desc.close()


# --------------------------------------------------------------------------- helpers shared by the ops modules

E = TypeVar("E", bound=IntEnum)


def _enum_arg(value: object, cls: type[E], name: str, fn: str, aliases: Mapping[str, E]) -> E:
    """A member of `cls` from a member, its int value, its name, or a short alias (case-insensitive)."""
    if isinstance(value, cls):
        return value
    if isinstance(value, bool):
        raise TypeError(f"{fn}: {name} must be a {cls.__name__} member, int or name; got a bool")
    if isinstance(value, int):
        try:
            return cls(value)
        except ValueError:
            raise ValueError(f"{fn}: {name}={value} is not a {cls.__name__} value; expected one of "
                             f"{[int(m) for m in cls]}") from None
    if isinstance(value, str):
        if value in cls.__members__:
            return cls[value]
        key = value.strip().lower().replace("-", "_")
        if key in aliases:
            return aliases[key]
        raise ValueError(f"{fn}: {name}={value!r} is not a {cls.__name__}; expected one of {sorted(aliases)}")
    raise TypeError(f"{fn}: {name} must be a {cls.__name__} member, int or name; got {type(value).__name__}")


def _float_arg(value: object, name: str, fn: str, lo: float | None = None, hi: float | None = None,
               lo_open: bool = False, hi_open: bool = False) -> float:
    """A finite float (ints accepted, bools not) inside the given bounds."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{fn}: {name} must be a number; got {type(value).__name__}")
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"{fn}: {name} must be finite; got {v}")
    if lo is not None and (v < lo or (lo_open and v == lo)):
        raise ValueError(f"{fn}: {name} must be {'>' if lo_open else '>='} {lo}; got {v}")
    if hi is not None and (v > hi or (hi_open and v == hi)):
        raise ValueError(f"{fn}: {name} must be {'<' if hi_open else '<='} {hi}; got {v}")
    return v


def _bool_arg(value: object, name: str, fn: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{fn}: {name} must be a bool; got {type(value).__name__}")
    return value


def _tensors(fn: str, **objs: object) -> dict[str, Tensor]:
    """Each argument as a `Tensor` (errors name the argument)."""
    return {name: as_tensor(obj, f"{fn}: {name}") for name, obj in objs.items()}


def _check_rank(fn: str, name: str, t: Tensor, allowed: tuple[int, ...], what: str) -> None:
    if t.ndim not in allowed:
        raise ShapeError(f"{fn}: {name} must be {what}; got {t.ndim}-D dims {t.dims}")


Scalar: TypeAlias = ctypes.c_float | ctypes.c_double


def _scaling(dtype: api.DataType, scale: float, shift: float, fn: str, *, blend: bool = False
             ) -> tuple[Scalar, Scalar]:
    """The blending factors (MIOpen's alpha/beta) as the host scalars these ops read: always float.

    Activation, batch norm, pooling and LRN implement only y = f(x) (alpha=1, beta=0) and say so
    only from inside C; softmax (`blend=True`) implements any blend.
    """
    a, b = _float_arg(scale, "scale", fn), _float_arg(shift, "shift", fn)
    if not blend and (a, b) != (1.0, 0.0):
        raise ScalingRuleError(f"{fn}: MIOpen supports only scale=1 and shift=0 here; got scale={a}, shift={b}")
    return ctypes.c_float(a), ctypes.c_float(b)


def _desc(t: Tensor, dims: tuple[int, ...] | None = None, strides: tuple[int, ...] | None = None
          ) -> api.TensorDescriptor:
    """The cached descriptor of `t` (or of `t` viewed with other dims/strides, e.g. padded to 4-D)."""
    return tensor_descriptor(t.dtype, t.dims if dims is None else dims, t.strides if strides is None else strides)


def _device(device: int | None) -> int:
    return hip.current_device() if device is None else device


def _persistent(nbytes: int, device: int, kind: str, stream: object) -> PersistentBuffer:
    """A persistent buffer of `nbytes` on `device` (allocated under a device guard, ordered on `stream`)."""
    with hip.device_guard(device):
        return PersistentBuffer(nbytes, device, kind, stream=hip.as_stream_handle(stream))


def _int_tuple(value: object, name: str, fn: str, length: int, lo: int) -> tuple[int, ...]:
    """`length` ints >= lo from a sequence (or one int, repeated)."""
    if isinstance(value, int) and not isinstance(value, bool):
        items: list[object] = [value] * length
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        raise TypeError(f"{fn}: {name} must be an int or a sequence of {length} ints; got {type(value).__name__}")
    if len(items) != length:
        raise ShapeError(f"{fn}: {name} needs {length} values (one per spatial dim); got {len(items)}")
    out: list[int] = []
    for v in items:
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"{fn}: {name} must hold ints; got {type(v).__name__}")
        if v < lo:
            raise ValueError(f"{fn}: {name} values must be >= {lo}; got {tuple(items)}")
        out.append(v)
    return tuple(out)
