"""Pooled MIOpen handles: one per (thread, device), re-bound to the caller's stream only when it changes.

PyTorch's `getMiopenHandle` calls `miopenSetStream` on every call; `miopenSetStream` is neither
free nor thread-safe, so here a handle remembers its stream and is re-bound only on a change.
The pool never makes a thread wait for a handle (a limit on handles can deadlock threads waiting on each other);
it bounds the keys instead: handles are kept for at most `KEYS_MAX` keys (HIP: devices; OpenCL: device and queue
context), and the handles of the least recently acquired key beyond that are destroyed (after the calls using
them return: the in-flight guard). A key whose context has gone (OpenCL: nobody but the runtime holds a queue of
it) has its handles destroyed at the next new key (`HandlePool.collect`), so a process that drops contexts keeps
the pool it had. A thread's handles go back to the pool when the thread ends; nothing is destroyed during
interpreter shutdown. Unloading the library retires its handles (`_support.unload_library`): the pools forget them, and a thread's next
`inline_miopen_handle` creates a handle of the library loaded then.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager

from . import backend as _backend
from . import workspace as _workspace
from ._generated import _support as _gs
from ._generated import api
from .kernelcache import notice_once
from .version import check_miopen_versions, version_policy


class PooledHandle:
    """A pooled `miopen.Handle` with the stream it is bound to."""

    __slots__ = ("handle", "device", "stream", "key", "owner", "evicted")

    def __init__(self, handle: api.Handle, device: int, key: object = None) -> None:
        self.handle = handle
        self.device = device
        self.key = device if key is None else key
        self.stream: int | None = None
        #: the thread whose window holds it (None: free); `evicted`: its key left the pool, the owner destroys it
        self.owner: int | None = None
        self.evicted = False

    def bind(self, stream: int | None) -> api.Handle:
        """Point the handle at `stream` (skipping `miopenSetStream` when it already is)."""
        if stream != self.stream:
            api.set_stream(self.handle, stream)  # OpenCL: only among queues of the handle's context (the pool's key)
            self.stream = stream
        return self.handle


class HandlePool:
    """Free lists of handles per device; each thread holds at most one handle per device."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._free: dict[object, list[PooledHandle]] = {}
        self._all: list[PooledHandle] = []
        self._local = threading.local()
        #: the keys with handles, least recently acquired first (bounded by `max_keys`)
        self._keys: OrderedDict[object, None] = OrderedDict()
        #: evicted handles still in another thread's window (destroyed by that thread, or by close())
        self._retiring: list[PooledHandle] = []
        self.max_keys = KEYS_MAX
        self.created = 0
        #: handles destroyed because their key was evicted
        self.evicted = 0
        _POOLS.add(self)

    def _after_fork(self) -> None:
        """In a forked child: a fresh lock (another thread may have held it at fork time), no free
        lists and no per-thread windows. The parent's handles are forgotten, never destroyed or
        handed out here: they belong to the parent's GPU context."""
        self._lock = threading.Lock()
        for ph in self._all + self._retiring:
            disown(ph.handle)
        self._free, self._all, self._local = {}, [], threading.local()
        self._keys, self._retiring = OrderedDict(), []
        self.created = self.evicted = 0

    def _window(self) -> dict[object, PooledHandle]:
        window: dict[object, PooledHandle] | None = getattr(self._local, "window", None)
        if window is None:
            window = {}
            self._local.window = window
            #: queue object -> (backend, device, its stream, the handle found for them): `inline_miopen_handle`'s
            #: one lookup for a queue seen before (checked: the handle is still bound to it and open)
            self._local.queues = {}
            # when the thread ends its thread-local dict goes away: hand its handles back
            marker = _ThreadMarker()
            self._local.marker = marker
            weakref.finalize(marker, self._release, window)
        return window

    def _release(self, window: dict[object, PooledHandle]) -> None:
        evicted = []
        with self._lock:
            for key, ph in window.items():
                ph.owner = None
                if ph.evicted:
                    evicted.append(ph)
                elif not ph.handle.closed:  # handles closed by close() are not handed out again
                    self._free.setdefault(key, []).append(ph)
        window.clear()
        self._destroy(evicted)

    def acquire(self, device: int, stream: int | None = None) -> PooledHandle:
        """This thread's handle for `device` (created on first use, under a device guard). The backend decides
        which handles a stream may share: HIP one per device; OpenCL one per (device, queue context)."""
        b = _backend.current()
        key = b.handle_key(device, stream)
        window = self._window()
        me = threading.get_ident()
        ph = window.get(key)
        if ph is not None and not ph.handle.closed:
            if not ph.evicted:
                return ph
            self._destroy([window.pop(key)])  # its key left the pool while this thread held it
        with self._lock:
            free = self._free.get(key)
            ph = free.pop() if free else None
            while ph is not None and ph.handle.closed:  # retired with its library
                ph = free.pop() if free else None
            if ph is not None:
                ph.owner = me  # under the lock: no eviction takes it for a free one
        if ph is None:
            check_miopen_versions(version_policy())
            notice_once(b.name)  # once per process: MIOpen is about to compile into an empty kernel cache
            handle = b.create_handle(device, stream)
            ph = PooledHandle(handle, device, key)
            ph.owner = me
            if b.name != "HIP":  # created on its queue
                ph.stream = stream
            with self._lock:
                self._all.append(ph)
                self.created += 1
        window[key] = ph
        self._touch(key, b)
        return ph

    def _touch(self, key: object, b: _backend.Backend) -> None:
        """`key` is the most recently acquired; the handles of the keys beyond `max_keys` are released
        (`_release_keys`). A new key first releases those of keys whose context has gone (`collect`)."""
        with self._lock:
            new = key not in self._keys
            self._keys[key] = None
            self._keys.move_to_end(key)
            gone = set()
            while len(self._keys) > self.max_keys:
                gone.add(self._keys.popitem(last=False)[0])
        if gone:
            self._release_keys(gone, b)
        if new:
            self.collect(keep=key)

    def collect(self, keep: object = None) -> int:
        """Release the handles of every key (but `keep`) whose context, queue or stream nobody but the runtime
        holds any more, as the backend judges (OpenCL: `dead_keys`, from reference counts; HIP keys are devices,
        which never go); the number of keys released. Runs on its own whenever a new key is acquired."""
        b = _backend.current()
        judge = getattr(b, "dead_keys", None)
        if judge is None:
            return 0
        memo = getattr(self._local, "queues", None)
        if memo:
            memo.clear()  # this thread's handle lookup holds the user's queue objects: it must not keep them alive
        with self._lock:
            bound: dict[object, list[int | None]] = {k: [] for k in self._keys if k != keep}
            for ph in self._all:
                if ph.key in bound:
                    bound[ph.key].append(ph.stream)
        dead: set[object] = judge(bound)
        if dead:
            with self._lock:
                for k in dead:
                    self._keys.pop(k, None)
            self._release_keys(dead, b)
        return len(dead)

    def _release_keys(self, gone: set[object], b: _backend.Backend) -> None:
        """Destroy the handles of the keys `gone` (each once: `HandleBase.close`, which waits for calls using it in
        other threads; one in another thread's window is destroyed by that thread), and make the backend and the
        threads' scratch forget what they held for them (OpenCL: the queues of those contexts)."""
        me = threading.get_ident()
        victims: list[PooledHandle] = []
        with self._lock:
            for ph in self._all:
                if ph.key in gone:
                    ph.evicted = True
                    # a handle in another thread's window may be on its way to a call: that thread destroys it
                    (victims if ph.owner in (None, me) else self._retiring).append(ph)
            self._all = [ph for ph in self._all if ph.key not in gone]
            for k in gone:
                self._free.pop(k, None)
        self._destroy(victims)
        forget = getattr(b, "forget_keys", None)
        if forget is not None:
            _workspace.forget_streams(forget(gone))
        self._prune_local()

    def _destroy(self, handles: list[PooledHandle]) -> None:
        n = 0
        for ph in handles:
            if not ph.handle.closed:
                ph.handle.close()
                n += 1
        if handles:
            with self._lock:
                self.evicted += n
                self._retiring = [ph for ph in self._retiring if not ph.handle.closed]

    def _prune_local(self) -> None:
        """Drop this thread's entries of closed handles, destroying those whose key was evicted (other threads do
        so at their next acquire, or when they end)."""
        window = getattr(self._local, "window", None)
        if window is not None:
            gone = [k for k, ph in window.items() if ph.handle.closed or ph.evicted]
            self._destroy([window.pop(k) for k in gone])
            queues = self._local.queues
            for queue in [q for q, known in queues.items() if known[3].handle.closed]:
                del queues[queue]  # nor keep the user's queue (and its context) alive

    def close(self) -> None:
        """Destroy every handle the pool ever created (explicit; never at interpreter exit)."""
        with self._lock:
            handles, self._all, self._free, self._keys = self._all + self._retiring, [], {}, OrderedDict()
            self._retiring = []
        for ph in handles:
            ph.handle.close()
        window = getattr(self._local, "window", None)
        if window is not None:
            window.clear()
            self._local.queues.clear()

    def _forget_closed(self) -> None:
        """Drop the handles that are closed (retired when their library was unloaded); never destroys one."""
        with self._lock:
            self._all = [ph for ph in self._all if not ph.handle.closed]
            self._free = {d: [ph for ph in phs if not ph.handle.closed] for d, phs in self._free.items()}
            self._keys = OrderedDict((ph.key, None) for ph in self._all)
        self._prune_local()

    @property
    def size(self) -> int:
        with self._lock:
            return len(self._all)


#: how many keys (HIP: devices; OpenCL: (device, queue context)) a pool keeps handles for
KEYS_MAX = 16


class _ThreadMarker:
    """Lives in a thread's local storage; its finalizer runs when the thread ends."""


def disown(handle: object) -> None:
    """Mark a handle object of the parent process closed without destroying it (after a fork):
    using it raises, and its finalizer does nothing."""
    for attr, value in (("_owned", False), ("_ptr", None), ("_cp", None), ("_children", None)):
        try:
            setattr(handle, attr, value)
        except AttributeError:
            pass


_POOLS: weakref.WeakSet[HandlePool] = weakref.WeakSet()
_pool = HandlePool()


def _after_fork_in_child() -> None:
    for pool in list(_POOLS):
        pool._after_fork()
    # the version check's cache lock (runtime/version.py) may have been held by another thread too
    from . import version

    version._lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _library_changed() -> None:
    for pool in list(_POOLS):
        pool._forget_closed()


_gs._on_reset.append(_library_changed)


def handle_pool() -> HandlePool:
    return _pool


def inline_miopen_handle(stream: object = None, device: int | None = None) -> api.Handle:
    """The calling thread's handle for `device` (default: current), bound to `stream`.

    `stream` may be None (the default stream; OpenCL: the backend's default queue of the device), an int
    handle, a torch/CuPy/hip-python stream, or a pyopencl CommandQueue on the OpenCL backend.
    """
    b = _backend.current()
    dev = b.current_device() if device is None else device
    # the thread's handle for this key, already bound to the stream: what almost every op call finds
    local = _pool._local
    window: dict[object, PooledHandle] | None = getattr(local, "window", None)
    if window is not None:
        if stream is None:
            # HIP's null stream: the device's handle (keyed by the device), bound to no stream; an OpenCL handle is
            # keyed by (device, context) and bound to a queue, so it is never found here
            ph = window.get(dev)
            if ph is not None and ph.stream is None and ph.handle._ptr is not None:
                return ph.handle
        elif stream.__class__ is b.queue_type:  # a queue object seen before: its handle in one lookup
            known: tuple[object, int, int | None, PooledHandle] | None = local.queues.get(stream)
            if known is not None and known[0] is b and known[1] == dev:
                ph = known[3]
                if ph.stream == known[2] and ph.handle._ptr is not None:
                    return ph.handle
    s = b.bound_stream(stream, dev)
    found = None if window is None else window.get(b.handle_key(dev, s))
    if found is None or found.stream != s or found.handle._ptr is None:
        found = _pool.acquire(dev, s)
        found.bind(s)
    if stream is not None and stream.__class__ is b.queue_type:
        queues: dict[object, tuple[object, int, int | None, PooledHandle]] = local.queues
        if len(queues) >= QUEUES_MAX:
            queues.clear()
        queues[stream] = (b, dev, s, found)  # holds the queue: its address stays its own while it is here
    return found.handle


#: how many queue objects a thread's handle lookup remembers (then it starts again)
QUEUES_MAX = 64


@contextmanager
def miopen_handle(stream: object = None, device: int | None = None) -> Iterator[api.Handle]:
    """`with miopen_handle(stream) as h:` — the inline handle, under a device guard."""
    b = _backend.current()
    dev = b.current_device() if device is None else device
    with b.device_guard(dev):
        yield inline_miopen_handle(stream, dev)
