"""Addresses and scalars of the typed API: every address, from any source, lies in [0, 2**64) (never
wrapped modulo 2**64); NULL only where the parameter is nullable; host memory is not device memory;
every scalar fits its C type. Each refusal is a TypeError/ValueError/OverflowError naming the C
function and the parameter, raised before the call (the stub's log stays empty).

The sweep at the end drives every wrapper of the bound release: for each by-value or by-pointer
integer, float and device-buffer parameter of every function, an out-of-range value is refused."""

from __future__ import annotations

import ctypes
import inspect
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from miogen.semantics import naming
from miogen.semantics.resolved import FunctionSem, ParamSem
from miogen.semantics.annotations import load_annotations
from miogen.semantics.resolve import resolve
from miogen.spec.ctypes_map import INT_BITS, int_range
from miogen.spec.spec_io import load

from ..conftest import Libs
from ..conftest import test_release as bound_release_version
from ..helpers import SPECS

BIG = 2**64 + 0x1000  # ctypes would pass it as 0x1000


# ------------------------------------------------------------------ buffers from every source


class DataPtr:
    def __init__(self, ptr: object, is_cuda: bool | None = None) -> None:
        self.ptr = ptr
        if is_cuda is not None:
            self.is_cuda = is_cuda

    def data_ptr(self) -> object:
        return self.ptr


class ArrayInterface:
    """Spans 16 KiB: more than the stub's descriptors (the typed API checks a buffer of known size against them)."""

    def __init__(self, data: object, shape: tuple[int, ...] = (4096,)) -> None:
        self.__cuda_array_interface__ = {"shape": shape, "typestr": "<f4", "data": data, "version": 3}


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32), ("dtype", ctypes.c_uint32),
                ("shape", ctypes.c_void_p), ("strides", ctypes.c_void_p), ("byte_offset", ctypes.c_uint64)]


_new_capsule = ctypes.pythonapi.PyCapsule_New
_new_capsule.restype = ctypes.py_object
_new_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


class DLPack:
    """A DLPack producer (kDLROCM = 10 unless told); `report` is what __dlpack_device__ says (None: absent)."""

    def __init__(self, data: int, device_type: int = 10, offset: int = 0, report: int | None = -1,
                 name: bytes = b"dltensor") -> None:
        self.tensor = DLTensor(data, DLDevice(device_type, 0), 1, 0, None, None, offset)
        self.name = name
        if report is not None:
            reported = device_type if report == -1 else report
            self.__dlpack_device__ = lambda: (reported, 0)

    def __dlpack__(self, stream: object = None) -> object:
        return _new_capsule(ctypes.addressof(self.tensor), self.name, None)


def _y(libs: Libs) -> list[dict[str, str]]:
    return libs.log("miopenSetTensor")


@pytest.mark.parametrize(("value", "address"), [
    (0x1000, 0x1000), (2**64 - 1, 2**64 - 1), (DataPtr(0x2000), 0x2000), (DataPtr(0x2000, is_cuda=True), 0x2000),
    (ArrayInterface((0x3000, False)), 0x3000), (DLPack(0x4000), 0x4000), (DLPack(0x4000, offset=0x40), 0x4040),
    (DLPack(0x5000, device_type=2), 0x5000), (DLPack(0x5000, device_type=13, report=None), 0x5000),
])
def test_device_buffers_accepted(libs: Libs, value: object, address: int) -> None:
    import miopen

    miopen.set_tensor(miopen.Handle.from_address(1), miopen.TensorDescriptor.from_address(2), value, 1.0)
    assert _y(libs)[0]["y"] == str(address)


@pytest.mark.parametrize(("value", "error", "message"), [
    (BIG, ValueError, r"y must be an address in \[0, 2\*\*64\); got 18446744073709555712"),
    (-1, ValueError, r"y must be an address in \[0, 2\*\*64\); got -1"),
    (0, ValueError, r"y is a NULL device address, and this parameter is not optional"),
    (None, TypeError, r"y must be a device buffer; got None"),
    (True, TypeError, r"y must be a device buffer"),
    (1.5, TypeError, r"y must be a device buffer"),
    (DataPtr(BIG), ValueError, r"y must be an address in \[0, 2\*\*64\) \(from its data_ptr\(\)\)"),
    (DataPtr(-8), ValueError, r"\(from its data_ptr\(\)\); got -8"),
    (DataPtr(1.0e4), TypeError, r"y must be an int address \(from its data_ptr\(\)\); got float"),
    (DataPtr(0x2000, is_cuda=False), ValueError, r"y is a host \(CPU\) tensor"),
    (ArrayInterface((BIG, False)), ValueError, r"\(from its __cuda_array_interface__\)"),
    (ArrayInterface((-1, False)), ValueError, r"\(from its __cuda_array_interface__\); got -1"),
    (ArrayInterface(None), TypeError, r"'data' is \(address, read_only\)"),
    (ArrayInterface((0, False)), ValueError, r"y is a NULL device address"),
    (DLPack(0x4000, device_type=1), ValueError, r"y is kDLCPU memory \(by its __dlpack_device__\(\)\), not device"),
    (DLPack(0x4000, device_type=3), ValueError, r"y is kDLCUDAHost memory"),
    (DLPack(0x4000, device_type=11), ValueError, r"y is kDLROCMHost memory"),
    (DLPack(0x4000, device_type=1, report=10), ValueError, r"y is kDLCPU memory \(by its DLPack tensor\)"),
    (DLPack(0x4000, device_type=1, report=None), ValueError, r"kDLCPU memory \(by its DLPack tensor\)"),
    (DLPack(2**64 - 0x10, offset=0x20), ValueError, r"byte_offset 32 is beyond 2\*\*64"),
    (DLPack(0x4000, name=b"used_dltensor"), TypeError, r"not an unconsumed \"dltensor\""),
    (DLPack(0, report=None), ValueError, r"y is a NULL device address"),
])
def test_device_buffers_refused(libs: Libs, value: object, error: type[Exception], message: str) -> None:
    import miopen

    with pytest.raises(error, match=r"^miopenSetTensor: .*" + message):
        miopen.set_tensor(miopen.Handle.from_address(1), miopen.TensorDescriptor.from_address(2), value, 1.0)
    assert not _y(libs)


_SOURCES = [0x1000, 2**64 - 1, ctypes.c_void_p(0x1800), DataPtr(0x2000), DataPtr(0x2000, is_cuda=True),
            ArrayInterface((0x3000, False)), DLPack(0x4000, offset=0x40), DLPack(0x5000, device_type=2)]
_REFUSED = [BIG, -1, DataPtr(BIG), DataPtr(1.0e4), DataPtr(0x2000, is_cuda=False), ArrayInterface((-1, False)),
            ArrayInterface(None), DLPack(0x4000, device_type=1), DLPack(2**64 - 0x10, offset=0x20)]


def _readers() -> dict[str, Callable[[object], int | None]]:
    """Every place the package reads a device address from a caller's object."""
    from miopen import hip
    from miopen._generated import _pointers, _support

    return {"typed API (as_device_ptr)": lambda v: _support.as_device_ptr(v, "y", "f", True),
            "one reader (device_address)": lambda v: _pointers.device_address(v, "y", "f"),
            "hip device pointer": lambda v: hip._device_pointer(v, "y", "f", 0)}


def _case_id(value: object) -> str:
    """A test id the same in every process (an object's repr holds its address; pytest-xdist compares ids)."""
    return repr(value) if isinstance(value, (int, ctypes.c_void_p)) else type(value).__name__


@pytest.mark.parametrize("value", _SOURCES, ids=lambda v: _case_id(v))
def test_every_device_pointer_reader_accepts_the_same_sources(value: object) -> None:
    """One reader for the whole package: the typed API, the HIP helpers and the tensor path give the same address."""
    got = {where: read(value) for where, read in _readers().items()}
    assert len(set(got.values())) == 1 and None not in got.values(), got


@pytest.mark.parametrize("value", _REFUSED, ids=lambda v: _case_id(v))
def test_every_device_pointer_reader_refuses_the_same_sources(value: object) -> None:
    for where, read in _readers().items():
        with pytest.raises((TypeError, ValueError)):
            read(value)
            pytest.fail(f"{where} accepted {value!r}")


@given(st.integers(min_value=-(2**65), max_value=2**65))
def test_tensor_and_buffer_addresses_agree(address: int) -> None:
    """as_tensor's address (from data_ptr()) is the typed API's: one range, one verdict."""
    from miopen._generated._support import as_device_ptr
    from miopen.tensor import _address

    try:
        expected: int | None = as_device_ptr(address, "t", "f", True) or 0
    except ValueError:
        expected = None
    try:
        got: int | None = _address(address, "t", "data_ptr()")
    except ValueError:
        got = None
    assert got == expected


def test_nullable_buffers_take_null(libs: Libs) -> None:
    import miopen

    d = miopen.TensorDescriptor.from_address(2)
    for null in (None, 0, DataPtr(0), ArrayInterface((0, False))):
        miopen.convolution_forward(miopen.Handle.from_address(1), 1.0, d, 0x10, d, 0x20,
                                   miopen.ConvolutionDescriptor.from_address(3), 0, 0.0, d, 0x30, null, 0)
    assert [e["workSpace"] for e in libs.log("miopenConvolutionForward")] == ["0"] * 4
    with pytest.raises(ValueError, match=r"workSpace|work_space must be an address"):
        miopen.convolution_forward(miopen.Handle.from_address(1), 1.0, d, 0x10, d, 0x20,
                                   miopen.ConvolutionDescriptor.from_address(3), 0, 0.0, d, 0x30, BIG, 0)


class _Stream:
    def __init__(self, **attrs: object) -> None:
        self.__dict__.update(attrs)


@pytest.mark.parametrize(("stream", "error", "message"), [
    (BIG, ValueError, r"stream_id must be an address in \[0, 2\*\*64\); got"),
    (-1, ValueError, r"stream_id must be an address in \[0, 2\*\*64\); got -1"),
    (_Stream(cuda_stream=BIG), ValueError, r"\(from its \.cuda_stream\)"),
    (_Stream(ptr=-5), ValueError, r"\(from its \.ptr\); got -5"),
    (_Stream(_as_parameter_=BIG), ValueError, r"\(from its _as_parameter_\)"),
    (1.5, TypeError, r"stream_id must be a stream"),
])
def test_streams_refused(libs: Libs, stream: object, error: type[Exception], message: str) -> None:
    import miopen

    with pytest.raises(error, match=r"^miopenSetStream: .*" + message):
        miopen.set_stream(miopen.Handle.from_address(1), stream)
    assert not libs.log("miopenSetStream")


def test_streams_accepted(libs: Libs) -> None:
    import miopen

    h = miopen.Handle.from_address(1)
    for stream, expect in ((None, 0), (0, 0), (2**64 - 1, 2**64 - 1), (_Stream(cuda_stream=0x77), 0x77),
                           (ctypes.c_void_p(0x88), 0x88), (_Stream(_as_parameter_=0x99), 0x99)):
        miopen.set_stream(h, stream)
        assert libs.log("miopenSetStream")[-1]["streamID"] == str(expect)


def test_handles_and_opaque_addresses(libs: Libs) -> None:
    import miopen

    for bad in (BIG, 2**64, -1, 0, True, 1.0):
        with pytest.raises(ValueError, match=r"TensorDescriptor\.from_address: expected a non-null int address below 2\*\*64"):
            miopen.TensorDescriptor.from_address(bad)  # type: ignore[arg-type]
    h = miopen.Handle.from_address(2**64 - 1)
    for bad, error in ((BIG, ValueError), (-1, ValueError), (1.5, TypeError)):
        with pytest.raises(error, match=r"^miopenSetAllocator: allocator_context must be"):
            miopen.set_allocator(h, None, None, bad)
    assert not libs.log("miopenSetAllocator")


# ------------------------------------------------------------------ scalars


def test_host_scaling_factors_fit_a_float(libs: Libs) -> None:
    import miopen

    h, d = miopen.Handle.from_address(1), miopen.TensorDescriptor.from_address(2)
    c = miopen.ConvolutionDescriptor.from_address(3)

    def conv(alpha: object) -> None:
        miopen.convolution_forward(h, alpha, d, 0x10, d, 0x20, c, 0, 0.0, d, 0x30, None, 0)

    for alpha in (1e300, -1e300, 3.5e38, 10**39):
        with pytest.raises(OverflowError, match=r"^miopenConvolutionForward: alpha=.* does not fit a C float"):
            conv(alpha)
    with pytest.raises(OverflowError, match=r"^miopenConvolutionForward: alpha=1\d+ is too large for a C double"):
        conv(10**400)
    assert not libs.log("miopenConvolutionForward")
    for alpha in (3.4028235e38, float("inf"), float("-inf"), 1e-300):  # rounds to FLT_MAX; inf as is
        conv(alpha)
    # a c_double passes as it is where the bound release's annotations let it; where MIOpen reads alpha as a float
    # whatever the tensor type (an older release), it must fit a float like any value
    if "read as float whatever the tensor type" in (miopen.convolution_forward.__doc__ or ""):
        with pytest.raises(OverflowError, match=r"^miopenConvolutionForward: alpha=.* does not fit a C float"):
            conv(ctypes.c_double(1e300))
    else:
        conv(ctypes.c_double(1e300))
    logged = [e["alpha"] for e in libs.log("miopenConvolutionForward")]
    assert logged[:4] == ["3.4028234663852886e+38", "inf", "-inf", "0"]


# ------------------------------------------------------------------ the sweep over every wrapper


def _semantics() -> tuple[Any, dict[str, FunctionSem]]:
    spec = load(SPECS / f"{bound_release_version()}.yaml")
    return spec, resolve(spec, load_annotations(SPECS / "annotations.yaml")).functions


def _valid(p: ParamSem, api: Any, handle_cls: dict[str, Any]) -> object:
    """An argument the wrapper accepts for `p` (its checks pass; the stub takes the call)."""
    t = p.type
    if p.shape == "callback" or (p.shape == "value" and t.kind in ("opaque", "callback")) or p.shape == "opaque":
        return None
    if p.shape == "buffer":
        return 0x1000
    if p.shape == "string":
        return "x"
    if p.shape == "blob":
        return b"x"
    if t.kind == "void" and p.memory == "host" and p.shape == "scalar":
        return 1.0
    elem: object
    if t.kind == "handle":
        elem = handle_cls[t.name].from_address(0x10)
    elif t.kind == "enum":
        elem = next(iter(getattr(api, naming.class_name(t.name, "miopen"))))
    elif t.kind == "int":
        elem = 1
    elif t.kind == "float":
        elem = 1.0
    elif t.kind == "bool":
        elem = False
    elif t.kind == "void":
        elem = 0x1000
    elif t.kind in ("struct", "union"):
        import miopen

        return [] if p.shape == "array" else getattr(miopen.raw, t.name)()
    else:
        raise LookupError(t.kind)
    return [elem] if p.shape == "array" else elem


def _sweep_cases() -> Iterator[tuple[str, str, str, object, type[Exception], str]]:
    """(C function, C parameter, kind, bad value, exception, message) for every checked parameter."""
    spec, functions = _semantics()
    for f in spec.functions:
        fs = functions[f.name]
        for p in fs.params:
            if p.hidden or (p.direction == "out" and p.shape != "buffer") or \
                    p.shape in ("array", "blob", "string", "callback", "opaque"):
                continue
            t = p.type
            if t.kind == "int" and (p.shape == "value" or p.shape == "scalar"):
                lo, hi = int_range(t.name)
                yield f.name, p.name, t.name, hi + 1, ValueError, rf"must be in \[{lo}, {hi}\]; got {hi + 1}"
                yield f.name, p.name, t.name, lo - 1, ValueError, (r"must not be negative" if lo == 0
                                                                    else rf"must be in \[{lo}, {hi}\]")
            elif t.kind == "float" and t.name == "float":
                yield f.name, p.name, "float", 1e300, OverflowError, r"=1e\+300 does not fit a C float"
            elif t.kind == "void" and p.memory == "host" and p.shape == "scalar":
                kind = getattr(p, "scalar", None)
                if p.element_of is not None:
                    pass  # element-typed (ElementScalar): its range is its element type's, the element tests' own
                elif kind is None or kind == "float":  # read as a C float
                    yield f.name, p.name, "host scalar", -1e300, OverflowError, r"does not fit a C float"
                elif kind == "double":
                    yield f.name, p.name, "host double", 10**400, OverflowError, r"too large for a C double"
            elif p.shape == "buffer":
                yield f.name, p.name, "buffer", BIG, ValueError, r"must be an address in \[0, 2\*\*64\)"
                yield f.name, p.name, "buffer", -4, ValueError, r"must be an address in \[0, 2\*\*64\); got -4"
                if not p.nullable:
                    yield f.name, p.name, "buffer", 0, ValueError, r"is a NULL device address"


def test_every_wrapper_refuses_out_of_range_scalars_and_addresses(libs: Libs, capsys: pytest.CaptureFixture[str]) -> None:
    """Each by-value/by-pointer integer of every C kind, each C float, host scaling factor and device
    buffer of every function of the bound release: out of range is refused naming the function and the
    parameter, and nothing reaches the library; the same call with valid values reaches it."""
    import miopen
    from miopen._generated import _handles

    api = miopen.api
    spec, functions = _semantics()
    handle_cls = {cls._c_name: cls for cls in vars(_handles).values()
                  if isinstance(cls, type) and issubclass(cls, miopen._generated._support.HandleBase) and cls._c_name}
    checked: dict[str, int] = {}
    functions_checked: set[str] = set()
    for fn_name, param, kind, bad, error, message in _sweep_cases():
        fs = functions[fn_name]
        py = naming.param_names([p.name for p in fs.params])
        wrapper: Callable[..., Any] = getattr(api, naming.function_name(fn_name, "miopen"))
        args = {py[p.name]: _valid(p, api, handle_cls) for p in fs.params
                if not p.hidden and (p.direction != "out" or p.shape == "buffer")
                and py[p.name] in inspect.signature(wrapper).parameters}
        libs.reset()
        args[py[param]] = bad
        with pytest.raises(error, match=rf"^{fn_name}: {py[param]}\b.*{message}"):
            wrapper(**args)
        assert not libs.log(fn_name), (fn_name, param, bad)
        checked[kind] = checked.get(kind, 0) + 1
        functions_checked.add(fn_name)
    with capsys.disabled():
        print(f"\nout-of-range values refused: {sum(checked.values())} in {len(functions_checked)} functions: "
              f"{dict(sorted(checked.items()))}")
    for kind in ("int", "size_t", "uint64_t", "buffer", "host scalar", "float"):
        assert checked.get(kind, 0) > 0, kind  # the kinds this release has are all exercised
    assert set(checked) - {"buffer", "host scalar", "float"} <= set(INT_BITS)


@pytest.mark.long
def test_every_release_checks_each_integer_against_its_c_type() -> None:
    """Statically, for every committed release: each integer parameter a wrapper converts is checked
    against the range of its own C type (int64_t, char, ... wherever a release has them)."""
    import ast

    from ..helpers import REPO

    kinds: dict[str, int] = {}
    for spec_path in sorted(SPECS.glob("*.*.*.yaml")):
        spec = load(spec_path)
        functions = resolve(spec, load_annotations(SPECS / "annotations.yaml")).functions
        source = (REPO / "generated" / spec.version.module / "api.py").read_text()
        lines = source.splitlines()
        bodies = {n.name: "\n".join(lines[n.lineno - 1:n.end_lineno]) for n in ast.parse(source).body
                  if isinstance(n, ast.FunctionDef)}
        for f in spec.functions:
            fs = functions[f.name]
            py = naming.param_names([p.name for p in fs.params])
            body = bodies[naming.function_name(f.name, "miopen")]
            for p in fs.params:
                if p.type.kind != "int" or p.hidden or p.direction == "out" or p.shape not in ("value", "scalar"):
                    continue
                lo, hi = int_range(p.type.name)
                assert f"not {lo} <= {py[p.name]} <= {hi}" in body, (spec.version, f.name, p.name)
                kinds[p.type.name] = kinds.get(p.type.name, 0) + 1
    assert {"int", "size_t", "int64_t", "uint64_t"} <= set(kinds), kinds


def test_chars_float_arrays_and_struct_fields(libs: Libs) -> None:
    """The conversions no release uses by value today (a C char), and elements ctypes would truncate."""
    from miopen._generated import _support as s

    assert s.as_char(65, "c", "f") == b"A" and s.as_char(-1, "c", "f") == b"\xff" and s.as_char(b"z", "c", "f") == b"z"
    with pytest.raises(ValueError, match=r"^f: c must be a char .*got 256"):
        s.as_char(256, "c", "f")
    with pytest.raises(TypeError, match=r"^f: c must be a char"):
        s.as_char("A", "c", "f")
    floats = s.float_elem(ctypes.c_float)
    with pytest.raises(OverflowError, match=r"^f: a\[1\]=1e\+300 does not fit a C float"):
        s.in_array([1.0, 1e300], floats, "a", "f", False)
    assert list(s.in_array([1.0, 1e300], s.float_elem(ctypes.c_double), "a", "f", False)) == [1.0, 1e300]

    class Pair(ctypes.Structure):
        _fields_ = [("n", ctypes.c_int), ("x", ctypes.c_float), ("p", ctypes.c_void_p)]

    pairs = s.struct_elem(Pair)
    assert s.in_array([(1, 2.0, 0x10)], pairs, "a", "f", False)[0].n == 1
    for bad, message in (((2**40, 0.0, 0), r"a\[0\]\.n=1099511627776 does not fit"),
                         ((1, 1e300, 0), r"a\[0\]\.x=1e\+300 does not fit"),
                         ((1, 0.0, BIG), r"a\[0\]\.p=18446744073709555712 does not fit")):
        with pytest.raises((ValueError, OverflowError), match=message):
            s.in_array([bad], pairs, "a", "f", False)
