"""The annotation forms beyond direction/memory/shape/length (docs/annotations.md), each through the fixture
header's wrappers and its stub (which decodes host scalars as MIOpen reads them), plus the gate's checks of
each form and the encoders of `_support`.

Forms: `scalar: float|double`, `element_of` (+ `element_table`, rules.element_tables / element_queries),
`nullable` + `null_means` on host scalars and on arrays sharing a length, `holds: address_of_device_pointer`,
`per: k`, `returned: true`, `records:` (pointer fields), `variants:` (per-release annotations).
"""

from __future__ import annotations

import ctypes
import math
import struct
from typing import Any

import pytest

from miogen.base.record import replace
from miogen.semantics import forms
from miogen.semantics.suggest import AnnotationGateError
from miogen.semantics.annotations import ElementQuery, FieldNote, FunctionNote, ParamNote, RecordNote, Variant, load_annotations
from miogen.semantics.resolve import resolve
from miogen.spec.releases import Version
from miogen.spec.spec_io import load

from ..conftest import Built
from ..helpers import FIXTURE_ANNOTATIONS, fixture_spec


def _calls(fx: Built, fn: str) -> list[dict[str, str]]:
    out = []
    for line in (fx.stub.miogen_stub_log() or b"").decode().splitlines():
        name, *items = line.split("\t")
        if name == fn:
            out.append(dict(item.partition("=")[::2] for item in items))
    return out


def _names(fx: Built) -> list[str]:
    return [line.split("\t")[0] for line in (fx.stub.miogen_stub_log() or b"").decode().splitlines()]


def _script(fx: Built, key: str, value: int) -> None:
    fx.stub.miogen_stub_set_out.argtypes = [ctypes.c_char_p, ctypes.c_longlong]
    fx.stub.miogen_stub_set_out(key.encode(), value)


# --------------------------------------------------------------------------- element_of: a descriptor's type


@pytest.mark.parametrize("dtype, value, logged", [
    ("miopenFloat", 0.1, repr(float(ctypes.c_float(0.1).value))),
    ("miopenDouble", 0.1, "0.10000000000000001"),
    ("miopenHalf", 1.5, "1.5"),
    ("miopenHalf", 0.1, repr(struct.unpack("e", struct.pack("e", 0.1))[0])),  # rounded to the nearest half
    ("miopenBFloat16", 1.00390625, "1"),  # exactly between 1 and 1.0078125: rounds to the even one
    ("miopenBFloat16", 1.01171875, "1.015625"),  # between 1.0078125 and 1.015625: to the even one
    ("miopenInt32", 7, "7"),
    ("miopenInt32", -2.0, "-2"),  # an integral float is the integer
    ("miopenInt8", -128, "-128"),
    ("miopenFloat8", 5, "5"),  # the 8-bit float types are read as int8 (MIOpen's visit_float)
])
def test_element_typed_scalar_is_encoded_in_the_descriptor_type(fx: Built, dtype: str, value: float,
                                                                 logged: str) -> None:
    m = fx.pkg
    _script(fx, "miopenGetTensorDescriptor/dataType", int(getattr(m.DataType, dtype)))
    m.set_tensor(m.Handle.from_address(1), m.TensorDescriptor.from_address(0x4400), 0x1000, value)
    assert _names(fx) == ["miopenGetTensorDescriptor", "miopenSetTensor"]  # the type is read first
    query = _calls(fx, "miopenGetTensorDescriptor")[0]
    assert query["tensorDesc"] == str(0x4400)  # NULL dims/strides: only the type is read
    assert _calls(fx, "miopenSetTensor")[0]["alpha"] == logged


def test_element_typed_scalar_follows_the_type_set_on_the_descriptor(fx: Built) -> None:
    """Without a scripted answer the stub keeps, like the library, the type each descriptor was set with."""
    m = fx.pkg
    half, ints = m.TensorDescriptor.from_address(0x4500), m.TensorDescriptor.from_address(0x4600)
    m.set_tensor_descriptor(half, m.DataType.miopenHalf, [2, 2], None)
    m.set_4d_tensor_descriptor(ints, m.DataType.miopenInt32, 1, 1, 2, 2)
    m.set_tensor(m.Handle.from_address(1), half, 0x1000, 2.5)
    m.set_tensor(m.Handle.from_address(1), ints, 0x1000, 9)
    assert [c["alpha"] for c in _calls(fx, "miopenSetTensor")] == ["2.5", "9"]
    assert m.get_tensor_descriptor(half).data_type is m.DataType.miopenHalf


@pytest.mark.parametrize("dtype", ["miopenHalf", "miopenFloat", "miopenDouble", "miopenBFloat16"])
@pytest.mark.parametrize("ctype", [ctypes.c_float, ctypes.c_double])
@pytest.mark.parametrize("value", [-1.75, 0.1, 2.5, 1e-3])
def test_element_typed_scalar_takes_a_ctypes_float_by_its_value(fx: Built, dtype: str, ctype: type,
                                                                 value: float) -> None:
    """A c_float or c_double (the docstrings offer both) is encoded in the descriptor's type from its value,
    exactly as the Python float of that value (found on a GPU: a c_float alpha was refused for a half tensor)."""
    m = fx.pkg
    _script(fx, "miopenGetTensorDescriptor/dataType", int(getattr(m.DataType, dtype)))
    h, d = m.Handle.from_address(1), m.TensorDescriptor.from_address(0x4400)
    scalar = ctype(value)
    m.set_tensor(h, d, 0x1000, scalar)
    m.set_tensor(h, d, 0x1000, float(scalar.value))
    by_ctype, by_float = (c["alpha"] for c in _calls(fx, "miopenSetTensor"))
    assert by_ctype == by_float


@pytest.mark.parametrize("dtype, value, exc, message", [
    ("miopenInt32", 0.5, ValueError, r"alpha must be an integer for a int32 value; got 0.5"),
    ("miopenInt8", 128, ValueError, r"alpha must be in \[-128, 127\] for a int8 value; got 128"),
    ("miopenHalf", 70000.0, ValueError, r"alpha=70000.0 does not fit in a float16 value"),
    ("miopenBFloat16", 1e39, ValueError, r"does not fit in a bfloat16 value"),
    ("miopenInt64", 1, ValueError, r"read in the type the descriptor y_desc names, miopenInt64, which has no host "
                                   r"form \(types with one: miopenHalf, miopenFloat"),
    ("miopenFloat", True, TypeError, r"alpha must be a number; got bool"),
])
def test_element_typed_scalar_refuses_what_the_type_cannot_hold(fx: Built, dtype: str, value: Any,
                                                                exc: type, message: str) -> None:
    m = fx.pkg
    _script(fx, "miopenGetTensorDescriptor/dataType", int(getattr(m.DataType, dtype)))
    with pytest.raises(exc, match=message):
        m.set_tensor(m.Handle.from_address(1), m.TensorDescriptor.from_address(0x4400), 0x1000, value)
    assert "miopenSetTensor" not in _names(fx)  # at most the read-only type query ran


def test_a_failing_type_query_names_the_query(fx: Built) -> None:
    m = fx.pkg
    fx.stub.miogen_stub_set_status.argtypes = [ctypes.c_char_p, ctypes.c_int]
    fx.stub.miogen_stub_set_status(b"miopenGetTensorDescriptor", 3)
    with pytest.raises(m.MIOpenBadParamError, match="miopenGetTensorDescriptor"):
        m.set_tensor(m.Handle.from_address(1), m.TensorDescriptor.from_address(0x4400), 0x1000, 1.0)
    assert "miopenSetTensor" not in _names(fx)


def test_element_typed_input_array_by_an_enum_argument(fx: Built) -> None:
    m = fx.pkg
    m.set_values(m.Handle.from_address(1), m.DataType.miopenHalf, [0.5, -1.25, 3], [0, 1, 2, 1])
    call = _calls(fx, "miopenSetValues")[0]
    assert (call["valueType"], call["elementCount"], call["values"]) == ("0", "3", "[0.5,-1.25,3]")
    m.set_values(m.Handle.from_address(1), m.DataType.miopenInt8, [1, -2], [])
    assert _calls(fx, "miopenSetValues")[1]["values"] == "[1,-2]"
    with pytest.raises(ValueError, match=r"values\[1\] must be in \[-128, 127\]"):
        m.set_values(m.Handle.from_address(1), m.DataType.miopenInt8, [1, 200], [])
    with pytest.raises(TypeError, match="values must be a sequence"):
        m.set_values(m.Handle.from_address(1), m.DataType.miopenInt8, 5, [])  # type: ignore[arg-type]


def test_element_typed_output_in_the_type_another_output_reports(fx: Built) -> None:
    m = fx.pkg
    for dtype, marker in [(m.DataType.miopenHalf, 7.0), (m.DataType.miopenInt8, 7), (m.DataType.miopenDouble, 7.0)]:
        fx.stub.miogen_stub_reset()
        _script(fx, "miopenGetSeqLengths/dataType", int(dtype))
        got = m.get_seq_lengths(m.TensorDescriptor.from_address(0x10), 4)
        # the stub writes 2 + the parameter's index (5) in the reported type
        assert got.data_type is dtype and got.padding_marker == marker and type(got.padding_marker) is type(marker)


# --------------------------------------------------------------------------- scalar: float / double


def test_scalars_read_as_float_or_double_whatever_the_tensor_type(fx: Built) -> None:
    m = fx.pkg
    h, d = m.Handle.from_address(1), m.TensorDescriptor.from_address(2)
    m.convolution_backward_bias(h, 0.1, d, 0x10, 0.1, d, 0x20)
    m.convolution_backward_bias(h, ctypes.c_double(0.1), d, 0x10, ctypes.c_float(0.5), d, 0x20)
    m.convolution_backward_bias(h, 2, d, 0x10, 3, d, 0x20)  # ints are numbers too
    a, b, c = _calls(fx, "miopenConvolutionBackwardBias")
    f01 = repr(float(ctypes.c_float(0.1).value))
    assert (a["alpha"], a["beta"]) == (f01, "0.10000000000000001")  # scalar: float / scalar: double
    assert (b["alpha"], b["beta"]) == (f01, "0.5")  # a c_double's value passed as float, a c_float's as double
    assert (c["alpha"], c["beta"]) == ("2", "3")
    with pytest.raises(TypeError, match="alpha must be a float"):
        m.convolution_backward_bias(h, "1", d, 0x10, 0.0, d, 0x20)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- nullable scalars and arrays


def test_nullable_scalars_pass_null_and_say_what_it_means(fx: Built) -> None:
    m = fx.pkg
    h = m.Handle.from_address(1)
    m.set_op_args_scale(h, None, None, 0x30)
    m.set_op_args_scale(h, 2.0, None, 0x30)
    a, b = _calls(fx, "miopenSetOpArgsScale")
    assert (a["alpha"], a["beta"], b["alpha"], b["beta"]) == ("null", "null", "2", "null")
    doc = m.set_op_args_scale.__doc__ or ""
    assert "alpha: read as float whatever the tensor type. None passes NULL (1.0)." in doc
    assert "beta: read as float whatever the tensor type. None passes NULL (0.0)." in doc
    with pytest.raises(TypeError, match="w must be a device buffer; got None"):
        m.set_op_args_scale(h, None, None, None)  # type: ignore[arg-type]


def test_nullable_array_sharing_a_length_passes_null_and_keeps_out_of_the_length_check(fx: Built) -> None:
    m = fx.pkg
    d = m.TensorDescriptor.from_address(0x4700)
    m.set_tensor_descriptor(d, m.DataType.miopenFloat, [2, 3, 4], None)
    call = _calls(fx, "miopenSetTensorDescriptor")[0]
    assert (call["nbDims"], call["dimsA"], call["stridesA"]) == ("3", "[2,3,4]", "[]")  # NULL: nothing read
    assert "strides_a: None passes NULL (packed strides)." in " ".join((m.set_tensor_descriptor.__doc__ or "").split())
    with pytest.raises(ValueError, match="same length: dims_a has 3, strides_a has 2"):
        m.set_tensor_descriptor(d, m.DataType.miopenFloat, [2, 3, 4], [3, 1])
    with pytest.raises(TypeError, match="dims_a must be a sequence; got None"):
        m.set_tensor_descriptor(d, m.DataType.miopenFloat, None, [1])  # type: ignore[arg-type]


# --------------------------------------------------------------------------- holds, per, returned, records


def test_out_pointer_holding_an_address_returns_the_pointer_kept_there(fx: Built) -> None:
    m = fx.pkg
    _script(fx, "miopenGetDropoutDescriptor/states", 0xBEEF000)
    got = m.get_dropout_descriptor(m.DropoutDescriptor.from_address(1), m.Handle.from_address(2))
    assert got.states == 0xBEEF000  # the stub wrote &slot, slot = 0xBEEF000: read through, not the slot's address
    _script(fx, "miopenGetDropoutDescriptor/states", 0)
    assert m.get_dropout_descriptor(m.DropoutDescriptor.from_address(1), m.Handle.from_address(2)).states is None


def test_array_of_k_values_per_counted_item(fx: Built) -> None:
    m = fx.pkg
    h = m.Handle.from_address(1)
    m.set_values(h, m.DataType.miopenFloat, [], [0, 1, 5, 1, 1, 0, 3, 2])
    call = _calls(fx, "miopenSetValues")[0]
    assert (call["sliceCount"], call["slices"]) == ("2", "[0,1,5,1,1,0,3,2]")  # all 8 ints read
    m.set_values(h, m.DataType.miopenFloat, [], [])
    assert _calls(fx, "miopenSetValues")[1]["sliceCount"] == "0"
    with pytest.raises(ValueError, match="slices holds 4 values for each item; got 7 values, not a multiple of 4"):
        m.set_values(h, m.DataType.miopenFloat, [], [0] * 7)


def test_an_output_count_that_is_data_is_returned(fx: Built) -> None:
    m = fx.pkg
    _script(fx, "miopenGetSeqLengths/batchSize", 5)
    _script(fx, "miopenGetSeqLengths/dataType", int(m.DataType.miopenFloat))
    got = m.get_seq_lengths(m.TensorDescriptor.from_address(0x10), 2)
    assert got._fields == ("data_type", "batch_size", "lengths", "padding_marker")
    assert got.batch_size == 5 and len(got.lengths) == 2  # 5 sequences, room for 2: the list is cut, not the count


def test_records_with_handle_and_buffer_fields(fx: Built) -> None:
    m = fx.pkg
    ids = m.TensorArgumentId
    x, w = m.TensorDescriptor.from_address(0x5100), m.TensorDescriptor.from_address(0x5200)
    m.run_solution(m.Handle.from_address(1), [
        m.TensorArgument(ids.miopenTensorConvolutionX, x, 0xA000),
        (ids.miopenTensorConvolutionW, w, 0xB000),
        (ids.miopenTensorConvolutionY, None, 0xC000),  # None: the problem's own descriptor
    ], None, 0)
    call = _calls(fx, "miopenRunSolution")[0]
    assert call["tensors"] == f"[(1;{0x5100};{0xA000}),(2;{0x5200};{0xB000}),(3;null;{0xC000})]"
    raw = m.raw.miopenTensorArgument_t(3, None, 0xD000)  # a raw record still passes as it is
    m.run_solution(m.Handle.from_address(1), [raw], None, 0)
    assert _calls(fx, "miopenRunSolution")[1]["tensors"] == f"[(3;null;{0xD000})]"
    with pytest.raises(TypeError, match=r"tensors\[0\].descriptor must be a TensorDescriptor; got int"):
        m.run_solution(m.Handle.from_address(1), [(1, 0x5100, 0xA000)], None, 0)
    with pytest.raises(TypeError, match=r"tensors\[0\] must be a miopenTensorArgument_t or a tuple of its 3 fields"):
        m.run_solution(m.Handle.from_address(1), [(1, x)], None, 0)
    assert "descriptor a TensorDescriptor or None (None: the problem's descriptor)" in " ".join((m.run_solution.__doc__ or "").split())


# --------------------------------------------------------------------------- encoders of _support


def test_encoders_round_trip_and_match_the_struct_formats(fx: Built) -> None:
    s = fx.pkg._support
    assert s.pack_element(1.0, "float16", "v", "f") == struct.pack("=e", 1.0)
    assert s.pack_element(-2.5, "float64", "v", "f") == struct.pack("=d", -2.5)
    assert s.pack_element(3, "int32", "v", "f") == struct.pack("=i", 3)
    assert s.pack_element(1.0, "bfloat16", "v", "f") == struct.pack("=H", 0x3F80)
    assert s.pack_element(float("nan"), "bfloat16", "v", "f") == struct.pack("=H", 0x7FC0)
    assert s.pack_element(float("inf"), "bfloat16", "v", "f") == struct.pack("=H", 0x7F80)
    assert s.unpack_element(struct.pack("=H", 0x4049), "bfloat16") == 3.140625
    assert s.pack_element(None, "pointer", "v", "f") == struct.pack("@P", 0)
    assert s.unpack_element(struct.pack("@P", 0), "pointer") is None
    assert s.pack_element(True, "bool", "v", "f") == b"\x01"
    assert math.isnan(s.unpack_element(s.pack_element(float("nan"), "float16", "v", "f"), "float16"))
    cell = s.element_scalar(1.0, "float16", "v", "f")._obj  # a zeroed 8-byte cell: readers may peek further
    assert bytes(cell) == struct.pack("=e", 1.0) + b"\0" * 6
    with pytest.raises(ValueError, match="must be in"):
        s.pack_element(-1, "uint8", "v", "f")


# --------------------------------------------------------------------------- the gate


def _with(**functions: FunctionNote) -> Any:
    ann = load_annotations(FIXTURE_ANNOTATIONS)
    return replace(ann, functions={**ann.functions, **functions})


@pytest.mark.parametrize("note, message", [
    (FunctionNote(params={"y": ParamNote(scalar="float")}), "miopenSetTensor.y: scalar: float is for host `void *` scalars"),
    (FunctionNote(params={"alpha": ParamNote(element_of="nope")}), "element_of names 'nope', which is no other parameter"),
    (FunctionNote(params={"alpha": ParamNote(element_of="handle")}), "element_of: handle must be a data-type enum"),
    (FunctionNote(params={"alpha": ParamNote(element_of="yDesc", element_table="missing")}),
     "element_table: missing is not in rules.element_tables"),
    (FunctionNote(params={"alpha": ParamNote(nullable=False, null_means="x")}), "null_means needs nullable: true"),
    (FunctionNote(params={"y": ParamNote(per=2)}), "per: needs an input array with a length"),
    (FunctionNote(params={"alpha": ParamNote(holds="address_of_device_pointer")}), "holds: address_of_device_pointer is for an out `void **`"),
    (FunctionNote(params={"alpha": ParamNote(returned=True)}), "returned: is for an output count"),
])
def test_gate_checks_each_form(note: FunctionNote, message: str) -> None:
    with pytest.raises(AnnotationGateError, match=message.replace("(", r"\(").replace(")", r"\)").replace("*", r"\*")):
        resolve(fixture_spec(), _with(miopenSetTensor=note))


def test_gate_checks_queries_tables_and_records() -> None:
    ann = load_annotations(FIXTURE_ANNOTATIONS)
    rules = replace(ann.rules, element_queries={"miopenTensorDescriptor_t": ElementQuery("miopenGet4dTensorDescriptor",
                                                                                       "dataType")})
    with pytest.raises(AnnotationGateError, match="so n, c, h, w, nStride, cStride, hStride, wStride must be nullable"):
        resolve(fixture_spec(), replace(ann, rules=rules))
    ambiguous = replace(ann.rules, element_tables={k: replace(v, default=True) for k, v in ann.rules.element_tables.items()})
    with pytest.raises(AnnotationGateError, match="scalar, stored are all the default table of miopenDataType_t"):
        resolve(fixture_spec(), replace(ann, rules=ambiguous))
    wrong_field = replace(ann, records={"miopenTensorArgument_t": RecordNote(fields={"id": FieldNote(shape="scalar")})})
    with pytest.raises(AnnotationGateError, match="shape: scalar is for a pointer to one handle"):
        resolve(fixture_spec(), wrong_field)
    absent = replace(ann, records={"miopenNoRecord_t": RecordNote(fields={})})
    with pytest.raises(AnnotationGateError, match="annotation for record miopenNoRecord_t: no such record"):
        resolve(fixture_spec(), absent)


@pytest.mark.parametrize("table", ["element_queries", "extent_queries"])
def test_each_descriptor_query_table_is_resolved_alike(table: str) -> None:
    """A rules table of descriptor queries (element types, extents): an entry for a handle type the release
    lacks is skipped, a call it lacks and a call of the wrong parameters are problems naming the entry."""
    ann = load_annotations(FIXTURE_ANNOTATIONS)
    good = getattr(ann.rules, table)["miopenTensorDescriptor_t"]

    def resolved(**entries: Any) -> Any:
        return resolve(fixture_spec(), replace(ann, rules=replace(ann.rules, **{table: entries})))

    sem = resolved(miopenTensorDescriptor_t=good, miopenOtherRelease_t=replace(good, call="miopenNope"))
    assert getattr(sem, {"element_queries": "queries", "extent_queries": "extents"}[table]) == {
        "miopenTensorDescriptor_t": good}
    with pytest.raises(AnnotationGateError, match=rf"rules\.{table}\.miopenTensorDescriptor_t: miopenNope is not in "):
        resolved(miopenTensorDescriptor_t=replace(good, call="miopenNope"))
    with pytest.raises(AnnotationGateError, match=rf"rules\.{table}\.miopenTensorDescriptor_t: miopenSetTensor "):
        resolved(miopenTensorDescriptor_t=replace(good, call="miopenSetTensor"))


def test_variants_apply_to_their_releases_only() -> None:
    """`variants:` annotate parameters for some releases (their implementation differs): merged key by key."""
    base = FunctionNote(params={"y": ParamNote(direction="inout"), "alpha": ParamNote(scalar="float")},
                        variants=(Variant(until=Version(3, 4, 0), params={"alpha": ParamNote(scalar="double")}),
                                  Variant(since=Version(3, 4, 1), params={"alpha": ParamNote(element_of="yDesc")})))
    sem = resolve(fixture_spec(), _with(miopenSetTensor=base))  # the fixture is 3.4.1
    alpha = sem.functions["miopenSetTensor"].param("alpha")
    assert (alpha.form, alpha.element_of, sem.functions["miopenSetTensor"].param("y").direction) == (
        forms.ElementScalar(), "yDesc", "inout")  # element_of gives the type over the `scalar:` of `params`
    old = resolve(replace(fixture_spec(), version=Version(3, 3, 0)), _with(miopenSetTensor=base))
    assert old.functions["miopenSetTensor"].param("alpha").form == forms.HostScalar(reads="double")
    stale = FunctionNote(variants=(Variant(since=Version(3, 0, 0), params={"nope": ParamNote(nullable=True)}),))
    with pytest.raises(AnnotationGateError, match=r"variants\[0\].nope: no such parameter"):
        resolve(fixture_spec(), _with(miopenSetTensor=stale))
    unscoped = FunctionNote(variants=(Variant(params={"alpha": ParamNote(scalar="float")}),))
    with pytest.raises(AnnotationGateError, match=r"variants\[0\] needs since: or until:"):
        resolve(fixture_spec(), _with(miopenSetTensor=unscoped))


def test_buffer_sizes_are_resolved_per_release() -> None:
    """rules.buffer_sizes holds for each release what it has: a buffer no function takes, and a count no function
    passes beside its buffer, are other releases' (dropped); a count passed beside its buffer must be a by-value
    integer."""
    ann = load_annotations(FIXTURE_ANNOTATIONS)
    sizes = {"workSpace": ("workSpaceSize", "laterSize"), "laterBuffer": ("workSpaceSize",),
             "returnedAlgoCount": ("requestAlgoCount",)}  # an out scalar, no buffer: nothing to size
    sem = resolve(fixture_spec(), replace(ann, rules=replace(ann.rules, buffer_sizes=sizes)))
    assert sem.sizes == {"workSpace": ("workSpaceSize",)}
    wrong = {**sizes, "y": ("requestAlgoCount", "returnedAlgoCount")}
    with pytest.raises(AnnotationGateError, match=r"rules\.buffer_sizes\.y: miopenFindConvolutionForwardAlgorithm\."
                                                  r"returnedAlgoCount is passed beside y but is no by-value integer"):
        resolve(fixture_spec(), replace(ann, rules=replace(ann.rules, buffer_sizes=wrong)))
    loose = resolve(fixture_spec(), replace(ann, rules=replace(ann.rules, buffer_sizes=wrong)), strict=False)
    assert loose.sizes["y"] == ("requestAlgoCount",)  # exploring: the bad count is left out, not checked against


def test_every_committed_release_resolves_its_own_buffer_sizes() -> None:
    from ..helpers import COMMITTED, SPECS

    ann = load_annotations(SPECS / "annotations.yaml")
    for version, path in COMMITTED.paths.items():
        sem = resolve(load(path), ann)
        for buffer, counts in sem.sizes.items():
            beside = [fs for fs in sem.functions.values() if any(p.name == buffer and p.shape == "buffer"
                                                                 for p in fs.params)]
            assert beside, (version, buffer)
            for count in counts:
                assert any(p.name == count for fs in beside for p in fs.params), (version, buffer, count)
        assert set(sem.sizes) <= set(ann.rules.buffer_sizes), version
