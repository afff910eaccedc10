"""What the ops modules share: the handle and workspace an op call uses, the per-shape memo, the argument checks
and conversions (numbers, tensors, ranks, scaling factors) and the convolution geometry (also fusion's)."""

from __future__ import annotations

import contextlib
import math
import numbers
from collections.abc import Hashable
from typing import Any, Generic, TypeVar

from .. import backend as _backend
from .._args import int_arg, int_per_dim
from .._generated import api
from .._generated._support import HandleBase
from ..algo import ConvParams
from ..descriptors import _generation, on_clear, tensor_descriptor_of
from ..errors import ScalingRuleError, ShapeError
from ..handles import inline_miopen_handle
from ..tensor import Tensor, as_tensor, as_tensor_of, same_dims, same_dtype
from ..workspace import MIOpenWorkspace, PersistentBuffer, scratch


_S = TypeVar("_S", bound="OpState[Any]")
_V = TypeVar("_V")

#: the scalar types an op's fast path puts in its shape key as they are (a bool, a numpy scalar, ... takes the
#: full path, whose checks decide): ints and floats of equal value mean the same to every check of the ops
PLAIN_NUMBERS = frozenset({float, int})
PLAIN_OPTIONAL = frozenset({float, int, type(None)})


def plain_geometry(v: object) -> bool:
    """An exact int, None, or a tuple of exact ints: a window, pad, stride or dilation argument that can key a
    per-shape memo (hashable, and equal only to what means the same); anything else takes the full checks."""
    if type(v) is int or v is None:
        return True
    if type(v) is not tuple:
        return False
    for e in v:
        if type(e) is not int:
            return False
    return True


class ShapeMemo(Generic[_V]):
    """An op's fast path: per shape key (everything its checks read but the addresses, which are read on every
    call), the checked values and descriptors of the first call on it. An entry holds while none of its
    descriptors is closed; emptied with the descriptor caches (and so on a library change); bounded. The entry of
    the last hit is tried first, by comparing keys (their parts are mostly the very objects of the last call, so the
    comparison is mostly identity checks: no hashing)."""

    __slots__ = ("_items", "size", "_last")

    def __init__(self, size: int = 256) -> None:
        self._items: dict[Hashable, tuple[tuple[HandleBase, ...], _V]] = {}
        self.size = size
        #: (key, entry, the descriptor-cache generation read before finding it) of the last hit
        self._last: tuple[Hashable, tuple[tuple[HandleBase, ...], _V], int] | None = None
        on_clear(self._clear)

    def _clear(self) -> None:
        self._items.clear()
        self._last = None

    def get(self, key: Hashable) -> _V | None:
        """The value for `key` while its descriptors are open; None otherwise, and for a key that cannot be hashed
        (an unhashable mode or argument: the full path checks and reports it)."""
        last = self._last
        generation = _generation[0]
        if last is not None and last[2] == generation:
            try:
                if last[0] == key:
                    for desc in last[1][0]:
                        if desc._ptr is None:
                            break  # a descriptor closed since: the entry made after it, if any, is in _items
                    else:
                        return last[1][1]
            except Exception:  # noqa: BLE001 - a part whose == raises: the lookup below decides
                pass
        try:
            entry = self._items.get(key)
        except TypeError:
            return None
        if entry is None:
            return None
        for desc in entry[0]:
            if desc._ptr is None:
                return None
        self._last = (key, entry, generation)
        return entry[1]

    def put(self, key: Hashable, generation: int, descs: tuple[HandleBase, ...], value: _V) -> None:
        """Remember `value` for `key`, unless the descriptor caches were cleared since `generation` (theirs when
        the checks started)."""
        if generation != _generation[0]:
            return
        if len(self._items) >= self.size:
            self._clear()
        try:
            self._items[key] = (descs, value)
        except TypeError:  # an unhashable key: never found either
            pass

    def __len__(self) -> int:
        return len(self._items)


def resolve_handle(handle: api.Handle | None, stream: object, device: int | None) -> api.Handle:
    """The given handle, or the calling thread's pooled handle bound to `stream`."""
    return handle if handle is not None else inline_miopen_handle(stream, device)


def resolve_workspace(workspace: MIOpenWorkspace | None, device: int | None, stream: object = None) -> MIOpenWorkspace:
    """The given workspace, or the thread's scratch for (device, stream)."""
    return workspace if workspace is not None else scratch(_backend.current().current_device() if device is None else device, stream)


_D = TypeVar("_D", bound=HandleBase)


class OpState(Generic[_D]):
    """What a forward op hands to its backward: a descriptor and, when needed, a persistent
    workspace; closed once (`close()`, or `with`)."""

    desc: _D
    workspace: PersistentBuffer | None
    _closed: bool
    #: False where `desc` is a cached, shared descriptor: close() leaves it to the cache
    _owns_desc = True

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Free the workspace and destroy the descriptor unless it is a shared one (idempotent)."""
        if self._closed:
            return
        self._closed = True
        if self.workspace is not None:
            self.workspace.close()
            self.workspace = None
        if self._owns_desc:
            self.desc.close()

    def __enter__(self: _S) -> _S:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --------------------------------------------------------------------------- argument checks and conversions


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


def _as(fn: str, name: str, obj: object) -> Tensor:
    """`obj` as a `Tensor` (errors name the argument)."""
    return as_tensor_of(obj, fn, name)


def _alike(fn: str, **tensors: Tensor) -> api.DataType:
    """The common dtype of tensors that must also share dims (same_dims, then same_dtype)."""
    first = None
    for t in tensors.values():
        if first is None:
            first = t
        elif t.dims != first.dims or t.dtype is not first.dtype:
            same_dims(fn, **tensors)
            return same_dtype(fn, **tensors)
    assert first is not None
    return first.dtype


def _tensors(fn: str, **objs: object) -> dict[str, Tensor]:
    """Each argument as a `Tensor` (errors name the argument)."""
    return {name: as_tensor_of(obj, fn, name) for name, obj in objs.items()}


def _check_rank(fn: str, name: str, t: Tensor, allowed: tuple[int, ...], what: str) -> None:
    if t.ndim not in allowed:
        raise ShapeError(f"{fn}: {name} must be {what}; got {t.ndim}-D dims {t.dims}")


def _scaling(dtype: api.DataType, scale: float, shift: float, fn: str, *, blend: bool = False
             ) -> tuple[float, float]:
    """The blending factors (MIOpen's alpha/beta), checked; the wrappers pass them as the host scalars
    MIOpen reads (1.0 and 0.0 from references made once).

    Activation, batch norm, pooling and LRN implement only y = f(x) (alpha=1, beta=0) and say so
    only from inside C; softmax (`blend=True`) implements any blend.
    """
    if scale.__class__ is float and shift.__class__ is float and scale == 1.0 and shift == 0.0:
        return 1.0, 0.0  # the usual case (a -0.0 shift is 0.0 here: beta only tells MIOpen to blend or not)
    a, b = _float_arg(scale, "scale", fn), _float_arg(shift, "shift", fn)
    if not blend and (a, b) != (1.0, 0.0):
        raise ScalingRuleError(f"{fn}: MIOpen supports only scale=1 and shift=0 here; got scale={a}, shift={b}")
    return a, b


def _desc(t: Tensor, dims: tuple[int, ...] | None = None, strides: tuple[int, ...] | None = None
          ) -> api.TensorDescriptor:
    """The cached descriptor of `t` (or of `t` viewed with other dims/strides, e.g. padded to 4-D)."""
    return tensor_descriptor_of(t.dtype, t.dims if dims is None else dims, t.strides if strides is None else strides)


def _device(device: int | None) -> int:
    return _backend.current().current_device() if device is None else device


def _persistent(nbytes: int, device: int, kind: str, stream: object) -> PersistentBuffer:
    """A persistent buffer of `nbytes` on `device` (allocated under a device guard, ordered on `stream`)."""
    with _backend.current().device_guard(device):
        return PersistentBuffer(nbytes, device, kind, stream=_backend.current().as_stream_handle(stream))


def _int_tuple(value: object, name: str, fn: str, length: int, lo: int) -> tuple[int, ...]:
    """`length` ints >= lo from a sequence (or one int, repeated)."""
    return int_per_dim(value, name, fn, length, lo)




def _scalar(value: object, name: str, op: str) -> float:
    """A real number (bool refused) as float, or a TypeError naming the argument."""
    if value.__class__ is float and value == value:  # the usual case: a float, not NaN
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{op}: {name} must be a real number; got {type(value).__name__} {value!r}")
    out = float(value)
    if math.isnan(out):
        raise ValueError(f"{op}: {name} must not be NaN")
    return out


def _tensor(obj: object, name: str, op: str) -> Tensor:
    """`as_tensor` with the op named, refusing a null pointer for a non-empty tensor."""
    try:
        t = as_tensor(obj, name)
    except TypeError as exc:
        raise TypeError(f"{op}: {exc}") from None
    if t.ptr == 0 and math.prod(t.dims) > 0:
        raise ValueError(f"{op}: {name} has a null device pointer (dims {t.dims})")
    return t


def _same_dtype(op: str, **tensors: Tensor) -> api.DataType:
    kinds = {name: t.dtype for name, t in tensors.items()}
    if len(set(kinds.values())) > 1:
        listing = ", ".join(f"{n}={dt.name}" for n, dt in kinds.items())
        raise ShapeError(f"{op}: tensors must share one dtype; got {listing}")
    return next(iter(kinds.values()))


_NO_GUARD = contextlib.nullcontext()


def _on_device(device: int | None) -> contextlib.AbstractContextManager[None]:
    """A device guard when a device is named (workspaces are allocated on the current device)."""
    return _NO_GUARD if device is None else _backend.current().device_guard(device)


# --------------------------------------------------------------------------- convolution geometry (conv, fusion)


def _ints(value: object, name: str, n: int | None, op: str) -> tuple[int, ...]:
    """A tuple of ints from an int (repeated n times) or a sequence; TypeError/ShapeError naming `name`."""
    return int_per_dim(value, name, op, n)


def _conv_params(ndim: int, pads: object, strides: object, dilations: object, groups: object, transpose: object,
                 op: str, output_pads: object = None) -> ConvParams:
    if ndim not in (4, 5):
        raise ShapeError(f"{op}: convolutions take 4-D (2-D conv) or 5-D (3-D conv) tensors; got {ndim} dims")
    n = ndim - 2
    p = _ints(pads, "pads", n, op)
    s = _ints(strides, "strides", n, op)
    d = _ints(dilations, "dilations", n, op)
    if any(v < 0 for v in p):
        raise ShapeError(f"{op}: pads must be >= 0; got {p}")
    if any(v < 1 for v in s):
        raise ShapeError(f"{op}: strides must be >= 1; got {s}")
    if any(v < 1 for v in d):
        raise ShapeError(f"{op}: dilations must be >= 1; got {d}")
    groups = int_arg(groups, "groups", op)
    if groups < 1:
        raise ShapeError(f"{op}: groups must be >= 1; got {groups}")
    if not isinstance(transpose, bool):
        raise TypeError(f"{op}: transpose must be a bool; got {transpose!r}")
    op_ = () if output_pads is None else _ints(output_pads, "output_pads", n, op)
    if op_ and not transpose:
        raise ShapeError(f"{op}: output_pads apply to transposed convolutions only (transpose=True)")
    # MIOpen's rule (ConvolutionDescriptor::GetForwardOutputTensorWithLayout): each output pad below its stride;
    # negative ones shrink the output and MIOpen accepts them, so we do too (checked against the real 2.17.0)
    if any(v >= si for v, si in zip(op_, s)):
        raise ShapeError(f"{op}: each output pad must be smaller than its stride; got output_pads={op_}, "
                         f"strides={s}")
    return ConvParams(p, s, d, groups, transpose, op_ if any(op_) else ())


def _output_dims(x: tuple[int, ...], w: tuple[int, ...], cp: ConvParams, op: str, xn: str = "x",
                 wn: str = "w") -> tuple[int, ...]:
    if len(x) != len(w):
        raise ShapeError(f"{op}: {xn} and {wn} must have the same rank; got {xn}={x}, {wn}={w}")
    if any(v < 1 for v in x) or any(v < 1 for v in w):
        raise ShapeError(f"{op}: dims must be >= 1; got {xn}={x}, {wn}={w}")
    g = cp.groups
    c_in, k0, k1 = x[1], w[0], w[1]
    if not cp.transpose:
        if c_in % g:
            raise ShapeError(f"{op}: {xn}'s channels ({c_in}) must be divisible by groups ({g})")
        if k1 != c_in // g:
            raise ShapeError(f"{op}: {wn}'s dim 1 must be {xn}'s channels / groups = {c_in}/{g} = {c_in // g}; "
                             f"got {wn}={w}")
        if k0 % g:
            raise ShapeError(f"{op}: {wn}'s output channels ({k0}) must be divisible by groups ({g})")
        c_out = k0
    else:
        if k0 != c_in:
            raise ShapeError(f"{op}: for a transposed convolution {wn}'s dim 0 must equal {xn}'s channels "
                             f"({c_in}); got {wn}={w}")
        if k0 % g:
            raise ShapeError(f"{op}: {xn}'s channels ({c_in}) must be divisible by groups ({g})")
        c_out = k1 * g
    out = [x[0], c_out]
    for i, (n_in, k) in enumerate(zip(x[2:], w[2:])):
        p, s, d = cp.pads[i], cp.strides[i], cp.dilations[i]
        span = d * (k - 1) + 1
        # MIOpen clamps each spatial length to at least 1 (a dilated kernel larger than the padded input, a
        # transposed output that would vanish), and its solvers accept those convolutions: so do we
        if not cp.transpose:
            out.append(max(1, (n_in + 2 * p - span) // s + 1))
        else:
            out.append(max(1, s * (n_in - 1) + span - 2 * p + (cp.output_pads[i] if cp.output_pads else 0)))
    return tuple(out)
