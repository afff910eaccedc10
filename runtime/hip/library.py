"""The HIP runtime library: status codes and errors, enums and flags, prototypes, and loading (the search is
the package's one library search, `_generated._search`)."""

from __future__ import annotations

import ctypes
import enum
import os
import threading
from typing import Any, Final

from ._checks import _check_int


#: environment variable naming the HIP runtime to load (a file, or a directory holding one)
LIBRARY_ENV: Final = "MIOGEN_HIP_LIBRARY"
#: file names tried in each directory and on the loader path, in this order
LIBRARY_NAMES: tuple[str, ...] = ("libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5")
#: ROCm as Python wheels: TheRock's rocm-sdk-core wheel (`_rocm_sdk_core` plus a version nonce) carries
#: libamdhip64.so.7 in its lib/ folder (rocm_sdk/_dist_info.py: LibraryEntry("amdhip64", "core", ...))
WHEEL_DIRS: tuple[str, ...] = ("_rocm_sdk_core*/lib",)

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


class HipForkError(RuntimeError):
    """This process was forked from one that had loaded the HIP runtime: HIP's state (its threads, device queues)
    does not survive fork(), and a call could hang."""


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
    "hipMemPtrGetInfo": (_E, (ctypes.c_void_p, _size_p)),  # (void* ptr, size_t* size): its allocation's size
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
_OPTIONAL: Final = frozenset({"hipMemGetInfo", "hipGetErrorName", "hipGetErrorString", "hipGetDeviceProperties",
                              "hipMemPtrGetInfo"})

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
        #: hipGetDevice, bound once: every op asks it; without argtypes (the caller passes a byref of a c_int it keeps),
        #: which makes the call about half as costly
        self.get_device: Any = ctypes.CFUNCTYPE(_E)(("hipGetDevice", cdll))
        #: True once the library reported exactly one device (HIP counts its devices once, at its start): the current
        #: device is then 0 without asking; None until `devices.current_device` first asks
        self.one_device: bool | None = None

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
    from .._generated._search import library_candidates
    from .._generated._target import LIBRARY_PREFIX_ENVS

    return library_candidates(LIBRARY_ENV, LIBRARY_NAMES, "ROCM_PATH", ("/opt/rocm",), subdirs=("lib",),
                              env_dir=True, env_root_label=True, prefix_envs=LIBRARY_PREFIX_ENVS,
                              wheel_dirs=WHEEL_DIRS)


def _why(path: str, exc: OSError | None) -> str:
    """Why `path` is no usable HIP runtime: loaded but lacking functions (our message), else why it does not load."""
    if isinstance(exc, HipLibraryNotFoundError):
        return str(exc)
    from .._generated._support import load_failure

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
            f"; fix it, or unset ${LIBRARY_ENV} to search $ROCM_PATH, the conda/spack prefixes, /opt/rocm/lib, the rocm-sdk wheels and the loader path", tuple(tried))
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
            _forked[0] = None  # named in this process: the caller vouches that it works here
        return bound.cdll
    with _lock:
        if _hip is None:
            if _forked[0] is not None:
                raise _fork_error(_forked[0])
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




#: in a forked child of a process that had loaded the HIP runtime: its path (every HIP call of the runtime raises
#: HipForkError until `set_hip_library` names a library)
_forked: list[str | None] = [None]


def _after_fork_in_child() -> None:
    """A forked child gets a fresh loading lock (one another thread held at fork time would stay locked) and, if the
    parent had loaded HIP, no HIP: its first HIP call raises HipForkError instead of hanging."""
    global _lock, _hip
    _lock = threading.Lock()
    if _hip is not None:
        _forked[0] = _hip.path
        _hip.fns = _Forked(_hip.path)  # what still holds it (a parent's Stream or Event) raises too
        _hip.get_device = _hip.fns.refuse
        _hip = None


def _fork_error(path: str) -> HipForkError:
    return HipForkError(
        f"this process was forked from one that had loaded the HIP runtime ({path}), whose state (its threads, the "
        f"device's queues) does not survive fork(); a call could hang. Start workers with multiprocessing's 'spawn' "
        f"or 'forkserver' method, or fork before the first HIP call (a library known to work after fork, e.g. a "
        f"stand-in, can be named with set_hip_library)")


class _Forked(dict[str, Any]):
    """The functions of a HIP runtime loaded before fork, in the child: each raises HipForkError."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path

    def refuse(self, *args: object) -> int:
        raise _fork_error(self.path)

    def __getitem__(self, name: str) -> Any:
        return self.refuse

    def get(self, name: str, default: Any = None) -> Any:
        return self.refuse


os.register_at_fork(after_in_child=_after_fork_in_child)
