"""Streams and events: owners of one HIP handle each, destroyed exactly once; stream handles of other libraries."""

from __future__ import annotations

import ctypes
import os
import sys
import threading
import warnings
from typing import ClassVar, Final, Self

from .library import (
    EventFlags, HIP_ERROR_INVALID_HANDLE, HipError, HipNotReady, StreamFlags, _Hip, _lib,
)
from ._checks import _UINT32_LIMIT, _UINT64_LIMIT, _check_flags, _check_int, _kind
from .devices import synchronize

# --------------------------------------------------------------------------- streams and events

_close_lock = threading.Lock()


class _Owned:
    """The owned-handle base of `Stream` and `Event`: one HIP handle, destroyed exactly once when owned (`close()`,
    `with`, or when collected, never during interpreter shutdown), only marked closed when borrowed. A closed one
    raises ValueError and never reaches HIP."""

    __slots__ = ("_ptr", "_owned", "_hip", "_flags", "__weakref__")
    _KIND: ClassVar[str]  # the class's name in messages
    _DESTROY: ClassVar[str]  # the HIP function destroying an owned handle
    _ptr: int | None  # None: closed; 0: the null (default) stream
    _owned: bool
    _hip: _Hip | None
    _flags: int | None

    def _live(self, fn: str) -> int:
        ptr = self._ptr
        if ptr is None:
            raise ValueError(f"{fn}: this {self._KIND} is closed")
        return ptr

    def _lib(self) -> _Hip:
        return self._hip if self._hip is not None else _lib()

    @classmethod
    def _new_handle(cls, create: str, flags: int) -> tuple[int, _Hip]:
        """A new handle from HIP's `create(&out, flags)` and the library that made it; a null one is a HipError."""
        hip = _lib()
        out = ctypes.c_void_p()
        hip.call(create, ctypes.byref(out), flags)
        if not out.value:
            raise HipError(HIP_ERROR_INVALID_HANDLE, create, detail=f"returned a null {cls._KIND.lower()}")
        return out.value, hip

    @property
    def handle(self) -> int:
        """The HIP handle as an int (0: the null stream). Raises ValueError once closed."""
        return self._live(f"{self._KIND}.handle")

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
        """The creation flags (None for a borrowed one)."""
        return self._flags

    def close(self) -> None:
        """Destroy an owned handle now (exactly once; later calls do nothing). A borrowed one is only marked closed."""
        with _close_lock:
            ptr, self._ptr = self._ptr, None
        if ptr is None or not self._owned:
            return
        hip = self._hip if self._hip is not None else _lib()
        hip.call(self._DESTROY, ptr)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        if sys.is_finalizing() or getattr(self, "_ptr", None) is None or not getattr(self, "_owned", False):
            return
        try:
            self.close()
        except Exception as exc:  # a finalizer must not raise
            warnings.warn(f"{self._KIND}: {self._DESTROY} failed: {exc}", ResourceWarning, stacklevel=1)

    def __repr__(self) -> str:
        ptr = getattr(self, "_ptr", None)
        if ptr is None:
            return f"<{self._KIND} closed>"
        return f"<{self._KIND} 0x{ptr:x}{'' if self._owned else ', borrowed'}>"


class Stream(_Owned):
    """A HIP stream. `Stream.create()` owns a new one (destroyed exactly once: `close()`, `with`, or
    when collected, never during interpreter shutdown); `Stream.from_handle()` borrows one.
    A closed stream raises ValueError and never reaches HIP."""

    __slots__ = ()
    _KIND = "Stream"
    _DESTROY = "hipStreamDestroy"

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
        ptr, hip = cls._new_handle("hipStreamCreateWithFlags", f)
        return cls._make(ptr, True, hip, f)

    @classmethod
    def from_handle(cls, handle: int | None) -> Stream:
        """Borrow an existing stream (None or 0: the null stream); `close()` never destroys it."""
        h = 0 if handle is None else _check_int(handle, "handle", "Stream.from_handle")
        return cls._make(h, False, None, None)

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


def default_stream() -> Stream:
    """The null stream of the current device (borrowed)."""
    return Stream.from_handle(None)


class Event(_Owned):
    """A HIP event. `Event.create()` owns a new one (destroyed exactly once); `Event.from_handle()` borrows.

    Events are created with timing disabled by default (cheaper, as PyTorch does); pass
    `EventFlags.DEFAULT` to measure with `elapsed_ms`."""

    __slots__ = ("_recorded",)
    _KIND = "Event"
    _DESTROY = "hipEventDestroy"
    _recorded: bool | None  # None: unknown (borrowed)

    def __init__(self) -> None:
        raise TypeError("events come from Event.create() or Event.from_handle()")

    @classmethod
    def create(cls, flags: int = EventFlags.DISABLE_TIMING) -> Event:
        """A new event (hipEventCreateWithFlags)."""
        f = _check_flags(flags, EventFlags, "Event.create")
        ptr, hip = cls._new_handle("hipEventCreateWithFlags", f)
        obj = cls.__new__(cls)
        obj._ptr, obj._owned, obj._hip, obj._flags, obj._recorded = ptr, True, hip, f, False
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


def _after_fork_in_child() -> None:
    """A forked child gets a fresh close lock (one another thread held at fork time would stay locked)."""
    global _close_lock
    _close_lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)
