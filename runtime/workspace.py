"""Scratch workspaces (grow-only, capped, out-of-memory aware) and persistent buffers.

Scratch is shared by the calls queued on one state/stream (stream order makes reuse safe).
Persistent buffers — pooling and LRN workspaces, the RNN reserve, dropout states — live across
calls (forward to backward) and never come from shared scratch.
"""

from __future__ import annotations

import os
import sys
import threading
import weakref

from . import backend as _backend
from . import hip
from .errors import HipOutOfMemoryError, WorkspaceLimitError, WorkspaceOOM

_limit_lock = threading.Lock()
_limit: list[int | None] = [None]
#: the largest size any workspace or buffer may have (bytes): what a signed 64-bit size can hold
MAX_WORKSPACE_BYTES = (1 << 63) - 1


def _check_nbytes(value: object, what: str, *, none_ok: bool = False) -> int | None:
    """`value` if it is a byte count (an int in [0, MAX_WORKSPACE_BYTES], or None when allowed)."""
    if value is None and none_ok:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_WORKSPACE_BYTES:
        allowed = "None or " if none_ok else ""
        shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
        raise ValueError(f"{what} must be {allowed}an int in [0, {MAX_WORKSPACE_BYTES}]; got {shown}")
    return int(value)


def set_workspace_limit(nbytes: int | None) -> None:
    """A global cap on any single workspace (None: no cap); planners respect it too."""
    value = _check_nbytes(nbytes, "set_workspace_limit: nbytes", none_ok=True)
    with _limit_lock:
        _limit[0] = value


def workspace_limit() -> int | None:
    with _limit_lock:
        return _limit[0]


def _allocate(allocator: hip.Allocator, nbytes: int, stream: int | None, what: str, device: int) -> int:
    """Allocate; on out-of-memory empty the allocator's cache and retry once, then raise WorkspaceOOM."""
    try:
        return allocator.allocate(nbytes, stream)
    except (HipOutOfMemoryError, MemoryError):
        empty = getattr(allocator, "empty_cache", None)
        if callable(empty):
            empty()
        try:
            return allocator.allocate(nbytes, stream)
        except (HipOutOfMemoryError, MemoryError) as exc:
            raise WorkspaceOOM(f"cannot allocate {nbytes} bytes of {what} on device {device} "
                               f"(even after emptying the allocator cache): {exc}") from exc


class MIOpenWorkspace:
    """Grow-only scratch memory for one device (and one stream at a time)."""

    def __init__(self, device: int, allocator: hip.Allocator | None = None, max_bytes: int | None = None,
                 stream: int | None = None) -> None:
        if isinstance(device, bool) or not isinstance(device, int) or device < 0:
            raise ValueError(f"MIOpenWorkspace: device must be a non-negative int; got {device!r}")
        self.device = device
        self.allocator = allocator if allocator is not None else _backend.current().allocator()
        self.max_bytes = _check_nbytes(max_bytes, "MIOpenWorkspace: max_bytes", none_ok=True)
        self._ptr: int | None = None
        self._nbytes = 0
        self._stream: int | None = None
        #: the stream its memory is used on when `get` names none (OpenCL: its queue's context holds the buffer)
        self.stream = stream
        self._lock = threading.Lock()
        self.allocations = 0
        _WORKSPACES.add(self)

    @property
    def nbytes(self) -> int:
        return self._nbytes

    @property
    def ptr(self) -> int | None:
        return self._ptr

    def cap(self) -> int | None:
        limit, own = _limit[0], self.max_bytes  # one read of the global cap (atomic: no lock needed)
        return own if limit is None else (limit if own is None else min(own, limit))

    def get(self, nbytes: int, stream: int | None = None) -> int | None:
        """A pointer to at least `nbytes` of scratch (None for 0 bytes); grows, never shrinks."""
        if nbytes.__class__ is int and 0 < nbytes <= self._nbytes and _limit[0] is None and self.max_bytes is None:
            ptr = self._ptr  # what it holds already, no cap to apply: the lock guards a change, and none is needed
            if ptr is not None:
                return ptr
        _check_nbytes(nbytes, "MIOpenWorkspace.get: nbytes")
        if nbytes == 0:
            return self._ptr
        cap = self.cap()
        if cap is not None and nbytes > cap:
            raise WorkspaceLimitError(f"a workspace of {nbytes} bytes exceeds the cap of {cap} bytes")
        if stream is None:
            stream = self.stream
        with self._lock:
            if nbytes <= self._nbytes and self._ptr is not None:
                return self._ptr
            self._release()
            self._ptr = _allocate(self.allocator, nbytes, stream, "workspace", self.device)
            self._nbytes = nbytes
            self._stream = stream
            self.allocations += 1
            return self._ptr

    def _release(self) -> None:
        if self._ptr is not None:
            ptr, self._ptr, self._nbytes = self._ptr, None, 0
            self.allocator.free(ptr, self._stream)

    def reset(self) -> None:
        """Free the scratch now (the next `get` allocates again)."""
        with self._lock:
            self._release()

    close = reset


def _free_buffer(allocator: hip.Allocator, ptr: int | None, stream: int | None) -> None:
    if ptr is not None and not sys.is_finalizing():
        allocator.free(ptr, stream)


class PersistentBuffer:
    """Device memory that outlives a call (pooling/LRN workspace, RNN reserve, dropout states)."""

    def __init__(self, nbytes: int, device: int, kind: str, allocator: hip.Allocator | None = None,
                 stream: int | None = None) -> None:
        _check_nbytes(nbytes, "PersistentBuffer: nbytes")
        self.kind = kind
        self.device = device
        self.nbytes = nbytes
        self.allocator = allocator if allocator is not None else _backend.current().allocator()
        self._stream = stream
        self._ptr: int | None = _allocate(self.allocator, nbytes, stream, kind, device) if nbytes else None
        self._closed = False
        # freed when dropped too (never during interpreter shutdown)
        self._finalizer = weakref.finalize(self, _free_buffer, self.allocator, self._ptr, stream)
        self._finalizer.atexit = False
        _BUFFERS.add(self)

    @property
    def ptr(self) -> int | None:
        if self._closed:
            raise ValueError(f"this {self.kind} buffer is closed")
        return self._ptr

    def data_ptr(self) -> int:
        return self.ptr or 0

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._ptr = None
            self._finalizer()

    def __enter__(self) -> PersistentBuffer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<PersistentBuffer {self.kind} {self.nbytes} bytes{' closed' if self._closed else ''}>"


_scratch = threading.local()
_WORKSPACES: weakref.WeakSet[MIOpenWorkspace] = weakref.WeakSet()
_BUFFERS: weakref.WeakSet[PersistentBuffer] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    """A forked child starts with fresh locks and no scratch; device memory of the parent is never
    freed (nor reused) here."""
    global _limit_lock, _scratch
    _limit_lock = threading.Lock()
    _scratch = threading.local()
    _TABLES.clear()
    for ws in list(_WORKSPACES):
        ws._lock = threading.Lock()
        ws._ptr, ws._nbytes, ws._stream = None, 0, None
    for buf in list(_BUFFERS):
        buf._finalizer.detach()
        buf._closed, buf._ptr = True, None


os.register_at_fork(after_in_child=_after_fork_in_child)


def scratch(device: int, stream: object = None) -> MIOpenWorkspace:
    """The calling thread's scratch workspace for (`device`, `stream`): work queued on two streams
    never shares scratch. Ops use it when given no workspace."""
    if stream is None:
        key: tuple[int, int | None] = (device, None)  # None: None, always
    elif type(stream) is int and 0 < stream < 1 << 64:  # a stream handle: as_stream_handle would give it back
        key = (device, stream)
    else:
        key = (device, _backend.current().as_stream_handle(stream))
    table: _ScratchTable | None = getattr(_scratch, "table", None)
    if table is None:
        table = _scratch.table = _ScratchTable()
        _TABLES.add(table)
    ws = table.get(key)
    if ws is None:
        if len(table) >= SCRATCH_MAX:  # the oldest stream's scratch is freed (a dropped queue or stream's, mostly)
            table.pop(next(iter(table))).reset()
        ws = table[key] = MIOpenWorkspace(device, stream=key[1])
    return ws


#: how many (device, stream) scratch workspaces a thread keeps (then the oldest is freed)
SCRATCH_MAX = 16


class _ScratchTable(dict[tuple[int, "int | None"], MIOpenWorkspace]):
    """A thread's scratch, (device, stream) -> workspace; `forget_streams` reaches every thread's."""

    __hash__ = object.__hash__  # type: ignore[assignment]  # in a WeakSet: one per thread, told apart by identity
    __eq__ = object.__eq__


#: every thread's scratch table (one goes with its thread)
_TABLES: weakref.WeakSet[_ScratchTable] = weakref.WeakSet()


def forget_streams(streams: set[int]) -> None:
    """Free the scratch every thread keeps for `streams`, streams that have gone (the handle pool found their
    context dead): their memory is released, and a stream made later at the same address starts afresh. No call
    can be using it: nobody holds the stream any more."""
    if not streams:
        return
    for table in list(_TABLES):
        for key in [k for k in list(table) if k[1] in streams]:
            ws = table.pop(key, None)
            if ws is not None:
                ws.reset()
