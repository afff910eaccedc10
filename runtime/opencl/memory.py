"""OpenCL device memory: pyopencl Buffers made by the runtime (workspaces, persistent buffers), freed once."""

from __future__ import annotations

import threading
from typing import Any, Protocol

from ._import import pyopencl


class _Queues(Protocol):
    def queue(self, stream: object) -> Any: ...


class OpenCLAllocator:
    """pyopencl Buffers (READ_WRITE) in the context of the queue they will be used on; `ptr` is the cl_mem."""

    def __init__(self, backend: _Queues) -> None:
        self._backend = backend
        self._lock = threading.Lock()
        self._live: dict[int, Any] = {}

    def allocate(self, nbytes: int, stream: int | None = None) -> int:
        cl = pyopencl()
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
