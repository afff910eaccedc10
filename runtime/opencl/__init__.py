"""MIOpen's OpenCL backend, beside the HIP package (`miopen.hip`): queues, buffers and devices through pyopencl,
which is imported on first use. `miopen.backend` chooses it for an OpenCL build of MIOpen."""

from __future__ import annotations

from .backend import FIND_ENV as FIND_ENV, OpenCLBackend as OpenCLBackend
from .memory import OpenCLAllocator as OpenCLAllocator

__all__ = ["FIND_ENV", "OpenCLAllocator", "OpenCLBackend"]
