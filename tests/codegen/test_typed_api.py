"""The typed API driven through the gcc-built stub: conversions, outputs, errors, handle ownership."""

from __future__ import annotations

import gc
import warnings

import pytest

from ..conftest import Built


def _calls(fx: Built, fn: str) -> list[dict[str, str]]:
    out = []
    for line in (fx.stub.miogen_stub_log() or b"").decode().splitlines():
        name, *items = line.split("\t")
        if name == fn:
            out.append(dict(item.partition("=")[::2] for item in items))
    return out


def test_setter_passes_values(fx: Built) -> None:
    m = fx.pkg
    d = m.TensorDescriptor.from_address(0x1230)
    m.set_4d_tensor_descriptor(d, m.DataType.miopenHalf, 1, 3, -224, 2**31 - 1)
    m.set_4d_tensor_descriptor(d, 5, 2, 3, 4, 5)  # an enum as its int value
    a, b = _calls(fx, "miopenSet4dTensorDescriptor")
    assert a == {"tensorDesc": str(0x1230), "dataType": "0", "n": "1", "c": "3", "h": "-224", "w": "2147483647"}
    assert b["dataType"] == "5"


def test_four_output_getter_returns_a_named_tuple(fx: Built) -> None:
    m = fx.pkg
    r = m.get_4d_tensor_descriptor(m.TensorDescriptor.from_address(0x10))
    assert type(r).__name__ == "Get4dTensorDescriptorResult"
    assert r.data_type is m.DataType.miopenInt64  # the enum's last constant, as an enum member
    # each int output uses its full width and sign: -(70000 + 2 + parameter index)
    assert (r.n, r.c, r.h, r.w, r.n_stride, r.w_stride) == (-70004, -70005, -70006, -70007, -70008, -70011)


def test_arrays_fill_in_their_lengths(fx: Built) -> None:
    m = fx.pkg
    d = m.TensorDescriptor.from_address(0x10)
    m.set_tensor_descriptor(d, m.DataType.miopenFloat, (2, 3, 4), [12, 4, 1])
    call = _calls(fx, "miopenSetTensorDescriptor")[0]
    assert (call["nbDims"], call["dimsA"], call["stridesA"]) == ("3", "[2,3,4]", "[12,4,1]")
    m.set_nd_tensor_descriptor_with_layout(d, 1, m.TensorLayout.miopenTensorNHWC, [1, 2])
    call = _calls(fx, "miopenSetNdTensorDescriptorWithLayout")[0]
    assert (call["lens"], call["num_lens"]) == ("[1,2]", "2")  # the count after the array


def test_array_length_from_another_call(fx: Built) -> None:
    m = fx.pkg
    r = m.get_tensor_descriptor(m.TensorDescriptor.from_address(0x10))
    # miopenGetTensorDescriptorSize writes 3 (its parameter 1): both arrays have 3 entries
    assert [c[""] if "" in c else None for c in []] == []
    assert r.dims_a == [4, 5, 6] and r.strides_a == [5, 6, 7]
    assert len(_calls(fx, "miopenGetTensorDescriptorSize")) == 1


def test_find_returns_records_of_the_returned_length(fx: Built) -> None:
    m = fx.pkg
    h = m.Handle.from_address(0x99)
    d = m.TensorDescriptor.from_address(0x10)
    c = m.ConvolutionDescriptor.from_address(0x20)
    res = m.find_convolution_forward_algorithm(h, d, 1, d, 2, c, d, 3, 5, None, 0, True)
    assert len(res) == 2  # the stub returns min(capacity, 2)
    assert all(isinstance(r, m.ConvAlgoPerf) for r in res)
    assert res[0].fwd_algo is m.ConvFwdAlgorithm.miopenConvolutionFwdAlgoImplicitGEMM
    call = _calls(fx, "miopenFindConvolutionForwardAlgorithm")[0]
    assert (call["requestAlgoCount"], call["workSpace"], call["exhaustiveSearch"]) == ("5", "0", "1")
    sols = m.convolution_forward_get_solution(h, d, d, c, d, 1)
    assert len(sols) == 1 and sols[0].workspace_size == 10  # param 7, field 1: 2 + 7 + 1


def test_parallel_arrays_and_device_pointer_arrays(fx: Built) -> None:
    m = fx.pkg
    h = m.Handle.from_address(0x99)
    ds = [m.TensorDescriptor.from_address(0x100 + 16 * i) for i in range(3)]
    m.cat_forward(h, ds, [0x1000, 0x2000, 0x3000], ds[0], 0x4000, 1)
    call = _calls(fx, "miopenCatForward")[0]
    assert call["xCount"] == "3" and call["xs"] == f"[{0x1000},{0x2000},{0x3000}]"
    with pytest.raises(ValueError, match=r"miopenCatForward: these sequences must have the same length: "
                                         r"x_descs has 3, xs has 2"):
        m.cat_forward(h, ds, [0x1000, 0x2000], ds[0], 0x4000, 1)


def test_device_buffers_from_interfaces(fx: Built) -> None:
    m = fx.pkg
    h = m.Handle.from_address(0x99)
    d = m.TensorDescriptor.from_address(0x10)

    class CudaArray:
        __cuda_array_interface__ = {"data": (0xABC0, False), "shape": (1024,), "typestr": "<f4", "version": 3}

    class TorchLike:
        def data_ptr(self) -> int:
            return 0xDEF0

    m.set_tensor(h, d, CudaArray(), 1.0)
    m.set_tensor(h, d, TorchLike(), 2.5)
    a, b = _calls(fx, "miopenSetTensor")
    assert (a["y"], a["alpha"]) == (str(0xABC0), "1")
    assert (b["y"], b["alpha"]) == (str(0xDEF0), "2.5")


def test_host_scalars_for_batchnorm_non_const_alpha(fx: Built) -> None:
    m = fx.pkg
    import ctypes

    h = m.Handle.from_address(0x99)
    m.batch_normalization_forward_inference(h, 1.0, ctypes.c_float(0.0), m.TensorDescriptor.from_address(1), 2, 3,
                                            1e-5, 0)
    call = _calls(fx, "miopenBatchNormalizationForwardInference")[0]
    assert (call["alpha"], call["beta"], call["epsilon"]) == ("1", "0", "1.0000000000000001e-05")


def test_dropout_getter_mixed_outputs(fx: Built) -> None:
    m = fx.pkg
    r = m.get_dropout_descriptor(m.DropoutDescriptor.from_address(5), m.Handle.from_address(6))
    assert r.dropout == pytest.approx(2.25) and r.states == 0x20000 + 0x300
    assert r.seed == 2**63 + 6 and r.use_mask is True and r.state_evo is True
    assert r.rng_mode is m.ReduceExtremeOp.MIOPEN_REDUCE_EXTREME_ARGMAX


def test_blobs_and_strings(fx: Built) -> None:
    m = fx.pkg
    h = m.Handle.from_address(0x99)
    blob = m.save_solution(h)
    assert blob == bytes((1 + k) & 255 for k in range(3))  # miopenGetSolutionSize wrote 3
    m.load_solution(h, b"\x00\xffab")
    call = _calls(fx, "miopenLoadSolution")[0]
    assert (call["data"], call["size"]) == ("00ff6162", "4")
    assert m.get_error_string(m.Status.miopenStatusBadParm) == "stub"


def test_default_arguments(fx: Built) -> None:
    m = fx.pkg
    h = m.Handle.from_address(0x99)
    d = m.TensorDescriptor.from_address(0x10)
    m.kthvalue_forward(h, d, 1, d, 2, d, 3, 4)
    call = _calls(fx, "miopenKthvalueForward")[0]
    assert (call["dim"], call["keepDim"], call["indices"]) == ("-1", "0", "3")
    m.soft_margin_loss_forward(h, d, 1, 2)
    assert _calls(fx, "miopenSoftMarginLossForward")[0]["workspace"] == "0"


def test_callbacks_are_called_and_kept_alive(fx: Built) -> None:
    m = fx.pkg
    seen: list[tuple[object, ...]] = []

    def alloc(ctx: int | None, size: int) -> int:
        seen.append(("alloc", ctx, size))
        return 0x7000

    def free(ctx: int | None, ptr: int | None) -> None:
        seen.append(("free", ctx, ptr))

    h = m.Handle.from_address(0x99)
    m.set_allocator(h, alloc, free, 0x55)
    assert seen == [("alloc", 0x55, 64), ("free", 0x55, 0x3001)]
    call = _calls(fx, "miopenSetAllocator")[0]
    assert call["allocator.ret"] == str(0x7000)
    assert h._keep and h._keep[0][0] == "miopenSetAllocator"  # the trampolines live as long as the handle
    m.set_allocator(h, None, None)  # null restores the defaults


# ------------------------------------------------------------------ status codes


def test_status_becomes_exception_naming_the_call(fx: Built) -> None:
    m = fx.pkg
    fx.stub.miogen_stub_set_status(b"miopenSet4dTensorDescriptor", 3)
    d = m.TensorDescriptor.from_address(0x10)
    with pytest.raises(m.MIOpenBadParamError) as e:
        m.set_4d_tensor_descriptor(d, m.DataType.miopenFloat, 1, 2, 3, 4)
    err = e.value
    assert isinstance(err, ValueError) and isinstance(err, m.MIOpenError)
    assert err.function == "miopenSet4dTensorDescriptor" and err.status == m.Status.miopenStatusBadParm
    assert "miopenSet4dTensorDescriptor failed: miopenStatusBadParm (3)" in str(err)
    assert "n=1, c=2, h=3, w=4" in str(err)


@pytest.mark.parametrize(
    ("status", "cls", "builtin"),
    [(1, "MIOpenNotInitializedError", RuntimeError), (2, "MIOpenInvalidValueError", ValueError),
     (4, "MIOpenAllocFailedError", MemoryError), (5, "MIOpenInternalError", RuntimeError),
     (6, "MIOpenNotImplementedError", NotImplementedError), (7, "MIOpenUnknownError", RuntimeError),
     (8, "MIOpenUnsupportedOpError", RuntimeError), (10, "MIOpenVersionMismatchError", RuntimeError),
     (77, "MIOpenError", RuntimeError)],
)
def test_status_mapping(fx: Built, status: int, cls: str, builtin: type) -> None:
    m = fx.pkg
    fx.stub.miogen_stub_set_status(None, status)
    with pytest.raises(getattr(m, cls)) as e:
        m.enable_profiling(m.Handle.from_address(1), True)
    assert isinstance(e.value, builtin) and type(e.value).__name__ == cls
    if status == 6:
        assert "non-contiguous" in str(e.value)


def test_gpu_operations_skipped_is_a_warning(fx: Built) -> None:
    m = fx.pkg
    fx.stub.miogen_stub_set_status(None, 9)
    with pytest.warns(m.MIOpenWarning, match="miopenEnableProfiling: miopenStatusGpuOperationsSkipped"):
        m.enable_profiling(m.Handle.from_address(1), True)


# ------------------------------------------------------------------ bad input, before any C call


@pytest.mark.parametrize(
    ("call", "exc", "message"),
    [
        (lambda m, d: m.set_4d_tensor_descriptor(d, m.DataType.miopenFloat, "1", 2, 3, 4), TypeError,
         r"miopenSet4dTensorDescriptor: n must be an int; got str '1'"),
        (lambda m, d: m.set_4d_tensor_descriptor(d, m.DataType.miopenFloat, 1.5, 2, 3, 4), TypeError,
         r"n must be an int; got float 1.5"),
        (lambda m, d: m.set_4d_tensor_descriptor(d, m.DataType.miopenFloat, 2**40, 2, 3, 4), ValueError,
         r"n must be in \[-2147483648, 2147483647\]"),
        (lambda m, d: m.set_4d_tensor_descriptor(d, 4, 1, 2, 3, 4), ValueError,
         r"data_type=4 is not a miopenDataType_t value; valid: miopenHalf=0"),
        (lambda m, d: m.set_4d_tensor_descriptor(d, m.TensorLayout.miopenTensorNCHW, 1, 2, 3, 4), TypeError,
         r"data_type must be a member of DataType \(miopenHalf, .*\) or its int value; got miopenTensorLayout_t"),
        (lambda m, d: m.set_4d_tensor_descriptor(None, 1, 1, 2, 3, 4), TypeError,
         r"tensor_desc must be a TensorDescriptor; got None"),
        (lambda m, d: m.set_4d_tensor_descriptor(m.Handle.from_address(8), 1, 1, 2, 3, 4), TypeError,
         r"tensor_desc must be a TensorDescriptor; got Handle"),
        (lambda m, d: m.get_tensor_num_bytes(0x10), TypeError, r"tensor_desc must be a TensorDescriptor; got int"),
        (lambda m, d: m.set_tensor_descriptor(d, 1, [1, "2"], [1, 1]), TypeError, r"dims_a\[1\] must be an int"),
        (lambda m, d: m.set_tensor_descriptor(d, 1, 5, [1]), TypeError, r"dims_a must be a sequence; got int"),
        (lambda m, d: m.set_tensor_descriptor(d, 1, None, [1]), TypeError, r"dims_a must be a sequence; got None"),
        (lambda m, d: m.set_tensor_descriptor(d, 1, [1, 2], [1]), ValueError, r"same length: dims_a has 2"),
        (lambda m, d: m.set_tensor(m.Handle.from_address(1), d, -5, 1.0), ValueError,
         r"miopenSetTensor: y must be an address in \[0, 2\*\*64\); got -5"),
        (lambda m, d: m.set_tensor(m.Handle.from_address(1), d, "0x10", 1.0), TypeError,
         r"y must be a device buffer: an int address, a pyopencl Buffer or Array"),
        (lambda m, d: m.set_tensor(m.Handle.from_address(1), d, None, 1.0), TypeError, r"y must be a device buffer; got None"),
        (lambda m, d: m.set_tensor(m.Handle.from_address(1), d, 1, "one"), TypeError, r"alpha must be a number"),
        (lambda m, d: m.get_tensor_num_bytes(d, 1), TypeError, r"takes 1 positional argument"),
        (lambda m, d: m.find_convolution_forward_algorithm(
            m.Handle.from_address(1), d, 1, d, 2, m.ConvolutionDescriptor.from_address(3), d, 3, -1, None, 0, True),
         ValueError, r"request_algo_count must not be negative; got -1"),
        (lambda m, d: m.find_convolution_forward_algorithm(
            m.Handle.from_address(1), d, 1, d, 2, m.ConvolutionDescriptor.from_address(3), d, 3, 1, None, -8, True),
         ValueError, r"work_space_size must not be negative; got -8"),
        (lambda m, d: m.enable_profiling(m.Handle.from_address(1), 2), TypeError, r"enable must be a bool"),
        (lambda m, d: m.load_solution(m.Handle.from_address(1), "text"), TypeError, r"data must be bytes"),
        (lambda m, d: m.set_allocator(m.Handle.from_address(1), 5, None), TypeError, r"allocator must be callable"),
        (lambda m, d: m.set_stream(m.Handle.from_address(1), "stream"), TypeError, r"stream_id must be a stream"),
        (lambda m, d: m.set_allocator(m.Handle.from_address(1), None, None, -3), ValueError,
         r"allocator_context must be an address in \[0, 2\*\*64\); got -3"),
        (lambda m, d: m.set_allocator(m.Handle.from_address(1), None, None, "x"), TypeError,
         r"allocator_context must be an int address or None"),
    ],
)
def test_bad_input_is_a_python_error_before_the_call(fx: Built, call: object, exc: type, message: str) -> None:
    m = fx.pkg
    d = m.TensorDescriptor.from_address(0x10)
    with pytest.raises(exc, match=message):
        call(m, d)  # type: ignore[operator]
    assert (fx.stub.miogen_stub_log() or b"") == b""  # nothing reached C


# ------------------------------------------------------------------ ownership


def _destroys(fx: Built) -> int:
    return len(_calls(fx, "miopenDestroyTensorDescriptor"))


def test_created_handles_are_destroyed_exactly_once(fx: Built) -> None:
    m = fx.pkg
    d = m.create_tensor_descriptor()
    assert isinstance(d, m.TensorDescriptor) and d.address == 0x10000  # written by the stub (param 0)
    d.close()
    d.close()
    assert _destroys(fx) == 1 and d.closed
    with pytest.raises(ValueError, match=r"tensor_desc is a closed TensorDescriptor"):
        m.get_tensor_num_bytes(d)
    with pytest.raises(ValueError, match="tensor_desc is a closed TensorDescriptor"):
        m.destroy_tensor_descriptor(d)
    assert _destroys(fx) == 1


def test_context_manager_and_destroy_function(fx: Built) -> None:
    m = fx.pkg
    with m.create_tensor_descriptor() as d:
        pass
    assert d.closed and _destroys(fx) == 1
    e = m.create_tensor_descriptor()
    m.destroy_tensor_descriptor(e)
    e.close()
    assert e.closed and _destroys(fx) == 2


def test_finalizer_destroys_and_never_raises(fx: Built) -> None:
    m = fx.pkg
    m.create_tensor_descriptor()
    gc.collect()
    assert _destroys(fx) == 1
    fx.stub.miogen_stub_set_status(b"miopenDestroyTensorDescriptor", 5)
    d = m.create_tensor_descriptor()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        del d
        gc.collect()
    assert any("destroying the handle failed" in str(x.message) for x in w)


def test_borrowed_handles_are_not_destroyed(fx: Built) -> None:
    m = fx.pkg
    d = m.TensorDescriptor.from_address(0x1234)
    d.close()
    assert _destroys(fx) == 0
    with pytest.raises(TypeError, match="come from their create functions"):
        m.TensorDescriptor()
    with pytest.raises(ValueError, match="non-null int address"):
        m.TensorDescriptor.from_address(0)


def test_handle_created_by_create_with_stream(fx: Built) -> None:
    m = fx.pkg

    class TorchStream:
        cuda_stream = 0x5150

    h = m.create_with_stream(TorchStream())
    assert isinstance(h, m.Handle)
    assert _calls(fx, "miopenCreateWithStream")[0]["stream"] == str(0x5150)
    h.close()
    assert len(_calls(fx, "miopenDestroy")) == 1


# ------------------------------------------------------------------ the library


def test_missing_library_lists_where_it_searched(fx: Built, monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    m = fx.pkg
    monkeypatch.delenv("MIOPEN_LIBRARY", raising=False)
    monkeypatch.setenv("ROCM_PATH", "/nonexistent-rocm")
    m.unload_library()
    with pytest.raises(m.LibraryNotFoundError) as e:
        m.enable_profiling(m.Handle.from_address(1), True)
    msg = str(e.value)
    assert "/nonexistent-rocm/lib/libMIOpen.so.1 (/nonexistent-rocm/lib): no such file" in msg
    assert "/opt/rocm/lib/libMIOpen.so.1" in msg
    assert "libMIOpen.so.1 (loader path)" in msg


def test_missing_symbol_names_the_function_and_release(fx: Built) -> None:
    import ctypes

    m = fx.pkg
    m.unload_library()
    m._support.set_version_policy("off")  # it has no version function either: bind the newest release
    m.load_library(ctypes.CDLL(None))  # the process itself: exports no miopen* functions
    try:
        with pytest.raises(m.MissingSymbolError, match=r"miopenCatForward is not exported by the loaded library .*"
                                                        r"miopenCatForward was added in MIOpen 3.1.0"):
            m.cat_forward(m.Handle.from_address(1), [], [], m.TensorDescriptor.from_address(2), 0x1000, 0)
    finally:
        m._support.set_version_policy("compatible")
        m.unload_library()
        m.load_library(fx.stub)


def test_device_buffer_from_dlpack(fx: Built) -> None:
    import ctypes

    m = fx.pkg

    class DLDevice(ctypes.Structure):
        _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]

    class DLTensor(ctypes.Structure):  # the head of DLManagedTensor (dlpack.h)
        _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                    ("dtype", ctypes.c_uint32), ("shape", ctypes.c_void_p), ("strides", ctypes.c_void_p),
                    ("byte_offset", ctypes.c_uint64)]

    new_capsule = ctypes.pythonapi.PyCapsule_New
    new_capsule.restype = ctypes.py_object
    new_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]

    class DLPackOnly:
        def __init__(self) -> None:
            self.tensor = DLTensor(0xFEED0, DLDevice(10, 0), 1, 0, None, None, 0)  # kDLROCM

        def __dlpack__(self, stream: object = None) -> object:
            return new_capsule(ctypes.addressof(self.tensor), b"dltensor", None)

    fx.stub.miogen_stub_set_out(b"miopenGetTensorDescriptor/dataType", 1)  # the descriptor holds floats
    m.set_tensor(m.Handle.from_address(1), m.TensorDescriptor.from_address(2), DLPackOnly(), 1.0)
    assert _calls(fx, "miopenSetTensor")[0]["y"] == str(0xFEED0)


def test_scripted_stub_outputs_and_statuses(fx: Built) -> None:
    """The stub's scripting hooks that runtime tests rely on."""
    import ctypes

    m, stub = fx.pkg, fx.stub
    stub.miogen_stub_set_out.argtypes = [ctypes.c_char_p, ctypes.c_longlong]
    stub.miogen_stub_set_out_f.argtypes = [ctypes.c_char_p, ctypes.c_double]
    stub.miogen_stub_set_status_once.argtypes = [ctypes.c_char_p, ctypes.c_int]
    stub.miogen_stub_calls.argtypes = [ctypes.c_char_p]
    stub.miogen_stub_calls.restype = ctypes.c_longlong
    stub.miogen_stub_set_out(b"miopenGet4dTensorDescriptor/n", 7)
    stub.miogen_stub_set_out(b"miopenGet4dTensorDescriptor/dataType", 1)
    r = m.get_4d_tensor_descriptor(m.TensorDescriptor.from_address(1))
    assert (r.n, r.data_type, r.c) == (7, m.DataType.miopenFloat, -70005)
    stub.miogen_stub_set_out(b"miopenFindConvolutionForwardAlgorithm/returnedAlgoCount", 1)
    stub.miogen_stub_set_out_f(b"miopenFindConvolutionForwardAlgorithm/perfResults[0].time", 0.125)
    stub.miogen_stub_set_out(b"miopenFindConvolutionForwardAlgorithm/perfResults[0].memory", 4096)
    d = m.TensorDescriptor.from_address(1)
    res = m.find_convolution_forward_algorithm(m.Handle.from_address(2), d, 1, d, 2, m.ConvolutionDescriptor.from_address(3),
                                               d, 3, 8, None, 0, False)
    assert [(p.time, p.memory) for p in res] == [(0.125, 4096)]
    stub.miogen_stub_set_status_once(b"miopenEnableProfiling", 3)
    with pytest.raises(m.MIOpenBadParamError):
        m.enable_profiling(m.Handle.from_address(1), True)
    m.enable_profiling(m.Handle.from_address(1), True)  # only once
    assert stub.miogen_stub_calls(b"miopenEnableProfiling") == 2


# ---------------------------------------------------------------------------- direct calls (raw.DIRECT)


def _f32(value: float) -> str:
    """How the stub logs a C float holding `value` (rounded to float32, printed with %.17g)."""
    import struct

    return "%.17g" % struct.unpack("f", struct.pack("f", value))[0]


def _conv(m: object, alpha: object, beta: object, x: object = 0x1000, ws: object = None) -> None:
    h = m.Handle.from_address(0x10)  # type: ignore[attr-defined]
    d = m.TensorDescriptor.from_address(0x20)  # type: ignore[attr-defined]
    c = m.ConvolutionDescriptor.from_address(0x30)  # type: ignore[attr-defined]
    algo = m.ConvFwdAlgorithm.miopenConvolutionFwdAlgoDirect  # type: ignore[attr-defined]
    m.convolution_forward(h, alpha, d, x, d, 0x2000, c, algo, beta, d, 0x3000, ws, 0)  # type: ignore[attr-defined]


@pytest.mark.parametrize("alpha", [1.0, 0.0, -0.0, -1.0, 0.5, 2.0, 0.1, 3.5, -2.0, 1e-30])
def test_host_scaling_factors_reach_c_exactly(fx: Built, alpha: float) -> None:
    """The common factors come from a table made once; -0.0 (equal to the table's 0.0) keeps its sign."""
    _conv(fx.pkg, alpha, -alpha)
    call = _calls(fx, "miopenConvolutionForward")[0]
    assert (call["alpha"], call["beta"]) == (_f32(alpha), _f32(-alpha))
    assert _f32(-0.0) == "-0"


def test_host_scaling_factors_of_other_types_take_the_checked_path(fx: Built) -> None:
    """Ints equal the table's floats but are not looked up there; a c_float passes its own bytes; inf and
    nan pass as they are; a string, a list and a float32 overflow are refused naming the parameter."""
    import ctypes

    _conv(fx.pkg, 1, 0)
    _conv(fx.pkg, ctypes.c_float(0.5), ctypes.c_float(-0.0))
    a, b = _calls(fx, "miopenConvolutionForward")
    assert (a["alpha"], a["beta"], b["alpha"], b["beta"]) == ("1", "0", "0.5", "-0")
    _conv(fx.pkg, float("inf"), float("nan"))
    c = _calls(fx, "miopenConvolutionForward")[2]
    assert (c["alpha"], c["beta"].lstrip("-")) == ("inf", "nan")
    for bad in ("1.0", 1e39, [1.0]):
        with pytest.raises((TypeError, ValueError, OverflowError), match="alpha"):
            _conv(fx.pkg, bad, 0.0)


def test_device_addresses_keep_64_bits_and_the_cache_stays_bounded(fx: Built) -> None:
    s = fx.pkg._support
    s.DEVICE_ARGS.clear()
    fx.pkg._support.load_library(fx.stub)
    base = 0x7F12_3456_0000
    for k in range(s.DEVICE_ARGS_MAX + 10):
        _conv(fx.pkg, 1.0, 0.0, x=base + 256 * k, ws=None if k % 2 else base - 4096)
        assert len(s.DEVICE_ARGS) <= s.DEVICE_ARGS_MAX
    calls = _calls(fx, "miopenConvolutionForward")
    assert [c["x"] for c in calls] == [str(base + 256 * k) for k in range(s.DEVICE_ARGS_MAX + 10)]
    assert {c["workSpace"] for c in calls} == {"0", str(base - 4096)}
    _conv(fx.pkg, 1.0, 0.0, x=base)  # cached again after the table was emptied: the same value reaches C
    assert _calls(fx, "miopenConvolutionForward")[-1]["x"] == str(base)


@pytest.mark.parametrize("bad", [True, -1, 2**64, 0, None, 1.5])
def test_device_address_fast_path_refuses_what_the_checked_path_refuses(fx: Built, bad: object) -> None:
    fx.pkg._support.DEVICE_ARGS[1] = __import__("ctypes").c_void_p(1)  # True == 1: never served for a bool
    with pytest.raises((TypeError, ValueError), match=r"miopenConvolutionForward: x"):
        _conv(fx.pkg, 1.0, 0.0, x=bad)
    assert _calls(fx, "miopenConvolutionForward") == []


def test_closed_handle_is_refused_before_the_direct_call(fx: Built) -> None:
    m = fx.pkg
    d = m.TensorDescriptor.from_address(0x1230)
    d.close()  # borrowed: marked closed, nothing destroyed
    assert d._cp is None
    with pytest.raises(ValueError, match="tensor_desc is a closed TensorDescriptor"):
        m.set_4d_tensor_descriptor(d, m.DataType.miopenFloat, 1, 1, 1, 1)
    assert _calls(fx, "miopenSet4dTensorDescriptor") == []


def test_direct_bindings_have_no_argtypes_and_the_prototypes_keep_theirs(fx: Built) -> None:
    import importlib

    m = fx.pkg
    m.set_4d_tensor_descriptor(m.TensorDescriptor.from_address(0x10), 1, 1, 1, 1, 1)
    raw = importlib.import_module(f"{m.__name__}.{m._state.bound_modules[0].__name__.split('.')[-2]}.raw")
    direct = raw.DIRECT.miopenSet4dTensorDescriptor
    assert direct.argtypes is None and direct is not raw.miopenSet4dTensorDescriptor
    raw.miopenSet4dTensorDescriptor(0x10, 1, 1, 1, 1, 1)  # binds the prototype
    assert raw.miopenSet4dTensorDescriptor.argtypes == list(raw.PROTOTYPES["miopenSet4dTensorDescriptor"][1])
    m._support.unload_library()  # a new library: both are bound again, lazily
    assert raw.DIRECT.miopenSet4dTensorDescriptor.__name__ == "miopenSet4dTensorDescriptor"
    assert not hasattr(raw.DIRECT.miopenSet4dTensorDescriptor, "argtypes")


def test_a_parameter_without_a_direct_form_uses_the_prototype() -> None:
    """A struct or a char by value has no form ctypes passes unconverted: that function calls `_raw.`."""
    from miogen.base.record import replace

    from miogen.semantics.annotations import load_annotations
    from miogen.semantics.resolve import resolve
    from miogen.spec.model import CType, Function, Param
    from miogen.render.direct import direct_arg
    from ..helpers import planned
    from miogen.render.package import render

    from ..helpers import FIXTURE_ANNOTATIONS, fixture_spec, target

    spec = fixture_spec()
    by_value = Function(name="miopenTakesSolution", returns=spec.functions[0].returns, params=(
        Param(name="solution", c="miopenConvSolution_t", type=CType(kind="struct", name="miopenConvSolution_t")),
        Param(name="tag", c="char", type=CType(kind="char", name="char"))))
    spec = replace(spec, functions=(*spec.functions, by_value))
    ann = load_annotations(FIXTURE_ANNOTATIONS)
    pl = planned(spec, ann, target(), "# test")
    f = next(f for f in pl.functions if f.c_name == "miopenTakesSolution")
    assert f.direct_args is None
    sems = resolve(spec, ann).functions["miopenTakesSolution"].params
    assert [direct_arg(ps, pp.arg, a) for ps, pp, a in zip(sems, f.params, f.argtypes, strict=True)] == [None, None]
    assert all(g.direct_args is not None for g in pl.functions if g is not f)
    files = render(pl)
    text = files[next(k for k in files if k.endswith("/api.py"))]
    body = text[text.index("def takes_solution("):].split("\n\n\n")[0]
    assert "= _raw.miopenTakesSolution(_solution, tag)" in body and "_direct." not in body


def test_handle_subclasses_pass_their_own_address(fx: Built) -> None:
    """A subclass instance (the runtime's cached descriptors) takes the isinstance path; one whose `_cp` is
    not a c_void_p (replaced by a subclass) passes its checked address, never a Python int cut to 32 bits."""
    m = fx.pkg

    class Frozen(m.TensorDescriptor):  # type: ignore[misc,name-defined]
        __slots__ = ()

    class Sneaky(m.TensorDescriptor):  # type: ignore[misc,name-defined]
        __slots__ = ()

        @property
        def _cp(self) -> object:
            return 0x10

        @_cp.setter
        def _cp(self, value: object) -> None:
            pass

    high = 0x7F00_0000_1230
    for cls in (Frozen, Sneaky):
        m.set_4d_tensor_descriptor(cls.from_address(high), m.DataType.miopenFloat, 1, 1, 1, 1)
    assert [c["tensorDesc"] for c in _calls(fx, "miopenSet4dTensorDescriptor")] == [str(high)] * 2
    closed = Frozen.from_address(high)
    closed.close()
    with pytest.raises(ValueError, match="closed"):
        m.set_4d_tensor_descriptor(closed, m.DataType.miopenFloat, 1, 1, 1, 1)
