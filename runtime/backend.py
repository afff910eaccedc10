"""The accelerator backend of the loaded MIOpen: HIP or OpenCL, one `Backend` protocol, chosen from the library.

MIOpen is built for one backend (`MIOPEN_BACKEND`: HIP, HIPNOGPU or OpenCL) and its ABI differs with it: a
stream is a `hipStream_t` or a `cl_command_queue`, device memory a HIP address or a `cl_mem`. The library tells
which: MIOpen versions its exported symbols with the backend's name (`miopenCreate@MIOPEN_OpenCL_1`,
`@MIOPEN_HIP_1`, `@MIOPEN_HIPNOGPU_1`), so an OpenCL build is one whose `miopenCreate` has the version node
`MIOPEN_OpenCL_1` (asked with `dlvsym`). Everything else is HIP. `set_backend` overrides the choice (tests).

The runtime (handles, states, workspaces, the ops) asks `current()` for what differs:

* devices: HIP's current device; OpenCL: every device of every platform, in order, with a per-thread current
  index (`set_device`, `device_guard`);
* streams: a hipStream_t (None: the null stream); OpenCL: a `cl_command_queue` as an int or a pyopencl
  `CommandQueue` (None: the backend's default in-order queue of the current device, one context per device);
* handles: HIP creates one per device and re-binds it with `miopenSetStream`; an OpenCL handle compiles its
  kernels in the context of the queue it was created with (and `miopenSetStream(NULL)` throws), so the
  runtime keeps one handle per (device, context) made with `miopenCreateWithStream`;
* memory: `hipMalloc` (or the configured allocator); OpenCL: pyopencl `Buffer`s (`cl_mem` as ints);
* states' fork/join: HIP events; OpenCL: markers and barriers between queues of one context;
* Find: OpenCL solvers run only in the NORMAL find mode (`conv_find_mode`), and Find must not build the
  11x11 direct solver in compile threads (it aborts the process): `check_find`.

The OpenCL backend lives in `miopen.opencl` (pyopencl is imported on first use, `BackendError` when absent);
HIP's is here, over `miopen.hip`.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import threading
from collections.abc import Hashable
from typing import Any, Protocol

from . import hip
from ._generated import _state
from ._generated import _support as _s
from ._generated import api
from .errors import BackendError
from .opencl import FIND_ENV, OpenCLBackend

__all__ = ["Backend", "BackendError", "HipBackend", "OpenCLBackend", "current", "detect", "set_backend", "name",
           "FIND_ENV"]

class StreamLike(Protocol):
    @property
    def handle(self) -> int: ...

    def close(self) -> None: ...


class Backend(Protocol):
    """What the runtime needs of a backend."""

    name: str
    #: the class whose instances are each one stream for life (pyopencl's CommandQueue, once seen): the handle
    #: lookup keys those by the object
    queue_type: type | None

    @property
    def conv_find_mode(self) -> int | None:
        """The find mode the planner sets on its convolution descriptors (None: MIOpen's default)."""

    def current_device(self) -> int: ...

    def device_guard(self, device: int | None) -> contextlib.AbstractContextManager[None]: ...

    def as_stream_handle(self, stream: object, fn: str = "as_stream_handle") -> int | None: ...

    def bound_stream(self, stream: object, device: int) -> int | None:
        """The stream a handle is bound to for `stream` (OpenCL: None is the device's default queue)."""
        ...

    def handle_key(self, device: int, stream: int | None) -> Hashable: ...

    def create_handle(self, device: int, stream: int | None) -> api.Handle: ...

    def allocator(self) -> hip.Allocator: ...

    def device_arch(self, device: int) -> str | None: ...

    def library_id(self) -> int: ...

    def new_stream(self, device: int) -> StreamLike: ...

    def new_event(self, device: int) -> StreamLike: ...

    def fork(self, caller: int | None, stream: StreamLike, event: Any) -> None: ...

    def join(self, stream: StreamLike, caller: int | None, event: Any) -> None: ...

    def memset_async(self, ptr: int, value: int, nbytes: int, stream: object) -> None: ...

    def memcpy_dtod_async(self, dst: int, src: int, nbytes: int, stream: object) -> None: ...

    def check_find(self, what: str) -> None: ...


class HipBackend:
    """MIOpen's HIP backends (HIP, HIPNOGPU): everything through `miopen.hip`."""

    name = "HIP"
    conv_find_mode: int | None = None
    queue_type: type | None = None

    current_device = staticmethod(hip.current_device)  # every op asks: no extra layer

    def device_guard(self, device: int | None) -> contextlib.AbstractContextManager[None]:
        return hip.device_guard(device)

    as_stream_handle = staticmethod(hip.as_stream_handle)

    def bound_stream(self, stream: object, device: int) -> int | None:
        return None if stream is None else hip.as_stream_handle(stream)

    def handle_key(self, device: int, stream: int | None) -> Hashable:
        return device

    def create_handle(self, device: int, stream: int | None) -> api.Handle:
        with hip.device_guard(device):
            return api.create()

    def allocator(self) -> hip.Allocator:
        return hip.get_allocator()

    def device_arch(self, device: int) -> str | None:
        return hip.device_arch(device)

    def library_id(self) -> int:
        return id(hip.loaded_hip_library())

    def new_stream(self, device: int) -> StreamLike:
        with hip.device_guard(device):
            return hip.Stream.create()

    def new_event(self, device: int) -> StreamLike:
        with hip.device_guard(device):
            return hip.Event.create()

    def fork(self, caller: int | None, stream: StreamLike, event: Any) -> None:
        assert isinstance(stream, hip.Stream) and isinstance(event, hip.Event)
        event.record(caller)
        stream.wait_event(event)

    def join(self, stream: StreamLike, caller: int | None, event: Any) -> None:
        assert isinstance(event, hip.Event)
        event.record(stream.handle)
        hip.Stream.from_handle(caller).wait_event(event)

    def memset_async(self, ptr: int, value: int, nbytes: int, stream: object) -> None:
        hip.memset_async(ptr, value, nbytes, stream)

    def memcpy_dtod_async(self, dst: int, src: int, nbytes: int, stream: object) -> None:
        hip.memcpy_async(dst, src, nbytes, hip.MemcpyKind.DEVICE_TO_DEVICE, stream)

    def check_find(self, what: str) -> None:
        return None

    def __repr__(self) -> str:
        return "<miopen backend HIP>"


# --------------------------------------------------------------------------- selection

_HIP = HipBackend()
_lock = threading.Lock()
#: (library, its backend) as last chosen; replaced whole, so a reader without the lock sees one pair
_chosen: list[tuple[Any, Backend] | None] = [None]
_override: list[Backend | None] = [None]
_opencl: list[OpenCLBackend | None] = [None]


def detect(lib: ctypes.CDLL) -> str:
    """"OpenCL" when `lib` exports miopenCreate under the version node MIOPEN_OpenCL_1, else "HIP"."""
    try:
        dlvsym = ctypes.CDLL(None).dlvsym
    except AttributeError:  # no dlvsym (not glibc): only HIP builds are told apart
        return "HIP"
    dlvsym.restype = ctypes.c_void_p
    dlvsym.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]
    return "OpenCL" if dlvsym(lib._handle, b"miopenCreate", b"MIOPEN_OpenCL_1") else "HIP"


def _opencl_backend() -> OpenCLBackend:
    backend = _opencl[0]
    if backend is None:
        backend = _opencl[0] = OpenCLBackend()
        from . import settings

        for var, value in FIND_ENV.items():  # before MIOpen's first Find reads them (it reads them once)
            settings.set_default(var, value, "the OpenCL backend")
    return backend


def current() -> Backend:
    """The backend of the loaded MIOpen (loading it when none is); HIP while no library can be loaded."""
    if _override[0] is not None:
        return _override[0]
    lib = _state.lib
    known = _chosen[0]
    if known is not None and known[0] is lib and lib is not None:  # the common case, without the lock
        return known[1]
    if lib is None:
        try:
            lib = _s.library()
        except (OSError, _s.LibraryNotFoundError):
            return _HIP
    with _lock:
        known = _chosen[0]
        if known is None or known[0] is not lib:
            known = _chosen[0] = (lib, _opencl_backend() if detect(lib) == "OpenCL" else _HIP)
        return known[1]


def name() -> str:
    """"HIP" or "OpenCL": the backend of the loaded MIOpen."""
    return current().name


def set_backend(backend: str | None) -> None:
    """Force a backend ("HIP", "OpenCL"; None: choose from the library again)."""
    if backend is None:
        _override[0] = None
    elif backend == "HIP":
        _override[0] = _HIP
    elif backend == "OpenCL":
        _override[0] = _opencl_backend()
    else:
        raise ValueError(f"set_backend: backend must be 'HIP', 'OpenCL' or None; got {backend!r}")


def opencl() -> OpenCLBackend:
    """The OpenCL backend object, or BackendError when the loaded MIOpen is not an OpenCL build."""
    b = current()
    if not isinstance(b, OpenCLBackend):
        raise BackendError(f"the loaded MIOpen is built for {b.name}, not OpenCL")
    return b


def _library_changed() -> None:
    with _lock:
        _chosen[0] = None
    if _opencl[0] is not None:
        _opencl[0].forget_queues()


_s._on_reset.append(_library_changed)


def _after_fork_in_child() -> None:
    """A forked child of a process that used OpenCL gets a clear error at its first call, never a hang: nothing of
    the parent's queues, contexts or handles is used again (the handle pools forget theirs: runtime/handles.py)."""
    b = _opencl[0]
    if b is not None and (b._devices is not None or b._queues or b._known):
        b.forked = True
        b._lock = threading.Lock()
        b._queues, b._known, b._default_contexts = {}, {}, set()


os.register_at_fork(after_in_child=_after_fork_in_child)

