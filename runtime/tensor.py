"""`Tensor`: what the ops need of a device tensor (address, dims, strides, dtype), from a pyopencl `Array`
(MIOpen's OpenCL backend: the address is the `cl_mem`), a PyTorch tensor, anything with `__cuda_array_interface__`
or a DLPack exporter on a device, or given explicitly (`Tensor.make` takes every buffer the typed API takes). The
kinds and their order are the typed API's (`_pointers.ARRAY_KINDS`, one reader for both). A Tensor does
not keep the memory alive: keep the array or buffer referenced while MIOpen uses it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard

from . import layout
from ._args import INT64_MAX, int_seq
from ._generated import api
from ._generated._pointers import (ACCEPTED, RELEASED, array_kind, buffer_bytes, check_address, check_extent,
                                   device_address, dlpack_layout, span_bytes)
from .descriptors import (DataTypeLike, FrozenTensorDescriptor, _generation, data_type, itemsize,
                          tensor_descriptor_of)
from .errors import ShapeError


@dataclass(frozen=True)
class Tensor:
    """A view of device memory: `ptr` (never null), dims (each >= 1) and strides in
    elements (MIOpen's logical N, C, spatial order), and the MIOpen data type."""

    ptr: int
    dims: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: api.DataType

    @classmethod
    def make(cls, ptr: object, dims: Sequence[int], dtype: DataTypeLike, strides: Sequence[int] | None = None
             ) -> Tensor:
        """`ptr`: any device buffer the typed API takes (`_pointers.ARRAY_KINDS`, read by the one reader: an int,
        a pyopencl Buffer or Array (its cl_mem), `data_ptr()`, a `__cuda_array_interface__` or DLPack exporter),
        or a `PersistentBuffer`. A buffer object whose
        size is known (`buffer_bytes`: the exporter's own extent; a PersistentBuffer's `nbytes`) must hold the
        extent the dims and strides span; a released one is refused."""
        have = None
        if not isinstance(ptr, int):
            from .workspace import PersistentBuffer

            if isinstance(ptr, PersistentBuffer):
                have, ptr = ptr.nbytes, ptr.data_ptr()
            elif array_kind(ptr) is not None:  # the one reader: every kind of device buffer, in its order
                have = buffer_bytes(ptr, "ptr", "Tensor")
                ptr = device_address(ptr, "ptr", "Tensor")
        if isinstance(ptr, bool) or not isinstance(ptr, int) or ptr < 0:
            raise TypeError(f"Tensor: ptr must be a device address (int >= 0); got {ptr!r}")
        if ptr >= 1 << 64:  # ctypes would pass it modulo 2**64 (2**64 + 0x1000 as 0x1000), without a word
            raise ValueError(f"Tensor: ptr {ptr:#x} does not fit a 64-bit address")
        d = dims if _plain(dims) else int_seq(dims, "dims", "Tensor")
        if d and (min(d) < 1 or max(d) > INT64_MAX):
            i = next(i for i, v in enumerate(d) if not 1 <= v <= INT64_MAX)
            raise ShapeError(f"Tensor: every dim must be >= 1 (MIOpen has no empty tensors) and <= {INT64_MAX}; "
                             f"got dims[{i}] = {d[i]} in {d}")
        if ptr == 0:
            raise ValueError(f"Tensor: a null device address for a tensor of dims {d}")
        s = _packed(d) if strides is None else (strides if _plain(strides) else int_seq(strides, "strides", "Tensor"))
        if s and (min(s) < 0 or max(s) > INT64_MAX):
            i = next(i for i, v in enumerate(s) if not 0 <= v <= INT64_MAX)
            raise ShapeError(f"Tensor: every stride must be in [0, {INT64_MAX}]; got strides[{i}] = {s[i]} in {s}")
        if len(s) != len(d):
            raise ShapeError(f"Tensor: {len(d)} dims but {len(s)} strides")
        dt = data_type(dtype)
        if have is not None:
            check_extent(have, extent(d, s, dt), "ptr", "Tensor")
        return cls(ptr, d, s, dt)

    @property
    def desc(self) -> FrozenTensorDescriptor:
        return tensor_descriptor_of(self.dtype, self.dims, self.strides)

    @property
    def nbytes(self) -> int:
        """The bytes the view spans (`extent`; a broadcast stride of 0 spans nothing)."""
        return extent(self.dims, self.strides, self.dtype)

    @property
    def ndim(self) -> int:
        return len(self.dims)

    def data_ptr(self) -> int:
        return self.ptr


def extent(dims: tuple[int, ...], strides: tuple[int, ...], dtype: api.DataType) -> int:
    """The bytes a view spans from its address (`span_bytes`: (largest element offset + 1) * element size; a
    broadcast stride of 0 spans nothing). O(ndim), whatever the element count."""
    return span_bytes(dims, strides, itemsize(dtype))


def _plain(v: object) -> TypeGuard[tuple[int, ...]]:
    """A tuple of exact ints (checked only for range)."""
    return type(v) is tuple and all(type(e) is int for e in v)


_PACKED: dict[tuple[int, ...], tuple[int, ...]] = {}


def _packed(dims: tuple[int, ...]) -> tuple[int, ...]:
    """layout.packed_strides, remembered per dims."""
    s = _PACKED.get(dims)
    if s is None:
        s = layout.packed_strides(dims)
        if len(_PACKED) < 1024:
            _PACKED[dims] = s
    return s


_TYPESTR = {"<f2": "float16", "<f4": "float32", "<f8": "float64", "<i4": "int32", "|i1": "int8", "<i8": "int64",
            "<V2": "bfloat16", "|u1": "uint8"}


def _address(value: object, name: str, source: str) -> int:
    """An address exactly as the producer gave it: an int in [0, 2**64) (no int() of a float or a string)."""
    return check_address(value, name, "as_tensor", source)


#: PyTorch-like (shape, stride(), dtype) already checked -> (dims, strides, data type); bounded
_TORCH_META: dict[tuple[object, object, object], tuple[tuple[int, ...], tuple[int, ...], api.DataType]] = {}
_TORCH_META_MAX = 1024
_new_tensor = object.__new__
_set = object.__setattr__


def _checked_tensor(ptr: int, dims: tuple[int, ...], strides: tuple[int, ...], dtype: api.DataType) -> Tensor:
    """A Tensor of values `Tensor.make` has accepted before (its dataclass __init__ skipped)."""
    t = _new_tensor(Tensor)
    _set(t, "ptr", ptr)
    _set(t, "dims", dims)
    _set(t, "strides", strides)
    _set(t, "dtype", dtype)
    return t


Layout = tuple[tuple[int, ...], tuple[int, ...], api.DataType]


def layout_of(obj: object) -> tuple[int, Layout] | None:
    """(address, (dims, strides, dtype)) of a `Tensor`, or of a PyTorch-like tensor, a `__cuda_array_interface__`
    object or a pyopencl Array whose layout `as_tensor` has checked before (its address, and device or buffer
    offset, read afresh): what the ops' fast paths key on, without making a Tensor. None for anything else:
    `as_tensor` decides (and reports)."""
    kind = type(obj)
    if kind is Tensor:
        return obj.ptr, (obj.dims, obj.strides, obj.dtype)  # type: ignore[attr-defined]
    if kind in _ARRAY_TYPES:  # one check for a PyTorch-like tensor, which is neither of these
        if kind in _CL_TYPES:  # a pyopencl Array: its buffer and offset read on every call (the buffer may change)
            try:
                attrs: dict[str, Any] = obj.__dict__  # where pyopencl's Array keeps its attributes
                base_data: Any
                memo = attrs.get(_LAYOUT_MEMO)
                if memo is not None:  # the same buffer, shape, strides and dtype objects as last time: its answer
                    base_data = attrs["base_data"]
                    if (memo[0] is base_data and memo[1] is attrs["shape"] and memo[2] is attrs["strides"]
                            and memo[3] is attrs["dtype"] and memo[4] == _generation[0] and not attrs["offset"]
                            and not (RELEASED and RELEASED.get(id(base_data)) is base_data)):
                        return memo[5]  # type: ignore[no-any-return]
                lay = _CL_META.get((kind, obj.shape, obj.strides, obj.dtype))  # type: ignore[attr-defined]
                if lay is None or obj.offset != 0:  # type: ignore[attr-defined]
                    return None
                base_data = obj.base_data  # type: ignore[attr-defined]
                ptr = base_data.int_ptr
                if RELEASED and RELEASED.get(id(base_data)) is base_data:
                    return None  # released: the full path refuses it
                # its buffer checked against the extent of its layout: once per (array, buffer), marked in the array
                if attrs.get(_EXTENT_CHECKED) is not base_data:
                    size = base_data.size
                    if type(size) is not int or size < extent(*lay):
                        return None  # the full path reports it
                    attrs[_EXTENT_CHECKED] = base_data
                if type(ptr) is not int or not 0 < ptr < 1 << 64:
                    return None
                parts = (ptr, lay)
                # a buffer's cl_mem is its own for life (a released one is refused above): remembered with the objects
                attrs[_LAYOUT_MEMO] = (base_data, attrs["shape"], attrs["strides"], attrs["dtype"], _generation[0], parts)
            except Exception:  # noqa: BLE001 - unhashable or missing parts: the full path reports them
                return None
            return parts
        if kind in _CAI_TYPES:
            return _cai_parts(obj)
    try:
        shape, stride, dtype = obj.shape, obj.stride(), obj.dtype  # type: ignore[attr-defined]
        meta = _TORCH_META.get((shape, stride, dtype))
        if meta is None or getattr(obj, "is_cuda", None) is False:
            return None
        ptr = obj.data_ptr()  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - not PyTorch-like (or unhashable parts): the full path reports it
        return None
    if type(ptr) is not int or not 0 < ptr < 1 << 64:
        return None
    return ptr, meta


#: what `same_layouts` re-checks of an op's tensor arguments: (position, the object itself) of each absent one (None)
#: and each `Tensor` (a value: its layout is its own for life; it holds no memory); (position, its `layout_of`
#: answer) of each pyopencl Array (the answer its layout memo holds: no reference to the array or its buffer); the
#: ids of those arrays' buffers (checked against the released ones)
LayoutRecord = tuple[tuple[tuple[int, object], ...], tuple[tuple[int, tuple[int, Layout]], ...], frozenset[int]]


def record_layouts(objs: tuple[object, ...], generation: int) -> LayoutRecord | None:
    """What `same_layouts` needs to tell, on a later call, that `objs` (None for an absent one), objects
    `layout_of` has just answered for, would get the same answers: None unless each is None, a `Tensor` or a
    pyopencl Array whose layout memo holds for `generation` (PyTorch-like tensors and interface objects are read
    afresh on every call). Keeps no array and no buffer alive."""
    fixed: list[tuple[int, object]] = []
    arrays: list[tuple[int, tuple[int, Layout]]] = []
    buffers = []
    for i, obj in enumerate(objs):
        kind = type(obj)
        if obj is None or kind is Tensor:
            fixed.append((i, obj))
        elif kind in _CL_TYPES:
            memo = obj.__dict__.get(_LAYOUT_MEMO)
            if memo is None or memo[4] != generation:
                return None
            arrays.append((i, memo[5]))
            buffers.append(id(memo[0]))
        else:
            return None
    return tuple(fixed), tuple(arrays), frozenset(buffers)


def same_layouts(objs: tuple[object, ...], record: LayoutRecord) -> bool:
    """Whether `layout_of` would give `objs` the answers it gave when `record` was made (`record_layouts`): the
    same absent ones and `Tensor`s; for each pyopencl Array, its layout memo still the one that made its answer
    (each memo makes an answer of its own) and still true (`layout_of`'s memo check: the same buffer, shape,
    strides and dtype objects, offset 0; no buffer released since). One frame, no hashing; the caller checks that
    the descriptor-cache generation is the record's."""
    fixed, arrays, buffers = record
    for i, obj in fixed:
        if objs[i] is not obj:
            return False
    try:
        for i, parts in arrays:
            attrs = objs[i].__dict__
            memo = attrs[_LAYOUT_MEMO]
            if (memo[5] is not parts or memo[0] is not attrs["base_data"] or memo[1] is not attrs["shape"]
                    or memo[2] is not attrs["strides"] or memo[3] is not attrs["dtype"] or attrs["offset"]):
                return False
    except Exception:  # noqa: BLE001 - another kind of object, or a part removed since: the full path decides
        return False
    return not RELEASED or RELEASED.keys().isdisjoint(buffers)


#: __cuda_array_interface__ (type, shape, strides, typestr) already checked -> (dims, strides, data type); bounded
_CAI_META: dict[tuple[type, object, object, str], Layout] = {}
_CAI_META_MAX = 1024
#: the types in _CAI_META's keys (not PyTorch-like: as_tensor reads their interface): only they try it
_CAI_TYPES: set[type] = set()


def _cai_parts(obj: object) -> tuple[int, Layout] | None:
    """(address, layout) of a `__cuda_array_interface__` object of a type in `_CAI_TYPES` whose interface (a dict:
    shape and strides as tuples of ints, the typestr) was checked before, with an int address in (0, 2**64); None
    otherwise (the full path decides and reports)."""
    try:
        attrs = getattr(obj, "__dict__", None)
        if attrs and ("data_ptr" in attrs or "stride" in attrs):  # PyTorch-like after all: as_tensor's other path
            return None
        iface = obj.__cuda_array_interface__  # type: ignore[attr-defined]
        if type(iface) is not dict:
            return None
        shape, strides, data = iface["shape"], iface.get("strides"), iface["data"]
        if not _plain(shape) or not (strides is None or _plain(strides)) or type(data) is not tuple or len(data) != 2:
            return None
        meta = _CAI_META.get((type(obj), shape, strides, iface["typestr"]))
        ptr = data[0]
    except Exception:  # noqa: BLE001 - missing or unhashable parts: the full path reports them
        return None
    if meta is None or type(ptr) is not int or not 0 < ptr < 1 << 64:
        return None
    return ptr, meta


def _torch_fast(obj: object) -> Tensor | None:
    """A PyTorch-like tensor whose shape, strides and dtype were checked before, with an int address in
    (0, 2**64): its Tensor without checking them again; None for anything else (the full path decides)."""
    parts = layout_of(obj)
    return None if parts is None else _checked_tensor(parts[0], *parts[1])


#: the key under which a pyopencl Array's __dict__ holds the buffer (base_data) checked against its extent
_EXTENT_CHECKED = "_miopen_extent_checked"
#: the key under which a pyopencl Array's __dict__ holds its last `layout_of` answer, with the buffer, shape, strides
#: and dtype objects and the descriptor-cache generation it holds for (identity checks: O(1) per call)
_LAYOUT_MEMO = "_miopen_layout"
#: pyopencl-Array-like (type, shape, strides, dtype) already checked -> its layout; bounded
_CL_META: dict[tuple[type, object, object, object], Layout] = {}
_CL_META_MAX = 1024
#: the types in _CL_META's keys: only their instances try the pyopencl fast path
_CL_TYPES: set[type] = set()
#: every type of _CL_TYPES and _CAI_TYPES (added with them; a type left here after those forget it only costs a check)
_ARRAY_TYPES: set[type] = set()
#: cl_mem -> the Tensor last made for it from a remembered layout (a Tensor is a value: one per (layout, address)
#: serves every call); bounded
_CL_TENSORS: dict[int, Tensor] = {}
_CL_TENSORS_MAX = 256


def _cl_fast(obj: object) -> Tensor | None:
    """The Tensor of a pyopencl Array whose layout was checked before (`layout_of`), without checking it again;
    None otherwise (the full path decides and reports)."""
    parts = layout_of(obj)
    if parts is None:
        return None
    ptr, lay = parts
    t = _CL_TENSORS.get(ptr)
    if t is not None and t.dims is lay[0] and t.strides is lay[1] and t.dtype is lay[2]:
        return t
    t = _checked_tensor(ptr, *lay)
    if len(_CL_TENSORS) >= _CL_TENSORS_MAX:
        _CL_TENSORS.clear()
    _CL_TENSORS[ptr] = t
    return t


def as_tensor(obj: object, name: str = "tensor") -> Tensor:
    """A `Tensor` from a `Tensor` or a device array of a kind that carries its layout, tried in the one order of
    `_pointers.ARRAY_KINDS`: a pyopencl Array, a PyTorch tensor (data_ptr/shape/stride/dtype), a
    `__cuda_array_interface__` or a DLPack exporter; a bare buffer (an int, a pyopencl Buffer) is refused with the
    way to describe it (`Tensor.make`). Errors name `name`."""
    if isinstance(obj, Tensor):
        return obj
    if type(obj) in _CL_TYPES:
        fast = _cl_fast(obj)
        if fast is not None:
            return fast
    if type(obj) in _CAI_TYPES:
        parts = _cai_parts(obj)
        if parts is not None:
            return _checked_tensor(parts[0], *parts[1])
    fast = _torch_fast(obj)
    if fast is not None:
        return fast
    kind = array_kind(obj)  # the one order of the package's readers (_pointers.ARRAY_KINDS)
    if kind == "data_ptr()":
        data_ptr = getattr(obj, "data_ptr")
        shape_attr = getattr(obj, "shape", None)
        stride = getattr(obj, "stride", None)
        if shape_attr is None or not callable(stride):
            raise TypeError(f"{name}: a {type(obj).__name__} has data_ptr() but no shape and stride() (a PyTorch "
                            f"tensor has both): describe it with miopen.Tensor.make(buffer, dims, dtype)")
        if getattr(obj, "is_cuda", None) is False:
            raise ValueError(f"{name}: a host (CPU) tensor; the ops take GPU tensors")
        dtype = getattr(obj, "dtype", "")
        strides = stride()
        t = Tensor.make(_address(data_ptr(), name, "data_ptr()"), int_seq(shape_attr, "shape", name),
                        str(dtype), int_seq(strides, "stride()", name))
        try:
            key = (shape_attr, strides, dtype)
            if len(_TORCH_META) >= _TORCH_META_MAX:
                _TORCH_META.clear()
            _TORCH_META[key] = (t.dims, t.strides, t.dtype)
        except TypeError:  # unhashable parts: never taken by the fast path
            pass
        return t
    iface: object = None
    if kind == "__cuda_array_interface__":
        try:
            iface = getattr(obj, "__cuda_array_interface__", None)
        except Exception as exc:  # some producers raise for tensors they cannot describe
            raise TypeError(f"{name}: its __cuda_array_interface__ is unavailable: {exc}") from None
        if not isinstance(iface, Mapping):
            raise TypeError(f"{name}: its __cuda_array_interface__ must be a mapping; got {type(iface).__name__}")
    if isinstance(iface, Mapping):
        where = f"{name}: __cuda_array_interface__"
        shape = int_seq(iface.get("shape"), "shape", where, lo=1)
        typestr = iface.get("typestr")
        if not isinstance(typestr, str):
            raise TypeError(f"{where}: typestr must be a str; got {type(typestr).__name__}")
        dt = data_type(_TYPESTR.get(typestr, typestr))
        size = itemsize(dt)
        raw = iface.get("strides")
        byte_strides = None if raw is None else int_seq(raw, "strides", where, lo=0)
        if byte_strides is not None and any(x % size for x in byte_strides):
            raise ShapeError(f"{name}: byte strides {byte_strides} are not multiples of the item size {size}")
        strides = layout.packed_strides(shape) if byte_strides is None else tuple(x // size for x in byte_strides)
        data = iface.get("data")
        if not isinstance(data, (tuple, list)) or len(data) != 2:
            raise TypeError(f"{name}: __cuda_array_interface__['data'] must be (address, read_only); got {data!r:.60}")
        t = Tensor.make(_address(data[0], name, "__cuda_array_interface__"), shape, dt, strides)
        cls, raw_shape = type(obj), iface.get("shape")
        if (type(iface) is dict and _plain(raw_shape) and (raw is None or _plain(raw))
                and not any(hasattr(cls, a) for a in ("data_ptr", "stride"))):  # else not this path
            if len(_CAI_META) >= _CAI_META_MAX:
                _CAI_META.clear()
            _CAI_META[(cls, raw_shape, raw, typestr)] = (t.dims, t.strides, t.dtype)
            _CAI_TYPES.add(cls)
            _ARRAY_TYPES.add(cls)
        return t
    if kind == "OpenCL array":
        cl_array = _opencl_array(obj, name)
        if cl_array is not None:
            return cl_array
    if kind == "DLPack":
        return _dlpack_tensor(obj, name)
    if kind is not None:  # an address without a layout
        raise TypeError(f"{name}: a bare device buffer ({kind}) has no dims: describe it with "
                        f"miopen.Tensor.make(buffer, dims, dtype)")
    raise TypeError(f"{name} must be a miopen Tensor or a device array: {ACCEPTED} (a bare buffer through "
                    f"miopen.Tensor.make(buffer, dims, dtype)); got {type(obj).__name__}")


#: DLPack (type code, bits) -> the dtype name `data_type` reads
_DLPACK_DTYPES = {(0, 8): "int8", (0, 32): "int32", (0, 64): "int64", (1, 8): "uint8", (2, 16): "float16",
                  (2, 32): "float32", (2, 64): "float64", (4, 16): "bfloat16"}


def _dlpack_tensor(obj: object, name: str) -> Tensor:
    """The Tensor of a DLPack exporter on a device (kDLROCM, kDLCUDA, kDLCUDAManaged): one export read."""
    address, shape, strides, (code, bits, lanes) = dlpack_layout(obj, name, "as_tensor")
    dtype = _DLPACK_DTYPES.get((code, bits)) if lanes == 1 else None
    if dtype is None:
        raise TypeError(f"{name}: a DLPack tensor of type code {code}, {bits} bits x {lanes} lanes, which MIOpen "
                        f"has no type for")
    if shape is None:
        raise ValueError(f"{name}: a DLPack tensor without a readable shape")
    return Tensor.make(_address(address, name, "DLPack"), shape, dtype, strides)


def as_tensor_of(obj: object, fn: str, name: str) -> Tensor:
    """`as_tensor(obj, f"{fn}: {name}")` for an op's argument; the name is formatted only where the full path
    runs (a pyopencl Array seen before takes the fast path without it)."""
    if type(obj) is Tensor:
        return obj
    if type(obj) in _CL_TYPES:
        fast = _cl_fast(obj)
        if fast is not None:
            return fast
    return as_tensor(obj, f"{fn}: {name}")


def _opencl_array(obj: object, name: str) -> Tensor | None:
    """A pyopencl Array's Tensor (its buffer's cl_mem, shape, strides, dtype); None for anything else."""
    base = getattr(obj, "base_data", None)
    if not isinstance(getattr(base, "int_ptr", None), int) or not hasattr(obj, "offset"):
        return None
    offset = getattr(obj, "offset")
    if offset:
        raise ValueError(f"{name}: a pyopencl Array at byte offset {offset} of its buffer; MIOpen's OpenCL backend "
                         f"takes whole cl_mem buffers (no offsets): copy it into an Array of its own")
    shape = int_seq(getattr(obj, "shape", None), "shape", name, lo=1)
    size = int(getattr(getattr(obj, "dtype", None), "itemsize", 0) or 0)
    dt = data_type(str(getattr(obj, "dtype", "")))
    byte_strides = int_seq(getattr(obj, "strides", None), "strides", name, lo=0)
    if size == 0 or any(x % size for x in byte_strides):
        raise ShapeError(f"{name}: byte strides {byte_strides} are not multiples of the item size {size}")
    t = Tensor.make(int(getattr(base, "int_ptr")), shape, dt, tuple(x // size for x in byte_strides))
    check_extent(buffer_bytes(base, "its buffer (base_data)", name), extent(t.dims, t.strides, t.dtype),
                 "its buffer (base_data)", name)
    try:  # the fast path (layout_of) skips the check for this array while its buffer stays this one
        obj.__dict__[_EXTENT_CHECKED] = base
    except (AttributeError, TypeError):  # no __dict__: every call takes this path
        pass
    kind = type(obj)
    if not any(hasattr(kind, a) for a in ("data_ptr", "stride", "__cuda_array_interface__")):  # else not this path
        try:
            key = (kind, getattr(obj, "shape"), getattr(obj, "strides"), getattr(obj, "dtype"))
            if len(_CL_META) >= _CL_META_MAX:
                _CL_META.clear()
            _CL_META[key] = (t.dims, t.strides, t.dtype)
            _CL_TYPES.add(kind)
            _ARRAY_TYPES.add(kind)
        except TypeError:  # unhashable parts: never taken by the fast path
            pass
    return t


def same_dtype(op: str, **tensors: Tensor) -> api.DataType:
    """The common dtype of the named tensors, or a ShapeError listing them."""
    values = iter(tensors.values())
    first = next(values).dtype
    if all(t.dtype is first for t in values):
        return first
    kinds = {name: t.dtype for name, t in tensors.items()}
    if len(set(kinds.values())) > 1:
        listing = ", ".join(f"{n}={dt.name}" for n, dt in kinds.items())
        raise ShapeError(f"{op}: tensors must share one dtype; got {listing}")
    return next(iter(kinds.values()))


def same_dims(op: str, **tensors: Tensor) -> tuple[int, ...]:
    values = iter(tensors.values())
    first = next(values).dims
    if all(t.dims == first for t in values):
        return first
    dims = {name: t.dims for name, t in tensors.items()}
    if len(set(dims.values())) > 1:
        listing = ", ".join(f"{n}={d}" for n, d in dims.items())
        raise ShapeError(f"{op}: tensors must have the same dims; got {listing}")
    return next(iter(dims.values()))
