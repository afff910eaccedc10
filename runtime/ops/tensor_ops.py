"""Element-wise tensor ops: `op_tensor` (C = op(alpha1*A, alpha2*B) + beta*C, with MIOpen's broadcasting
of B), `scale_tensor`, `set_tensor`, `transform_tensor` (y = alpha*x + beta*y, also between layouts),
and the NCHW <-> NHWC helpers `to_channels_last` / `to_channels_first`.

How MIOpen reads the host scalars differs per call; the generated wrappers encode them as the
annotations say (specs/miopen/annotations.yaml), so this module passes Python floats:

* `miopenOpTensor` always reads alpha1, alpha2 and beta as `float`, whatever the tensor type (`scalar: float`);
* `miopenSetTensor`, `miopenScaleTensor` and `miopenTransformTensor` read them as the tensor's own
  element type (MIOpen's `visit_float`; `element_of: yDesc`): the wrapper reads y's data type and passes a
  half for a half tensor, a double for a double tensor, a range-checked int for int8/int32.
"""

from __future__ import annotations

from collections.abc import Sequence

from .. import quirks
from .. import layout
from .._args import enum_arg
from .._bound import EnumMap
from .._generated import api
from ..descriptors import _generation
from ..errors import ShapeError
from ..handles import inline_miopen_handle
from ..quirks import check_packed, memory_order
from ..tensor import Tensor, layout_of
from ._common import ShapeMemo, _on_device, _same_dtype, _scalar, _tensor, resolve_handle

__all__ = ["op_tensor", "scale_tensor", "set_tensor", "transform_tensor", "to_channels_last", "to_channels_first",
           "TENSOR_OPS"]

MAX_DIMS = 5
TENSOR_OPS: EnumMap[api.TensorOp] = EnumMap("TensorOp", {
    "add": "miopenTensorOpAdd", "mul": "miopenTensorOpMul", "min": "miopenTensorOpMin", "max": "miopenTensorOpMax"})


# --------------------------------------------------------------------------- checks


def _rank(op: str, name: str, t: Tensor, allowed: Sequence[int]) -> None:
    if t.ndim not in allowed:
        want = ", ".join(str(r) for r in allowed)
        raise ShapeError(f"{op}: {name} must have {want} dims; got {t.ndim} ({t.dims})")


# --------------------------------------------------------------------------- ops


def _tensor_op(op: api.TensorOp | int | str) -> api.TensorOp:
    return enum_arg(op, api.TensorOp, "op", "op_tensor", TENSOR_OPS)


def op_tensor(op: api.TensorOp | int | str, a: object, b: object, c: object, alpha1: float = 1.0,
              alpha2: float = 1.0, beta: float = 0.0, *, handle: api.Handle | None = None, stream: object = None,
              device: int | None = None) -> None:
    """C = op(alpha1 * A, alpha2 * B) + beta * C; op is add, mul, min or max.

    A and C have the same dims; B broadcasts: each of its dims is 1 or equal to C's. All three share a
    rank (1 to 5) and a dtype. MIOpen reads the three scalars as float for every dtype."""
    al, bl, cl = layout_of(a), layout_of(b), layout_of(c)
    key: tuple[object, ...] | None = None
    if (al is not None and bl is not None and cl is not None and al[0] and bl[0] and cl[0]
            and alpha1.__class__ is float and alpha2.__class__ is float and beta.__class__ is float):
        key = (al[1], bl[1], cl[1], op, op.__class__)
        known = _OP_TENSOR.get(key)
        if known is not None and alpha1 == alpha1 and alpha2 == alpha2 and beta == beta:  # NaN: the full path
            top_, ad_, bd_, cd_ = known
            if device is None:
                api.op_tensor(handle if handle is not None else inline_miopen_handle(stream), top_, alpha1, ad_,
                              al[0], alpha2, bd_, bl[0], beta, cd_, cl[0])
                return
            with _on_device(device):
                api.op_tensor(resolve_handle(handle, stream, device), top_, alpha1, ad_, al[0], alpha2, bd_, bl[0],
                              beta, cd_, cl[0])
            return
    name = "op_tensor"
    generation = _generation[0]
    top = _tensor_op(op)
    ta, tb, tc = _tensor(a, "a", name), _tensor(b, "b", name), _tensor(c, "c", name)
    s1, s2, sb = _scalar(alpha1, "alpha1", name), _scalar(alpha2, "alpha2", name), _scalar(beta, "beta", name)
    ta, tb, tc = memory_order(ta, tb, tc)  # one channels-last layout: element-wise, the same in memory order
    ad, bd, cd = _check_layouts(ta, tb, tc)
    check_packed(name, a=ta, b=tb, c=tc)
    with _on_device(device):
        h = resolve_handle(handle, stream, device)
        if key is not None:
            _OP_TENSOR.put(key, generation, (ad, bd, cd), (top, ad, bd, cd))
        api.op_tensor(h, top, s1, ad, ta.ptr, s2, bd, tb.ptr, sb, cd, tc.ptr)


#: op_tensor's fast path: (the layouts of a, b and c, op and its type) -> (the op, the three descriptors); the
#: scalars are read on every call (exact floats, not NaN, take it)
_OP_TENSOR: ShapeMemo[tuple[api.TensorOp, api.TensorDescriptor, api.TensorDescriptor, api.TensorDescriptor]] = \
    ShapeMemo()


def _check_layouts(ta: Tensor, tb: Tensor, tc: Tensor
                   ) -> tuple[api.TensorDescriptor, api.TensorDescriptor, api.TensorDescriptor]:
    """op_tensor's shape and dtype checks; the three descriptors."""
    name = "op_tensor"
    for nm, t in (("a", ta), ("b", tb), ("c", tc)):
        _rank(name, nm, t, range(1, MAX_DIMS + 1))
    if ta.dims != tc.dims:
        raise ShapeError(f"{name}: a and c must have the same dims; got a={ta.dims}, c={tc.dims}")
    if tb.ndim != tc.ndim:
        raise ShapeError(f"{name}: b must have the rank of c ({tc.ndim}); got b={tb.dims}")
    bad = [i for i, (bd, cd) in enumerate(zip(tb.dims, tc.dims)) if bd not in (1, cd)]
    if bad:
        raise ShapeError(f"{name}: each of b's dims must be 1 or equal to c's (MIOpen broadcasting); got "
                         f"b={tb.dims}, c={tc.dims} (dim {bad[0]})")
    _same_dtype(name, a=ta, b=tb, c=tc)
    return ta.desc, tb.desc, tc.desc


def _fill(op: str, y: object, value: object, what: str) -> tuple[Tensor, int | float]:
    ty = _tensor(y, "y", op)
    v = value if type(value) is int else _scalar(value, what, op)  # ints stay exact (int32 / int8 tensors)
    _rank(op, "y", ty, range(1, MAX_DIMS + 1))
    return ty, v


def set_tensor(y: object, value: float, *, handle: api.Handle | None = None, stream: object = None,
               device: int | None = None) -> None:
    """Fill y with `value` (the wrapper passes it in y's element type)."""
    ty, v = _fill("set_tensor", y, value, "value")
    check_packed("set_tensor", y=ty)
    with _on_device(device):
        api.set_tensor(resolve_handle(handle, stream, device), ty.desc, ty.ptr, v)


def scale_tensor(y: object, alpha: float, *, handle: api.Handle | None = None, stream: object = None,
                 device: int | None = None) -> None:
    """y *= alpha (the wrapper passes alpha in y's element type; MIOpen supports float and half here)."""
    ty = _tensor(y, "y", "scale_tensor")
    if ty.dtype in (api.DataType.miopenInt8, api.DataType.miopenBFloat16):
        raise ShapeError(f"scale_tensor: MIOpen does not scale {ty.dtype.name} tensors")
    ty, v = _fill("scale_tensor", ty, alpha, "alpha")
    check_packed("scale_tensor", y=ty)
    with _on_device(device):
        api.scale_tensor(resolve_handle(handle, stream, device), ty.desc, ty.ptr, v)


def transform_tensor(x: object, y: object, alpha: float = 1.0, beta: float = 0.0, *, handle: api.Handle | None = None,
                     stream: object = None, device: int | None = None) -> None:
    """y = alpha * x + beta * y between two layouts of the same logical dims (e.g. NCHW -> NHWC).

    x and y have the same dims (N, C, spatial, in logical order) and dtype; their strides may differ.
    The wrapper passes the scalars in the element type, as MIOpen reads them."""
    name = "transform_tensor"
    tx, ty = _tensor(x, "x", name), _tensor(y, "y", name)
    a, b = _scalar(alpha, "alpha", name), _scalar(beta, "beta", name)
    _rank(name, "x", tx, range(1, MAX_DIMS + 1))
    if tx.dims != ty.dims:
        raise ShapeError(f"{name}: x and y must have the same logical dims (only strides may differ); got "
                         f"x={tx.dims}, y={ty.dims}")
    dt = _same_dtype(name, x=tx, y=ty)
    check_packed(name, x=tx, y=ty)
    if dt not in (api.DataType.miopenHalf, api.DataType.miopenFloat, api.DataType.miopenInt32,
                  api.DataType.miopenBFloat16, api.DataType.miopenDouble):
        raise ShapeError(f"{name}: MIOpen transforms half, float, int32, bfloat16 and double tensors; got {dt.name}")
    with _on_device(device):
        h = resolve_handle(handle, stream, device)
        why = quirks.transform_layout_problem(ty.dims, ty.strides)
        if why is not None and quirks.transform_layout_bug(h):
            raise ShapeError(f"{name}: the loaded MIOpen writes this y at the wrong offsets ({why}; its "
                             f"GetConsistentFlattenedTensorDescriptors merges n and c wrongly): transform into a "
                             f"y with decreasing strides, each a multiple of the next, and copy from there")
        api.transform_tensor(h, a, tx.desc, tx.ptr, b, ty.desc, ty.ptr)


def _relayout(x: object, y_ptr: int, channels_last: bool, op: str, handle: api.Handle | None, stream: object,
              device: int | None) -> Tensor:
    tx = _tensor(x, "x", op)
    _rank(op, "x", tx, (4, 5))
    if isinstance(y_ptr, bool) or not isinstance(y_ptr, int) or y_ptr < 0:
        raise TypeError(f"{op}: y_ptr must be a device address (int >= 0); got {y_ptr!r}")
    strides = layout.channels_last_strides(tx.dims) if channels_last else layout.packed_strides(tx.dims)
    ty = Tensor.make(y_ptr, tx.dims, tx.dtype, strides)
    transform_tensor(tx, ty, handle=handle, stream=stream, device=device)
    return ty


def to_channels_last(x: object, y_ptr: int, *, handle: api.Handle | None = None, stream: object = None,
                     device: int | None = None) -> Tensor:
    """Copy x (any layout) into dense channels-last (NHWC / NDHWC) memory at `y_ptr`; returns that tensor.

    `y_ptr` must hold `x.nbytes`-worth of dense elements (prod(dims) * itemsize)."""
    return _relayout(x, y_ptr, True, "to_channels_last", handle, stream, device)


def to_channels_first(x: object, y_ptr: int, *, handle: api.Handle | None = None, stream: object = None,
                      device: int | None = None) -> Tensor:
    """Copy x (any layout) into packed channels-first (NCHW / NCDHW) memory at `y_ptr`; returns that tensor."""
    return _relayout(x, y_ptr, False, "to_channels_first", handle, stream, device)
