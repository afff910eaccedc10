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

pyopencl is needed only by the OpenCL backend and imported on first use (`BackendError` when absent).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import threading
from collections.abc import Hashable, Iterator
from typing import Any, Protocol

from . import hip
from ._generated import _state
from ._generated import _support as _s
from ._generated._pointers import watch_releases
from ._generated import api

__all__ = ["Backend", "BackendError", "HipBackend", "OpenCLBackend", "current", "detect", "set_backend", "name",
           "FIND_ENV"]

#: what MIOpen's Find needs on the OpenCL backend, set (unless the user set them) when the backend is chosen,
#: before MIOpen reads them: no 11x11 direct solver (an AMD-only builtin; its failed build inside Find's
#: compile threads aborts the process), one compile thread, no FFT solver (wrong results off AMD GPUs)
#: and the NORMAL find mode (the default, DYNAMIC_HYBRID, considers no OpenCL solver; releases without
#: miopenSetConvolutionFindMode take it from MIOPEN_FIND_MODE only)
FIND_ENV = {"MIOPEN_DEBUG_CONV_DIRECT_OCL_FWD11X11": "0", "MIOPEN_COMPILE_PARALLEL_LEVEL": "1",
            "MIOPEN_DEBUG_CONV_FFT": "0", "MIOPEN_FIND_MODE": "NORMAL"}
#: the values of MIOPEN_FIND_MODE that mean NORMAL
_NORMAL = ("NORMAL", "normal", "Normal", "1")


class BackendError(RuntimeError):
    """What the loaded MIOpen's backend cannot do (or its Python dependency is missing)."""


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


def _pyopencl() -> Any:
    try:
        import pyopencl
    except ImportError as exc:
        raise BackendError(f"the loaded MIOpen ({_s.library_path()}) is built for OpenCL: the runtime needs "
                           f"pyopencl for queues and memory (pip install pyopencl): {exc}") from None
    watch_releases(pyopencl.MemoryObject)  # a buffer released from now on is refused (tensor.Tensor.make)
    return pyopencl


class _Queue:
    """A queue the runtime created (a state's private queue); `.handle` is the cl_command_queue."""

    def __init__(self, queue: Any) -> None:
        self.queue: Any = queue
        self.closed = False

    @property
    def handle(self) -> int:
        if self.queue is None:
            raise ValueError("this OpenCL queue is closed")
        return int(self.queue.int_ptr)

    def close(self) -> None:
        if self.queue is not None:
            self.queue.finish()
            self.queue = None
            self.closed = True


class _Marker:
    """OpenCL needs no event object ahead of a fork: markers are enqueued per fork/join."""

    def close(self) -> None:
        return None

    @property
    def handle(self) -> int:
        return 0


class OpenCLAllocator:
    """pyopencl Buffers (READ_WRITE) in the context of the queue they will be used on; `ptr` is the cl_mem."""

    def __init__(self, backend: OpenCLBackend) -> None:
        self._backend = backend
        self._lock = threading.Lock()
        self._live: dict[int, Any] = {}

    def allocate(self, nbytes: int, stream: int | None = None) -> int:
        cl = _pyopencl()
        ctx = self._backend.queue(stream).context
        try:
            buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, max(int(nbytes), 1))
        except cl.MemoryError as exc:
            raise MemoryError(f"OpenCL: cannot allocate {nbytes} bytes: {exc}") from exc
        ptr = int(buf.int_ptr)
        with self._lock:
            self._live[ptr] = buf
        return ptr

    def free(self, ptr: int, stream: int | None = None) -> None:
        with self._lock:
            buf = self._live.pop(ptr, None)
        if buf is not None:  # OpenCL keeps a released cl_mem alive until the commands using it are done
            buf.release()

    @property
    def live(self) -> int:
        with self._lock:
            return len(self._live)

    def __repr__(self) -> str:
        return "OpenCLAllocator()"


class _Local(threading.local):
    """Per-thread state of the OpenCL backend: the current device (0 until set)."""

    device = 0


class OpenCLBackend:
    """MIOpen's OpenCL backend: queues, buffers and devices through pyopencl."""

    name = "OpenCL"

    @property
    def conv_find_mode(self) -> int | None:
        """miopenConvolutionFindModeNormal where the release binds miopenSetConvolutionFindMode (else the
        MIOPEN_FIND_MODE the backend set decides)."""
        from .version import has_feature

        return 1 if has_feature("find_mode_api") else None

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._local = _Local()
        self._devices: list[Any] | None = None
        self._queues: dict[int, Any] = {}
        self._allocator: OpenCLAllocator | None = None
        #: cl_command_queue -> (its pyopencl queue, holding a reference, so that the address cannot become another
        #: queue's while it is here; the cl_context it was created in, which a queue never changes); bounded
        self._known: dict[int, tuple[Any, int]] = {}
        #: pyopencl's CommandQueue class once a stream of it was seen: its instances' `int_ptr` is the stream
        self.queue_type: type | None = None
        #: set in a forked child of a process that had used OpenCL: its driver state (threads, queues) did not cross
        self.forked = False

    def _check_fork(self, what: str) -> None:
        if self.forked:
            raise BackendError(f"{what}: this process was forked from one that had used OpenCL, whose driver state "
                               f"(queues, contexts, its threads) does not survive fork(); a call would hang. Start "
                               f"workers with multiprocessing's 'spawn' or 'forkserver' method, or fork before the "
                               f"first OpenCL call")

    # ---------------------------------------------------------------- devices
    def devices(self) -> list[Any]:
        """Every OpenCL device, platform by platform (a device index is a position here)."""
        if self._devices is None:
            cl = _pyopencl()
            found = [d for p in cl.get_platforms() for d in p.get_devices()]
            if not found:
                raise BackendError("the OpenCL backend found no OpenCL device (install an OpenCL driver, e.g. PoCL)")
            self._devices = found
        return self._devices

    def _check_device(self, device: object, fn: str) -> int:
        n = len(self.devices())
        if isinstance(device, bool) or not isinstance(device, int) or not 0 <= device < n:
            raise ValueError(f"{fn}: device must be an int in [0, {n}) (the OpenCL devices); got {device!r}")
        return device

    def current_device(self) -> int:
        return self._local.device

    def set_device(self, device: int) -> None:
        self._local.device = int(self._check_device(device, "set_device"))

    @contextlib.contextmanager
    def _guard(self, device: int | None) -> Iterator[None]:
        if device is None:
            yield
            return
        self._check_device(device, "device_guard")
        previous = self.current_device()
        self._local.device = int(device)
        try:
            yield
        finally:
            self._local.device = previous

    def device_guard(self, device: int | None) -> contextlib.AbstractContextManager[None]:
        return self._guard(device)

    def device_arch(self, device: int) -> str | None:
        return str(self.devices()[self._check_device(device, "device_arch")].name)

    # ---------------------------------------------------------------- queues
    def default_queue(self, device: int | None = None) -> Any:
        """The backend's in-order pyopencl queue of `device` (default: current), in a context of that device."""
        dev = self.current_device() if device is None else self._check_device(device, "default_queue")
        if self.forked:
            self._check_fork("default_queue")
        q = self._queues.get(dev)
        if q is not None:
            return q
        with self._lock:
            q = self._queues.get(dev)
            if q is None:
                cl = _pyopencl()
                d = self.devices()[dev]
                q = self._queues[dev] = cl.CommandQueue(cl.Context([d]), d)
            return q

    def as_stream_handle(self, stream: object, fn: str = "as_stream_handle") -> int | None:
        """A cl_command_queue as an int: an int, a pyopencl CommandQueue (`int_ptr`), None (the default queue)."""
        if stream is None:
            return None
        if stream.__class__ is self.queue_type:  # a pyopencl queue: its int_ptr is a cl_command_queue
            return stream.int_ptr or None  # type: ignore[attr-defined]
        if isinstance(stream, bool):
            raise TypeError(f"{fn}: stream must be a cl_command_queue (an int or a pyopencl CommandQueue); got bool")
        value: object = stream
        if not isinstance(stream, int):
            value = getattr(stream, "int_ptr", None)
            if value is None:
                value = getattr(stream, "handle", None)  # a state's queue
            elif self.queue_type is None:
                cl = sys.modules.get("pyopencl")
                if cl is not None and stream.__class__ is getattr(cl, "CommandQueue", None):
                    self.queue_type = stream.__class__
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{fn}: stream must be None, an int cl_command_queue or a pyopencl CommandQueue on the "
                            f"OpenCL backend; got {type(stream).__name__}")
        if not 0 <= value < 1 << 64:
            raise ValueError(f"{fn}: stream handle must be in [0, 2**64); got {value}")
        return value or None

    def queue(self, stream: object) -> Any:
        """The pyopencl queue of `stream` (None: the default queue of the current device)."""
        handle = self.as_stream_handle(stream)
        if handle is None:
            return self.default_queue()
        return self._queue_info(handle)[0]

    #: how many queues `_known` remembers (then it starts again, releasing its references)
    KNOWN_MAX = 64

    def _queue_info(self, handle: int) -> tuple[Any, int]:
        """(pyopencl queue, cl_context) of a cl_command_queue, asked of OpenCL once per queue (`_known`)."""
        known = self._known.get(handle)
        if known is None:
            self._check_fork("queue")
            default = self.default_queue()
            q = default if int(default.int_ptr) == handle else _pyopencl().CommandQueue.from_int_ptr(handle,
                                                                                                   retain=True)
            known = (q, int(q.context.int_ptr))
            with self._lock:
                if len(self._known) >= self.KNOWN_MAX:
                    self._known.clear()
                self._known[handle] = known
        return known

    def forget_queues(self) -> None:
        """Drop the remembered queues (and the references that kept them alive)."""
        with self._lock:
            self._known.clear()

    def forget_keys(self, keys: set[object]) -> None:
        """The handle pool destroyed the handles of `keys` ((device, cl_context)): drop the queues remembered in
        those contexts, so that OpenCL can free a context nobody else holds."""
        contexts = {k[1] for k in keys if isinstance(k, tuple) and len(k) == 2}
        with self._lock:
            for handle in [h for h, (_, ctx) in self._known.items() if ctx in contexts]:
                del self._known[handle]

    def bound_stream(self, stream: object, device: int) -> int | None:
        handle = self.as_stream_handle(stream)
        return handle if handle is not None else int(self.default_queue(device).int_ptr)

    def handle_key(self, device: int, stream: int | None) -> Hashable:
        if stream.__class__ is int:  # a queue seen before: its context, without asking again
            known = self._known.get(stream)
            if known is not None:
                return device, known[1]
        handle = self.as_stream_handle(stream)
        ctx = int(self.default_queue().context.int_ptr) if handle is None else self._queue_info(handle)[1]
        return device, ctx

    def create_handle(self, device: int, stream: int | None) -> api.Handle:
        self._check_fork("create_handle")
        return api.create_with_stream(self.bound_stream(stream, device))

    def allocator(self) -> hip.Allocator:
        with self._lock:
            if self._allocator is None:
                self._allocator = OpenCLAllocator(self)
            return self._allocator

    def library_id(self) -> int:
        return 0

    # ---------------------------------------------------------------- states
    def new_stream(self, device: int) -> StreamLike:
        cl = _pyopencl()
        base = self.default_queue(device)
        return _Queue(cl.CommandQueue(base.context, base.device))

    def new_event(self, device: int) -> StreamLike:
        return _Marker()

    def _same_context(self, caller: Any, stream: Any, what: str) -> None:
        if caller.context.int_ptr != stream.context.int_ptr:
            raise BackendError(f"{what}: OpenCL queues of two contexts cannot wait on each other; states run in the "
                               f"device's default context (miopen.backend.current().default_queue(device).context): "
                               f"pass a queue of that context")

    def fork(self, caller: int | None, stream: StreamLike, event: Any) -> None:
        cl = _pyopencl()
        assert isinstance(stream, _Queue)
        q = self.queue(caller)
        self._same_context(q, stream.queue, "with_miopen_state")
        marker = cl.enqueue_marker(q)
        cl.enqueue_barrier(stream.queue, wait_for=[marker])

    def join(self, stream: StreamLike, caller: int | None, event: Any) -> None:
        cl = _pyopencl()
        assert isinstance(stream, _Queue)
        marker = cl.enqueue_marker(stream.queue)
        cl.enqueue_barrier(self.queue(caller), wait_for=[marker])

    # ---------------------------------------------------------------- memory
    def _buffer(self, ptr: int) -> Any:
        return _pyopencl().Buffer.from_int_ptr(ptr, retain=True)

    def memset_async(self, ptr: int, value: int, nbytes: int, stream: object) -> None:
        import numpy as np

        if nbytes:
            _pyopencl().enqueue_fill_buffer(self.queue(stream), self._buffer(ptr), np.uint8(value), 0, nbytes)

    def memcpy_dtod_async(self, dst: int, src: int, nbytes: int, stream: object) -> None:
        if nbytes:
            _pyopencl().enqueue_copy(self.queue(stream), self._buffer(dst), self._buffer(src), byte_count=nbytes)

    def read(self, ptr: int, nbytes: int, stream: object = None) -> bytes:
        """The bytes of a cl_mem (blocking; ordered after the work queued on `stream`)."""
        out = bytearray(nbytes)
        _pyopencl().enqueue_copy(self.queue(stream), out, self._buffer(ptr), is_blocking=True)
        return bytes(out)

    def write(self, ptr: int, data: bytes, stream: object = None) -> None:
        _pyopencl().enqueue_copy(self.queue(stream), self._buffer(ptr), bytearray(data), is_blocking=True)

    # ---------------------------------------------------------------- Find
    def check_find(self, what: str) -> None:
        """Refuse a Find that could abort the process: the 11x11 direct solver built in compile threads."""
        mode = os.environ.get("MIOPEN_FIND_MODE")
        if mode is not None and mode not in _NORMAL:
            raise BackendError(f"{what}: MIOPEN_FIND_MODE={mode!r}: on MIOpen's OpenCL backend only the NORMAL find "
                               f"mode considers the OpenCL solvers (the others find nothing); unset it or set NORMAL")
        unsafe = [f"{k}={os.environ.get(k)!r}" for k in ("MIOPEN_DEBUG_CONV_DIRECT_OCL_FWD11X11",
                                                         "MIOPEN_COMPILE_PARALLEL_LEVEL")
                  if os.environ.get(k) != FIND_ENV[k]]
        if unsafe:
            raise BackendError(f"{what}: on MIOpen's OpenCL backend Find may abort the process (the 11x11 direct "
                               f"solver's failed build inside its compile threads) unless "
                               f"MIOPEN_DEBUG_CONV_DIRECT_OCL_FWD11X11=0 and MIOPEN_COMPILE_PARALLEL_LEVEL=1 are set "
                               f"before MIOpen first reads them; here {', '.join(unsafe)}")

    def __repr__(self) -> str:
        return "<miopen backend OpenCL>"


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
        b._queues, b._known = {}, {}


os.register_at_fork(after_in_child=_after_fork_in_child)

