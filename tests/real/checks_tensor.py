"""Tensor descriptors against the real library: every setter/getter round trip, strides and sizes computed here.

Expectations come from MIOpen 2.17.0's src/tensor.cpp: packed strides are the running products of the lengths
(CalculateStrides), lengths and strides must be >= 0 ("Invalid length"/"Invalid strides", thrown without a
status, so miopenStatusUnknownError), and GetNumBytes = element size of the type * element space, where the
element space is 1 + sum((length - 1) * stride) in size_t arithmetic.
"""

from __future__ import annotations

import ctypes

import miopen

from .common import DT, ITEMSIZE, addr, c_ints, check, element_space, failing, packed, raw_fn, status_name, tensor

U64 = 1 << 64


def _dtypes() -> list[miopen.DataType]:
    """The data types the bound release declares that MIOpen 2.17.0 knows (by name)."""
    return [getattr(DT, n) for n in ITEMSIZE if hasattr(DT, n)]


def _nbytes(dt: miopen.DataType, dims: list[int], strides: list[int]) -> int:
    """GetNumBytes as MIOpen computes it, in size_t: a zero-length dimension with a non-zero stride makes the
    element space negative, which wraps around (a MIOpen quirk the test pins down)."""
    return ITEMSIZE[dt.name] * element_space(dims, strides) % U64


@check("miopenCreateTensorDescriptor", "miopenSet4dTensorDescriptor", "miopenGet4dTensorDescriptor",
       "miopenGetTensorNumBytes", "miopenGetTensorDescriptorSize", "miopenGetTensorDescriptor",
       "miopenDestroyTensorDescriptor")
def four_d_round_trip() -> None:
    for dt in _dtypes():
        for dims in ([8, 64, 56, 56], [1, 1, 1, 1], [3, 5, 7, 11], [2, 0, 3, 4]):
            d = miopen.create_tensor_descriptor()
            miopen.set_4d_tensor_descriptor(d, dt, *dims)
            got = miopen.get_4d_tensor_descriptor(d)
            assert got.data_type == dt
            assert [got.n, got.c, got.h, got.w] == dims
            assert [got.n_stride, got.c_stride, got.h_stride, got.w_stride] == packed(dims)
            assert miopen.get_tensor_descriptor_size(d) == 4
            nd = miopen.get_tensor_descriptor(d)
            assert (nd.data_type, nd.dims_a, nd.strides_a) == (dt, dims, packed(dims))
            assert miopen.get_tensor_num_bytes(d) == _nbytes(dt, dims, packed(dims))
            miopen.destroy_tensor_descriptor(d)
            assert d.closed


@check("miopenSet4dTensorDescriptorEx", "miopenGet4dTensorDescriptor", "miopenGetTensorNumBytes")
def four_d_strided() -> None:
    n, c, h, w = 2, 3, 5, 7
    nhwc = [h * w * c, 1, w * c, c]  # channels-last
    padded = [c * h * 8, h * 8, 8, 1]  # rows padded to 8
    for strides in (nhwc, padded, [0, 0, 0, 0], packed([n, c, h, w])):
        d = miopen.create_tensor_descriptor()
        miopen.set_4d_tensor_descriptor_ex(d, DT.miopenHalf, n, c, h, w, *strides)
        got = miopen.get_4d_tensor_descriptor(d)
        assert [got.n_stride, got.c_stride, got.h_stride, got.w_stride] == strides
        assert miopen.get_tensor_num_bytes(d) == _nbytes(DT.miopenHalf, [n, c, h, w], strides)


@check("miopenSetTensorDescriptor", "miopenGetTensorDescriptorSize", "miopenGetTensorDescriptor",
       "miopenGetTensorNumBytes")
def nd_round_trip() -> None:
    shapes = [[17], [4, 9], [2, 3, 4], [2, 3, 4, 5], [2, 3, 4, 5, 6], [1, 2, 1, 2, 1, 2, 1, 2], [5, 0, 2]]
    for dims in shapes:
        for strides in (packed(dims), [s * 2 for s in packed(dims)], list(reversed(packed(list(reversed(dims)))))):
            d = tensor(dims, strides, DT.miopenFloat)
            assert miopen.get_tensor_descriptor_size(d) == len(dims)
            got = miopen.get_tensor_descriptor(d)
            assert (got.dims_a, got.strides_a) == (dims, strides)
            assert miopen.get_tensor_num_bytes(d) == _nbytes(DT.miopenFloat, dims, strides)
    wrapped = tensor([5, 0, 2], [0, 4, 2])
    assert miopen.get_tensor_num_bytes(wrapped) == U64 - 4  # 4 * (1 + 4*0 + (-1)*4 + 1*2) in size_t


@check("miopenSetTensorDescriptor", "miopenGetTensorDescriptorSize", "miopenGetTensorDescriptor",
       "miopenGetTensorNumBytes")
def zero_dims_and_fresh() -> dict[str, object]:
    """nbDims = 0 is accepted (an empty shape spanning one element); a fresh descriptor has no dims."""
    fresh = miopen.create_tensor_descriptor()
    assert miopen.get_tensor_descriptor_size(fresh) == 0
    assert miopen.get_tensor_descriptor(fresh).dims_a == []
    empty = tensor([], [], DT.miopenDouble)
    assert miopen.get_tensor_descriptor_size(empty) == 0
    assert miopen.get_tensor_num_bytes(empty) == 8 * 1  # element space of no dimensions: 1
    return {"fresh_num_bytes": miopen.get_tensor_num_bytes(fresh)}


@check("miopenSet4dTensorDescriptor", "miopenSet4dTensorDescriptorEx", "miopenSetTensorDescriptor")
def bad_lengths_and_strides() -> dict[str, object]:
    """Negative lengths/strides: MIOpen throws without a status -> UnknownError, mapped to MIOpenUnknownError."""
    seen: dict[str, object] = {}
    d = miopen.create_tensor_descriptor()
    cases = {
        "4d n=-8": lambda: miopen.set_4d_tensor_descriptor(d, DT.miopenFloat, -8, 3, 4, 5),
        "4d w=-1": lambda: miopen.set_4d_tensor_descriptor(d, DT.miopenFloat, 8, 3, 4, -1),
        "4dEx stride -1": lambda: miopen.set_4d_tensor_descriptor_ex(d, DT.miopenFloat, 2, 3, 4, 5, 60, 20, 5, -1),
        "Nd length -3": lambda: miopen.set_tensor_descriptor(d, DT.miopenFloat, [2, -3, 4], [12, 4, 1]),
        "Nd stride -4": lambda: miopen.set_tensor_descriptor(d, DT.miopenFloat, [2, 3, 4], [12, -4, 1]),
    }
    for name, call in cases.items():
        status, text = failing(call)
        assert status == int(miopen.Status.miopenStatusUnknownError), (name, status_name(status))
        assert "Invalid" in text, (name, text)
        seen[name] = status_name(status)
    # the exception class and message
    try:
        miopen.set_4d_tensor_descriptor(d, DT.miopenFloat, -8, 3, 4, 5)
    except miopen.MIOpenUnknownError as exc:
        assert exc.function == "miopenSet4dTensorDescriptor" and "n=-8" in str(exc)
        assert not isinstance(exc, ValueError)  # UnknownError is not a ValueError; BadParm would be
    else:
        raise AssertionError("no exception")
    # a failed set leaves the earlier shape in place
    miopen.set_4d_tensor_descriptor(d, DT.miopenFloat, 1, 2, 3, 4)
    failing(lambda: miopen.set_4d_tensor_descriptor(d, DT.miopenFloat, -1, 2, 3, 4))
    assert miopen.get_tensor_descriptor(d).dims_a == [1, 2, 3, 4]
    return seen


@check()
def null_strides_raw() -> dict[str, object]:
    """miopenSetTensorDescriptor with stridesA = NULL: MIOpen accepts it and computes packed strides (every
    release's src/tensor_api.cpp). Called raw: what the typed API offers for it is a separate test."""
    d = miopen.create_tensor_descriptor()
    dims = [2, 3, 4, 5]
    st = raw_fn("miopenSetTensorDescriptor")(addr(d), int(DT.miopenFloat), 4, c_ints(dims), None)
    assert st == 0
    got = miopen.get_tensor_descriptor(d)
    assert (got.dims_a, got.strides_a) == (dims, packed(dims))
    return {"status": st}


def null_strides_typed() -> None:
    """The typed API passes strides_a=None as NULL (packed strides), as MIOpen accepts it; the common-length
    check ignores it (nbDims comes from dims_a alone)."""
    d = miopen.create_tensor_descriptor()
    for dims in ([2, 3, 4, 5], [7], [1, 2, 3, 4, 5]):
        miopen.set_tensor_descriptor(d, DT.miopenFloat, dims, None)
        got = miopen.get_tensor_descriptor(d)
        assert (got.dims_a, got.strides_a) == (dims, packed(dims))


@check("miopenGetTensorDescriptor")
def element_type_query() -> dict[str, str]:
    """The element-typed host scalars (`element_of: yDesc`): the wrapper reads the descriptor's type with
    miopenGetTensorDescriptor and NULL dims/strides, which MIOpen accepts; a value the type cannot hold is a
    ValueError after that read-only query, before the call that would use it."""
    out: dict[str, str] = {}
    for dt, bad, what in [(DT.miopenInt32, 0.5, "must be an integer for a int32"),
                          (DT.miopenHalf, 1e6, "does not fit in a float16"),
                          (DT.miopenInt8, 300, r"must be in [-128, 127] for a int8")]:
        d = tensor([2, 3], dtype=dt)
        kind = ctypes.c_uint(99)
        assert raw_fn("miopenGetTensorDescriptor")(d.address, ctypes.byref(kind), None, None) == 0
        assert kind.value == int(dt)
        try:
            miopen.set_tensor(miopen.Handle.from_address(1), d, 0x1000, bad)  # never reached: no handle needed
        except ValueError as exc:
            assert what in str(exc), str(exc)
            out[dt.name] = str(exc)
        else:
            raise AssertionError(f"{dt.name}: {bad} accepted")
    return out


@check()
def null_descriptor_raw() -> dict[str, int]:
    """Our API refuses None where a descriptor is required (TypeError, before any C call); MIOpen refuses NULL
    too: deref(nullptr) throws miopenStatusBadParm ("Dereferencing nullptr")."""
    out: dict[str, int] = {}
    try:
        miopen.get_tensor_num_bytes(None)  # type: ignore[arg-type]
    except TypeError as exc:
        assert "tensor_desc" in str(exc)
    else:
        raise AssertionError("None accepted")
    size = ctypes.c_size_t()
    out["miopenGetTensorNumBytes"] = raw_fn("miopenGetTensorNumBytes")(None, ctypes.byref(size))
    out["miopenSet4dTensorDescriptor"] = raw_fn("miopenSet4dTensorDescriptor")(None, 1, 1, 1, 1, 1)
    n = ctypes.c_int()
    out["miopenGetTensorDescriptorSize"] = raw_fn("miopenGetTensorDescriptorSize")(None, ctypes.byref(n))
    out["miopenDestroyTensorDescriptor"] = raw_fn("miopenDestroyTensorDescriptor")(None)
    assert all(v == int(miopen.Status.miopenStatusBadParm) for k, v in out.items()
               if k != "miopenDestroyTensorDescriptor"), out
    return out


@check()
def bad_data_type_raw() -> dict[str, int]:
    """A data type value the header does not declare: our API refuses it (ValueError); MIOpen stores it
    unchecked and GetNumBytes gives 0 (its switch has no case for it). Recorded, see the report."""
    d = miopen.create_tensor_descriptor()
    try:
        miopen.set_4d_tensor_descriptor(d, 42, 1, 2, 3, 4)
    except ValueError as exc:
        assert "data_type=42" in str(exc)
    else:
        raise AssertionError("42 accepted")
    st = raw_fn("miopenSet4dTensorDescriptor")(addr(d), 42, 1, 2, 3, 4)
    size = ctypes.c_size_t(99)
    st2 = raw_fn("miopenGetTensorNumBytes")(addr(d), ctypes.byref(size))
    assert (st, st2, size.value) == (0, 0, 0)
    return {"set": st, "num_bytes": size.value}
