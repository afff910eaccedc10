"""Allocators: the protocol, HIP's and PyTorch's, a callable one, the process-wide choice, and MIOpen's callbacks."""

from __future__ import annotations

import importlib
import logging
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol, TypeAlias, runtime_checkable

from .library import HIP_ERROR_OUT_OF_MEMORY, HipOutOfMemoryError
from ._checks import _UINT64_LIMIT, _check_device, _check_int, _kind, _pointer_value
from .streams import as_stream_handle
from .memory import free, malloc

_log = logging.getLogger(__package__)

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
    """A forked child gets a fresh allocator lock (one another thread held at fork time would stay locked)."""
    global _allocator_lock
    _allocator_lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)
