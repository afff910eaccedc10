"""miopen.layout: packed / channels-last stride math, descriptor_from_order_and_dims, size-1
stride canonicalisation and the data type table.  Pure Python; no MIOpen needed."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from miopen import layout
from miopen.layout import StorageOrder

# ------------------------------------------------------------------------------------------
# helpers (brute force, independent of the module under test)
# ------------------------------------------------------------------------------------------


def offsets(dims: Sequence[int], strides: Sequence[int]) -> list[int]:
    """The memory offset of every element, by enumerating all indices."""
    return [
        sum(i * s for i, s in zip(idx, strides))
        for idx in itertools.product(*(range(d) for d in dims))
    ]


def row_major_offset(idx: Sequence[int], dims: Sequence[int]) -> int:
    off = 0
    for i, d in zip(idx, dims):
        off = off * d + i
    return off


def to_storage(seq: Sequence[int], channels_last: bool) -> tuple[int, ...]:
    """Logical N, C, D1..Dk -> storage order (N, D1..Dk, C when channels-last)."""
    t = tuple(seq)
    if channels_last and len(t) >= 3:
        return (t[0], *t[2:], t[1])
    return t


MAX_ELEMENTS = 3000

small_dims = st.lists(st.integers(1, 7), min_size=1, max_size=6).filter(
    lambda d: math.prod(d) <= MAX_ELEMENTS
)
small_dims_2plus = st.lists(st.integers(1, 7), min_size=2, max_size=6).filter(
    lambda d: math.prod(d) <= MAX_ELEMENTS
)

SETTINGS = settings(max_examples=150, deadline=None)


# ------------------------------------------------------------------------------------------
# packed / channels-last strides: concrete
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dims", "expected"),
    [
        ((2, 3, 4, 5), (60, 20, 5, 1)),
        ((2, 3, 4, 5, 6), (360, 120, 30, 6, 1)),
        ((7,), (1,)),
        ((2, 3), (3, 1)),
        ((1, 1, 1, 1), (1, 1, 1, 1)),
    ],
)
def test_packed_strides_examples(dims: tuple[int, ...], expected: tuple[int, ...]) -> None:
    assert layout.packed_strides(dims) == expected


@pytest.mark.parametrize(
    ("dims", "expected"),
    [
        ((2, 3, 4, 5), (60, 1, 15, 3)),  # NHWC: C=1, W=C, H=W*C, N=H*W*C
        ((2, 3, 4, 5, 6), (360, 1, 90, 18, 3)),  # NDHWC
        ((2, 3, 5), (15, 1, 3)),  # NWC
        ((2, 3), (3, 1)),  # rank 2: same as packed
        ((7,), (1,)),  # rank 1: same as packed
    ],
)
def test_channels_last_strides_examples(dims: tuple[int, ...], expected: tuple[int, ...]) -> None:
    assert layout.channels_last_strides(dims) == expected


def test_strides_accept_any_int_sequence() -> None:
    assert layout.packed_strides([2, 3, 4, 5]) == (60, 20, 5, 1)
    assert layout.channels_last_strides(range(2, 6)) == (60, 1, 15, 3)
    assert isinstance(layout.packed_strides([2, 3]), tuple)


# ------------------------------------------------------------------------------------------
# descriptor_from_order_and_dims: concrete
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("order", "dims", "logical", "strides"),
    [
        ("NCHW", (2, 3, 4, 5), (2, 3, 4, 5), (60, 20, 5, 1)),
        ("NHWC", (2, 4, 5, 3), (2, 3, 4, 5), (60, 1, 15, 3)),
        ("NCDHW", (2, 3, 4, 5, 6), (2, 3, 4, 5, 6), (360, 120, 30, 6, 1)),
        ("NDHWC", (2, 4, 5, 6, 3), (2, 3, 4, 5, 6), (360, 1, 90, 18, 3)),
        (StorageOrder.NHWC, (2, 4, 5, 3), (2, 3, 4, 5), (60, 1, 15, 3)),
        (StorageOrder.NDHWC, (2, 4, 5, 6, 3), (2, 3, 4, 5, 6), (360, 1, 90, 18, 3)),
        ("nhwc", (2, 4, 5, 3), (2, 3, 4, 5), (60, 1, 15, 3)),
        ("channels_last", (2, 5, 3), (2, 3, 5), (15, 1, 3)),
        (StorageOrder.CHANNELS_LAST, (2, 4, 5, 6, 7, 3), (2, 3, 4, 5, 6, 7), (2520, 1, 630, 126, 21, 3)),
        ("CHANNELS_FIRST", (2, 3, 5), (2, 3, 5), (15, 5, 1)),
        ("NWC", (2, 5, 3), (2, 3, 5), (15, 1, 3)),
        ("NCW", (2, 3, 5), (2, 3, 5), (15, 5, 1)),
        ("NC", (2, 3), (2, 3), (3, 1)),
        (StorageOrder.CHANNELS_LAST, (2, 3), (2, 3), (3, 1)),
    ],
)
def test_descriptor_from_order_and_dims_examples(
    order: StorageOrder | str,
    dims: tuple[int, ...],
    logical: tuple[int, ...],
    strides: tuple[int, ...],
) -> None:
    assert layout.descriptor_from_order_and_dims(order, dims) == (logical, strides)


def test_nhwc_is_honoured_not_read_as_nchw() -> None:
    # Caffe2's MIOpen port read NHWC dims as N,C,H,W with packed strides; that is wrong.
    logical, strides = layout.descriptor_from_order_and_dims("NHWC", (2, 4, 5, 3))
    assert logical == (2, 3, 4, 5)
    # element n=1, h=2, w=3, c=1 of an NHWC buffer sits at ((1*4 + 2)*5 + 3)*3 + 1 = 100
    n, c, h, w = 1, 1, 2, 3
    assert n * strides[0] + c * strides[1] + h * strides[2] + w * strides[3] == 100
    assert layout.layout_of(logical, strides) is StorageOrder.NHWC


@pytest.mark.parametrize(
    ("order", "dims"),
    [
        ("NCHW", (2, 3, 4)),
        ("NHWC", (2, 3, 4, 5, 6)),
        ("NCDHW", (2, 3, 4, 5)),
        ("NDHWC", (2, 3, 4, 5, 6, 7)),
        (StorageOrder.NHWC, (2, 3)),
        ("NWC", (2, 3, 4, 5)),
        ("channels_last", (2,)),
        ("channels_first", (2,)),
    ],
)
def test_descriptor_rank_mismatch(order: StorageOrder | str, dims: tuple[int, ...]) -> None:
    with pytest.raises(ValueError, match=r"dims: order .* (expects|needs at least)"):
        layout.descriptor_from_order_and_dims(order, dims)


@pytest.mark.parametrize(
    ("dims", "index", "value"),
    [((2, 0, 5, 3), 1, 0), ((2, 4, 5, -3), 3, -3), ((0, 4, 5, 3), 0, 0)],
)
def test_descriptor_rejects_non_positive_dims(dims: tuple[int, ...], index: int, value: int) -> None:
    with pytest.raises(ValueError, match=rf"dims\[{index}\].*>= 1.*{value}"):
        layout.descriptor_from_order_and_dims("NHWC", dims)


@pytest.mark.parametrize("bad", [(2, 3.0, 4, 5), (2, "3", 4, 5), (2, True, 4, 5), (2, None, 4, 5)])
def test_descriptor_rejects_non_int_dims(bad: tuple[object, ...]) -> None:
    with pytest.raises(TypeError, match=r"dims\[1\]: expected an int"):
        layout.descriptor_from_order_and_dims("NCHW", bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [5, "NCHW", b"1234", None, {2: 3}])
def test_dims_must_be_a_sequence(bad: object) -> None:
    with pytest.raises(TypeError, match=r"dims: expected a sequence of ints"):
        layout.descriptor_from_order_and_dims("NCHW", bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"dims: expected a sequence of ints"):
        layout.packed_strides(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", ["CHWN", "NCHWc4", "NHCW", "NCHC", "", "xyz", "NNHW"])
def test_descriptor_rejects_unknown_order(bad: str) -> None:
    with pytest.raises(ValueError, match=r"order: unknown storage order"):
        layout.descriptor_from_order_and_dims(bad, (2, 3, 4, 5))


@pytest.mark.parametrize("bad", [0, None, 1.5, ("N", "C")])
def test_descriptor_rejects_non_str_order(bad: object) -> None:
    with pytest.raises(TypeError, match=r"order: expected a StorageOrder or a str"):
        layout.descriptor_from_order_and_dims(bad, (2, 3, 4, 5))  # type: ignore[arg-type]


def test_numpy_like_integers_are_accepted() -> None:
    class Index:
        def __init__(self, v: int) -> None:
            self.v = v

        def __index__(self) -> int:
            return self.v

    assert layout.packed_strides([Index(2), Index(3)]) == (3, 1)  # type: ignore[list-item]


# ------------------------------------------------------------------------------------------
# validation shared by all functions
# ------------------------------------------------------------------------------------------


def test_empty_dims_rejected() -> None:
    with pytest.raises(ValueError, match=r"dims: expected at least one dim"):
        layout.packed_strides(())
    with pytest.raises(ValueError, match=r"dims: expected at least one dim"):
        layout.channels_last_strides([])


def test_dims_over_int64_rejected() -> None:
    with pytest.raises(ValueError, match=r"dims\[1\].*INT64_MAX"):
        layout.packed_strides((1, 2**63))
    assert layout.packed_strides((1, 2**63 - 1)) == (2**63 - 1, 1)


@pytest.mark.parametrize(
    "fn",
    [
        layout.is_packed,
        layout.is_channels_last,
        layout.is_dense,
        layout.layout_of,
        layout.canonical_strides,
        layout.element_space,
    ],
)
def test_stride_functions_validate(fn: object) -> None:
    assert callable(fn)
    with pytest.raises(ValueError, match=r"strides: expected 4 strides"):
        fn((2, 3, 4, 5), (60, 20, 5))
    with pytest.raises(ValueError, match=r"strides\[2\]: every stride must be >= 1"):
        fn((2, 3, 4, 5), (60, 20, 0, 1))
    with pytest.raises(TypeError, match=r"strides\[0\]: expected an int"):
        fn((2, 3, 4, 5), (60.0, 20, 5, 1))
    with pytest.raises(TypeError, match=r"strides: expected a sequence of ints"):
        fn((2, 3, 4, 5), 60)
    with pytest.raises(ValueError, match=r"dims\[0\]: every dim must be >= 1"):
        fn((0, 3, 4, 5), (60, 20, 5, 1))


# ------------------------------------------------------------------------------------------
# StorageOrder
# ------------------------------------------------------------------------------------------


def test_storage_order_properties() -> None:
    assert [o for o in StorageOrder if o.channels_last] == [
        StorageOrder.NHWC,
        StorageOrder.NDHWC,
        StorageOrder.CHANNELS_LAST,
    ]
    assert StorageOrder.NCHW.ndim == 4 and StorageOrder.NDHWC.ndim == 5
    assert StorageOrder.CHANNELS_FIRST.ndim is None and StorageOrder.CHANNELS_LAST.ndim is None
    assert StorageOrder.NHWC.generic is StorageOrder.CHANNELS_LAST
    assert StorageOrder.NCDHW.generic is StorageOrder.CHANNELS_FIRST
    assert StorageOrder.NDHWC.miopen_layout_name == "miopenTensorNDHWC"
    assert StorageOrder.NCHW.miopen_layout_name == "miopenTensorNCHW"
    assert StorageOrder.CHANNELS_LAST.miopen_layout_name is None


@pytest.mark.parametrize(
    ("ndim", "cl", "expected"),
    [
        (4, False, StorageOrder.NCHW),
        (4, True, StorageOrder.NHWC),
        (5, False, StorageOrder.NCDHW),
        (5, True, StorageOrder.NDHWC),
        (3, True, StorageOrder.CHANNELS_LAST),
        (6, False, StorageOrder.CHANNELS_FIRST),
    ],
)
def test_storage_order_for_rank(ndim: int, cl: bool, expected: StorageOrder) -> None:
    assert StorageOrder.for_rank(ndim, cl) is expected


def test_storage_order_for_rank_validates() -> None:
    with pytest.raises(ValueError, match="ndim"):
        StorageOrder.for_rank(0, False)
    with pytest.raises(TypeError, match="ndim"):
        StorageOrder.for_rank(4.0, False)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("NCHW", StorageOrder.NCHW),
        ("nhwc", StorageOrder.NHWC),
        (" NDHWC ", StorageOrder.NDHWC),
        ("channels_last", StorageOrder.CHANNELS_LAST),
        ("CHANNELS_FIRST", StorageOrder.CHANNELS_FIRST),
        ("Channels_Last", StorageOrder.CHANNELS_LAST),
        ("NWC", StorageOrder.CHANNELS_LAST),
        ("NCXYZW", StorageOrder.CHANNELS_FIRST),
        ("NC", StorageOrder.CHANNELS_FIRST),  # rank 2: both coincide, spelled channels-first
        (StorageOrder.NCDHW, StorageOrder.NCDHW),
    ],
)
def test_storage_order_parse(text: StorageOrder | str, expected: StorageOrder) -> None:
    assert StorageOrder.parse(text) is expected


def test_storage_order_parse_rejects() -> None:
    with pytest.raises(ValueError, match="unknown storage order"):
        StorageOrder.parse("CHWN")
    with pytest.raises(TypeError, match="value: expected a StorageOrder or a str"):
        StorageOrder.parse(4)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------
# is_packed / is_channels_last / is_dense / layout_of: concrete
# ------------------------------------------------------------------------------------------


def test_layout_predicates_examples() -> None:
    d = (2, 3, 4, 5)
    assert layout.is_packed(d, (60, 20, 5, 1)) and not layout.is_channels_last(d, (60, 20, 5, 1))
    assert layout.is_channels_last(d, (60, 1, 15, 3)) and not layout.is_packed(d, (60, 1, 15, 3))
    assert layout.layout_of(d, (60, 20, 5, 1)) is StorageOrder.NCHW
    assert layout.layout_of(d, (60, 1, 15, 3)) is StorageOrder.NHWC
    assert layout.layout_of((2, 3, 4, 5, 6), (360, 1, 90, 18, 3)) is StorageOrder.NDHWC
    assert layout.layout_of((2, 3, 4, 5, 6), (360, 120, 30, 6, 1)) is StorageOrder.NCDHW
    assert layout.layout_of((2, 3, 5), (15, 1, 3)) is StorageOrder.CHANNELS_LAST
    assert layout.layout_of((2, 3, 5), (15, 5, 1)) is StorageOrder.CHANNELS_FIRST
    # sliced (gapped) W: neither dense layout
    assert layout.layout_of(d, (120, 40, 10, 2)) is None
    assert not layout.is_dense(d, (120, 40, 10, 2))
    # dense but in another axis order (CHWN): dense, yet neither NCHW nor NHWC
    chwn = (1, 40, 10, 2)
    assert layout.is_dense(d, chwn) and layout.layout_of(d, chwn) is None
    # overlapping strides are not dense even when they span exactly prod(dims) elements
    assert layout.element_space((2, 2, 2), (5, 1, 1)) == 8
    assert not layout.is_dense((2, 2, 2), (5, 1, 1))
    assert not layout.is_dense((2, 3), (2, 2))


def test_size_one_dims_strides_are_ignored_by_predicates() -> None:
    # C=1: NCHW and NHWC are the same memory; channels-first wins in layout_of
    d = (2, 1, 4, 5)
    assert layout.is_packed(d, (20, 999, 5, 1))
    assert layout.is_channels_last(d, (20, 1, 5, 1))
    assert layout.is_packed(d, (20, 1, 5, 1))
    assert layout.layout_of(d, (20, 1, 5, 1)) is StorageOrder.NCHW
    # a 1x1 spatial NHWC tensor is also packed
    assert layout.is_packed((2, 3, 1, 1), (3, 1, 3, 3))
    # but a size-1 dim cannot hide a wrong stride elsewhere
    assert not layout.is_packed(d, (21, 1, 5, 1))
    assert not layout.is_channels_last((2, 3, 4, 5), (60, 1, 15, 4))


# ------------------------------------------------------------------------------------------
# canonical_strides: concrete
# ------------------------------------------------------------------------------------------


def test_canonical_strides_examples() -> None:
    # NCHW, C=1: C's stride becomes H*W
    assert layout.canonical_strides((2, 1, 4, 5), (20, 7, 5, 1)) == (20, 20, 5, 1)
    # NHWC with H=1 (C=3, W=5): H's stride becomes W*C, in channels-last order
    assert layout.canonical_strides((2, 3, 1, 5), (15, 1, 99, 3)) == (15, 1, 15, 3)
    # NCHW with W=1: W's stride becomes 1
    assert layout.canonical_strides((2, 3, 4, 1), (12, 4, 1, 8)) == (12, 4, 1, 1)
    # everything size 1
    assert layout.canonical_strides((1, 1, 1), (5, 6, 7)) == (1, 1, 1)
    # non-size-1 strides are never touched, even when gapped; the size-1 C keeps
    # the strides monotonic (C sits between H and N)
    assert layout.canonical_strides((2, 1, 4, 5), (400, 3, 20, 2)) == (400, 80, 20, 2)


def test_canonical_strides_explicit_order() -> None:
    # C=1 is ambiguous; detection prefers channels-first, the caller can force either.
    d, s = (2, 1, 4, 5), (20, 1, 5, 1)
    assert layout.canonical_strides(d, s) == (20, 20, 5, 1)
    assert layout.canonical_strides(d, s, channels_last=False) == (20, 20, 5, 1)
    assert layout.canonical_strides(d, s, channels_last=True) == (20, 1, 5, 1)
    with pytest.raises(TypeError, match="channels_last: expected a bool or None"):
        layout.canonical_strides(d, s, channels_last=1)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------
# element_space / num_bytes
# ------------------------------------------------------------------------------------------


def test_element_space_and_num_bytes_examples() -> None:
    assert layout.element_space((2, 3, 4, 5), (60, 20, 5, 1)) == 120
    assert layout.element_space((2, 3, 4, 5), (60, 1, 15, 3)) == 120
    # every other W of a 2x3x4x10 packed tensor
    assert layout.element_space((2, 3, 4, 5), (120, 40, 10, 2)) == 1 + 120 + 80 + 30 + 8
    assert layout.element_space((1, 1), (1000, 77)) == 1
    assert layout.num_bytes((2, 3, 4, 5), (60, 20, 5, 1), 2) == 240
    assert layout.num_bytes((2, 3, 4, 5), (60, 20, 5, 1), "miopenFloat") == 480
    assert layout.num_bytes((2, 3, 4, 5), (60, 20, 5, 1), "miopenDouble") == 960


def test_num_bytes_validates_itemsize() -> None:
    with pytest.raises(ValueError, match="itemsize: expected an int >= 1"):
        layout.num_bytes((2,), (1,), 0)
    with pytest.raises(TypeError, match="itemsize: expected an int"):
        layout.num_bytes((2,), (1,), 2.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown MIOpen data type"):
        layout.num_bytes((2,), (1,), "float32")


# ------------------------------------------------------------------------------------------
# data types
# ------------------------------------------------------------------------------------------

EXPECTED_TYPES = {
    "miopenHalf": (2, "float16"),
    "miopenFloat": (4, "float32"),
    "miopenInt32": (4, "int32"),
    "miopenInt8": (1, "int8"),
    "miopenBFloat16": (2, "bfloat16"),
    "miopenDouble": (8, "float64"),
    "miopenInt64": (8, "int64"),
    "miopenFloat8_fnuz": (1, "float8_e4m3fnuz"),
    "miopenFloat8": (1, "float8_e4m3fnuz"),
    "miopenBFloat8_fnuz": (1, "float8_e5m2fnuz"),
    "miopenBFloat8": (1, "float8_e5m2fnuz"),
}


def test_data_type_table_is_complete() -> None:
    assert set(layout.DATA_TYPES) == set(EXPECTED_TYPES)


@pytest.mark.parametrize(("name", "expected"), sorted(EXPECTED_TYPES.items()))
def test_itemsize_and_numpy_name(name: str, expected: tuple[int, str]) -> None:
    size, np_name = expected
    assert layout.itemsize(name) == size
    assert layout.numpy_name(name) == np_name
    assert layout.data_type_info(name).dtype_name == np_name
    # dtype_name_for inverts numpy_name (up to MIOpen's alias spellings)
    assert name in layout.data_type_info(layout.dtype_name_for(np_name)).names


@pytest.mark.parametrize(
    ("spelling", "expected"),
    [
        ("float16", "miopenHalf"),
        ("half", "miopenHalf"),
        ("torch.float16", "miopenHalf"),
        ("torch.half", "miopenHalf"),
        ("float32", "miopenFloat"),
        ("torch.float", "miopenFloat"),
        ("<f4", "miopenFloat"),
        ("f4", "miopenFloat"),
        ("numpy.float32", "miopenFloat"),
        ("int32", "miopenInt32"),
        ("torch.int", "miopenInt32"),
        ("int8", "miopenInt8"),
        ("|i1", "miopenInt8"),
        ("bfloat16", "miopenBFloat16"),
        ("torch.bfloat16", "miopenBFloat16"),
        ("float64", "miopenDouble"),
        ("double", "miopenDouble"),
        ("torch.double", "miopenDouble"),
        ("int64", "miopenInt64"),
        ("torch.long", "miopenInt64"),
        ("torch.float8_e4m3fnuz", "miopenFloat8_fnuz"),
        ("float8_e5m2fnuz", "miopenBFloat8_fnuz"),
        ("miopenHalf", "miopenHalf"),
        ("miopenFloat8", "miopenFloat8_fnuz"),
    ],
)
def test_dtype_name_for(spelling: str, expected: str) -> None:
    assert layout.dtype_name_for(spelling) == expected


def test_dtype_name_for_available_picks_release_spelling() -> None:
    old = {"miopenHalf", "miopenFloat8", "miopenBFloat8"}
    new = {"miopenHalf", "miopenFloat8_fnuz", "miopenBFloat8_fnuz"}
    assert layout.dtype_name_for("float8_e4m3fnuz", available=old) == "miopenFloat8"
    assert layout.dtype_name_for("float8_e4m3fnuz", available=new) == "miopenFloat8_fnuz"
    assert layout.dtype_name_for("torch.float8_e5m2fnuz", available=old) == "miopenBFloat8"
    assert layout.dtype_name_for("float16", available=old) == "miopenHalf"
    with pytest.raises(ValueError, match="available: none of miopenInt64"):
        layout.dtype_name_for("int64", available=old)


def test_dtype_name_for_objects() -> None:
    class FakeNumpyDtype:
        name = "float16"

    FakeNumpyDtype.__module__ = "numpy"

    class FakeTorchDtype:
        def __str__(self) -> str:
            return "torch.bfloat16"

    assert layout.dtype_name_for(FakeNumpyDtype()) == "miopenHalf"
    assert layout.dtype_name_for(FakeTorchDtype()) == "miopenBFloat16"
    with pytest.raises(TypeError, match="dtype: expected a dtype name"):
        layout.dtype_name_for(4)


@pytest.mark.parametrize("spelling", ["float", "int", "long", "numpy.float"])
def test_dtype_name_for_refuses_ambiguous(spelling: str) -> None:
    with pytest.raises(ValueError, match="ambiguous"):
        layout.dtype_name_for(spelling)


@pytest.mark.parametrize("spelling", ["complex64", ">f4", "uint8", "torch.bool", "", "Float32"])
def test_dtype_name_for_unknown(spelling: str) -> None:
    with pytest.raises(ValueError, match="dtype: no MIOpen data type for"):
        layout.dtype_name_for(spelling)


def test_itemsize_errors() -> None:
    with pytest.raises(ValueError, match="unknown MIOpen data type 'miopenFoo'"):
        layout.itemsize("miopenFoo")
    with pytest.raises(ValueError, match="miopenInt8x4 was discontinued"):
        layout.itemsize("miopenInt8x4")
    with pytest.raises(ValueError, match="discontinued"):
        layout.dtype_name_for("miopenInt8x4")
    with pytest.raises(TypeError, match="dtype_name: expected a MIOpen data type name"):
        layout.itemsize(1)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------
# property tests
# ------------------------------------------------------------------------------------------


@SETTINGS
@given(small_dims)
def test_packed_is_dense(dims: list[int]) -> None:
    strides = layout.packed_strides(dims)
    n = math.prod(dims)
    assert layout.element_space(dims, strides) == n
    assert sorted(offsets(dims, strides)) == list(range(n))
    # row-major: the offset of every index is its row-major number
    assert offsets(dims, strides) == list(range(n))
    assert layout.is_packed(dims, strides) and layout.is_dense(dims, strides)


@SETTINGS
@given(small_dims)
def test_channels_last_is_dense_permutation_of_packed(dims: list[int]) -> None:
    strides = layout.channels_last_strides(dims)
    n = math.prod(dims)
    assert layout.element_space(dims, strides) == n
    assert sorted(offsets(dims, strides)) == list(range(n))
    # permuted to storage order (N, D1..Dk, C) it is exactly packed
    assert to_storage(strides, True) == layout.packed_strides(to_storage(dims, True))
    assert layout.is_channels_last(dims, strides) and layout.is_dense(dims, strides)
    if len(dims) <= 2:
        assert strides == layout.packed_strides(dims)


@SETTINGS
@given(small_dims_2plus, st.sampled_from(["first", "last"]), st.booleans())
def test_descriptor_round_trips(storage_dims: list[int], which: str, named: bool) -> None:
    cl = which == "last" and len(storage_dims) >= 3
    rank = len(storage_dims)
    order: StorageOrder | str
    if named and rank in (4, 5):
        order = StorageOrder.for_rank(rank, which == "last")
    else:
        order = StorageOrder.CHANNELS_LAST if which == "last" else StorageOrder.CHANNELS_FIRST
    logical, strides = layout.descriptor_from_order_and_dims(order, storage_dims)
    assert sorted(logical) == sorted(storage_dims)
    assert to_storage(logical, cl) == tuple(storage_dims)
    # the element at storage index (n, h, w, c) sits at its row-major storage offset;
    # the same element, addressed logically as (n, c, h, w), must be at that offset too
    for sidx in itertools.product(*(range(d) for d in storage_dims)):
        lidx = (sidx[0], sidx[-1], *sidx[1:-1]) if cl else sidx
        assert sum(i * s for i, s in zip(lidx, strides)) == row_major_offset(sidx, storage_dims)
    assert layout.element_space(logical, strides) == math.prod(storage_dims)
    assert layout.is_dense(logical, strides)
    detected = layout.layout_of(logical, strides)
    assert detected is not None
    if not (layout.is_packed(logical, strides) and cl):
        assert detected.channels_last == cl


@st.composite
def dims_and_strides(draw: st.DrawFn) -> tuple[list[int], list[int]]:
    """A layout in one of: packed, channels-last, gapped/permuted random strides."""
    dims = draw(small_dims)
    kind = draw(st.sampled_from(["packed", "channels_last", "random"]))
    if kind == "packed":
        strides = list(layout.packed_strides(dims))
    elif kind == "channels_last":
        strides = list(layout.channels_last_strides(dims))
    else:
        strides = draw(st.lists(st.integers(1, 500), min_size=len(dims), max_size=len(dims)))
    return dims, strides


@SETTINGS
@given(dims_and_strides(), st.data())
def test_canonical_strides_idempotent_and_ignores_size_one_strides(
    ds: tuple[list[int], list[int]], data: st.DataObject
) -> None:
    dims, strides = ds
    canon = layout.canonical_strides(dims, strides)
    assert layout.canonical_strides(dims, canon) == canon
    # non-size-1 strides are unchanged; all strides stay >= 1
    for d, s, c in zip(dims, strides, canon):
        if d != 1:
            assert c == s
        assert c >= 1
    # any other strides for the size-1 dims give the same canonical form
    other = [
        data.draw(st.integers(1, 10_000)) if d == 1 else s for d, s in zip(dims, strides)
    ]
    assert layout.canonical_strides(dims, other) == canon
    # same memory, same predicates, same element space
    assert layout.element_space(dims, canon) == layout.element_space(dims, strides)
    assert layout.layout_of(dims, canon) == layout.layout_of(dims, strides)
    assert layout.is_dense(dims, canon) == layout.is_dense(dims, strides)


@SETTINGS
@given(small_dims, st.booleans(), st.data())
def test_canonical_of_dense_layout_is_the_packed_strides(
    dims: list[int], cl: bool, data: st.DataObject
) -> None:
    base = layout.channels_last_strides(dims) if cl else layout.packed_strides(dims)
    scrambled = [data.draw(st.integers(1, 999)) if d == 1 else s for d, s in zip(dims, base)]
    canon = layout.canonical_strides(dims, scrambled)
    if layout.is_packed(dims, base):
        # channels-first wins whenever both describe the memory
        assert canon == layout.packed_strides(dims)
    else:
        assert canon == layout.channels_last_strides(dims)
    # forcing the order reproduces that order's strides exactly
    assert layout.canonical_strides(dims, scrambled, channels_last=cl) == base


@SETTINGS
@given(small_dims, st.data())
def test_is_dense_matches_brute_force(dims: list[int], data: st.DataObject) -> None:
    n = math.prod(dims)
    if data.draw(st.booleans()):
        # a dense layout in a random axis order
        perm = data.draw(st.permutations(range(len(dims))))
        pstrides = layout.packed_strides([dims[a] for a in perm])
        strides = [0] * len(dims)
        for pos, axis in enumerate(perm):
            strides[axis] = pstrides[pos]
    else:
        # small strides, so overlaps that still span exactly prod(dims) elements turn up
        hi = data.draw(st.sampled_from([4, 8, 40]))
        strides = data.draw(st.lists(st.integers(1, hi), min_size=len(dims), max_size=len(dims)))
    offs = offsets(dims, strides)
    assert layout.is_dense(dims, strides) == (sorted(offs) == list(range(n)))
    assert layout.element_space(dims, strides) == max(offs) + 1


@SETTINGS
@given(small_dims, st.data())
def test_predicates_match_reference_layouts(dims: list[int], data: st.DataObject) -> None:
    strides = data.draw(
        st.sampled_from(
            [layout.packed_strides(dims), layout.channels_last_strides(dims)]
        )
        | st.lists(st.integers(1, 60), min_size=len(dims), max_size=len(dims)).map(tuple)
    )

    def same_memory(reference: tuple[int, ...]) -> bool:
        return all(d == 1 or s == r for d, s, r in zip(dims, strides, reference))

    assert layout.is_packed(dims, strides) == same_memory(layout.packed_strides(dims))
    cl = same_memory(layout.channels_last_strides(dims))
    assert layout.is_channels_last(dims, strides) == cl
    got = layout.layout_of(dims, strides)
    if layout.is_packed(dims, strides):
        assert got is StorageOrder.for_rank(len(dims), False)
    elif cl:
        assert got is StorageOrder.for_rank(len(dims), True)
    else:
        assert got is None
