"""HIP for the runtime: a small ctypes layer over libamdhip64, loaded on first use.

Nothing is loaded at import. The first call (or `load_hip()`) loads `$MIOGEN_HIP_LIBRARY` when it is
set (a file, or a directory holding one of `LIBRARY_NAMES`; one that does not load is an error naming
it and why, never a fall-through), else searches `$ROCM_PATH/lib`, `/opt/rocm/lib`, then the dynamic
loader's path; `set_hip_library()` injects a library (a `ctypes.CDLL` or a path), which
is how the tests drive this module through a stub, and forgets it with `None`.

What it offers:

- devices: `device_count()`, `current_device()`, `set_device()`, `device_guard()`, `synchronize()`,
  `device_arch()`, `device_name()`, `mem_get_info()`;
- `Stream` and `Event` owners (destroyed exactly once; a closed one raises `ValueError`, never
  reaches HIP), and `as_stream_handle()` for ints and torch / CuPy / hip-python streams;
- memory: `malloc`, `free`, `allocation_bytes` (hipMemPtrGetInfo), `memcpy`, `memcpy_async`, `memset`, `memset_async`, with `MemcpyKind`;
- errors: `HipError` (`.code`, `.name`, `.function`), `HipOutOfMemoryError` (also a `MemoryError`),
  `HipNotReady` (queries turn it into False), `HipLibraryNotFoundError` (an `OSError`), `HipForkError` (a
  forked child's first call when the parent had loaded HIP);
- allocators: the `Allocator` protocol, `HipMallocAllocator` (the default), `TorchAllocator`,
  `CallableAllocator`, the process-wide `set_allocator()` / `get_allocator()`, and
  `miopen_allocator_callbacks()`, which turns an allocator into the two callbacks that
  `miopen.set_allocator(handle, alloc_cb, free_cb, None)` hands to miopenSetAllocator.

Arguments are checked in Python before any HIP call: wrong types raise `TypeError`, bad values
`ValueError`, both naming the parameter.

The package is split by job: `library` (status codes, errors, enums, prototypes, loading), `devices`,
`streams` (Stream and Event), `memory`, `allocators`, and `_checks` (the argument checks they share);
every public name is importable from `miopen.hip` itself. Prototypes, enum values and flags are those of the HIP 5.2
header (`hip/hip_runtime_api.h`, `hip/driver_types.h`); the ones used here are unchanged in HIP 6.
"""

from __future__ import annotations

from .library import (
    ERROR_NAMES as ERROR_NAMES,
    EventFlags as EventFlags,
    HIP_ERROR_INVALID_DEVICE as HIP_ERROR_INVALID_DEVICE,
    HIP_ERROR_INVALID_HANDLE as HIP_ERROR_INVALID_HANDLE,
    HIP_ERROR_INVALID_VALUE as HIP_ERROR_INVALID_VALUE,
    HIP_ERROR_NOT_READY as HIP_ERROR_NOT_READY,
    HIP_ERROR_NOT_SUPPORTED as HIP_ERROR_NOT_SUPPORTED,
    HIP_ERROR_NO_DEVICE as HIP_ERROR_NO_DEVICE,
    HIP_ERROR_OUT_OF_MEMORY as HIP_ERROR_OUT_OF_MEMORY,
    HIP_SUCCESS as HIP_SUCCESS,
    HipError as HipError,
    HipForkError as HipForkError,
    HipLibraryNotFoundError as HipLibraryNotFoundError,
    HipNotReady as HipNotReady,
    HipOutOfMemoryError as HipOutOfMemoryError,
    LIBRARY_ENV as LIBRARY_ENV,
    LIBRARY_NAMES as LIBRARY_NAMES,
    MemcpyKind as MemcpyKind,
    StreamFlags as StreamFlags,
    error_name as error_name,
    hip_library_path as hip_library_path,
    load_hip as load_hip,
    loaded_hip_library as loaded_hip_library,
    set_hip_library as set_hip_library,
    _PROPS_ARCH_OFFSET as _PROPS_ARCH_OFFSET,
    _PROPS_BUFFER_BYTES as _PROPS_BUFFER_BYTES,
    _PROPS_NAME_OFFSET as _PROPS_NAME_OFFSET,
    _PROTOTYPES as _PROTOTYPES,
    _candidates as _candidates,
    _lib as _lib,
)
from ._checks import (
    _device_pointer as _device_pointer,
)
from .devices import (
    is_available as is_available,
    current_device as current_device,
    device_arch as device_arch,
    device_count as device_count,
    device_guard as device_guard,
    device_name as device_name,
    mem_get_info as mem_get_info,
    set_device as set_device,
    synchronize as synchronize,
)
from .streams import (
    Event as Event,
    Stream as Stream,
    as_stream_handle as as_stream_handle,
    default_stream as default_stream,
)
from .memory import (
    allocation_bytes as allocation_bytes,
    free as free,
    malloc as malloc,
    memcpy as memcpy,
    memcpy_async as memcpy_async,
    memset as memset,
    memset_async as memset_async,
)
from .allocators import (
    AllocCallback as AllocCallback,
    Allocator as Allocator,
    CachingAllocator as CachingAllocator,
    CallableAllocator as CallableAllocator,
    FreeCallback as FreeCallback,
    HipMallocAllocator as HipMallocAllocator,
    TorchAllocator as TorchAllocator,
    get_allocator as get_allocator,
    miopen_allocator_callbacks as miopen_allocator_callbacks,
    set_allocator as set_allocator,
    use_allocator as use_allocator,
)

__all__ = [
    "LIBRARY_ENV", "LIBRARY_NAMES", "ERROR_NAMES", "HIP_SUCCESS", "HIP_ERROR_INVALID_VALUE",
    "HIP_ERROR_OUT_OF_MEMORY", "HIP_ERROR_NO_DEVICE", "HIP_ERROR_INVALID_DEVICE", "HIP_ERROR_INVALID_HANDLE",
    "HIP_ERROR_NOT_READY", "HIP_ERROR_NOT_SUPPORTED",
    "HipError", "HipOutOfMemoryError", "HipNotReady", "HipLibraryNotFoundError", "HipForkError",
    "MemcpyKind", "StreamFlags", "EventFlags",
    "load_hip", "set_hip_library", "loaded_hip_library", "hip_library_path", "is_available", "error_name",
    "device_count", "current_device", "set_device", "device_guard", "synchronize", "device_arch", "device_name",
    "mem_get_info", "Stream", "Event", "as_stream_handle", "default_stream",
    "malloc", "free", "allocation_bytes", "memcpy", "memcpy_async", "memset", "memset_async",
    "Allocator", "CachingAllocator", "HipMallocAllocator", "TorchAllocator", "CallableAllocator",
    "get_allocator", "set_allocator", "use_allocator", "miopen_allocator_callbacks",
    "AllocCallback", "FreeCallback",
]
