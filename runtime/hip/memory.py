"""Device memory: malloc, free, memcpy, memset (synchronous and on a stream)."""

from __future__ import annotations

import ctypes
from typing import Final

from .._generated import _pointers
from . import library as _library
from .library import MemcpyKind, _lib
from ._checks import _check_int, _device_pointer, _host_or_device, _kind
from .streams import as_stream_handle

# --------------------------------------------------------------------------- copy checks


def _check_kind(value: object, fn: str) -> MemcpyKind:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{fn}: kind must be a MemcpyKind; got {_kind(value)}")
    try:
        return MemcpyKind(value)
    except ValueError:
        raise ValueError(f"{fn}: kind must be a MemcpyKind (0..4); got {value}") from None


_HOST_SOURCE_KINDS: Final = frozenset({MemcpyKind.HOST_TO_HOST, MemcpyKind.HOST_TO_DEVICE, MemcpyKind.DEFAULT})
_HOST_DEST_KINDS: Final = frozenset({MemcpyKind.HOST_TO_HOST, MemcpyKind.DEVICE_TO_HOST, MemcpyKind.DEFAULT})


def _copy_args(dst: object, src: object, nbytes: object, kind: object, fn: str,
               copy_ok: bool) -> tuple[int, int, int, MemcpyKind, tuple[object, object]]:
    n = _check_int(nbytes, "nbytes", fn)
    k = _check_kind(kind, fn)
    d, keep_d, d_host = _host_or_device(dst, "dst", fn, n, destination=True, copy_ok=False)
    s, keep_s, s_host = _host_or_device(src, "src", fn, n, destination=False, copy_ok=copy_ok)
    if d_host and k not in _HOST_DEST_KINDS:
        raise ValueError(f"{fn}: dst is a host buffer but kind is {k.name}")
    if s_host and k not in _HOST_SOURCE_KINDS:
        raise ValueError(f"{fn}: src is a host buffer but kind is {k.name}")
    return d, s, n, k, (keep_d, keep_s)


# --------------------------------------------------------------------------- memory


def malloc(nbytes: int) -> int:
    """hipMalloc on the current device; 0 for 0 bytes. Out of memory raises HipOutOfMemoryError."""
    n = _check_int(nbytes, "nbytes", "malloc")
    out = ctypes.c_void_p()
    _lib().call("hipMalloc", ctypes.byref(out), n)
    return out.value or 0


def free(ptr: int) -> None:
    """hipFree (0 is allowed and does nothing)."""
    p = _check_int(ptr, "ptr", "free")
    _lib().call("hipFree", p or None)


def memcpy(dst: object, src: object, nbytes: int, kind: int = MemcpyKind.DEFAULT) -> None:
    """Copy `nbytes` from `src` to `dst` (hipMemcpy).

    `dst` and `src` are int addresses, objects with `data_ptr()` or `__cuda_array_interface__`, or
    contiguous host buffers (bytearray, memoryview, ctypes arrays, NumPy arrays; `src` may be
    read-only, e.g. bytes). A buffer's size is checked against `nbytes`, and `kind` against buffers.
    """
    d, s, n, k, keep = _copy_args(dst, src, nbytes, kind, "memcpy", copy_ok=True)
    _lib().call("hipMemcpy", d or None, s or None, n, int(k))
    del keep


def memcpy_async(dst: object, src: object, nbytes: int, kind: int = MemcpyKind.DEFAULT, stream: object = None) -> None:
    """hipMemcpyAsync on `stream`. Host buffers must be writable and stay alive (and unresized) until
    the stream is synchronised; read-only buffers are refused."""
    d, s, n, k, keep = _copy_args(dst, src, nbytes, kind, "memcpy_async", copy_ok=False)
    st = as_stream_handle(stream, "memcpy_async")
    _lib().call("hipMemcpyAsync", d or None, s or None, n, int(k), st)
    del keep


def _memset_args(ptr: object, value: object, nbytes: object, fn: str) -> tuple[int, int, int]:
    n = _check_int(nbytes, "nbytes", fn)
    v = _check_int(value, "value", fn, hi=256)
    p = _device_pointer(ptr, "ptr", fn, n)
    return p, v, n


def memset(ptr: object, value: int, nbytes: int) -> None:
    """Fill `nbytes` of device memory with the byte `value` (0..255) (hipMemset)."""
    p, v, n = _memset_args(ptr, value, nbytes, "memset")
    _lib().call("hipMemset", p or None, v, n)


def memset_async(ptr: object, value: int, nbytes: int, stream: object = None) -> None:
    """hipMemsetAsync on `stream`."""
    p, v, n = _memset_args(ptr, value, nbytes, "memset_async")
    st = as_stream_handle(stream, "memset_async")
    _lib().call("hipMemsetAsync", p or None, v, n, st)


def allocation_bytes(ptr: int) -> int | None:
    """The bytes of the HIP allocation holding `ptr` (hipMemPtrGetInfo: the whole allocation, so an upper bound of
    what `ptr` may address), where the loaded HIP runtime says; None without a loaded HIP runtime or that function,
    and for memory it did not allocate. Never loads a runtime."""
    hip = _library._hip
    fn = hip.fns.get("hipMemPtrGetInfo") if hip is not None else None
    if fn is None or not ptr:
        return None
    size = ctypes.c_size_t()
    if fn(ptr, ctypes.byref(size)) != 0:
        return None
    return int(size.value)


if allocation_bytes not in _pointers.ADDRESS_BYTES:  # the typed API's buffer checks ask it (data_ptr() objects)
    _pointers.ADDRESS_BYTES.append(allocation_bytes)
