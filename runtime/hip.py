"""HIP for the runtime: a small ctypes layer over libamdhip64, loaded on first use.

Nothing is loaded at import. The first call (or `load_hip()`) loads `$MIOGEN_HIP_LIBRARY` when it is
set (a file, or a directory holding one of `LIBRARY_NAMES`; one that does not load is an error naming
it and why, never a fall-through), else searches `$ROCM_PATH/lib`, `/opt/rocm/lib`, then the dynamic
loader's path; `set_hip_library()` injects a library (a `ctypes.CDLL` or a path), which
is how the tests drive this module through a stub, and forgets it with `None`.

What it offers:

- devices: `device_count()`, `current_device()`, `set_device()`, `device_guard()`, `synchronize()`,
  `device_arch()`, `device_name()`, `mem_get_info()`;
- `Stream` and `Event` owners (destroyed exactly once; a closed one raises `ValueError`, never
  reaches HIP), and `as_stream_handle()` for ints and torch / CuPy / hip-python streams;
- memory: `malloc`, `free`, `memcpy`, `memcpy_async`, `memset`, `memset_async`, with `MemcpyKind`;
- errors: `HipError` (`.code`, `.name`, `.function`), `HipOutOfMemoryError` (also a `MemoryError`),
  `HipNotReady` (queries turn it into False), `HipLibraryNotFoundError` (an `OSError`);
- allocators: the `Allocator` protocol, `HipMallocAllocator` (the default), `TorchAllocator`,
  `CallableAllocator`, the process-wide `set_allocator()` / `get_allocator()`, and
  `miopen_allocator_callbacks()`, which turns an allocator into the two callbacks that
  `miopen.set_allocator(handle, alloc_cb, free_cb, None)` hands to miopenSetAllocator.

Arguments are checked in Python before any HIP call: wrong types raise `TypeError`, bad values
`ValueError`, both naming the parameter. Prototypes, enum values and flags are those of the HIP 5.2
header (`hip/hip_runtime_api.h`, `hip/driver_types.h`); the ones used here are unchanged in HIP 6.
"""

from __future__ import annotations

import ctypes
import enum
import importlib
import logging
import os
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Final, Protocol, TypeAlias, runtime_checkable

__all__ = [
    "LIBRARY_ENV", "LIBRARY_NAMES", "ERROR_NAMES", "HIP_SUCCESS", "HIP_ERROR_INVALID_VALUE",
    "HIP_ERROR_OUT_OF_MEMORY", "HIP_ERROR_NO_DEVICE", "HIP_ERROR_INVALID_DEVICE", "HIP_ERROR_INVALID_HANDLE",
    "HIP_ERROR_NOT_READY", "HIP_ERROR_NOT_SUPPORTED",
    "HipError", "HipOutOfMemoryError", "HipNotReady", "HipLibraryNotFoundError",
    "MemcpyKind", "StreamFlags", "EventFlags",
    "load_hip", "set_hip_library", "loaded_hip_library", "hip_library_path", "is_available", "error_name",
    "device_count", "current_device", "set_device", "device_guard", "synchronize", "device_arch", "device_name",
    "mem_get_info", "Stream", "Event", "as_stream_handle", "default_stream",
    "malloc", "free", "memcpy", "memcpy_async", "memset", "memset_async",
    "Allocator", "CachingAllocator", "HipMallocAllocator", "TorchAllocator", "CallableAllocator",
    "get_allocator", "set_allocator", "use_allocator", "miopen_allocator_callbacks",
    "AllocCallback", "FreeCallback",
]

_log = logging.getLogger(__name__)

#: environment variable naming the HIP runtime to load (a file, or a directory holding one)
LIBRARY_ENV: Final = "MIOGEN_HIP_LIBRARY"
#: file names tried in each directory and on the loader path, in this order
LIBRARY_NAMES: tuple[str, ...] = ("libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5")

_UINT64_LIMIT: Final = 1 << 64
_UINT32_LIMIT: Final = 1 << 32

# --------------------------------------------------------------------------- status codes

HIP_SUCCESS: Final = 0
HIP_ERROR_INVALID_VALUE: Final = 1
HIP_ERROR_OUT_OF_MEMORY: Final = 2  # also hipErrorMemoryAllocation (deprecated alias)
HIP_ERROR_NO_DEVICE: Final = 100
HIP_ERROR_INVALID_DEVICE: Final = 101
HIP_ERROR_INVALID_HANDLE: Final = 400  # also hipErrorInvalidResourceHandle (deprecated alias)
HIP_ERROR_NOT_READY: Final = 600
HIP_ERROR_NOT_SUPPORTED: Final = 801

#: hipError_t (HIP 5.2.3 `hip_runtime_api.h`): value -> the name hipGetErrorName gives it.
#: Used when the loaded library has no hipGetErrorName, and before any library is loaded.
ERROR_NAMES: Final[dict[int, str]] = {
    0: "hipSuccess", 1: "hipErrorInvalidValue", 2: "hipErrorOutOfMemory", 3: "hipErrorNotInitialized",
    4: "hipErrorDeinitialized", 5: "hipErrorProfilerDisabled", 6: "hipErrorProfilerNotInitialized",
    7: "hipErrorProfilerAlreadyStarted", 8: "hipErrorProfilerAlreadyStopped", 9: "hipErrorInvalidConfiguration",
    12: "hipErrorInvalidPitchValue", 13: "hipErrorInvalidSymbol", 17: "hipErrorInvalidDevicePointer",
    21: "hipErrorInvalidMemcpyDirection", 35: "hipErrorInsufficientDriver", 52: "hipErrorMissingConfiguration",
    53: "hipErrorPriorLaunchFailure", 98: "hipErrorInvalidDeviceFunction", 100: "hipErrorNoDevice",
    101: "hipErrorInvalidDevice", 200: "hipErrorInvalidImage", 201: "hipErrorInvalidContext",
    202: "hipErrorContextAlreadyCurrent", 205: "hipErrorMapFailed", 206: "hipErrorUnmapFailed",
    207: "hipErrorArrayIsMapped", 208: "hipErrorAlreadyMapped", 209: "hipErrorNoBinaryForGpu",
    210: "hipErrorAlreadyAcquired", 211: "hipErrorNotMapped", 212: "hipErrorNotMappedAsArray",
    213: "hipErrorNotMappedAsPointer", 214: "hipErrorECCNotCorrectable", 215: "hipErrorUnsupportedLimit",
    216: "hipErrorContextAlreadyInUse", 217: "hipErrorPeerAccessUnsupported", 218: "hipErrorInvalidKernelFile",
    219: "hipErrorInvalidGraphicsContext", 300: "hipErrorInvalidSource", 301: "hipErrorFileNotFound",
    302: "hipErrorSharedObjectSymbolNotFound", 303: "hipErrorSharedObjectInitFailed",
    304: "hipErrorOperatingSystem", 400: "hipErrorInvalidHandle", 401: "hipErrorIllegalState",
    500: "hipErrorNotFound", 600: "hipErrorNotReady", 700: "hipErrorIllegalAddress",
    701: "hipErrorLaunchOutOfResources", 702: "hipErrorLaunchTimeOut", 704: "hipErrorPeerAccessAlreadyEnabled",
    705: "hipErrorPeerAccessNotEnabled", 708: "hipErrorSetOnActiveProcess", 709: "hipErrorContextIsDestroyed",
    710: "hipErrorAssert", 712: "hipErrorHostMemoryAlreadyRegistered", 713: "hipErrorHostMemoryNotRegistered",
    719: "hipErrorLaunchFailure", 720: "hipErrorCooperativeLaunchTooLarge", 801: "hipErrorNotSupported",
    900: "hipErrorStreamCaptureUnsupported", 901: "hipErrorStreamCaptureInvalidated",
    902: "hipErrorStreamCaptureMerge", 903: "hipErrorStreamCaptureUnmatched", 904: "hipErrorStreamCaptureUnjoined",
    905: "hipErrorStreamCaptureIsolation", 906: "hipErrorStreamCaptureImplicit", 907: "hipErrorCapturedEvent",
    908: "hipErrorStreamCaptureWrongThread", 910: "hipErrorGraphExecUpdateFailure", 999: "hipErrorUnknown",
    1052: "hipErrorRuntimeMemory", 1053: "hipErrorRuntimeOther",
}


class HipLibraryNotFoundError(OSError):
    """No usable HIP runtime could be loaded; the message (and `.searched`) lists every place tried."""

    def __init__(self, message: str, searched: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.searched = searched

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (str(self), self.searched))


class HipError(RuntimeError):
    """A HIP call returned an error: `.code` (hipError_t), `.name` ("hipErrorInvalidValue"), `.function`."""

    def __init__(self, code: int, function: str = "", name: str | None = None, detail: str = "") -> None:
        self.code = int(code)
        self.name = name or ERROR_NAMES.get(self.code, "hipErrorUnknown")
        self.function = function
        self.detail = detail
        head = f"{function} failed: " if function else ""
        super().__init__(f"{head}{self.name} ({self.code}){': ' + detail if detail else ''}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.code, self.function, self.name, self.detail))


class HipOutOfMemoryError(HipError, MemoryError):
    """hipErrorOutOfMemory: catch it as `MemoryError` too (workspaces empty caches and retry on it)."""


class HipNotReady(HipError):
    """hipErrorNotReady: work is still queued. `Stream.query()` / `Event.query()` return False for it."""


def _exception_type(code: int) -> type[HipError]:
    if code == HIP_ERROR_OUT_OF_MEMORY:
        return HipOutOfMemoryError
    if code == HIP_ERROR_NOT_READY:
        return HipNotReady
    return HipError


# --------------------------------------------------------------------------- enums and flags


class MemcpyKind(enum.IntEnum):
    """hipMemcpyKind (`hip/driver_types.h`)."""

    HOST_TO_HOST = 0
    HOST_TO_DEVICE = 1
    DEVICE_TO_HOST = 2
    DEVICE_TO_DEVICE = 3
    DEFAULT = 4  # the runtime infers the direction from the addresses


class StreamFlags(enum.IntFlag):
    """Flags of hipStreamCreateWithFlags."""

    DEFAULT = 0x0  # hipStreamDefault: synchronises with the null stream
    NON_BLOCKING = 0x1  # hipStreamNonBlocking


class EventFlags(enum.IntFlag):
    """Flags of hipEventCreateWithFlags."""

    DEFAULT = 0x0  # hipEventDefault (timing enabled)
    BLOCKING_SYNC = 0x1  # hipEventBlockingSync
    DISABLE_TIMING = 0x2  # hipEventDisableTiming
    INTERPROCESS = 0x4  # hipEventInterprocess
    RELEASE_TO_DEVICE = 0x40000000  # hipEventReleaseToDevice
    RELEASE_TO_SYSTEM = 0x80000000  # hipEventReleaseToSystem


# --------------------------------------------------------------------------- prototypes

_int_p = ctypes.POINTER(ctypes.c_int)
_void_pp = ctypes.POINTER(ctypes.c_void_p)
_size_p = ctypes.POINTER(ctypes.c_size_t)
_float_p = ctypes.POINTER(ctypes.c_float)
_E = ctypes.c_int  # hipError_t, hipMemcpyKind: C enums of int size
_S = ctypes.c_void_p  # hipStream_t, hipEvent_t: pointers to opaque structs

#: name -> (restype, argtypes), from the HIP 5.2.3 header
_PROTOTYPES: Final[dict[str, tuple[Any, tuple[Any, ...]]]] = {
    "hipGetDeviceCount": (_E, (_int_p,)),  # hipError_t hipGetDeviceCount(int* count)
    "hipGetDevice": (_E, (_int_p,)),  # hipError_t hipGetDevice(int* deviceId)
    "hipSetDevice": (_E, (ctypes.c_int,)),  # hipError_t hipSetDevice(int deviceId)
    "hipDeviceSynchronize": (_E, ()),  # hipError_t hipDeviceSynchronize(void)
    "hipStreamCreateWithFlags": (_E, (_void_pp, ctypes.c_uint)),  # (hipStream_t*, unsigned int flags)
    "hipStreamDestroy": (_E, (_S,)),
    "hipStreamSynchronize": (_E, (_S,)),
    "hipStreamQuery": (_E, (_S,)),
    "hipStreamWaitEvent": (_E, (_S, _S, ctypes.c_uint)),  # (hipStream_t, hipEvent_t, unsigned int flags)
    "hipEventCreateWithFlags": (_E, (_void_pp, ctypes.c_uint)),  # (hipEvent_t*, unsigned flags)
    "hipEventDestroy": (_E, (_S,)),
    "hipEventRecord": (_E, (_S, _S)),  # (hipEvent_t, hipStream_t)
    "hipEventSynchronize": (_E, (_S,)),
    "hipEventQuery": (_E, (_S,)),
    "hipEventElapsedTime": (_E, (_float_p, _S, _S)),  # (float* ms, hipEvent_t start, hipEvent_t stop)
    "hipMalloc": (_E, (_void_pp, ctypes.c_size_t)),  # (void** ptr, size_t size)
    "hipFree": (_E, (ctypes.c_void_p,)),
    # (void* dst, const void* src, size_t sizeBytes, hipMemcpyKind kind[, hipStream_t stream])
    "hipMemcpy": (_E, (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, _E)),
    "hipMemcpyAsync": (_E, (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, _E, _S)),
    # (void* dst, int value, size_t sizeBytes[, hipStream_t stream])
    "hipMemset": (_E, (ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t)),
    "hipMemsetAsync": (_E, (ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t, _S)),
    "hipMemGetInfo": (_E, (_size_p, _size_p)),  # (size_t* free, size_t* total)
    "hipGetErrorName": (ctypes.c_char_p, (_E,)),  # const char* hipGetErrorName(hipError_t)
    "hipGetErrorString": (ctypes.c_char_p, (_E,)),  # const char* hipGetErrorString(hipError_t)
    # hipError_t hipGetDeviceProperties(hipDeviceProp_t* prop, int deviceId); see device_arch()
    "hipGetDeviceProperties": (_E, (ctypes.c_void_p, ctypes.c_int)),
}
_OPTIONAL: Final = frozenset({"hipMemGetInfo", "hipGetErrorName", "hipGetErrorString", "hipGetDeviceProperties"})

# hipDeviceProp_t of HIP 5.x, which HIP 6 keeps for the plain `hipGetDeviceProperties` export (its
# headers map the name to hipGetDevicePropertiesR0600, whose layout differs): sizeof 792, `name` at 0,
# `gcnArchName` at 396 (offsetof, measured against the HIP 5.2.3 header). The buffer is far larger
# than any layout, so a library that writes more cannot overrun it.
_PROPS_BUFFER_BYTES: Final = 16384
_PROPS_NAME_OFFSET: Final = 0
_PROPS_ARCH_OFFSET: Final = 396
_PROPS_STRING_BYTES: Final = 256


class _Hip:
    """A loaded HIP runtime with its prototypes bound (fresh function pointers: the CDLL is not mutated)."""

    def __init__(self, cdll: ctypes.CDLL, path: str) -> None:
        self.cdll = cdll
        self.path = path
        self.fns: dict[str, Any] = {}
        self.props: dict[int, tuple[str, str] | None] = {}
        self.props_lock = threading.Lock()
        missing = []
        for name, (restype, argtypes) in _PROTOTYPES.items():
            try:
                self.fns[name] = ctypes.CFUNCTYPE(restype, *argtypes)((name, cdll))
            except AttributeError:
                if name not in _OPTIONAL:
                    missing.append(name)
        if missing:
            raise HipLibraryNotFoundError(f"{path} is not a usable HIP runtime: it does not export {', '.join(missing)}",
                                          (path,))

    def status(self, function: str, *args: Any) -> int:
        code: int = self.fns[function](*args)
        return code

    def call(self, function: str, *args: Any) -> None:
        code: int = self.fns[function](*args)
        if code != HIP_SUCCESS:
            raise self.error(code, function)

    def error(self, code: int, function: str) -> HipError:
        name = self.name(code)
        detail = ""
        get_string = self.fns.get("hipGetErrorString")
        if get_string is not None:
            text = get_string(code)
            if text and text.decode(errors="replace") != name:
                detail = text.decode(errors="replace")
        return _exception_type(code)(code, function, name, detail)

    def name(self, code: int) -> str:
        get_name = self.fns.get("hipGetErrorName")
        if get_name is not None:
            raw = get_name(code)
            if raw:
                text: str = raw.decode(errors="replace")
                # HIP answers "hipErrorUnknown" for values it has no name for; the table may know better
                if text != "hipErrorUnknown" or code == 999 or code not in ERROR_NAMES:
                    return text
        return ERROR_NAMES.get(code, "hipErrorUnknown")


# --------------------------------------------------------------------------- loading

_lock = threading.Lock()
_hip: _Hip | None = None


def _where(cdll: ctypes.CDLL) -> str:
    name = getattr(cdll, "_name", None)
    return name if isinstance(name, str) else "<injected library>"


def _candidates() -> list[tuple[str, str]]:
    """Where the search looks, in order; only `$MIOGEN_HIP_LIBRARY` (a file, or a directory's library names) when set."""
    from ._generated._search import library_candidates

    return library_candidates(LIBRARY_ENV, LIBRARY_NAMES, "ROCM_PATH", ("/opt/rocm",), subdirs=("lib",),
                              env_dir=True, env_root_label=True)


def _why(path: str, exc: OSError | None) -> str:
    """Why `path` is no usable HIP runtime: loaded but lacking functions (our message), else why it does not load."""
    if isinstance(exc, HipLibraryNotFoundError):
        return str(exc)
    from ._generated._support import load_failure

    return load_failure(path, exc)


def _search() -> _Hip:
    tried: list[str] = []
    for origin, candidate in _candidates():
        if os.sep in candidate and not os.path.isfile(candidate):  # missing; a FIFO or a device would block the loader
            tried.append(f"{candidate} ({origin}): {_why(candidate, None)}")
            continue
        try:
            return _Hip(ctypes.CDLL(candidate), candidate)
        except OSError as exc:  # HipLibraryNotFoundError too: loaded, but not a HIP runtime
            tried.append(f"{candidate} ({origin}): {_why(candidate, exc)}")
    env = os.environ.get(LIBRARY_ENV)
    if env:  # set explicitly: never a fall-through to another library
        what = "a directory holding no loadable HIP runtime" if os.path.isdir(env) else "which cannot be loaded"
        raise HipLibraryNotFoundError(
            f"${LIBRARY_ENV} is set to {env!r}, {what}: " + "; ".join(tried) +
            f"; fix it, or unset ${LIBRARY_ENV} to search $ROCM_PATH, /opt/rocm/lib and the loader path", tuple(tried))
    raise HipLibraryNotFoundError(
        f"cannot find the HIP runtime (libamdhip64); set ${LIBRARY_ENV} to its path or $ROCM_PATH to your ROCm "
        "install. Searched:\n  " + "\n  ".join(tried), tuple(tried))


def _bind(lib: ctypes.CDLL | str | os.PathLike[str]) -> _Hip:
    if isinstance(lib, ctypes.CDLL):
        return _Hip(lib, _where(lib))
    if isinstance(lib, (str, os.PathLike)):
        path = os.fspath(lib)
        if os.sep in path and not os.path.isfile(path):  # missing; a FIFO or a device would block the loader
            raise HipLibraryNotFoundError(f"cannot load the HIP runtime from {path}: {_why(path, None)}", (path,))
        try:
            cdll = ctypes.CDLL(path)
        except OSError as exc:
            raise HipLibraryNotFoundError(f"cannot load the HIP runtime from {path}: {_why(path, exc)}", (path,)) from None
        return _Hip(cdll, path)
    raise TypeError(f"set_hip_library: lib must be a ctypes.CDLL, a path or None; got {type(lib).__name__}")


def load_hip(path_or_cdll: ctypes.CDLL | str | os.PathLike[str] | None = None) -> ctypes.CDLL:
    """The HIP runtime: the one already loaded, else the first found by the search (see the module
    docstring). With an argument, load that one (a path or a `ctypes.CDLL`) and use it from now on."""
    global _hip
    if path_or_cdll is not None:
        bound = _bind(path_or_cdll)
        with _lock:
            _hip = bound
        return bound.cdll
    with _lock:
        if _hip is None:
            _hip = _search()
        return _hip.cdll


def set_hip_library(lib: ctypes.CDLL | str | os.PathLike[str] | None) -> None:
    """Inject the HIP runtime (a `ctypes.CDLL` or a path); `None` forgets it (the next call searches again).

    A library that cannot be loaded or lacks a required function raises `HipLibraryNotFoundError`
    and leaves the current one in place. Streams and events keep the library that created them.
    """
    global _hip
    if lib is None:
        with _lock:
            _hip = None
        return
    load_hip(lib)


def loaded_hip_library() -> ctypes.CDLL | None:
    """The library in use, or None if none is loaded yet (never loads)."""
    hip = _hip
    return hip.cdll if hip is not None else None


def hip_library_path() -> str | None:
    """Where the library in use came from (a path, or a bare name found on the loader path); None if none."""
    hip = _hip
    return hip.path if hip is not None else None


def _lib() -> _Hip:
    hip = _hip
    if hip is not None:
        return hip
    load_hip()
    hip = _hip
    if hip is None:  # another thread forgot it in between
        raise HipLibraryNotFoundError("the HIP runtime was unloaded while being loaded")
    return hip


def error_name(code: int) -> str:
    """The name of a hipError_t value: the loaded library's hipGetErrorName, else the local table."""
    value = _check_int(code, "code", "error_name", lo=-(1 << 31), hi=1 << 31)
    hip = _hip
    return hip.name(value) if hip is not None else ERROR_NAMES.get(value, "hipErrorUnknown")


def is_available() -> bool:
    """True when a HIP runtime loads and reports at least one device; never raises."""
    try:
        return device_count() > 0
    except (OSError, HipError):
        return False


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


def _check_kind(value: object, fn: str) -> MemcpyKind:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{fn}: kind must be a MemcpyKind; got {_kind(value)}")
    try:
        return MemcpyKind(value)
    except ValueError:
        raise ValueError(f"{fn}: kind must be a MemcpyKind (0..4); got {value}") from None


def _pointer_value(value: object, name: str, fn: str, *, host: bool = True) -> int | None:
    """The address `value` carries (the package's one reader, `_pointers.device_address`: an int, a c_void_p,
    `data_ptr()`, `__cuda_array_interface__` or DLPack); None when it carries none (a plain host buffer).
    Without `host`, an object that says its memory is on the host is refused."""
    if isinstance(value, bool):
        raise TypeError(f"{fn}: {name} must be a pointer (an int address); got bool")
    from ._generated._pointers import device_address

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


def _current(hip: _Hip) -> int:
    device = ctypes.c_int(-1)
    hip.call("hipGetDevice", ctypes.byref(device))
    return device.value


def current_device() -> int:
    """The calling thread's current device (HIP keeps one per thread)."""
    return _current(_lib())


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
    previous = _current(hip)
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
        dev = _current(hip)
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


# --------------------------------------------------------------------------- streams and events

_close_lock = threading.Lock()


class Stream:
    """A HIP stream. `Stream.create()` owns a new one (destroyed exactly once: `close()`, `with`, or
    when collected, never during interpreter shutdown); `Stream.from_handle()` borrows one.
    A closed stream raises ValueError and never reaches HIP."""

    __slots__ = ("_ptr", "_owned", "_hip", "_flags", "__weakref__")
    _ptr: int | None  # None: closed; 0: the null (default) stream
    _owned: bool
    _hip: _Hip | None
    _flags: int | None

    def __init__(self) -> None:
        raise TypeError("streams come from Stream.create() or Stream.from_handle()")

    @classmethod
    def _make(cls, ptr: int, owned: bool, hip: _Hip | None, flags: int | None) -> Stream:
        obj = cls.__new__(cls)
        obj._ptr, obj._owned, obj._hip, obj._flags = ptr, owned, hip, flags
        return obj

    @classmethod
    def create(cls, flags: int = StreamFlags.NON_BLOCKING) -> Stream:
        """A new stream on the current device (hipStreamCreateWithFlags; non-blocking by default)."""
        f = _check_flags(flags, StreamFlags, "Stream.create")
        hip = _lib()
        out = ctypes.c_void_p()
        hip.call("hipStreamCreateWithFlags", ctypes.byref(out), f)
        if not out.value:
            raise HipError(HIP_ERROR_INVALID_HANDLE, "hipStreamCreateWithFlags", detail="returned a null stream")
        return cls._make(out.value, True, hip, f)

    @classmethod
    def from_handle(cls, handle: int | None) -> Stream:
        """Borrow an existing stream (None or 0: the null stream); `close()` never destroys it."""
        h = 0 if handle is None else _check_int(handle, "handle", "Stream.from_handle")
        return cls._make(h, False, None, None)

    def _live(self, fn: str) -> int:
        ptr = self._ptr
        if ptr is None:
            raise ValueError(f"{fn}: this Stream is closed")
        return ptr

    def _lib(self) -> _Hip:
        return self._hip if self._hip is not None else _lib()

    @property
    def handle(self) -> int:
        """The hipStream_t as an int (0: the null stream). Raises ValueError once closed."""
        return self._live("Stream.handle")

    @property
    def _as_parameter_(self) -> int:
        return self.handle

    @property
    def closed(self) -> bool:
        return self._ptr is None

    @property
    def owned(self) -> bool:
        return self._owned

    @property
    def flags(self) -> int | None:
        """The creation flags (None for a borrowed stream)."""
        return self._flags

    def synchronize(self) -> None:
        """Wait for all work queued on the stream."""
        ptr = self._live("Stream.synchronize")
        self._lib().call("hipStreamSynchronize", ptr or None)

    def query(self) -> bool:
        """True when all queued work is done, False while some is pending (hipErrorNotReady)."""
        ptr = self._live("Stream.query")
        try:
            self._lib().call("hipStreamQuery", ptr or None)
        except HipNotReady:
            return False
        return True

    def wait_event(self, event: Event, flags: int = 0) -> None:
        """Make later work on this stream wait until `event` completes (hipStreamWaitEvent)."""
        if not isinstance(event, Event):
            raise TypeError(f"Stream.wait_event: event must be an Event; got {_kind(event)}")
        f = _check_int(flags, "flags", "Stream.wait_event", hi=_UINT32_LIMIT)
        ptr = self._live("Stream.wait_event")
        ev = event._live("Stream.wait_event")
        self._lib().call("hipStreamWaitEvent", ptr or None, ev, f)

    def record_event(self, flags: int = EventFlags.DISABLE_TIMING) -> Event:
        """A new event recorded on this stream."""
        self._live("Stream.record_event")
        event = Event.create(flags)
        event.record(self)
        return event

    def close(self) -> None:
        """Destroy an owned stream now (exactly once; later calls do nothing). A borrowed one is only
        marked closed."""
        with _close_lock:
            ptr, self._ptr = self._ptr, None
        if ptr is None or not self._owned:
            return
        hip = self._hip if self._hip is not None else _lib()
        hip.call("hipStreamDestroy", ptr)

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        if sys.is_finalizing() or getattr(self, "_ptr", None) is None or not getattr(self, "_owned", False):
            return
        try:
            self.close()
        except Exception as exc:  # a finalizer must not raise
            warnings.warn(f"Stream: hipStreamDestroy failed: {exc}", ResourceWarning, stacklevel=1)

    def __repr__(self) -> str:
        ptr = getattr(self, "_ptr", None)
        if ptr is None:
            return "<Stream closed>"
        return f"<Stream 0x{ptr:x}{'' if self._owned else ', borrowed'}>"


def default_stream() -> Stream:
    """The null stream of the current device (borrowed)."""
    return Stream.from_handle(None)


class Event:
    """A HIP event. `Event.create()` owns a new one (destroyed exactly once); `Event.from_handle()` borrows.

    Events are created with timing disabled by default (cheaper, as PyTorch does); pass
    `EventFlags.DEFAULT` to measure with `elapsed_ms`."""

    __slots__ = ("_ptr", "_owned", "_hip", "_flags", "_recorded", "__weakref__")
    _ptr: int | None
    _owned: bool
    _hip: _Hip | None
    _flags: int | None
    _recorded: bool | None  # None: unknown (borrowed)

    def __init__(self) -> None:
        raise TypeError("events come from Event.create() or Event.from_handle()")

    @classmethod
    def create(cls, flags: int = EventFlags.DISABLE_TIMING) -> Event:
        """A new event (hipEventCreateWithFlags)."""
        f = _check_flags(flags, EventFlags, "Event.create")
        hip = _lib()
        out = ctypes.c_void_p()
        hip.call("hipEventCreateWithFlags", ctypes.byref(out), f)
        if not out.value:
            raise HipError(HIP_ERROR_INVALID_HANDLE, "hipEventCreateWithFlags", detail="returned a null event")
        obj = cls.__new__(cls)
        obj._ptr, obj._owned, obj._hip, obj._flags, obj._recorded = out.value, True, hip, f, False
        return obj

    @classmethod
    def from_handle(cls, handle: int) -> Event:
        """Borrow an existing hipEvent_t (non-null); `close()` never destroys it."""
        h = _check_int(handle, "handle", "Event.from_handle")
        if h == 0:
            raise ValueError("Event.from_handle: handle must be a non-null hipEvent_t")
        obj = cls.__new__(cls)
        obj._ptr, obj._owned, obj._hip, obj._flags, obj._recorded = h, False, None, None, None
        return obj

    def _live(self, fn: str) -> int:
        ptr = self._ptr
        if ptr is None:
            raise ValueError(f"{fn}: this Event is closed")
        return ptr

    def _lib(self) -> _Hip:
        return self._hip if self._hip is not None else _lib()

    @property
    def handle(self) -> int:
        """The hipEvent_t as an int. Raises ValueError once closed."""
        return self._live("Event.handle")

    @property
    def _as_parameter_(self) -> int:
        return self.handle

    @property
    def closed(self) -> bool:
        return self._ptr is None

    @property
    def owned(self) -> bool:
        return self._owned

    @property
    def flags(self) -> int | None:
        return self._flags

    def record(self, stream: object = None) -> None:
        """Record the event on `stream` (anything `as_stream_handle` accepts; None: the null stream)."""
        s = as_stream_handle(stream, "Event.record")
        ptr = self._live("Event.record")
        self._lib().call("hipEventRecord", ptr, s)
        if self._recorded is not None:
            self._recorded = True

    def synchronize(self) -> None:
        """Wait until the work before the event's last record is done."""
        self._lib().call("hipEventSynchronize", self._live("Event.synchronize"))

    def query(self) -> bool:
        """True when the recorded work is done (or never recorded), False while pending."""
        ptr = self._live("Event.query")
        try:
            self._lib().call("hipEventQuery", ptr)
        except HipNotReady:
            return False
        return True

    def elapsed_ms(self, end: Event) -> float:
        """Milliseconds from this event to `end` (both recorded, both created with timing enabled)."""
        if not isinstance(end, Event):
            raise TypeError(f"Event.elapsed_ms: end must be an Event; got {_kind(end)}")
        start_ptr = self._live("Event.elapsed_ms")
        end_ptr = end._live("Event.elapsed_ms")
        for which, ev in (("start", self), ("end", end)):
            if ev._flags is not None and ev._flags & EventFlags.DISABLE_TIMING:
                raise ValueError(f"Event.elapsed_ms: the {which} event was created with timing disabled; "
                                 "create both with EventFlags.DEFAULT")
            if ev._recorded is False:
                raise ValueError(f"Event.elapsed_ms: the {which} event was never recorded")
        ms = ctypes.c_float(0.0)
        self._lib().call("hipEventElapsedTime", ctypes.byref(ms), start_ptr, end_ptr)
        return float(ms.value)

    def close(self) -> None:
        """Destroy an owned event now (exactly once; later calls do nothing)."""
        with _close_lock:
            ptr, self._ptr = self._ptr, None
        if ptr is None or not self._owned:
            return
        hip = self._hip if self._hip is not None else _lib()
        hip.call("hipEventDestroy", ptr)

    def __enter__(self) -> Event:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        if sys.is_finalizing() or getattr(self, "_ptr", None) is None or not getattr(self, "_owned", False):
            return
        try:
            self.close()
        except Exception as exc:  # a finalizer must not raise
            warnings.warn(f"Event: hipEventDestroy failed: {exc}", ResourceWarning, stacklevel=1)

    def __repr__(self) -> str:
        ptr = getattr(self, "_ptr", None)
        if ptr is None:
            return "<Event closed>"
        return f"<Event 0x{ptr:x}{'' if self._owned else ', borrowed'}>"


_STREAM_ATTRIBUTES: Final = ("cuda_stream", "hip_stream", "stream_handle", "handle", "ptr")


def as_stream_handle(stream: object, fn: str = "as_stream_handle") -> int | None:
    """A hipStream_t as an int, or None for the null stream.

    Accepts None or 0 (the null stream), an int, a `Stream`, a ctypes.c_void_p, objects with an int
    `.cuda_stream` (torch), `.hip_stream`, `.stream_handle`, `.handle` or `.ptr` (CuPy), the
    `__cuda_stream__()` protocol, and hip-python's `as_c_void_p()`. A closed `Stream` raises ValueError.
    """
    if stream is None:
        return None
    if isinstance(stream, bool):
        raise TypeError(f"{fn}: stream must be a stream or an int handle; got bool")
    if isinstance(stream, Event):
        raise TypeError(f"{fn}: stream must be a stream, not an Event")
    value: object = None
    if isinstance(stream, int):
        value = stream
    elif isinstance(stream, Stream):
        value = stream._live(fn)
    elif isinstance(stream, ctypes.c_void_p):
        value = stream.value or 0
    else:
        for attr in _STREAM_ATTRIBUTES:
            inner = getattr(stream, attr, None)
            if isinstance(inner, int) and not isinstance(inner, bool):
                value = inner
                break
        else:
            protocol = getattr(stream, "__cuda_stream__", None)
            as_void = getattr(stream, "as_c_void_p", None)
            if callable(protocol):
                pair = protocol()
                if isinstance(pair, tuple) and len(pair) == 2:
                    value = pair[1]
            elif callable(as_void):
                pointer = as_void()
                value = (pointer.value or 0) if isinstance(pointer, ctypes.c_void_p) else None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{fn}: stream must be None, an int handle, a Stream, or a torch/CuPy/hip-python "
                        f"stream; got {_kind(stream)}")
    if not 0 <= value < _UINT64_LIMIT:
        raise ValueError(f"{fn}: stream handle must be in [0, 2**64); got {value}")
    return value or None


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


# --------------------------------------------------------------------------- allocators


@runtime_checkable
class Allocator(Protocol):
    """Device memory for the runtime (workspaces, persistent buffers, MIOpen's own allocations).

    `stream` is the stream the memory will be used on (None: the null stream); stream-ordered pools
    use it, others ignore it. `allocate` raises MemoryError (ideally HipOutOfMemoryError) when out
    of memory. An allocator may also have `empty_cache() -> None` (see `CachingAllocator`), which
    workspaces call before their one retry.
    """

    def allocate(self, nbytes: int, stream: int | None) -> int: ...

    def free(self, ptr: int, stream: int | None) -> None: ...


@runtime_checkable
class CachingAllocator(Allocator, Protocol):
    """An allocator that can hand cached blocks back to the device."""

    def empty_cache(self) -> None: ...


def _is_out_of_memory(exc: BaseException) -> bool:
    return isinstance(exc, MemoryError) or any(c.__name__ == "OutOfMemoryError" for c in type(exc).__mro__)


def _reraise_oom(exc: Exception, function: str) -> None:
    """Raise HipOutOfMemoryError for an allocator's out-of-memory exception (torch raises a RuntimeError)."""
    if isinstance(exc, HipOutOfMemoryError):
        raise exc
    if _is_out_of_memory(exc):
        raise HipOutOfMemoryError(HIP_ERROR_OUT_OF_MEMORY, function, detail=f"{type(exc).__name__}: {exc}") from exc


class HipMallocAllocator:
    """hipMalloc / hipFree on the current device, through the loaded HIP runtime. `stream` is ignored."""

    def allocate(self, nbytes: int, stream: int | None = None) -> int:
        return malloc(nbytes)

    def free(self, ptr: int, stream: int | None = None) -> None:
        free(ptr)

    def __repr__(self) -> str:
        return "HipMallocAllocator()"


class TorchAllocator:
    """PyTorch's caching allocator (a ROCm build of torch): `torch.cuda.caching_allocator_alloc` /
    `caching_allocator_delete` / `empty_cache`, so MIOpen's memory comes from torch's pool.

    `stream=None` lets torch use its current stream on the device. torch's out-of-memory error is
    re-raised as HipOutOfMemoryError (a MemoryError).
    """

    def __init__(self, device: int | None = None) -> None:
        try:
            torch = importlib.import_module("torch")
        except ImportError as exc:
            raise ImportError("TorchAllocator needs PyTorch built for ROCm (`import torch` failed: "
                              f"{exc}); use HipMallocAllocator or CallableAllocator instead") from exc
        self._cuda: Any = torch.cuda
        self.device = None if device is None else _check_device(device, "TorchAllocator")

    def allocate(self, nbytes: int, stream: int | None = None) -> int:
        n = _check_int(nbytes, "nbytes", "TorchAllocator.allocate")
        try:
            ptr = self._cuda.caching_allocator_alloc(n, device=self.device, stream=stream)
        except Exception as exc:
            _reraise_oom(exc, "torch.cuda.caching_allocator_alloc")
            raise
        if isinstance(ptr, bool) or not isinstance(ptr, int) or not 0 <= ptr < _UINT64_LIMIT:  # taken as is, never int()
            raise ValueError(f"TorchAllocator.allocate: torch returned {_kind(ptr)} {ptr!r:.40}, not an address")
        return int(ptr)

    def free(self, ptr: int, stream: int | None = None) -> None:
        p = _check_int(ptr, "ptr", "TorchAllocator.free")
        if p:
            self._cuda.caching_allocator_delete(p)

    def empty_cache(self) -> None:
        self._cuda.empty_cache()

    def __repr__(self) -> str:
        return f"TorchAllocator(device={self.device!r})"


class CallableAllocator:
    """An allocator from plain functions, e.g. CuPy's:

        CallableAllocator(cupy.cuda.alloc, None, cupy.get_default_memory_pool().free_all_blocks)
        CallableAllocator(cupy.cuda.runtime.malloc, cupy.cuda.runtime.free)

    `alloc_fn(nbytes)` (or `alloc_fn(nbytes, stream)` with `pass_stream=True`) returns an int address
    or an object carrying one (`.ptr`, `data_ptr()`, `__cuda_array_interface__`); such an object is
    kept alive until `free`, which is how CuPy's MemoryPointer is released. `free_fn(ptr)` (or
    `free_fn(ptr, stream)`) is called if given. Out-of-memory exceptions become HipOutOfMemoryError.
    """

    def __init__(self, alloc_fn: Callable[..., object], free_fn: Callable[..., object] | None,
                 empty_cache_fn: Callable[[], object] | None = None, *, pass_stream: bool = False) -> None:
        for name, fn in (("alloc_fn", alloc_fn), ("free_fn", free_fn), ("empty_cache_fn", empty_cache_fn)):
            if fn is not None and not callable(fn):
                raise TypeError(f"CallableAllocator: {name} must be callable; got {_kind(fn)}")
        if alloc_fn is None:
            raise TypeError("CallableAllocator: alloc_fn must be callable; got None")
        self._alloc_fn = alloc_fn
        self._free_fn = free_fn
        self._empty_cache_fn = empty_cache_fn
        self._pass_stream = pass_stream
        self._lock = threading.Lock()
        self._live: dict[int, object] = {}

    def allocate(self, nbytes: int, stream: int | None = None) -> int:
        n = _check_int(nbytes, "nbytes", "CallableAllocator.allocate")
        try:
            result = self._alloc_fn(n, stream) if self._pass_stream else self._alloc_fn(n)
        except Exception as exc:
            _reraise_oom(exc, "CallableAllocator.alloc_fn")
            raise
        if isinstance(result, bool):
            raise TypeError("CallableAllocator: alloc_fn returned a bool, not an address")
        if isinstance(result, int):
            address = result
        else:
            inner = getattr(result, "ptr", None)
            address_or_none = inner if isinstance(inner, int) and not isinstance(inner, bool) else \
                _pointer_value(result, "alloc_fn's result", "CallableAllocator.allocate")
            if address_or_none is None:
                raise TypeError(f"CallableAllocator: alloc_fn returned {_kind(result)}, which carries no address")
            address = address_or_none
        if not 0 <= address < _UINT64_LIMIT:  # before the result is kept: a bad one is not remembered
            raise ValueError(f"CallableAllocator: alloc_fn returned an address out of range: {address}")
        if address and not isinstance(result, int):
            with self._lock:
                self._live[address] = result
        return address

    def free(self, ptr: int, stream: int | None = None) -> None:
        p = _check_int(ptr, "ptr", "CallableAllocator.free")
        with self._lock:
            owner = self._live.pop(p, None)
        try:
            if self._free_fn is not None and p:
                if self._pass_stream:
                    self._free_fn(p, stream)
                else:
                    self._free_fn(p)
        finally:
            del owner  # dropping the last reference releases memory held by the object (CuPy)

    def empty_cache(self) -> None:
        if self._empty_cache_fn is not None:
            self._empty_cache_fn()

    @property
    def live(self) -> int:
        """Allocations whose result object is being kept alive."""
        with self._lock:
            return len(self._live)


_allocator_lock = threading.Lock()
_allocator: Allocator | None = None


def _check_allocator(allocator: object, fn: str) -> Allocator:
    if not callable(getattr(allocator, "allocate", None)) or not callable(getattr(allocator, "free", None)):
        raise TypeError(f"{fn}: allocator must have allocate(nbytes, stream) and free(ptr, stream) methods; "
                        f"got {_kind(allocator)}")
    return allocator  # type: ignore[return-value]


def get_allocator() -> Allocator:
    """The process-wide default allocator (HipMallocAllocator unless `set_allocator` chose another)."""
    global _allocator
    with _allocator_lock:
        if _allocator is None:
            _allocator = HipMallocAllocator()
        return _allocator


def set_allocator(allocator: Allocator | None) -> Allocator:
    """Make `allocator` the process-wide default (None: back to HipMallocAllocator); returns the previous one.

    It applies to workspaces and buffers created afterwards. MIOpen's internal allocations go through
    it only for handles given its callbacks: `miopen.set_allocator(h, *miopen_allocator_callbacks(a), None)`.
    """
    global _allocator
    new = None if allocator is None else _check_allocator(allocator, "set_allocator")
    with _allocator_lock:
        previous = _allocator if _allocator is not None else HipMallocAllocator()
        _allocator = new
    return previous


@contextmanager
def use_allocator(allocator: Allocator) -> Iterator[Allocator]:
    """Make `allocator` the default for the block, then restore the previous one."""
    previous = set_allocator(allocator)
    try:
        yield allocator
    finally:
        set_allocator(previous)


#: miopenAllocatorFunction: void* (*)(void* context, size_t sizeBytes)
AllocCallback: TypeAlias = Callable[[int | None, int], int]
#: miopenDeallocatorFunction: void (*)(void* context, void* memory)
FreeCallback: TypeAlias = Callable[[int | None, int | None], None]


def miopen_allocator_callbacks(allocator: Allocator, stream: int | None = None) -> tuple[AllocCallback, FreeCallback]:
    """Two Python callables for miopenSetAllocator: `(alloc_cb, free_cb)`.

    `alloc_cb(context, size_bytes) -> int` and `free_cb(context, memory) -> None` have the signatures of
    miopenAllocatorFunction and miopenDeallocatorFunction; `context` is ignored. They never raise into
    C: a failed allocation is logged as a warning and returns 0 (NULL), which MIOpen reports as an
    allocation failure; a failed free is logged. `stream` is passed to the allocator. Keep the
    callbacks alive as long as the handle (the generated `miopen.set_allocator` does).
    """
    alloc = _check_allocator(allocator, "miopen_allocator_callbacks")
    st = as_stream_handle(stream, "miopen_allocator_callbacks")

    def alloc_cb(context: int | None, size_bytes: int) -> int:
        try:
            ptr = alloc.allocate(int(size_bytes), st)
        except BaseException as exc:  # noqa: BLE001 - nothing may propagate into MIOpen
            _log.warning("MIOpen allocator callback: allocating %d bytes with %r failed (%s: %s); returning NULL",
                         size_bytes, alloc, type(exc).__name__, exc)
            return 0
        if isinstance(ptr, bool) or not isinstance(ptr, int) or not 0 <= ptr < _UINT64_LIMIT:
            _log.warning("MIOpen allocator callback: %r returned %r for %d bytes, not an address; returning NULL",
                         alloc, ptr, size_bytes)
            return 0
        return ptr

    def free_cb(context: int | None, memory: int | None) -> None:
        if not memory:
            return
        try:
            alloc.free(int(memory), st)
        except BaseException as exc:  # noqa: BLE001 - nothing may propagate into MIOpen
            _log.warning("MIOpen deallocator callback: freeing 0x%x with %r failed (%s: %s)",
                         memory, alloc, type(exc).__name__, exc)

    return alloc_cb, free_cb


def _after_fork_in_child() -> None:
    """A forked child gets fresh module locks: a lock another thread held at fork time stays locked
    forever in the child. (HIP itself must not be used in a child forked after HIP was initialised;
    these locks only keep the child's Python side from deadlocking.)"""
    global _lock, _close_lock, _allocator_lock
    _lock = threading.Lock()
    _close_lock = threading.Lock()
    _allocator_lock = threading.Lock()
    if _hip is not None:
        _hip.props_lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)
