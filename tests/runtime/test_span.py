"""The bytes a strided tensor spans, one definition (`_pointers.span_bytes`) read by every path that needs it: the
typed API's descriptor extents, the `__cuda_array_interface__` (strides in bytes) and DLPack (strides in elements)
exporters, `layout.element_space`/`num_bytes` and `Tensor.nbytes`/`extent`. Each against a brute-force oracle over
the class: zero-length dims, one element, broadcast strides of 0, padded strides, byte strides."""

from __future__ import annotations

import ctypes
import itertools
from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ..conftest import Libs

_SIZES = {1: "|u1", 2: "<f2", 4: "<f4", 8: "<f8"}


def _oracle(shape: Sequence[int], byte_strides: Sequence[int], itemsize: int) -> int:
    """The largest byte offset of any element, plus one element; 0 where there is no element."""
    offsets = [sum(i * s for i, s in zip(idx, byte_strides, strict=True))
               for idx in itertools.product(*(range(d) for d in shape))]
    return max(offsets) + itemsize if offsets else 0


def _packed(shape: Sequence[int]) -> tuple[int, ...]:
    out, n = [], 1
    for d in reversed(shape):
        out.append(n)
        n *= d
    return tuple(reversed(out))


class _CAI:
    """A __cuda_array_interface__ exporter: `shape`, `strides` in bytes (None: packed), an element of `itemsize`."""

    def __init__(self, shape: tuple[int, ...], strides: tuple[int, ...] | None, itemsize: int) -> None:
        self.__cuda_array_interface__ = {"shape": shape, "typestr": _SIZES[itemsize], "data": (0x10000, False),
                                         "version": 3, "strides": strides}


class _DLPack:
    """A DLPack exporter (kDLROCM): `shape`, `strides` in elements (None: packed), `itemsize`-byte floats."""

    def __init__(self, shape: tuple[int, ...], strides: tuple[int, ...] | None, itemsize: int) -> None:
        from miopen._generated._pointers import _DLDataType, _DLDevice, _DLTensor

        self.shape = (ctypes.c_int64 * len(shape))(*shape)
        self.strides = (ctypes.c_int64 * len(shape))(*(strides or shape))
        self.tensor = _DLTensor(0x20000, _DLDevice(10, 0), len(shape), _DLDataType(2, 8 * itemsize, 1),
                                ctypes.cast(self.shape, ctypes.POINTER(ctypes.c_int64)),
                                None if strides is None else ctypes.cast(self.strides, ctypes.POINTER(ctypes.c_int64)), 0)

    def __dlpack_device__(self) -> tuple[int, int]:
        return 10, 0

    def __dlpack__(self, stream: object = None) -> object:
        new = ctypes.pythonapi.PyCapsule_New
        new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        return new(ctypes.addressof(self.tensor), b"dltensor", None)


# dims of 0 to 4 (0: no element, 1: one along that axis), strides of 0 (broadcast) to 13 (padded), an item size
_layouts = st.integers(1, 4).flatmap(lambda n: st.tuples(
    st.lists(st.integers(0, 4), min_size=n, max_size=n), st.lists(st.integers(0, 13), min_size=n, max_size=n),
    st.sampled_from(sorted(_SIZES))))


@settings(max_examples=300, deadline=None)
@given(_layouts)
def test_span_bytes_is_the_largest_offset_plus_one_element(layout: tuple[list[int], list[int], int]) -> None:
    """Strides in elements, in bytes (any, not only multiples of the item size) and packed: the brute-force span,
    0 for any zero-length dim."""
    from miopen._generated._pointers import span_bytes

    shape, strides, size = tuple(layout[0]), tuple(layout[1]), layout[2]
    assert span_bytes(shape, strides, size) == _oracle(shape, [s * size for s in strides], size)
    assert span_bytes(shape, strides, size, byte_strides=True) == _oracle(shape, strides, size)
    assert span_bytes(shape, None, size) == _oracle(shape, [s * size for s in _packed(shape)], size)


@settings(max_examples=150, deadline=None)
@given(_layouts, st.booleans())
def test_every_exporter_s_extent_is_the_span(layout: tuple[list[int], list[int], int], packed: bool) -> None:
    """`buffer_bytes` of a __cuda_array_interface__ exporter (strides in bytes, any) and of a DLPack exporter
    (strides in elements): the brute-force span of the exporter's own layout."""
    from miopen._generated._pointers import buffer_bytes

    shape, strides, size = tuple(layout[0]), tuple(layout[1]), layout[2]
    given_strides = None if packed else strides
    byte_strides = [s * size for s in _packed(shape)] if packed else strides
    assert buffer_bytes(_CAI(shape, given_strides, size), "x", "f") == _oracle(shape, byte_strides, size)
    elements = _packed(shape) if packed else strides
    assert buffer_bytes(_DLPack(shape, given_strides, size), "x", "f") == _oracle(
        shape, [s * size for s in elements], size)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_layouts)
def test_the_runtime_s_spans_are_the_span(runtime_libs: Libs, layout: tuple[list[int], list[int], int]) -> None:
    """`layout.element_space` and `num_bytes` (dims and strides >= 1, as MIOpen requires; else a ValueError naming
    the index), `Tensor.nbytes` and `extent` (dims >= 1, broadcast strides of 0 allowed; a zero-length dim is a
    ShapeError): the brute-force span."""
    import miopen
    from miopen import layout as lay
    from miopen.errors import ShapeError
    from miopen.tensor import Tensor, extent

    miopen.load_library(runtime_libs.miopen)
    shape, strides, size = tuple(layout[0]), tuple(layout[1]), layout[2]
    dtype = {1: "int8", 2: "float16", 4: "float32", 8: "float64"}[size]
    want = _oracle(shape, [s * size for s in strides], size)
    if min(shape) >= 1 and min(strides) >= 1:
        assert lay.element_space(shape, strides) == _oracle(shape, strides, 1)
        assert lay.num_bytes(shape, strides, size) == want
        assert lay.num_bytes(shape, strides, {1: "miopenInt8", 2: "miopenHalf", 4: "miopenFloat", 8: "miopenDouble"}[size]
                             ) == want
    else:
        with pytest.raises(ValueError, match=r"^(dims|strides)\[\d\]: every (dim|stride) must be >= 1"):
            lay.element_space(shape, strides)
        with pytest.raises(ValueError, match=r"^(dims|strides)\[\d\]: every (dim|stride) must be >= 1"):
            lay.num_bytes(shape, strides, size)
    if min(shape) >= 1:
        t = Tensor.make(0x1000, shape, dtype, strides)
        assert t.nbytes == extent(t.dims, t.strides, t.dtype) == want
    else:
        with pytest.raises(ShapeError, match=r"^Tensor: every dim must be >= 1"):
            Tensor.make(0x1000, shape, dtype, strides)
