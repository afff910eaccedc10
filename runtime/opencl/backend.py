"""MIOpen's OpenCL backend: devices, queues, handles, states, memory and Find through pyopencl.

A device index is a position among every OpenCL device of every platform, with a per-thread current index; a
stream is a `cl_command_queue` as an int or a pyopencl `CommandQueue` (None: the backend's default in-order queue
of the current device, one context per device); an OpenCL handle compiles its kernels in the context of the queue
it was created with, so the handle pool keeps one per (device, context) (`handle_key`); memory is pyopencl
`Buffer`s (`cl_mem` as ints); states fork and join with markers and barriers between queues of one context.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections import Counter
from collections.abc import Hashable, Iterator, Mapping, Sequence
from typing import Any

from .._generated import api
from ..errors import BackendError
from ..version import has_feature
from ._import import pyopencl
from .memory import OpenCLAllocator

#: what MIOpen's Find needs on the OpenCL backend, set (unless the user set them) when the backend is chosen,
#: before MIOpen reads them: no 11x11 direct solver (an AMD-only builtin; its failed build inside Find's
#: compile threads aborts the process), one compile thread, no FFT solver (wrong results off AMD GPUs)
#: and the NORMAL find mode (the default, DYNAMIC_HYBRID, considers no OpenCL solver; releases without
#: miopenSetConvolutionFindMode take it from MIOPEN_FIND_MODE only)
FIND_ENV = {"MIOPEN_DEBUG_CONV_DIRECT_OCL_FWD11X11": "0", "MIOPEN_COMPILE_PARALLEL_LEVEL": "1",
            "MIOPEN_DEBUG_CONV_FFT": "0", "MIOPEN_FIND_MODE": "NORMAL"}
#: the values of MIOPEN_FIND_MODE that mean NORMAL
_NORMAL = ("NORMAL", "normal", "Normal", "1")


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
        #: the cl_contexts of the default queues: the backend holds them for good
        self._default_contexts: set[int] = set()
        #: the references a MIOpen handle holds on the queue it is bound to (measured when one is created)
        self.handle_holds = 1

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
            cl = pyopencl()
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
                cl = pyopencl()
                d = self.devices()[dev]
                q = self._queues[dev] = cl.CommandQueue(cl.Context([d]), d)
                self._default_contexts.add(int(q.context.int_ptr))
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
            q = default if int(default.int_ptr) == handle else pyopencl().CommandQueue.from_int_ptr(handle,
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

    def forget_keys(self, keys: set[object]) -> set[int]:
        """The handle pool destroyed the handles of `keys` ((device, cl_context)): drop the queues remembered in
        those contexts, so that OpenCL can free a context nobody else holds; the cl_command_queues dropped."""
        contexts = {k[1] for k in keys if isinstance(k, tuple) and len(k) == 2}
        with self._lock:
            gone = {h for h, (_, ctx) in self._known.items() if ctx in contexts}
            for handle in gone:
                del self._known[handle]
        return gone

    def dead_keys(self, bound: Mapping[Hashable, Sequence[int | None]]) -> set[Hashable]:
        """The pool's keys ((device, cl_context)) whose context only the runtime still holds: every queue of it
        that the backend remembers (holding a reference, so asking OpenCL about it is safe) has no reference but
        that one and those of the MIOpen handles bound to it (`handle_holds` each). `bound`: key -> the queue of
        each pooled handle. Kept: a default queue's context, and a key with a handle bound to a queue the backend
        no longer remembers (nothing safe to ask: the pool's bound on keys applies)."""
        if not bound:
            return set()
        info = pyopencl().command_queue_info.REFERENCE_COUNT
        with self._lock:
            known = dict(self._known)
        by_context: dict[int, list[int]] = {}
        for handle, (_, ctx) in known.items():
            by_context.setdefault(ctx, []).append(handle)
        dead: set[Hashable] = set()
        for key, streams in bound.items():
            if not isinstance(key, tuple) or len(key) != 2 or key[1] in self._default_contexts:
                continue
            queues = by_context.get(key[1], [])
            if not queues or any(s not in known for s in streams if s is not None):
                continue
            handles_on = Counter(streams)
            if all(int(known[h][0].get_info(info)) <= 1 + self.handle_holds * handles_on[h] for h in queues):
                dead.add(key)
        return dead

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
        """A handle on the queue `stream` (None: the device's default queue); how many references it takes on that
        queue is measured (`handle_holds`: what `dead_keys` discounts)."""
        self._check_fork("create_handle")
        s = self.bound_stream(stream, device)
        assert s is not None
        queue = self._queue_info(s)[0]
        info = pyopencl().command_queue_info.REFERENCE_COUNT
        before = int(queue.get_info(info))
        handle = api.create_with_stream(s)
        self.handle_holds = max(0, int(queue.get_info(info)) - before)
        return handle

    def allocator(self) -> OpenCLAllocator:
        with self._lock:
            if self._allocator is None:
                self._allocator = OpenCLAllocator(self)
            return self._allocator

    def library_id(self) -> int:
        return 0

    # ---------------------------------------------------------------- states
    def new_stream(self, device: int) -> _Queue:
        cl = pyopencl()
        base = self.default_queue(device)
        return _Queue(cl.CommandQueue(base.context, base.device))

    def new_event(self, device: int) -> _Marker:
        return _Marker()

    def _same_context(self, caller: Any, stream: Any, what: str) -> None:
        if caller.context.int_ptr != stream.context.int_ptr:
            raise BackendError(f"{what}: OpenCL queues of two contexts cannot wait on each other; states run in the "
                               f"device's default context (miopen.backend.current().default_queue(device).context): "
                               f"pass a queue of that context")

    def fork(self, caller: int | None, stream: object, event: Any) -> None:
        cl = pyopencl()
        assert isinstance(stream, _Queue)
        q = self.queue(caller)
        self._same_context(q, stream.queue, "with_miopen_state")
        marker = cl.enqueue_marker(q)
        cl.enqueue_barrier(stream.queue, wait_for=[marker])

    def join(self, stream: object, caller: int | None, event: Any) -> None:
        cl = pyopencl()
        assert isinstance(stream, _Queue)
        marker = cl.enqueue_marker(stream.queue)
        cl.enqueue_barrier(self.queue(caller), wait_for=[marker])

    # ---------------------------------------------------------------- memory
    def _buffer(self, ptr: int) -> Any:
        return pyopencl().Buffer.from_int_ptr(ptr, retain=True)

    def memset_async(self, ptr: int, value: int, nbytes: int, stream: object) -> None:
        import numpy as np

        if nbytes:
            pyopencl().enqueue_fill_buffer(self.queue(stream), self._buffer(ptr), np.uint8(value), 0, nbytes)

    def memcpy_dtod_async(self, dst: int, src: int, nbytes: int, stream: object) -> None:
        if nbytes:
            pyopencl().enqueue_copy(self.queue(stream), self._buffer(dst), self._buffer(src), byte_count=nbytes)

    def read(self, ptr: int, nbytes: int, stream: object = None) -> bytes:
        """The bytes of a cl_mem (blocking; ordered after the work queued on `stream`)."""
        out = bytearray(nbytes)
        pyopencl().enqueue_copy(self.queue(stream), out, self._buffer(ptr), is_blocking=True)
        return bytes(out)

    def write(self, ptr: int, data: bytes, stream: object = None) -> None:
        pyopencl().enqueue_copy(self.queue(stream), self._buffer(ptr), bytearray(data), is_blocking=True)

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
