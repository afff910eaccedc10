"""pyopencl, imported on first use: the OpenCL backend's one Python dependency (`BackendError` when absent)."""

from __future__ import annotations

from typing import Any

from .._generated import _support as _s
from .._generated._pointers import watch_releases
from ..errors import BackendError


def pyopencl() -> Any:
    """The pyopencl module; from then on a released buffer is refused (`tensor.Tensor.make`)."""
    try:
        import pyopencl
    except ImportError as exc:
        raise BackendError(f"the loaded MIOpen ({_s.library_path()}) is built for OpenCL: the runtime needs "
                           f"pyopencl for queues and memory (pip install pyopencl): {exc}") from None
    watch_releases(pyopencl.MemoryObject)  # a buffer released from now on is refused (tensor.Tensor.make)
    return pyopencl
