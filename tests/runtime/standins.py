"""Stand-ins for pyopencl objects, as the runtime reads them (the runtime tests run without pyopencl)."""

from __future__ import annotations


class ClBuffer:
    """A pyopencl buffer: `int_ptr`, `size`, `release()` (watched once passed to `watch_releases`)."""

    def __init__(self, ptr: int, size: int) -> None:
        self.int_ptr, self.size = ptr, size

    def release(self) -> None:
        pass  # like pyopencl: the stale address stays


class ClArray:
    """A pyopencl Array: base_data, offset, shape, strides in bytes, numpy dtype; packed, on a buffer of its own."""

    def __init__(self, ptr: int, shape: tuple[int, ...], dtype: str = "float32") -> None:
        import numpy as np

        from miopen.layout import packed_strides

        self.dtype = np.dtype(dtype)
        size = self.dtype.itemsize
        for d in shape:
            size *= d
        self.base_data, self.offset, self.shape = ClBuffer(ptr, size), 0, shape
        self.strides = tuple(self.dtype.itemsize * s for s in packed_strides(shape))
