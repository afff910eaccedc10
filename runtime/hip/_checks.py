"""Argument checks shared by the HIP helpers: ints, devices, flags, and addresses (read by the package's one
device-pointer reader, `_generated._pointers`). The HIP library module builds on these; they import none of it."""

from __future__ import annotations

import ctypes
import enum
from typing import Final

_UINT64_LIMIT: Final = 1 << 64
_UINT32_LIMIT: Final = 1 << 32

# --------------------------------------------------------------------------- argument checks


def _kind(value: object) -> str:
    return "None" if value is None else type(value).__name__


def _check_int(value: object, name: str, fn: str, lo: int = 0, hi: int = _UINT64_LIMIT) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{fn}: {name} must be an int; got {_kind(value)}")
    if value < lo:
        raise ValueError(f"{fn}: {name} must be {'non-negative' if lo == 0 else f'at least {lo}'}; got {value}")
    if value >= hi:
        raise ValueError(f"{fn}: {name} must be below {hi}; got {value}")
    return int(value)


def _check_device(value: object, fn: str) -> int:
    return _check_int(value, "device", fn, hi=1 << 31)


def _check_flags(value: object, cls: type[enum.IntFlag], fn: str) -> int:
    flags = _check_int(value, "flags", fn, hi=_UINT32_LIMIT)
    known = 0
    for member in cls:
        known |= int(member)
    if flags & ~known:
        raise ValueError(f"{fn}: flags 0x{flags:x} has bits {cls.__name__} does not define (0x{flags & ~known:x})")
    return flags


def _pointer_value(value: object, name: str, fn: str, *, host: bool = True) -> int | None:
    """The address `value` carries (the package's one reader, `_pointers.device_address`: an int, a c_void_p,
    `data_ptr()`, `__cuda_array_interface__` or DLPack); None when it carries none (a plain host buffer).
    Without `host`, an object that says its memory is on the host is refused."""
    if isinstance(value, bool):
        raise TypeError(f"{fn}: {name} must be a pointer (an int address); got bool")
    from .._generated._pointers import device_address

    return device_address(value, name, fn, host=host)


def _device_pointer(value: object, name: str, fn: str, nbytes: int) -> int:
    address = _pointer_value(value, name, fn, host=False)
    if address is None:
        raise TypeError(f"{fn}: {name} must be a device pointer (an int, or an object with data_ptr() or "
                        f"__cuda_array_interface__); got {_kind(value)}")
    if address == 0 and nbytes:
        raise ValueError(f"{fn}: {name} is NULL but nbytes is {nbytes}")
    return address


def _host_or_device(value: object, name: str, fn: str, nbytes: int, *, destination: bool,
                    copy_ok: bool) -> tuple[int, object, bool]:
    """(address, object to keep alive during the call, whether it is a Python host buffer)."""
    address = _pointer_value(value, name, fn)
    if address is not None:
        if address == 0 and nbytes:
            raise ValueError(f"{fn}: {name} is NULL but nbytes is {nbytes}")
        return address, None, False
    try:
        view = memoryview(value)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"{fn}: {name} must be a pointer (an int, or an object with data_ptr() or "
                        f"__cuda_array_interface__) or a contiguous host buffer; got {_kind(value)}") from None
    if not view.c_contiguous:
        raise ValueError(f"{fn}: {name} must be a C-contiguous buffer")
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    if view.nbytes < nbytes:
        raise ValueError(f"{fn}: nbytes ({nbytes}) exceeds the {view.nbytes}-byte {name} buffer")
    if not view.readonly:
        array = (ctypes.c_char * view.nbytes).from_buffer(view)
    elif destination:
        raise TypeError(f"{fn}: {name} is a read-only buffer ({_kind(value)}); it cannot be written to")
    elif copy_ok:
        array = (ctypes.c_char * view.nbytes).from_buffer_copy(view)
    else:
        raise TypeError(f"{fn}: {name} is a read-only buffer ({_kind(value)}); an asynchronous copy needs a "
                        "writable buffer or an int address that stays valid until the stream is synchronised")
    return ctypes.addressof(array), array, True
