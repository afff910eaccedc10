"""Pure-Python tensor layout math for MIOpen tensor descriptors.

Nothing here touches ctypes or MIOpen; the descriptor module turns the results into real
descriptors.  Conventions, matching ``miopenSetTensorDescriptor``:

* **dims** are always given in MIOpen's *logical* order N, C, D1, ..., Dk (spatial dims
  slowest to fastest, e.g. N, C, H, W), whatever the memory layout is;
* **strides** (in elements, not bytes) express the memory layout.

"Channels-first" memory (NCHW, NCDHW, ...) is plain row-major over the logical dims, i.e.
*packed*.  "Channels-last" memory (NHWC, NDHWC, ...) stores C fastest, then the spatial dims
from last to first, then N.  For rank 1 and 2 (no spatial dims) the two coincide.

MIOpen (``TensorDescriptor::CheckArgsAndInit``) requires every length and every stride to be
``> 0`` and ``<= INT64_MAX``; every function here validates the same bounds, so zero-sized dims
are rejected with a ``ValueError`` naming the offending index.
"""

from __future__ import annotations

import enum
import operator
import re
from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from ._generated._pointers import span_bytes
from ._generated._support import name_list, quoted

__all__ = [
    "INT64_MAX",
    "DATA_TYPES",
    "DataTypeInfo",
    "StorageOrder",
    "canonical_strides",
    "channels_last_strides",
    "data_type_info",
    "descriptor_from_order_and_dims",
    "dtype_name_for",
    "element_space",
    "is_channels_last",
    "is_dense",
    "is_packed",
    "itemsize",
    "layout_of",
    "num_bytes",
    "numpy_name",
    "packed_strides",
]

INT64_MAX = 2**63 - 1
"""Upper bound MIOpen accepts for a length or a stride."""


# --------------------------------------------------------------------------------------
# Storage orders
# --------------------------------------------------------------------------------------


class StorageOrder(enum.Enum):
    """How a tensor is laid out in memory.

    ``NCHW``/``NCDHW`` and ``NHWC``/``NDHWC`` are the named 4-D/5-D layouts MIOpen knows
    (``miopenTensorLayout_t``).  ``CHANNELS_FIRST`` / ``CHANNELS_LAST`` are the rank-agnostic
    notions: N C D1..Dk (row-major) versus N D1..Dk C in memory.
    """

    NCHW = "NCHW"
    NHWC = "NHWC"
    NCDHW = "NCDHW"
    NDHWC = "NDHWC"
    CHANNELS_FIRST = "channels_first"
    CHANNELS_LAST = "channels_last"

    @property
    def channels_last(self) -> bool:
        """True for NHWC, NDHWC and CHANNELS_LAST."""
        return self in (StorageOrder.NHWC, StorageOrder.NDHWC, StorageOrder.CHANNELS_LAST)

    @property
    def ndim(self) -> int | None:
        """The rank a named order implies (4 or 5); None for the generic orders."""
        return len(self.value) if self.value.isupper() else None

    @property
    def generic(self) -> StorageOrder:
        """CHANNELS_LAST or CHANNELS_FIRST, forgetting the rank."""
        return StorageOrder.CHANNELS_LAST if self.channels_last else StorageOrder.CHANNELS_FIRST

    @property
    def miopen_layout_name(self) -> str | None:
        """The ``miopenTensorLayout_t`` constant's name (e.g. ``'miopenTensorNHWC'``), or None."""
        return f"miopenTensor{self.value}" if self.ndim is not None else None

    @classmethod
    def for_rank(cls, ndim: int, channels_last: bool) -> StorageOrder:
        """The named order for rank 4 or 5, the generic one for any other rank."""
        ndim = _as_int(ndim, "ndim")
        if ndim < 1:
            raise ValueError(f"ndim: expected an int >= 1, got {ndim}")
        if ndim == 4:
            return cls.NHWC if channels_last else cls.NCHW
        if ndim == 5:
            return cls.NDHWC if channels_last else cls.NCDHW
        return cls.CHANNELS_LAST if channels_last else cls.CHANNELS_FIRST

    @classmethod
    def parse(cls, value: StorageOrder | str) -> StorageOrder:
        """Accept a member, a member name or value (any case), or a layout string.

        Layout strings are N, C and distinct spatial letters with C second or last:
        ``"NCHW"``, ``"nhwc"``, ``"NWC"``, ``"NCDHW"``...  Strings of rank 4 or 5 map to the
        named members, other ranks to CHANNELS_FIRST / CHANNELS_LAST.
        """
        return _parse_order(value, "value")[0]


_LAYOUT_RE = re.compile(r"^N[A-Z]+$")


def _parse_order(value: object, param: str) -> tuple[StorageOrder, int | None]:
    """Return (order, rank implied by the spelling or None)."""
    if isinstance(value, StorageOrder):
        return value, value.ndim
    if not isinstance(value, str):
        raise TypeError(
            f"{param}: expected a StorageOrder or a str such as 'NCHW' or 'NHWC', "
            f"got {type(value).__name__}"
        )
    text = value.strip()
    for member in StorageOrder:
        if text.upper() in (member.name, member.value.upper()):
            return member, member.ndim
    upper = text.upper()
    if (
        _LAYOUT_RE.match(upper)
        and len(set(upper)) == len(upper)
        and upper.count("C") == 1
        and (upper[1] == "C" or upper[-1] == "C")
    ):
        rank = len(upper)
        channels_last = rank > 2 and upper[-1] == "C"
        return StorageOrder.for_rank(rank, channels_last), rank
    names = ", ".join(m.name for m in StorageOrder)
    raise ValueError(
        f"{param}: unknown storage order {value!r}; expected one of {names} or a layout "
        "string like 'NCW'/'NWC' (N first, C second or last, distinct letters)"
    )


# --------------------------------------------------------------------------------------
# Validation helpers
# --------------------------------------------------------------------------------------


def _as_int(value: object, what: str) -> int:
    if isinstance(value, bool):
        raise TypeError(f"{what}: expected an int, got bool {value!r}")
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"{what}: expected an int, got {type(value).__name__} {value!r}") from None


def _int_tuple(values: object, param: str, what: str) -> tuple[int, ...]:
    """Validate a non-empty sequence of ints in [1, INT64_MAX]."""
    if isinstance(values, (str, bytes, bytearray, Mapping)) or not isinstance(values, Iterable):
        raise TypeError(
            f"{param}: expected a sequence of ints, got {type(values).__name__}"
        )
    out = tuple(_as_int(v, f"{param}[{i}]") for i, v in enumerate(values))
    if not out:
        raise ValueError(f"{param}: expected at least one {what}, got none")
    for i, v in enumerate(out):
        if v < 1:
            raise ValueError(f"{param}[{i}]: every {what} must be >= 1 (MIOpen rejects {v})")
        if v > INT64_MAX:
            raise ValueError(f"{param}[{i}]: {what} {v} exceeds INT64_MAX")
    return out


def _dims(dims: object, param: str = "dims") -> tuple[int, ...]:
    return _int_tuple(dims, param, "dim")


def _dims_strides(dims: object, strides: object) -> tuple[tuple[int, ...], tuple[int, ...]]:
    d = _dims(dims)
    s = _int_tuple(strides, "strides", "stride")
    if len(d) != len(s):
        raise ValueError(
            f"strides: expected {len(d)} strides to match dims {d}, got {len(s)}: {s}"
        )
    return d, s


# --------------------------------------------------------------------------------------
# Stride math
# --------------------------------------------------------------------------------------


def _fastest_first(ndim: int, channels_last: bool) -> list[int]:
    """Logical axis indices ordered from fastest- to slowest-varying in memory."""
    if channels_last and ndim >= 3:
        return [1, *range(ndim - 1, 1, -1), 0]
    return list(range(ndim - 1, -1, -1))


def _strides_for(dims: tuple[int, ...], channels_last: bool) -> tuple[int, ...]:
    strides = [0] * len(dims)
    z = 1
    for axis in _fastest_first(len(dims), channels_last):
        strides[axis] = z
        z *= dims[axis]
    return tuple(strides)


def packed_strides(dims: Sequence[int]) -> tuple[int, ...]:
    """Row-major (channels-first, NCHW/NCDHW) strides for logical ``dims``.

    >>> packed_strides((2, 3, 4, 5))
    (60, 20, 5, 1)
    """
    return _strides_for(_dims(dims), channels_last=False)


def channels_last_strides(dims: Sequence[int]) -> tuple[int, ...]:
    """Strides, in logical N, C, D1..Dk order, of a tensor stored channels-last.

    Memory order is N, D1..Dk, C.  For rank 1 and 2 this equals :func:`packed_strides`.

    >>> channels_last_strides((2, 3, 4, 5))
    (60, 1, 15, 3)
    """
    return _strides_for(_dims(dims), channels_last=True)


def descriptor_from_order_and_dims(
    order: StorageOrder | str, dims: Sequence[int]
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Caffe2's ``descriptor_from_order_and_dims``, with the order honoured.

    ``dims`` are in the storage order's own axis order (NHWC: ``(N, H, W, C)``, as Caffe2
    passes them).  Returns ``(logical_dims, strides)``: the dims reordered to N, C, D1..Dk and
    the strides that describe that memory exactly (packed for channels-first orders,
    channels-last strides otherwise).  Named orders require their rank (4 or 5); the generic
    orders and layout strings such as ``"NWC"`` need rank >= 2.
    """
    parsed, rank = _parse_order(order, "order")
    d = _dims(dims)
    if rank is not None and len(d) != rank:
        name = parsed.name if isinstance(order, StorageOrder) else repr(order)
        raise ValueError(
            f"dims: order {name} expects {rank} dims, got {len(d)}: {d}"
        )
    if len(d) < 2:
        raise ValueError(
            f"dims: order {parsed.name} needs at least 2 dims (N and C), got {len(d)}: {d}"
        )
    if parsed.channels_last:
        logical = (d[0], d[-1], *d[1:-1])
    else:
        logical = d
    return logical, _strides_for(logical, parsed.channels_last)


def _nested(dims: tuple[int, ...], strides: tuple[int, ...], perm: list[int]) -> bool:
    """Whether the non-size-1 axes, walked fastest first along ``perm``, never overlap.

    Each such axis must start at or beyond the span of the faster ones.  Size-1 axes are
    ignored, so the answer never depends on their (irrelevant) strides.
    """
    span = 1
    for axis in perm:
        if dims[axis] == 1:
            continue
        if strides[axis] < span:
            return False
        span = strides[axis] * dims[axis]
    return True


def _exact(dims: tuple[int, ...], strides: tuple[int, ...], perm: list[int]) -> bool:
    """Whether the strides of non-size-1 axes equal the packed strides in ``perm`` order."""
    z = 1
    for axis in perm:
        if dims[axis] != 1 and strides[axis] != z:
            return False
        z *= dims[axis]
    return True


def is_packed(dims: Sequence[int], strides: Sequence[int]) -> bool:
    """True if the strides are row-major packed (NCHW-style), ignoring size-1 dims' strides.

    This is MIOpen's ``IsContiguous``; MIOpen's ``IsPacked`` (dense in any axis order) is
    :func:`is_dense`.
    """
    d, s = _dims_strides(dims, strides)
    return _exact(d, s, _fastest_first(len(d), channels_last=False))


def is_channels_last(dims: Sequence[int], strides: Sequence[int]) -> bool:
    """True if the strides are dense channels-last (NHWC-style), ignoring size-1 dims' strides.

    For rank <= 2, or when C and all spatial dims but one are 1, a tensor can be both packed
    and channels-last.
    """
    d, s = _dims_strides(dims, strides)
    return _exact(d, s, _fastest_first(len(d), channels_last=True))


def is_dense(dims: Sequence[int], strides: Sequence[int]) -> bool:
    """True if the strides map the elements one-to-one onto ``0 .. prod(dims) - 1``.

    That is a packed layout in *some* axis order.  MIOpen's ``IsPacked`` only compares element
    space with element count, which overlapping strides can fool: dims (2, 2, 2) with strides
    (5, 1, 1) span 8 elements but hit offsets 1 and 6 twice; this returns False for them.
    """
    d, s = _dims_strides(dims, strides)
    order = sorted((axis for axis in range(len(d)) if d[axis] != 1), key=lambda a: (s[a], d[a]))
    return _exact(d, s, order)


def layout_of(dims: Sequence[int], strides: Sequence[int]) -> StorageOrder | None:
    """The dense storage order the strides describe, or None.

    Rank 4 gives NCHW/NHWC, rank 5 NCDHW/NDHWC, other ranks CHANNELS_FIRST/CHANNELS_LAST.
    When both fit (size-1 dims make them identical in memory) channels-first wins.  A dense
    layout in another axis order, or a non-dense one, gives None.
    """
    d, s = _dims_strides(dims, strides)
    if _exact(d, s, _fastest_first(len(d), channels_last=False)):
        return StorageOrder.for_rank(len(d), channels_last=False)
    if _exact(d, s, _fastest_first(len(d), channels_last=True)):
        return StorageOrder.for_rank(len(d), channels_last=True)
    return None


def canonical_strides(
    dims: Sequence[int], strides: Sequence[int], channels_last: bool | None = None
) -> tuple[int, ...]:
    """Rewrite the strides of size-1 dims so equal layouts give equal strides (cache keys).

    A size-1 dim's stride never matters, so, like ATen's ``fixSizeOneDimStride``, it is set to
    the value a packed layout gives it: walking the axes fastest first in the chosen order
    (channels-last: C, Dk..D1, N; otherwise Dk..D1, C, N), a size-1 axis gets the span of the
    faster axes, ``stride * size`` of the nearest faster non-size-1 axis (1 if none).  For a
    dense tensor that is exactly the packed stride; for a strided (gapped) tensor it keeps the
    strides monotonic in that order, which MIOpen's layout checks expect.  Strides of other dims
    are returned unchanged.

    ``channels_last=None`` detects the order from the non-size-1 axes only: channels-last if
    their strides nest in channels-last order but not in channels-first order.  The result is
    therefore idempotent and independent of the size-1 strides passed in.
    """
    d, s = _dims_strides(dims, strides)
    if channels_last is None:
        cl_perm = _fastest_first(len(d), channels_last=True)
        cf_perm = _fastest_first(len(d), channels_last=False)
        channels_last = _nested(d, s, cl_perm) and not _nested(d, s, cf_perm)
    elif not isinstance(channels_last, bool):
        raise TypeError(
            f"channels_last: expected a bool or None, got {type(channels_last).__name__}"
        )
    out = list(s)
    z = 1
    for axis in _fastest_first(len(d), channels_last):
        if d[axis] == 1:
            out[axis] = z
        else:
            z = s[axis] * d[axis]
    return tuple(out)


def element_space(dims: Sequence[int], strides: Sequence[int]) -> int:
    """Elements the memory spans: ``1 + sum((d - 1) * s)`` (MIOpen's ``GetElementSpace``; `span_bytes` of one-byte
    elements)."""
    d, s = _dims_strides(dims, strides)
    return span_bytes(d, s, 1)


def num_bytes(dims: Sequence[int], strides: Sequence[int], itemsize: int | str) -> int:
    """Bytes the memory spans; ``itemsize`` is a byte count or a data type name."""
    if isinstance(itemsize, str):
        size = data_type_info(itemsize).itemsize
    else:
        size = _as_int(itemsize, "itemsize")
        if size < 1:
            raise ValueError(f"itemsize: expected an int >= 1 or a data type name, got {size}")
    d, s = _dims_strides(dims, strides)
    return span_bytes(d, s, size)


# --------------------------------------------------------------------------------------
# Data types
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DataTypeInfo:
    """A MIOpen data type, keyed by name (the enum values are generated per release).

    ``name`` is the newest MIOpen spelling, ``aliases`` older ones.  ``dtype_name`` is the
    numpy / torch name (``torch.<dtype_name>``); numpy itself lacks bfloat16 and fp8.
    """

    name: str
    itemsize: int
    dtype_name: str
    aliases: tuple[str, ...] = ()
    is_floating_point: bool = True

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)


_INFOS: tuple[DataTypeInfo, ...] = (
    DataTypeInfo("miopenHalf", 2, "float16"),
    DataTypeInfo("miopenFloat", 4, "float32"),
    DataTypeInfo("miopenInt32", 4, "int32", is_floating_point=False),
    DataTypeInfo("miopenInt8", 1, "int8", is_floating_point=False),
    DataTypeInfo("miopenBFloat16", 2, "bfloat16"),
    DataTypeInfo("miopenDouble", 8, "float64"),
    DataTypeInfo("miopenFloat8_fnuz", 1, "float8_e4m3fnuz", aliases=("miopenFloat8",)),
    DataTypeInfo("miopenBFloat8_fnuz", 1, "float8_e5m2fnuz", aliases=("miopenBFloat8",)),
    DataTypeInfo("miopenInt64", 8, "int64", is_floating_point=False),
)

DATA_TYPES: Mapping[str, DataTypeInfo] = MappingProxyType(
    {name: info for info in _INFOS for name in info.names}
)
"""Every MIOpen data type name (aliases included) -> its :class:`DataTypeInfo`."""

_BY_DTYPE: Mapping[str, DataTypeInfo] = MappingProxyType({i.dtype_name: i for i in _INFOS})

_UNSUPPORTED = {
    "miopenInt8x4": "miopenInt8x4 was discontinued (MIOpen's GetTypeSize never supported it)",
}

# Spellings that mean one thing only.  Bare "float", "int" and "long" are refused: numpy reads
# "float"/"int" as float64/int64, torch.float/torch.int are float32/int32.
_DTYPE_ALIASES: Mapping[str, str] = MappingProxyType(
    {
        "half": "float16",
        "double": "float64",
        "f2": "float16",
        "f4": "float32",
        "f8": "float64",
        "i1": "int8",
        "i4": "int32",
        "i8": "int64",
        "torch.half": "float16",
        "torch.float": "float32",
        "torch.double": "float64",
        "torch.int": "int32",
        "torch.long": "int64",
    }
)
_AMBIGUOUS = {"float", "int", "long"}


def data_type_info(name: str) -> DataTypeInfo:
    """The :class:`DataTypeInfo` for a MIOpen data type name such as ``'miopenHalf'``."""
    if not isinstance(name, str):
        raise TypeError(f"dtype_name: expected a MIOpen data type name (str), got {type(name).__name__}")
    info = DATA_TYPES.get(name)
    if info is not None:
        return info
    if name in _UNSUPPORTED:
        raise ValueError(f"dtype_name: {_UNSUPPORTED[name]}")
    raise ValueError(
        f"dtype_name: unknown MIOpen data type {name!r}; expected one of {', '.join(DATA_TYPES)}"
    )


def itemsize(dtype_name: str) -> int:
    """Bytes per element of a MIOpen data type name (``'miopenHalf'`` -> 2)."""
    return data_type_info(dtype_name).itemsize


def numpy_name(dtype_name: str) -> str:
    """The numpy / torch dtype name of a MIOpen data type name (``'miopenHalf'`` -> 'float16')."""
    return data_type_info(dtype_name).dtype_name


def _dtype_text(dtype: object) -> str:
    if isinstance(dtype, str):
        return dtype
    name = getattr(dtype, "name", None)  # numpy.dtype
    if isinstance(name, str) and type(dtype).__module__.startswith("numpy"):
        return name
    text = str(dtype)  # torch.dtype prints as 'torch.float32'
    if text.startswith("torch."):
        return text
    raise TypeError(
        "dtype: expected a dtype name (str), a numpy.dtype or a torch.dtype, "
        f"got {type(dtype).__name__}"
    )


def dtype_name_for(dtype: object, available: Container[str] | None = None) -> str:
    """The MIOpen data type name for a numpy / torch dtype or its name.

    Accepts ``'float32'``, ``'torch.float32'``, ``'<f4'``, ``'half'``, ``numpy.dtype`` and
    ``torch.dtype`` objects, and MIOpen names themselves.  Returns the newest MIOpen spelling
    (``'miopenFloat8_fnuz'``); pass ``available`` (e.g. the generated enum's member names) to
    get the spelling a given release has (``'miopenFloat8'``).
    """
    text = _dtype_text(dtype).strip()
    if text in DATA_TYPES or text in _UNSUPPORTED:
        info = data_type_info(text)
    else:
        key = text
        for prefix in ("numpy.", "np."):
            if key.startswith(prefix):
                key = key[len(prefix):]
        if key.startswith(("<", "=", "|")) and key[1:] in _DTYPE_ALIASES:
            key = key[1:]
        if key in _AMBIGUOUS:
            raise ValueError(
                f"dtype: {text!r} is ambiguous (numpy reads it as 64-bit, torch as 32-bit); "
                "use an explicit name such as 'float32' or 'torch.float'"
            )
        key = _DTYPE_ALIASES.get(key, key)
        if key.startswith("torch."):
            key = key[len("torch."):]
        found = _BY_DTYPE.get(key)
        if found is None:
            known = name_list(sorted(_BY_DTYPE))
            raise ValueError(f"dtype: no MIOpen data type for {quoted(text)}; supported: {known}")
        info = found
    if available is None:
        return info.name
    for name in info.names:
        if name in available:
            return name
    raise ValueError(
        f"available: none of {', '.join(info.names)} (for dtype {text!r}) is in this MIOpen release"
    )
