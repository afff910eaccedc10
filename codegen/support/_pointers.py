"""The one reader of addresses: device pointers (ints, DLPack tensors and capsules, __cuda_array_interface__),
streams and opaque pointers, with the checks every caller shares."""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Mapping, Sequence

from ._text import what

TYPE_CHECKING = False  # typing stays unimported at run time (import cost); type checkers read the block below
if TYPE_CHECKING:
    from typing import Any

#: addresses are unsigned 64-bit: ctypes would silently pass 2**64 + x as x and -1 as 2**64 - 1
ADDRESS_LIMIT = 1 << 64


def check_address(address: object, name: str, fn: str, source: str = "") -> int:
    """`address` as an int in [0, 2**64), or a TypeError/ValueError naming the function, the parameter
    and where the address came from (`source`, e.g. "data_ptr()")."""
    where = f" (from its {source})" if source else ""
    if isinstance(address, bool) or not isinstance(address, int):
        raise TypeError(f"{fn}: {name} must be an int address{where}; got {what(address)}")
    if not 0 <= address < ADDRESS_LIMIT:
        raise ValueError(f"{fn}: {name} must be an address in [0, 2**64){where}; got {address}")
    return int(address)


_STREAM_ATTRIBUTES = ("cuda_stream", "hip_stream", "stream_handle", "handle", "ptr")


def as_stream(value: object, name: str, fn: str) -> int | None:
    """A HIP stream: None/0 (the default stream), an int handle, a ctypes.c_void_p, or an object that
    carries one (`.cuda_stream` (torch), `.hip_stream`, `.stream_handle`, `.handle`, `.ptr` (CuPy),
    `_as_parameter_`); every handle must lie in [0, 2**64)."""
    if value is None:
        return None
    if type(value) is int and 0 <= value < ADDRESS_LIMIT:
        return value or None
    if isinstance(value, int) and not isinstance(value, bool):
        return check_address(value, name, fn) or None
    if isinstance(value, ctypes.c_void_p):
        return value.value or None
    for attr in _STREAM_ATTRIBUTES:
        try:
            inner = getattr(value, attr, None)
        except Exception as exc:  # e.g. a closed stream object refusing to give its handle
            raise ValueError(f"{fn}: {name}: its .{attr} is unavailable: {exc}") from None
        if isinstance(inner, int) and not isinstance(inner, bool):
            return check_address(inner, name, fn, f".{attr}") or None
    param = getattr(value, "_as_parameter_", None)
    if isinstance(param, ctypes.c_void_p):
        return param.value or None
    if isinstance(param, int) and not isinstance(param, bool):
        return check_address(param, name, fn, "_as_parameter_") or None
    raise TypeError(f"{fn}: {name} must be a stream (an int handle, or an object with .cuda_stream); got {what(value)}")


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    """dlpack.h's DLTensor (the head of DLManagedTensor, which a "dltensor" capsule points to)."""

    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32), ("dtype", _DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


#: DLPack device types whose memory a library kernel may address: kDLCUDA (2), kDLROCM (10),
#: kDLCUDAManaged (13). Host memory (kDLCPU 1, kDLCUDAHost 3, kDLROCMHost 11) and other devices are refused:
#: a kernel reading a host address as device memory faults or reads garbage.
DLPACK_DEVICE_TYPES: dict[int, str] = {2: "kDLCUDA", 10: "kDLROCM", 13: "kDLCUDAManaged"}
_DLPACK_NAMES = {1: "kDLCPU", 3: "kDLCUDAHost", 4: "kDLOpenCL", 7: "kDLVulkan", 8: "kDLMetal", 9: "kDLVPI",
                 11: "kDLROCMHost", 12: "kDLExtDev", 14: "kDLOneAPI", 15: "kDLWebGPU", 16: "kDLHexagon", 17: "kDLMAIA"}


def _check_dlpack_device(device_type: object, name: str, fn: str, source: str) -> None:
    if isinstance(device_type, int) and not isinstance(device_type, bool) and device_type in DLPACK_DEVICE_TYPES:
        return
    shown = _DLPACK_NAMES.get(device_type, f"device type {device_type!r}") if isinstance(device_type, int) \
        else f"device type {device_type!r}"
    accepted = ", ".join(f"{v} ({k})" for k, v in DLPACK_DEVICE_TYPES.items())
    raise ValueError(f"{fn}: {name} is {shown} memory (by its {source}), not device memory; device buffers are "
                     f"{accepted}")


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


#: the kinds of device array every reader of the package takes, in the one order each tries them (`array_kind`): the
#: typed API's buffers (`device_address`), the ops' tensors (`miopen.tensor.as_tensor`: the kinds that carry a
#: layout) and the HIP helpers
ARRAY_KINDS = ("int", "c_void_p", "OpenCL memory object", "OpenCL array", "data_ptr()", "__cuda_array_interface__",
               "DLPack")
#: what a device buffer may be, for the errors that refuse one
ACCEPTED = ("an int address, a pyopencl Buffer or Array, or an object with data_ptr() (a PyTorch tensor), "
            "__cuda_array_interface__ or __dlpack__ (a kDLROCM or kDLCUDA tensor)")


def array_kind(value: object) -> str | None:
    """Which of ARRAY_KINDS `value` is, trying them in their order; None for none of them (a host buffer, ...).
    Reads only attributes, never an exporter's interface (which may raise)."""
    if isinstance(value, int):
        return None if isinstance(value, bool) else "int"
    if isinstance(value, ctypes.c_void_p):
        return "c_void_p"
    kind = type(value)
    if kind in _CL_MEMORY_TYPES:
        return "OpenCL memory object"
    if kind in _CL_ARRAY_TYPES:
        return "OpenCL array"
    ptr = getattr(value, "int_ptr", None)
    if isinstance(ptr, int) and not isinstance(ptr, bool) and hasattr(value, "size"):
        return "OpenCL memory object"
    base = getattr(value, "base_data", None)
    if base is not None and hasattr(value, "offset") and isinstance(getattr(base, "int_ptr", None), int):
        return "OpenCL array"
    if callable(getattr(value, "data_ptr", None)):
        return "data_ptr()"
    if hasattr(value, "__cuda_array_interface__"):
        return "__cuda_array_interface__"
    if callable(getattr(value, "__dlpack__", None)):
        return "DLPack"
    return None


#: pyopencl's classes, once seen (`note_opencl_types`): their instances are classified by one set lookup
_CL_MEMORY_TYPES: set[type] = set()
_CL_ARRAY_TYPES: set[type] = set()


def _note_opencl_types() -> None:
    import sys

    cl = sys.modules.get("pyopencl")
    if cl is None:
        return
    for name in ("Buffer", "Image", "Pipe", "MemoryObject"):
        kind = getattr(cl, name, None)
        if isinstance(kind, type):
            _CL_MEMORY_TYPES.add(kind)
    array = sys.modules.get("pyopencl.array")
    kind = getattr(array, "Array", None) if array is not None else None
    if isinstance(kind, type):
        _CL_ARRAY_TYPES.add(kind)


def opencl_address(value: object, name: str, fn: str) -> int:
    """The cl_mem of a live pyopencl memory object (`int_ptr`), or of a pyopencl Array's buffer (`base_data`, at
    offset 0: MIOpen's OpenCL backend takes whole cl_mem buffers); a released one is refused."""
    if not hasattr(value, "int_ptr"):
        offset = getattr(value, "offset", 0)
        if offset:
            raise ValueError(f"{fn}: {name} is a pyopencl Array at byte offset {offset} of its buffer; MIOpen's "
                             f"OpenCL backend takes whole cl_mem buffers (no offsets): copy it into an Array of its own")
        value, name = getattr(value, "base_data"), f"{name} (its buffer, base_data)"
    if RELEASED and RELEASED.get(id(value)) is value:
        raise ValueError(f"{fn}: {name} is a released OpenCL buffer (its release() was called); pass a live one")
    try:
        ptr = value.int_ptr  # type: ignore[attr-defined]
    except Exception as exc:  # noqa: BLE001 - a released object that says so
        raise ValueError(f"{fn}: {name} is a released buffer ({exc})") from None
    if not ptr:
        raise ValueError(f"{fn}: {name} is a released buffer (its int_ptr is 0)")
    return check_address(ptr, name, fn, "int_ptr")


def device_address(value: object, name: str, fn: str, *, host: bool = False) -> int | None:
    """The address `value` carries, read by its kind (`array_kind`, in ARRAY_KINDS' order): an int, a c_void_p, a
    pyopencl memory object or Array (its cl_mem), `data_ptr()`, `__cuda_array_interface__` or DLPack; None when it
    carries none (a plain host buffer).

    Every address, whatever its source, must lie in [0, 2**64) (never wrapped modulo 2**64). Without
    `host`, memory the object itself says is on the host is refused: a torch tensor with `is_cuda`
    False, a `__dlpack_device__()` or DLPack tensor of a device type outside DLPACK_DEVICE_TYPES. With
    `host` (a copy, whose kind says where each side is), such an object's data_ptr() is taken as it is,
    and a DLPack object on the host is no address (None: its buffer is read as a host buffer). A
    DLPack tensor's `byte_offset` is added to its data.
    """
    if not _CL_MEMORY_TYPES:
        _note_opencl_types()
    kind = array_kind(value)
    if kind == "int":
        return check_address(value, name, fn)
    if kind == "c_void_p":
        return value.value or 0  # type: ignore[attr-defined]
    if kind == "OpenCL memory object" or kind == "OpenCL array":
        return opencl_address(value, name, fn)
    if kind == "data_ptr()":
        if not host:
            _check_not_host(value, name, fn)
        return check_address(value.data_ptr(), name, fn, "data_ptr()")  # type: ignore[attr-defined]
    if kind == "__cuda_array_interface__":
        try:
            iface = getattr(value, "__cuda_array_interface__", None)
        except Exception as exc:  # producers raise for what they cannot describe (e.g. a CPU tensor)
            raise TypeError(f"{fn}: {name}: its __cuda_array_interface__ is unavailable: {exc}") from None
        data = iface.get("data") if isinstance(iface, Mapping) else None
        if not isinstance(data, (tuple, list)) or len(data) != 2:
            raise TypeError(f"{fn}: {name}: __cuda_array_interface__ must be a mapping whose 'data' is "
                            f"(address, read_only); got {what(data if isinstance(iface, Mapping) else iface)}")
        return check_address(data[0], name, fn, "__cuda_array_interface__")
    if kind == "DLPack":
        if host and not _dlpack_on_device(value):
            return None
        return _dlpack_address(value, name, fn)
    return None


def as_device_ptr(value: object, name: str, fn: str, nullable: bool) -> int | None:
    """A device address (see `device_address`); NULL (None or 0) only where the parameter is nullable."""
    if value is None:
        if nullable:
            return None
        raise TypeError(f"{fn}: {name} must be a device buffer; got None (this parameter is not optional)")
    if type(value) is int:  # the common case, without a further call
        address: int | None = check_address(value, name, fn)
    else:
        address = device_address(value, name, fn)
    if address is None:
        raise TypeError(f"{fn}: {name} must be a device buffer: {ACCEPTED}; got {what(value)}")
    if address:
        return address
    if nullable:
        return None
    raise ValueError(f"{fn}: {name} is a NULL device address, and this parameter is not optional")


def _dlpack_on_device(value: object) -> bool:
    """Does a DLPack object say (by `__dlpack_device__()`) that its memory is device memory?"""
    dlpack_device = getattr(value, "__dlpack_device__", None)
    device = dlpack_device() if callable(dlpack_device) else None
    kind = device[0] if isinstance(device, tuple) and device else device
    return isinstance(kind, int) and kind in DLPACK_DEVICE_TYPES


#: device addresses already passed, as the c_void_p the wrappers hand to C (a training loop passes the same
#: few buffers again and again); only addresses `as_device_ptr` accepted; emptied when it reaches the bound
DEVICE_ARGS: dict[int, ctypes.c_void_p] = {}
DEVICE_ARGS_MAX = 4096


def device_arg(value: object, name: str, fn: str, nullable: bool) -> ctypes.c_void_p | None:
    """A device buffer argument as the wrappers pass it: `as_device_ptr`'s address as a c_void_p (None: NULL)."""
    address = as_device_ptr(value, name, fn, nullable)
    if address is None:
        return None
    cp = DEVICE_ARGS.get(address)
    if cp is None:
        cp = ctypes.c_void_p(address)
        if len(DEVICE_ARGS) >= DEVICE_ARGS_MAX:
            DEVICE_ARGS.clear()
        DEVICE_ARGS[address] = cp
    return cp


def _check_not_host(value: object, name: str, fn: str) -> None:
    """Refuse an object that says its memory is on the host (torch: is_cuda; else __dlpack_device__())."""
    on_device = getattr(value, "is_cuda", None)
    if on_device is True:
        return
    if on_device is False:
        raise ValueError(f"{fn}: {name} is a host (CPU) tensor; device buffers are GPU tensors")
    dlpack_device = getattr(value, "__dlpack_device__", None)
    if callable(dlpack_device):
        device = dlpack_device()
        _check_dlpack_device(device[0] if isinstance(device, tuple) and device else device, name, fn,
                             "__dlpack_device__()")


def _dlpack_address(value: object, name: str, fn: str) -> int:
    """data + byte_offset of a DLPack tensor, after checking its device (before and after export)."""
    return dlpack_parts(value, name, fn)[0]


def _dlpack_tensor(value: object, name: str, fn: str) -> _DLTensor:
    """The DLTensor of a fresh export of `value`, its device checked before and after export."""
    dlpack_device = getattr(value, "__dlpack_device__", None)
    if callable(dlpack_device):
        device = dlpack_device()
        _check_dlpack_device(device[0] if isinstance(device, tuple) and device else device, name, fn,
                             "__dlpack_device__()")
    capsule = value.__dlpack__()  # type: ignore[attr-defined]
    if type(capsule).__name__ != "PyCapsule":
        raise TypeError(f"{fn}: {name}: __dlpack__() returned {what(capsule)}, not a DLPack capsule")
    try:
        pointer = _capsule_pointer(capsule, b"dltensor")
    except ValueError:
        raise TypeError(f"{fn}: {name}: __dlpack__() returned a capsule that is not an unconsumed \"dltensor\"") from None
    if not pointer:
        raise ValueError(f"{fn}: {name}: __dlpack__() returned a capsule holding NULL")
    tensor = _DLTensor.from_address(pointer)
    _check_dlpack_device(tensor.device.device_type, name, fn, "DLPack tensor")
    tensor._capsule = capsule  # the memory it describes lives while it is used
    return tensor


def typed_pointer(address: int | None, ptype: Any) -> Any:
    """A device address as the typed pointer a prototype expects (e.g. `size_t *` device data)."""
    return None if address is None else ctypes.cast(ctypes.c_void_p(address), ptype)


def as_opaque(value: object, name: str, fn: str) -> int | None:
    """An untyped host address: None, or an int in [0, 2**64)."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return check_address(value, name, fn) or None
    raise TypeError(f"{fn}: {name} must be an int address or None; got {what(value)}")



def address_held(address: int | None) -> int | None:
    """The pointer stored at `address` (an out pointer that received the address of a pointer field)."""
    if not address:
        return None
    return ctypes.c_void_p.from_address(address).value


# --------------------------------------------------------------------------- buffer extents

#: memory objects released through their class's `release()` (pyopencl: the object keeps its stale `int_ptr`, and
#: asking OpenCL about it afterwards is a use after free), id -> the object, held so that no other object can have
#: that id while it is here; bounded (the oldest forgotten first)
RELEASED: dict[int, object] = {}
RELEASED_MAX = 4096
_WATCHED: set[type] = set()


def watch_releases(kind: type) -> None:
    """Note every object of `kind` (pyopencl's MemoryObject) released from now on through `kind.release`, so that
    `buffer_bytes` refuses it (idempotent)."""
    if kind in _WATCHED:
        return
    _WATCHED.add(kind)
    release = kind.release  # type: ignore[attr-defined]

    def released(self: object, *args: object, **kwargs: object) -> object:
        result = release(self, *args, **kwargs)
        if len(RELEASED) >= RELEASED_MAX:
            del RELEASED[next(iter(RELEASED))]
        RELEASED[id(self)] = self
        return result

    released.__doc__ = release.__doc__
    try:
        kind.release = released  # type: ignore[attr-defined]
    except (AttributeError, TypeError):  # a type that cannot be patched: its releases stay unseen
        pass


def _watch_pyopencl() -> None:
    import sys

    cl = sys.modules.get("pyopencl")
    kind = getattr(cl, "MemoryObject", None) if cl is not None else None
    if isinstance(kind, type):
        watch_releases(kind)


def check_extent(have: int | None, need: int, name: str, fn: str,
                 spans: str = "its descriptor spans {need} bytes (largest element offset + 1, times the element size)"
                 ) -> None:
    """Refuse a buffer of `have` bytes (None: unknown, accepted) for a use of `need` bytes (`spans` says which): a
    kernel would read or write past its end."""
    if have is not None and have < need:
        raise ValueError(f"{fn}: {name} holds {have} bytes, but {spans.format(need=need)}: the library would access "
                         f"memory past its end")


#: readers of the bytes a device address may reach, registered by the runtime (`miopen.hip.allocation_bytes`: the HIP
#: allocation holding it, where a HIP runtime is loaded); `buffer_bytes` asks the last one for a `data_ptr()` object
ADDRESS_BYTES: list[Callable[[int], int | None]] = []


def buffer_bytes(value: object, name: str, fn: str) -> int | None:
    """The bytes a device buffer object holds from the address it gives, where the object says (by its kind,
    `array_kind`): a pyopencl Buffer or other memory object (`size`), a pyopencl Array (its buffer's), a
    `__cuda_array_interface__` (its shape, strides and typestr) or DLPack (its tensor's shape, strides and dtype)
    exporter: the extent its own layout spans; a `data_ptr()` object: its allocation's size where a registered
    reader knows it (ADDRESS_BYTES: HIP's); None where that cannot be known (an int address, ...). O(ndim). A
    released memory object (`int_ptr` 0, an `int_ptr` that raises, or released through `release()`) is refused
    with a ValueError naming `fn` and `name`."""
    if not _WATCHED:
        _watch_pyopencl()
    kind = array_kind(value)
    if kind == "OpenCL array":
        value, name = getattr(value, "base_data"), f"{name} (its buffer, base_data)"
    elif kind != "OpenCL memory object":
        if kind == "__cuda_array_interface__" or kind == "DLPack":
            return _exporter_bytes(value, name, fn)
        if kind == "data_ptr()" and ADDRESS_BYTES:
            address = device_address(value, name, fn)
            return ADDRESS_BYTES[-1](address) if address else None
        return None
    opencl_address(value, name, fn)  # refuses a released one
    size = getattr(value, "size", None)
    if isinstance(size, int) and not isinstance(size, bool):
        return size
    return None


def check_described(value: object, name: str, fn: str, extent_of: Callable[[Any, str], int | None],
                    desc: object) -> None:
    """Refuse a device buffer whose size is known (`buffer_bytes`) that holds less than its descriptor `desc` spans
    (`extent_of(desc, fn)`, read only when the size is known); a buffer of unknown size (an int address) passes."""
    have = buffer_bytes(value, name, fn)
    if have is not None:
        need = extent_of(desc, fn)
        if need is not None:
            check_extent(have, need, name, fn)


def check_sized(value: object, name: str, fn: str, size: object, size_name: str) -> None:
    """Refuse a scratch buffer whose size is known (`buffer_bytes`) that holds less than the `size` bytes the call
    passes with it (parameter `size_name`)."""
    have = buffer_bytes(value, name, fn)
    if have is not None and type(size) is int:
        check_extent(have, size, name, fn, f"{size_name} is {{need}} bytes")


def span_bytes(shape: Sequence[int], strides: Sequence[int] | None, itemsize: int, *,
               byte_strides: bool = False) -> int:
    """The bytes a strided layout spans from its first element (the one definition): 0 where any dim is 0 (no
    element); else the largest element offset, sum((len - 1) * stride), plus one element: times `itemsize` for
    strides in elements, plus `itemsize` for strides in bytes (`byte_strides`); None strides: packed."""
    if any(d == 0 for d in shape):
        return 0
    if strides is None:
        n = itemsize
        for d in shape:
            n *= d
        return n
    last = sum((d - 1) * s for d, s in zip(shape, strides))
    return last + itemsize if byte_strides else (last + 1) * itemsize


def _exporter_bytes(value: object, name: str, fn: str) -> int | None:
    """The extent a `__cuda_array_interface__` or DLPack exporter's own layout spans (None: neither, or it says
    too little); a layout that cannot be read is no extent (the address reader reports what is wrong)."""
    try:
        iface = getattr(value, "__cuda_array_interface__", None)
    except Exception:  # noqa: BLE001 - the address reader reports it
        return None
    if isinstance(iface, Mapping):
        shape, raw, typestr = iface.get("shape"), iface.get("strides"), iface.get("typestr")
        try:
            size = int(typestr[2:]) if isinstance(typestr, str) and typestr[2:].isdigit() else 0
            ints = tuple(int(d) for d in shape)  # type: ignore[union-attr]
            byte_strides = None if raw is None else tuple(int(x) for x in raw)
        except (TypeError, ValueError):
            return None
        if not size or any(d < 0 for d in ints) or (byte_strides is not None and (
                len(byte_strides) != len(ints) or any(x < 0 for x in byte_strides))):
            return None
        return span_bytes(ints, byte_strides, size, byte_strides=True)
    if callable(getattr(value, "__dlpack__", None)):
        return dlpack_parts(value, name, fn)[1]
    return None


def dlpack_parts(value: object, name: str, fn: str) -> tuple[int, int | None]:
    """(data + byte_offset, the bytes its shape, strides and dtype span from there) of a DLPack exporter, from one
    export; its device checked (before and after export)."""
    address, shape, strides, dtype = dlpack_layout(value, name, fn)
    code, bits, lanes = dtype
    bits *= max(lanes, 1)
    if shape is None or bits % 8:
        return address, None
    return address, span_bytes(shape, strides, bits // 8)


def dlpack_layout(value: object, name: str, fn: str
                  ) -> tuple[int, tuple[int, ...] | None, tuple[int, ...] | None, tuple[int, int, int]]:
    """(data + byte_offset, shape, strides in elements (None: packed), (dtype code, bits, lanes)) of a DLPack
    exporter, from one export; its device checked (before and after export). The shape is None where the tensor
    gives none that can be read (no shape, a negative dim or stride)."""
    tensor = _dlpack_tensor(value, name, fn)
    data: int = tensor.data or 0
    address: int = data + tensor.byte_offset
    if address >= ADDRESS_LIMIT:
        raise ValueError(f"{fn}: {name}: DLPack data {data:#x} + byte_offset {tensor.byte_offset} is beyond 2**64")
    ndim, dt = tensor.ndim, tensor.dtype
    dtype = (int(dt.code), int(dt.bits), int(dt.lanes))
    if ndim < 0 or not tensor.shape:
        return address, None, None, dtype
    shape = tuple(int(tensor.shape[i]) for i in range(ndim))
    strides = tuple(int(tensor.strides[i]) for i in range(ndim)) if tensor.strides else None
    if any(d < 0 for d in shape) or (strides is not None and any(x < 0 for x in strides)):
        return address, None, None, dtype
    return address, shape, strides, dtype
