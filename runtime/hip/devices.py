"""Devices: count, current device, a device guard, synchronisation, properties and memory info."""

from __future__ import annotations

import ctypes
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from .library import (
    HIP_ERROR_NOT_SUPPORTED, HIP_ERROR_NO_DEVICE, HIP_SUCCESS, HipError,
    HipForkError, _PROPS_ARCH_OFFSET,
    _PROPS_BUFFER_BYTES, _PROPS_NAME_OFFSET, _PROPS_STRING_BYTES, _lib,
)
from . import library as _library
from ._checks import _check_device

_log = logging.getLogger(__package__)

# --------------------------------------------------------------------------- devices


def device_count() -> int:
    """Number of HIP devices; 0 when HIP reports hipErrorNoDevice (what it does on a machine without a GPU)."""
    hip = _lib()
    count = ctypes.c_int(0)
    code = hip.status("hipGetDeviceCount", ctypes.byref(count))
    if code == HIP_ERROR_NO_DEVICE:
        return 0
    if code != HIP_SUCCESS:
        raise hip.error(code, "hipGetDeviceCount")
    return count.value


_c_int = ctypes.c_int


def current_device() -> int:
    """The calling thread's current device (HIP keeps one per thread), asked of HIP on every call where there are
    several devices: a device set behind our back (torch.cuda.set_device, hipSetDevice through ctypes) is seen at
    once. With one device (HIP counts them once, when it starts) it is 0, and HIP is not asked again."""
    hip = _library._hip
    if hip is None:
        hip = _lib()
    if hip.one_device:
        return 0
    device: ctypes.c_int
    try:
        device, ref = _cell.parts
    except AttributeError:  # the thread's first call
        device = _c_int(-1)
        ref = ctypes.byref(device)
        _cell.parts = device, ref
    code: int = hip.get_device(ref)
    if code != HIP_SUCCESS:
        raise hip.error(code, "hipGetDevice")
    if hip.one_device is None:
        count = _c_int(0)
        hip.one_device = hip.status("hipGetDeviceCount", ctypes.byref(count)) == HIP_SUCCESS and count.value == 1
    value: int = device.value
    return value


#: per thread, the c_int hipGetDevice writes and its byref (made once)
_cell = threading.local()


def set_device(device: int) -> None:
    """Make `device` current for the calling thread."""
    d = _check_device(device, "set_device")
    _lib().call("hipSetDevice", d)


@contextmanager
def device_guard(device: int | None) -> Iterator[None]:
    """Make `device` current for the block and restore the previous device afterwards (also on error).

    `None` changes nothing. hipSetDevice is skipped when `device` is already current.
    """
    if device is None:
        yield
        return
    d = _check_device(device, "device_guard")
    hip = _lib()
    previous = current_device()
    if previous == d:
        yield
        return
    hip.call("hipSetDevice", d)
    try:
        yield
    except BaseException:
        code = hip.status("hipSetDevice", previous)
        if code != HIP_SUCCESS:  # do not hide the error in flight
            _log.warning("device_guard: could not restore device %d: %s", previous, hip.error(code, "hipSetDevice"))
        raise
    hip.call("hipSetDevice", previous)


def synchronize() -> None:
    """Wait for all work on the current device (hipDeviceSynchronize)."""
    _lib().call("hipDeviceSynchronize")


def _properties(device: int | None, fn: str) -> tuple[str, str] | None:
    dev = None if device is None else _check_device(device, fn)
    hip = _lib()
    if dev is None:
        dev = current_device()
    with hip.props_lock:
        if dev in hip.props:
            return hip.props[dev]
    getter = hip.fns.get("hipGetDeviceProperties")
    result: tuple[str, str] | None = None
    if getter is not None:
        buf = ctypes.create_string_buffer(_PROPS_BUFFER_BYTES)
        code: int = getter(buf, dev)
        if code != HIP_SUCCESS:
            raise hip.error(code, "hipGetDeviceProperties")

        def text(offset: int) -> str:
            return buf.raw[offset:offset + _PROPS_STRING_BYTES].split(b"\0", 1)[0].decode(errors="replace")

        result = (text(_PROPS_NAME_OFFSET), text(_PROPS_ARCH_OFFSET))
    with hip.props_lock:
        hip.props[dev] = result
    return result


def device_arch(device: int | None = None, *, full: bool = False) -> str | None:
    """The device's GCN architecture, e.g. "gfx90a" (`full=True`: "gfx90a:sramecc+:xnack-"); None if unknown.

    hipDeviceGetAttribute cannot give the architecture name, so this reads `gcnArchName` from
    hipGetDeviceProperties. That struct changed layout in HIP 6, but HIP 6 still exports the plain
    `hipGetDeviceProperties` with the HIP 5 layout, so the HIP 5 offset is read from an oversized
    buffer. None when the library lacks the function or the field does not look like "gfx…" (a layout
    this module does not know); cached per library and device. `device=None`: the current device.
    """
    props = _properties(device, "device_arch")
    if props is None or not props[1].startswith("gfx"):
        return None
    return props[1] if full else props[1].split(":", 1)[0]


def device_name(device: int | None = None) -> str | None:
    """The device's marketing name from hipGetDeviceProperties (see `device_arch`); None if unavailable."""
    props = _properties(device, "device_name")
    if props is None or not props[1].startswith("gfx"):  # an unknown layout: do not trust the name either
        return None
    return props[0]


def mem_get_info() -> tuple[int, int]:
    """(free, total) bytes of the current device (hipMemGetInfo)."""
    hip = _lib()
    if "hipMemGetInfo" not in hip.fns:
        raise HipError(HIP_ERROR_NOT_SUPPORTED, "hipMemGetInfo", detail=f"{hip.path} does not export it")
    free_b, total_b = ctypes.c_size_t(0), ctypes.c_size_t(0)
    hip.call("hipMemGetInfo", ctypes.byref(free_b), ctypes.byref(total_b))
    return free_b.value, total_b.value


def is_available() -> bool:
    """True when a HIP runtime loads and reports at least one device; never raises."""
    try:
        return device_count() > 0
    except (OSError, HipError, HipForkError):
        return False
