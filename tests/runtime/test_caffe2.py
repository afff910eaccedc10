"""miopen.caffe2: Caffe2's MIOpen layer by its own names.

The operators, the wrapper and the states are driven through the stub libMIOpen and the stub
libamdhip64 (`libs`): each test asserts the calls MIOpen gets, in order, with their arguments.
Device memory is the stub HIP's (real host memory), so copies and fills are checked byte for
byte. The descriptor-level parts (type wrappers, the descriptor wrapper, RNN layer parameter
offsets and sizes, the param operators on top of them) also run against the real MIOpen 2.17.0
library, in a subprocess, and are checked against layouts computed here in Python.
"""

from __future__ import annotations

import array
import ctypes
import json
import os
import struct
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from miogen.spec.releases import Version

from ..conftest import Libs

HANDLE = 0x5A000
HANDLE_SETUP = {"miopenGetVersion", "miopenCreate", "miopenSetStream", "miopenCreateWithStream"}


@pytest.fixture(autouse=True)
def _fresh(libs: Libs) -> Iterator[None]:
    """No handle, no state, no cached descriptor, an empty log."""
    import gc

    from miopen import descriptors, handles, state, version

    gc.collect()
    version.reset_version_cache()
    version.set_version_policy("compatible")
    handles.handle_pool().close()
    state.miopen_states().close()
    descriptors.clear_descriptor_caches()
    libs.reset()
    libs.set_out("miopenCreate/handle", HANDLE)
    yield
    state.miopen_states().close()
    handles.handle_pool().close()
    descriptors.clear_descriptor_caches()


class Rec:
    """The calls made since it was created (handle and state set-up left out)."""

    def __init__(self, libs: Libs) -> None:
        self.libs = libs
        self.start = len(libs.log())

    def entries(self, fn: str | None = None) -> list[dict[str, str]]:
        return [e for e in self.libs.log()[self.start:] if e[""] not in HANDLE_SETUP and (fn is None or e[""] == fn)]

    def calls(self) -> list[str]:
        return [e[""] for e in self.entries()]

    def one(self, fn: str) -> dict[str, str]:
        got = self.entries(fn)
        assert len(got) == 1, f"{fn} called {len(got)} times: {self.calls()}"
        return got[0]


def g(v: float) -> str:
    return "%.17g" % v


def dev(dims: tuple[int, ...], dtype: str = "float32", fill: int | None = None) -> Any:
    """A DeviceTensor in the stub's (host) memory, optionally filled with one byte value."""
    from miopen import hip
    from miopen.caffe2 import DeviceTensor

    t = DeviceTensor.empty(dims, dtype)
    if fill is not None:
        hip.memset(t.ptr, fill, t.nbytes)
    return t


def read(t: Any) -> bytes:
    from miopen import hip

    out = bytearray(t.nbytes)
    hip.memcpy(out, t.ptr, t.nbytes, hip.MemcpyKind.DEVICE_TO_HOST)
    return bytes(out)


def floats(t: Any) -> list[float]:
    return list(struct.unpack(f"<{t.nbytes // 4}f", read(t)))


def write_floats(t: Any, values: list[float]) -> None:
    from miopen import hip

    data = array.array("f", values)
    assert data.itemsize * len(data) == t.nbytes
    hip.memcpy(t.ptr, data, t.nbytes, hip.MemcpyKind.HOST_TO_DEVICE)


def desc_at(libs: Libs, addr: int, dtype: str, dims: tuple[int, ...], strides: tuple[int, ...] | None = None) -> str:
    from miopen import descriptors

    libs.set_out("miopenCreateTensorDescriptor/tensorDesc", addr)
    assert descriptors.tensor_descriptor(dtype, dims, strides).address == addr
    libs.set_out("miopenCreateTensorDescriptor/tensorDesc", 0x7F0000)
    return str(addr)


def ws() -> Any:
    from miopen.caffe2 import Workspace

    return Workspace(name="test")


# ====================================================================== versions and statuses


def test_versions_and_the_check(libs: Libs) -> None:
    import miopen
    from miopen import caffe2, version
    from miopen.errors import MIOpenVersionError

    assert caffe2.miopen_compiled_version() == version.Version.parse(miopen.MIOPEN_VERSION)
    assert caffe2.miopen_runtime_version() == caffe2.miopen_compiled_version()  # the stub reports the bound release
    assert caffe2.check_miopen_versions() == caffe2.miopen_compiled_version()
    major = caffe2.miopen_compiled_version().major
    miopen.unload_library()  # a library reporting a release with no bindings of its major.minor
    libs.set_out("miopenGetVersion/major", major + 1)
    try:
        with pytest.warns(miopen.MIOpenVersionWarning):
            miopen.load_library(libs.miopen)
        version.reset_version_cache()
        runtime = caffe2.miopen_runtime_version()
        assert runtime is not None and runtime.major == major + 1
        with pytest.raises(MIOpenVersionError, match="strict policy"):
            caffe2.check_miopen_versions("strict")
    finally:
        miopen.unload_library()
        libs.reset()
        miopen.load_library(libs.miopen)
    with pytest.raises(ValueError, match="policy must be"):
        caffe2.check_miopen_versions("loose")  # type: ignore[arg-type]


def test_error_string_asks_the_library_for_any_code(libs: Libs) -> None:
    from miopen import api, caffe2

    rec = Rec(libs)
    assert caffe2.miopen_get_error_string(api.Status.miopenStatusBadParm) == "stub"  # what the stub answers
    assert caffe2.miopen_get_error_string(4242) == "stub"  # a code the bindings do not know still reaches C
    assert [e["error"] for e in rec.entries("miopenGetErrorString")] == ["3", "4242"]
    for bad, exc, match in ((True, TypeError, "status must be"), ("3", TypeError, "status must be"),
                            (-1, ValueError, r"status must be in \[0, 2\*\*32\)"), (1 << 32, ValueError, "status")):
        with pytest.raises(exc, match=match):
            caffe2.miopen_get_error_string(bad)  # type: ignore[arg-type]


def test_error_string_without_a_library(libs: Libs, monkeypatch: pytest.MonkeyPatch) -> None:
    import miopen
    from miopen import caffe2
    from miopen._generated import _support

    miopen.unload_library()
    # nowhere to find a library (whatever this machine or an earlier test left on the loader path)
    monkeypatch.setattr(_support, "_candidates", lambda: [("test", "/nonexistent/libMIOpen.so")])
    try:
        with pytest.raises(_support.LibraryNotFoundError):
            _support.library()
        assert caffe2.miopen_get_error_string(3) == "miopenStatusBadParm"
        assert caffe2.miopen_get_error_string(4242) == "unknown miopenStatus_t value 4242"
    finally:
        monkeypatch.undo()
        miopen.load_library(libs.miopen)


def test_miopen_enforce(libs: Libs) -> None:
    from miopen import api, caffe2
    from miopen.errors import MIOpenBadParamError, MIOpenWarning

    caffe2.MIOPEN_ENFORCE(0)
    caffe2.MIOPEN_ENFORCE(api.Status.miopenStatusSuccess)
    with pytest.raises(MIOpenBadParamError, match="miopenSetFoo") as info:
        caffe2.MIOPEN_ENFORCE(api.Status.miopenStatusBadParm, "miopenSetFoo")
    assert isinstance(info.value, ValueError)
    with pytest.warns(MIOpenWarning):
        caffe2.MIOPEN_ENFORCE(api.Status.miopenStatusGpuOperationsSkipped)
    with pytest.raises(TypeError, match="MIOPEN_ENFORCE: status"):
        caffe2.MIOPEN_ENFORCE(None)  # type: ignore[arg-type]


# ====================================================================== type wrappers


def test_type_wrappers_as_caffe2_defines_them(libs: Libs) -> None:
    from miopen import api, caffe2

    table = [
        (caffe2.miopenTypeWrapperF32, api.DataType.miopenFloat, ctypes.c_float, 4, "float32"),
        (caffe2.miopenTypeWrapperHalf, api.DataType.miopenHalf, ctypes.c_float, 2, "float16"),
        (caffe2.miopenTypeWrapperBFloat16, api.DataType.miopenBFloat16, ctypes.c_float, 2, "bfloat16"),
        (caffe2.miopenTypeWrapperF64, api.DataType.miopenDouble, ctypes.c_double, 8, "float64"),
    ]
    for w, dt, scalar, size, name in table:
        assert w.type is dt
        assert w.ScalingParamType is scalar and w.BNParamType is scalar
        assert w.itemsize() == size and w.dtype_name == name
        one, zero = w.k_one(), w.k_zero()
        assert type(one) is scalar and type(zero) is scalar and (one.value, zero.value) == (1.0, 0.0)
        assert w.k_one() is one and w.kOne() is one and w.kZero() is zero  # process-lifetime, never temporaries
        assert caffe2.miopenTypeWrapper(name) is w
        assert caffe2.miopenTypeWrapper(dt) is w and caffe2.miopenTypeWrapper(int(dt)) is w
    assert caffe2.miopenTypeWrapper("half") is caffe2.miopenTypeWrapperHalf
    assert caffe2.miopenTypeWrapper("torch.float") is caffe2.miopenTypeWrapperF32
    assert caffe2.miopenTypeWrapper("miopenDouble") is caffe2.miopenTypeWrapperF64
    assert caffe2.miopenTypeWrapperF32.k_one() is not caffe2.miopenTypeWrapperF64.k_one()
    with pytest.raises(TypeError, match="miopenTypeWrapper: dtype: no type wrapper for miopenInt32"):
        caffe2.miopenTypeWrapper("int32")
    with pytest.raises(ValueError, match="miopenTypeWrapper: dtype"):
        caffe2.miopenTypeWrapper("float")
    with pytest.raises(TypeError, match="static type wrapper"):
        caffe2.miopenTypeWrapperF32()
    assert libs.calls() == []  # nothing here needs the library


# ====================================================================== miopenTensorDescWrapper


def test_tensor_desc_wrapper_resets_only_on_change(libs: Libs) -> None:
    from miopen.caffe2 import miopenTensorDescWrapper

    libs.set_out("miopenCreateTensorDescriptor/tensorDesc", 0x6D000)
    rec = Rec(libs)
    w = miopenTensorDescWrapper()
    assert rec.calls() == ["miopenCreateTensorDescriptor"]
    desc, changed = w.descriptor("float32", (2, 3, 4, 5))
    assert changed and desc.address == 0x6D000
    s = rec.one("miopenSetTensorDescriptor")
    assert (s["tensorDesc"], s["dataType"], s["nbDims"], s["dimsA"], s["stridesA"]) == (
        str(0x6D000), "1", "4", "[2,3,4,5]", "[60,20,5,1]")
    steps: list[tuple[tuple[Any, ...], bool, str, str, str]] = [
        (("float32", (2, 3, 4, 5)), False, "", "", ""),
        (("float32", [2, 3, 4, 5], (60, 20, 5, 1)), False, "", "", ""),  # the same strides, spelt out
        (("float32", (2, 3, 4, 6)), True, "1", "[2,3,4,6]", "[72,24,6,1]"),  # dims
        (("float16", (2, 3, 4, 6)), True, "0", "[2,3,4,6]", "[72,24,6,1]"),  # type
        (("float16", (2, 3, 4, 6), (72, 1, 18, 3)), True, "0", "[2,3,4,6]", "[72,1,18,3]"),  # strides
        (("float16", (2, 3, 4, 6), (72, 1, 18, 3)), False, "", "", ""),
        (("float64", (7,)), True, "6", "[7]", "[1]"),  # any rank
    ]
    for args, want_changed, dt, dims, strides in steps:
        rec = Rec(libs)
        d, changed = w.Descriptor(*args)
        assert d is desc and changed is want_changed, args
        if changed:
            s = rec.one("miopenSetTensorDescriptor")
            assert (s["dataType"], s["dimsA"], s["stridesA"]) == (dt, dims, strides)
        else:
            assert rec.calls() == []
    assert w.sets == 5 and w.nbytes == 7 * 8
    # Caffe2's Descriptor<T>(order, dims), with the order honoured: NHWC dims are N, H, W, C
    rec = Rec(libs)
    _, changed = w.descriptor_for_order("NHWC", (2, 4, 5, 3), "float32")
    s = rec.one("miopenSetTensorDescriptor")
    assert changed and (s["dimsA"], s["stridesA"]) == ("[2,3,4,5]", "[60,1,15,3]")
    assert (w.dims, w.strides) == ((2, 3, 4, 5), (60, 1, 15, 3))
    assert w.descriptor_for_order("nhwc", (2, 4, 5, 3), "float32") == (desc, False)
    _, changed = w.descriptor_for_order("NCHW", (2, 3, 4, 5), "float32")
    assert changed and w.strides == (60, 20, 5, 1)
    rec = Rec(libs)
    bad: list[tuple[Any, type[BaseException], str]] = [
        (lambda: w.descriptor("float32", ()), ValueError, "dims must be non-empty"),
        (lambda: w.descriptor("float32", (2, 0)), ValueError, "every dim >= 1"),
        (lambda: w.descriptor("float32", (2, 3), (3,)), ValueError, "strides needs one value per dim"),
        (lambda: w.descriptor("float32", (2, 3), (3, 0)), ValueError, "strides must be >= 1"),
        (lambda: w.descriptor("float32", (2, 3.0)), TypeError, r"dims\[1\] must be an int; got float"),
        (lambda: w.descriptor("float32", "23"), TypeError, "dims must be a sequence"),
        (lambda: w.descriptor("int4", (2, 3)), ValueError, "dtype"),
        (lambda: w.descriptor_for_order("NCDHW", (2, 3, 4, 5), "float32"), ValueError, "order must be 'NCHW' or"),
    ]
    for call, exc, match in bad:
        with pytest.raises(exc, match=match):
            call()
    assert rec.calls() == []
    rec = Rec(libs)
    w.close()
    w.close()
    assert rec.one("miopenDestroyTensorDescriptor")["tensorDesc"] == str(0x6D000)
    with pytest.raises(ValueError, match="closed"):
        w.descriptor("float32", (1,))


# ====================================================================== MIOPENWrapper and the states


def test_wrapper_inline_handle(libs: Libs) -> None:
    from miopen import handles
    from miopen.caffe2 import MIOPENWrapper

    w = MIOPENWrapper(1, stream=0x700)
    h = w.inline_miopen_handle()
    assert h.address == HANDLE and w.miopen_handle() is h
    assert handles.inline_miopen_handle(0x700, 1) is h  # the runtime's pooled handle, bound to the stream
    assert [e["streamID"] for e in libs.log("miopenSetStream")] == [str(0x700)]
    assert MIOPENWrapper().device == 0  # the current device
    for bad, exc, match in ((-1, ValueError, "device must be"), (True, ValueError, "device must be"),
                            ("0", ValueError, "device must be")):
        with pytest.raises(exc, match=match):
            MIOPENWrapper(bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="MIOPENWrapper: stream"):
        MIOPENWrapper(0, stream="cuda")


def test_wrapper_with_miopen_state_forks_joins_and_shares_the_states(libs: Libs) -> None:
    from miopen import hip, state
    from miopen.caffe2 import CAFFE2_COMPILE_TIME_MAX_MIOPEN_STATES, MIOPENState, MIOPENWrapper, SyncedMIOPENState

    libs.set_out("miopenCreateWithStream/handle", 0x5B000)
    libs.hip.stub_hip_calls.restype = ctypes.c_long
    counts = {f: libs.hip.stub_hip_calls(f.encode()) for f in ("hipEventRecord", "hipStreamWaitEvent")}
    w = MIOPENWrapper(0, stream=0x700)
    seen: list[MIOPENState] = []
    synced = w.miopen_states()[0][2]
    assert isinstance(synced, SyncedMIOPENState) and synced.mutex is synced.lock

    def fn(st: MIOPENState) -> str:
        seen.append(st)
        assert synced.mutex.locked()  # the lock is held for the whole closure
        assert st.miopen_handle().address == 0x5B000 and st.workspace() is st.state.workspace
        assert isinstance(st.stream(), hip.Stream) and st.device == 0
        return "done"

    assert w.with_miopen_state(2, fn) == "done"
    assert not synced.mutex.locked()
    assert synced.state is seen[0].state
    # fork (record on the caller's stream, the state's stream waits) and join (the other way round)
    assert libs.hip.stub_hip_calls(b"hipEventRecord") - counts["hipEventRecord"] == 2
    assert libs.hip.stub_hip_calls(b"hipStreamWaitEvent") - counts["hipStreamWaitEvent"] == 2
    # the same state the Pythonic API hands out
    with state.with_miopen_state(2, stream=0x700, device=0) as st:
        assert st is seen[0].state
    assert w.with_miopen_state(2, lambda s: s.state) is seen[0].state
    assert libs.calls().count("miopenCreateWithStream") == 1
    assert CAFFE2_COMPILE_TIME_MAX_MIOPEN_STATES == len(w.miopen_states()[0]) == 4
    # the join happens even when fn raises, and the lock is released
    with pytest.raises(RuntimeError, match="boom"):
        w.with_miopen_state(2, lambda s: (_ for _ in ()).throw(RuntimeError("boom")))
    assert not synced.mutex.locked()
    with pytest.raises(ValueError, match="Invalid state_idx 4"):
        w.with_miopen_state(CAFFE2_COMPILE_TIME_MAX_MIOPEN_STATES, fn)
    with pytest.raises(ValueError, match="Invalid state_idx -1"):
        w.miopen_states()[0][-1]
    with pytest.raises(ValueError, match="Invalid device"):
        w.miopen_states()[-1]
    with pytest.raises(TypeError, match="fn must be callable"):
        w.with_miopen_state(0, None)  # type: ignore[arg-type]
    # Caffe2's MIOPENState::execute(stream, f): fork, f(state), join
    before = libs.hip.stub_hip_calls(b"hipEventRecord")
    with synced.mutex:
        assert seen[0].execute(0x700, lambda s: s.miopen_handle().address) == 0x5B000
    assert libs.hip.stub_hip_calls(b"hipEventRecord") - before == 2
    with pytest.raises(TypeError, match="MIOPENState: state must be"):
        MIOPENState(w)  # type: ignore[arg-type]


def test_synced_state_reset_semantics(libs: Libs) -> None:
    from miopen import state
    from miopen.caffe2 import MIOPENWrapper, miopen_states

    w = MIOPENWrapper(0)
    first = w.with_miopen_state(1, lambda s: s.state)
    synced = miopen_states()[0][1]
    rec = Rec(libs)
    synced.reset()  # unique_ptr::reset(): the state goes, the next use makes a new one
    assert synced.state is None and first.closed
    assert "miopenDestroy" in rec.calls()
    second = w.with_miopen_state(1, lambda s: s.state)
    assert second is not first and not second.closed
    # reset(new state): the held one is replaced (and closed)
    third = state.MIOpenState(0)
    synced.reset(third)
    assert second.closed and w.with_miopen_state(1, lambda s: s.state) is third
    with pytest.raises(ValueError, match="MIOpenState of device 0"):
        synced.reset(state.MIOpenState(1))
    with pytest.raises(ValueError, match="MIOpenState of device 0"):
        synced.reset("state")  # type: ignore[arg-type]
    # every state of a device, or of all devices
    other = MIOPENWrapper(1).with_miopen_state(0, lambda s: s.state)
    miopen_states().reset(0)
    assert third.closed and not other.closed
    miopen_states().reset()
    assert other.closed


def test_states_are_serialised_across_threads(libs: Libs) -> None:
    from miopen.caffe2 import MIOPENWrapper

    w = MIOPENWrapper(0)
    inside = 0
    most = 0
    guard = threading.Lock()

    def fn(_: Any) -> None:
        nonlocal inside, most
        with guard:
            inside += 1
            most = max(most, inside)
        for _ in range(1000):
            pass
        with guard:
            inside -= 1

    threads = [threading.Thread(target=lambda: [w.with_miopen_state(3, fn) for _ in range(20)]) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most == 1


# ====================================================================== operators: the base


def test_device_tensor_and_output_reuse(libs: Libs) -> None:
    from miopen import api
    from miopen.caffe2 import DeviceTensor, MIOPENActivationOp, miopenTypeWrapperF32

    x = dev((2, 3), fill=0)
    from miopen.errors import ShapeError

    assert isinstance(x, DeviceTensor) and (x.dims, x.strides, x.dtype) == ((2, 3), (3, 1), api.DataType.miopenFloat)
    assert x.capacity == 24 and x.view((4,)).ptr == x.ptr
    with pytest.raises(ShapeError, match="need 28 bytes"):
        x.view((7,))
    with pytest.raises(ShapeError, match="dims must be ints >= 1"):
        DeviceTensor.empty((0, 3), "float32")
    w = ws()
    w["X"] = x
    op = MIOPENActivationOp("relu", ["X"], ["Y"], ws=w)
    y = op.output(0, (2, 3), miopenTypeWrapperF32)
    assert w["Y"] is y and y.ptr != x.ptr
    assert op.output(0, (2, 3), miopenTypeWrapperF32) is y  # fits: kept
    smaller = op.output(0, (5,), miopenTypeWrapperF32)  # Caffe2 keeps the capacity when shrinking
    assert smaller.ptr == y.ptr and smaller.dims == (5,) and w["Y"] is smaller
    bigger = op.output(0, (4, 4), miopenTypeWrapperF32)
    assert bigger.ptr != y.ptr and w["Y"] is bigger
    w["Y"] = "not a tensor"
    assert op.output(0, (2, 2), miopenTypeWrapperF32).dims == (2, 2)
    assert op.get_single_argument("order", None) == "NCHW" and op.has_argument("alpha")
    assert op.input_size() == 1 and op.output_size() == 1


def test_operator_inputs_outputs_and_workspace_errors(libs: Libs) -> None:
    from miopen.caffe2 import MIOPENActivationGradientOp, MIOPENActivationOp

    with pytest.raises(ValueError, match=r"MIOPENActivationOp: inputs takes 1 blob names; got 2"):
        MIOPENActivationOp("relu", ["X", "Z"], ["Y"])
    with pytest.raises(ValueError, match=r"MIOPENActivationGradientOp: inputs takes 2 to 3 blob names; got 1"):
        MIOPENActivationGradientOp("relu", ["Y"], ["dX"])
    with pytest.raises(TypeError, match="inputs must be a list of blob names"):
        MIOPENActivationOp("relu", "X", ["Y"])
    with pytest.raises(TypeError, match=r"outputs\[0\] must be a non-empty blob name"):
        MIOPENActivationOp("relu", ["X"], [""])
    with pytest.raises(TypeError, match="ws must be a miopen.caffe2.scopes.BlobScope"):
        MIOPENActivationOp("relu", ["X"], ["Y"], ws={})  # type: ignore[arg-type]
    op = MIOPENActivationOp("relu", ["X"], ["Y"])
    with pytest.raises(ValueError, match="no workspace"):
        op.run()
    with pytest.raises(KeyError, match="input 0 names blob 'X', which the workspace does not have"):
        op.run(ws())
    w = ws()
    w["X"] = [1.0, 2.0]
    with pytest.raises(TypeError, match=r"MIOPENActivationOp: input 0 \('X'\) must be a miopen Tensor"):
        op.run(w)
    with pytest.raises(TypeError, match="run: ws must be"):
        op.run(42)  # type: ignore[arg-type]


@pytest.mark.parametrize("dtype, ok", [("float32", True), ("float16", True), ("bfloat16", False),
                                       ("float64", False)])
def test_run_on_device_dispatches_float_and_half(libs: Libs, dtype: str, ok: bool) -> None:
    from miopen.caffe2 import MIOPENActivationOp, TypeWrapper

    seen: list[type[TypeWrapper]] = []

    class Probe(MIOPENActivationOp):
        def do_run_with_type(self, T: type[TypeWrapper]) -> bool:
            seen.append(T)
            return super().do_run_with_type(T)

    w = ws()
    w["X"] = dev((2, 3), dtype)
    op = Probe("relu", ["X"], ["Y"], ws=w)
    if not ok:
        with pytest.raises(TypeError, match=rf"input 0 \('X'\) is miopen\w+; this operator runs on float32, float16"):
            op.run_on_device()
        assert seen == [] and libs.calls() == []
        return
    assert op.run_on_device() is True
    assert [T.dtype_name for T in seen] == [dtype]
    assert w["Y"].dtype == seen[0].type
    s = [e for e in libs.log("miopenSetTensorDescriptor")]
    assert {e["dataType"] for e in s} == {str(int(seen[0].type))}


# ====================================================================== activation operators


def _params_for(name: str) -> dict[str, float]:
    return {"CLAMP": {"alpha": -1.5, "beta": 2.5}, "CLIPPEDRELU": {"alpha": 6.0}}.get(name, {})


def _forget_activation_descriptors() -> None:
    """Only the runtime's cached activation descriptors (the tensor descriptors stay cached)."""
    from miopen import descriptors
    from miopen.ops import activation

    activation._DESCS.clear()
    with descriptors._act_lock:
        descriptors._act_cache.clear()


def test_activation_ops_for_every_mode_of_the_release(libs: Libs) -> None:
    from miopen import api
    from miopen.caffe2 import GRADIENT_FROM_OUTPUT, MIOPENActivationGradientOp, MIOPENActivationOp
    from miopen.ops.activation import activation_params

    dims = (2, 3, 4, 5)
    packed = desc_at(libs, 0x71000, "float32", dims)
    libs.set_out("miopenCreateActivationDescriptor/activDesc", 0x73000)
    modes = list(api.ActivationMode)
    assert len(modes) >= 10
    for mode in modes:
        name = mode.name.removeprefix("miopenActivation")
        kw = _params_for(name)
        a, b, c = activation_params(mode, kw.get("alpha"), kw.get("beta"))
        w = ws()
        x, y0, dy = dev(dims), dev(dims), dev(dims)
        w["X"], w["Y"], w["dY"] = x, y0, dy
        _forget_activation_descriptors()  # each op below makes its (cached) activation descriptor
        rec = Rec(libs)
        fwd = MIOPENActivationOp(mode, ["X"], ["Y"], ws=w, **kw)
        assert fwd.run() is True
        assert w["Y"] is y0  # the blob already held a tensor of the right dims: written in place
        assert [c for c in rec.calls() if "Activation" in c] == [
            "miopenCreateActivationDescriptor", "miopenSetActivationDescriptor", "miopenActivationForward"], name
        s = rec.one("miopenSetActivationDescriptor")
        assert (s["mode"], s["activAlpha"], s["activBeta"], s["activGamma"]) == (str(int(mode)), g(a), g(b), g(c))
        f = rec.one("miopenActivationForward")
        assert (f["handle"], f["activDesc"], f["xDesc"], f["x"], f["yDesc"], f["y"]) == (
            str(HANDLE), str(0x73000), packed, str(x.ptr), packed, str(y0.ptr))
        assert (f["alpha"], f["beta"]) == ("1", "0")  # kOne / kZero
        # the gradient: Y, dY, X -> dX
        rec = Rec(libs)
        MIOPENActivationGradientOp(mode, ["Y", "dY", "X"], ["dX"], ws=w, **kw).run()
        bwd = rec.one("miopenActivationBackward")
        dx = w["dX"]
        assert (bwd["y"], bwd["dy"], bwd["x"], bwd["dx"]) == (str(y0.ptr), str(dy.ptr), str(x.ptr), str(dx.ptr))
        assert (bwd["yDesc"], bwd["dyDesc"], bwd["xDesc"], bwd["dxDesc"]) == (packed,) * 4
        assert bwd["activDesc"] == str(0x73000)
        assert rec.calls() == ["miopenActivationBackward"]  # the forward's descriptor, reused
        # Caffe2's two-input form (Y stands in for X) only where f' can be read from Y
        if name in GRADIENT_FROM_OUTPUT:
            rec = Rec(libs)
            MIOPENActivationGradientOp(mode, ["Y", "dY"], ["dX"], ws=w, **kw).run()
            bwd = rec.one("miopenActivationBackward")
            assert bwd["x"] == bwd["y"] == str(y0.ptr)
        else:
            with pytest.raises(ValueError, match=f"the {name} gradient needs X: pass inputs"):
                MIOPENActivationGradientOp(mode, ["Y", "dY"], ["dX"], **kw)
    assert GRADIENT_FROM_OUTPUT <= {m.name.removeprefix("miopenActivation") for m in modes}


def test_activation_in_place_half_and_elu_alpha(libs: Libs) -> None:
    from miopen.caffe2 import create_operator

    w = ws()
    x = dev((4, 6), "float16")
    w["X"] = x
    rec = Rec(libs)
    create_operator("Elu", ["X"], ["X"], alpha=0.5, engine="MIOPEN").run(w)
    assert w["X"] is x
    s = rec.one("miopenSetActivationDescriptor")
    assert (s["mode"], s["activAlpha"]) == ("9", g(0.5))
    f = rec.one("miopenActivationForward")
    assert f["x"] == f["y"] == str(x.ptr)
    assert (f["alpha"], f["beta"]) == ("1", "0")  # float scaling factors for half too
    t = rec.one("miopenSetTensorDescriptor")
    # not 4-D: described as Caffe2 does, (N, size / N, 1, 1)
    assert (t["dataType"], t["dimsA"], t["stridesA"]) == ("0", "[4,6,1,1]", "[6,1,1,1]")
    rec = Rec(libs)
    create_operator("Elu", ["X"], ["Y"]).run(w)
    assert rec.one("miopenSetActivationDescriptor")["activAlpha"] == g(1.0)  # Caffe2's default alpha


def test_activation_nhwc_order(libs: Libs) -> None:
    from miopen.caffe2 import MIOPENActivationGradientOp, MIOPENActivationOp

    w = ws()
    w["X"] = dev((2, 4, 5, 3))  # N, H, W, C
    rec = Rec(libs)
    MIOPENActivationOp("tanh", ["X"], ["Y"], order="NHWC", ws=w).run()
    assert w["Y"].dims == (2, 4, 5, 3)
    t = rec.entries("miopenSetTensorDescriptor")
    assert {(e["dimsA"], e["stridesA"]) for e in t} == {("[2,3,4,5]", "[60,1,15,3]")}
    w["dY"] = dev((2, 4, 5, 3))
    rec = Rec(libs)
    MIOPENActivationGradientOp("tanh", ["Y", "dY"], ["dX"], order="nhwc", ws=w).run()
    assert rec.one("miopenActivationBackward")["dx"] == str(w["dX"].ptr)
    assert w["dX"].dims == (2, 4, 5, 3)
    # NCHW: the dims are the logical ones
    rec = Rec(libs)
    MIOPENActivationOp("tanh", ["X"], ["Z"], ws=w).run()
    assert {(e["dimsA"], e["stridesA"]) for e in rec.entries("miopenSetTensorDescriptor")} == {
        ("[2,4,5,3]", "[60,15,3,1]")}


def test_activation_gradient_checks_its_inputs(libs: Libs) -> None:
    from miopen.caffe2 import MIOPENActivationGradientOp
    from miopen.errors import ShapeError

    w = ws()
    w["Y"], w["dY"], w["X16"], w["X"] = dev((2, 3)), dev((2, 4)), dev((2, 3), "float16"), dev((2, 3))
    rec = Rec(libs)
    with pytest.raises(ShapeError, match="tensors must have the same dims; got Y=.2, 3., dY=.2, 4."):
        MIOPENActivationGradientOp("relu", ["Y", "dY"], ["dX"], ws=w).run()
    w["dY"] = dev((2, 3))
    with pytest.raises(ShapeError, match=r"input 2 \('X16'\) is miopenHalf, but input 0 is miopenFloat"):
        MIOPENActivationGradientOp("abs", ["Y", "dY", "X16"], ["dX"], ws=w).run()
    assert rec.calls() == []


def test_activation_bad_arguments(libs: Libs) -> None:
    import miopen
    from miopen.caffe2 import MIOPENActivationOp, create_operator

    bad: list[tuple[Any, type[BaseException], str]] = [
        (lambda: MIOPENActivationOp("swish", ["X"], ["Y"]), ValueError, "MIOPENActivationOp: mode='swish'"),
        (lambda: MIOPENActivationOp(42, ["X"], ["Y"]), ValueError, "MIOPENActivationOp: mode=42"),
        (lambda: MIOPENActivationOp("clamp", ["X"], ["Y"]), ValueError,
         "CLAMP needs alpha" if "miopenActivationCLAMP" in miopen.ActivationMode.__members__
         else "'clamp' is not a miopenActivationMode_t"),  # releases before CLAMP
        (lambda: MIOPENActivationOp("elu", ["X"], ["Y"], alpha=True), TypeError, "alpha must be a number"),
        (lambda: MIOPENActivationOp("relu", ["X"], ["Y"], order="CHWN"), ValueError, "order must be 'NCHW' or"),
        (lambda: MIOPENActivationOp("relu", ["X"], ["Y"], device=-2), ValueError, "device must be"),
        (lambda: create_operator("Swish", ["X"], ["Y"]), ValueError, "op_type 'Swish' has no MIOPEN operator"),
        (lambda: create_operator("Relu", ["X"], ["Y"], engine="CUDNN"), ValueError, "engine must be 'MIOPEN'"),
        (lambda: create_operator("Relu", ["X"], ["Y"], hidden_size=3), TypeError, "hidden_size"),
    ]
    for call, exc, match in bad:
        with pytest.raises(exc, match=match):
            call()
    assert libs.calls() == []


def test_registry_names_caffe2_operator_types(libs: Libs) -> None:
    from miopen import api
    from miopen.caffe2 import (OPERATORS, MIOPENActivationGradientOp, MIOPENActivationOp, RecurrentGradientOp,
                               RecurrentOp, RecurrentParamAccessOp, RecurrentParamOpMode, create_operator)

    modes = {"Relu": api.ActivationMode.miopenActivationRELU, "Sigmoid": api.ActivationMode.miopenActivationLOGISTIC,
             "Tanh": api.ActivationMode.miopenActivationTANH, "Elu": api.ActivationMode.miopenActivationELU}
    for name, mode in modes.items():
        fwd = create_operator(name, ["X"], ["Y"])
        bwd = create_operator(name + "Gradient", ["Y", "dY"], ["dX"])
        assert type(fwd) is MIOPENActivationOp and type(bwd) is MIOPENActivationGradientOp
        assert fwd.mode is mode and bwd.mode is mode
    rnn = {"hidden_size": 4, "num_layers": 1}
    assert type(create_operator("Recurrent", ["X", "H", "C", "W"], ["Y", "HY", "CY", "R", "D"], **rnn)) is RecurrentOp
    assert type(create_operator("RecurrentGradient", list("XHCWRYG"), ["dX", "dH", "dC", "dW", "D", "R"],
                                **rnn)) is RecurrentGradientOp
    get = create_operator("RecurrentParamGet", ["X", "W"], ["P"], param_type="cell_w", **rnn)
    put = create_operator("RecurrentParamSet", ["X", "W", "P"], ["W"], param_id=1, **rnn)
    assert isinstance(get, RecurrentParamAccessOp) and get.mode is RecurrentParamOpMode.GET_PARAM
    assert isinstance(put, RecurrentParamAccessOp) and put.mode is RecurrentParamOpMode.SET_PARAM
    assert set(OPERATORS) == {*modes, *(m + "Gradient" for m in modes), "Recurrent", "RecurrentGradient",
                              "RecurrentParamSet", "RecurrentParamGet"}
    assert libs.calls() == []


# ====================================================================== recurrent operators

SEQ, BATCH, INPUT, HIDDEN, LAYERS = 3, 2, 8, 4, 2
WS_BYTES, RS_BYTES = 1024, 4096


def rnn_blobs(libs: Libs, params_bytes: int = 2048, dirs: int = 1, dtype: str = "float32",
              input_size: int = INPUT) -> Any:
    libs.set_out("miopenGetRNNWorkspaceSize/numBytes", WS_BYTES)
    libs.set_out("miopenGetRNNTrainingReserveSize/numBytes", RS_BYTES)
    libs.set_out("miopenGetRNNParamsSize/numBytes", params_bytes)
    w = ws()
    size = 2 if dtype == "float16" else 4
    w["X"] = dev((SEQ, BATCH, input_size), dtype)
    w["HX"] = dev((LAYERS * dirs, BATCH, HIDDEN), dtype)
    w["CX"] = dev((LAYERS * dirs, BATCH, HIDDEN), dtype)
    w["W"] = dev((params_bytes // size,), dtype)
    return w


FWD_OUT = ["Y", "HY", "CY", "RNN_SCRATCH", "DROPOUT_STATES"]
BWD_IN = ["X", "HX", "CX", "W", "RNN_SCRATCH", "Y", "dY"]
BWD_OUT = ["dX", "dHX", "dCX", "dW", "DROPOUT_STATES", "RNN_SCRATCH"]


def test_recurrent_op_training_forward(libs: Libs) -> None:
    from miopen import hip
    from miopen.caffe2 import RecurrentOp
    from miopen.ops.rnn import RNNReserve

    w = rnn_blobs(libs, dirs=2)
    libs.set_out("miopenCreateWithStream/handle", 0x5B000)
    rec = Rec(libs)
    op = RecurrentOp(["X", "HX", "CX", "W"], FWD_OUT, hidden_size=HIDDEN, num_layers=LAYERS, bidirectional=1,
                     rnn_mode="lstm", input_mode="linear", ws=w)
    assert rec.calls() == []  # the RNN descriptor is made on the first run, for X's input size
    assert op.run() is True
    calls = rec.calls()
    assert calls[:2] == ["miopenCreateRNNDescriptor", "miopenSetRNNDescriptor"]
    s = rec.one("miopenSetRNNDescriptor")
    assert (s["hsize"], s["nlayers"], s["inMode"], s["direction"], s["rnnMode"], s["biasMode"], s["dataType"]) == (
        str(HIDDEN), str(LAYERS), "0", "1", "2", "1", "1")
    assert calls.index("miopenGetRNNParamsSize") < calls.index("miopenGetRNNWorkspaceSize") \
        < calls.index("miopenGetRNNTrainingReserveSize") < calls.index("miopenRNNForwardTraining")
    f = rec.one("miopenRNNForwardTraining")
    state = op.miopen_wrapper.miopen_states()[0][0].state
    assert state is not None
    reserve = w["RNN_SCRATCH"]
    assert isinstance(reserve, RNNReserve) and reserve.nbytes == RS_BYTES
    y, hy, cy = w["Y"], w["HY"], w["CY"]
    assert y.dims == (SEQ, BATCH, 2 * HIDDEN) and hy.dims == cy.dims == (2 * LAYERS, BATCH, HIDDEN)
    assert (f["handle"], f["sequenceLen"]) == (str(0x5B000), str(SEQ))  # state 0's handle, not the inline one
    assert (f["x"], f["hx"], f["cx"], f["w"]) == (str(w["X"].ptr), str(w["HX"].ptr), str(w["CX"].ptr), str(w["W"].ptr))
    assert (f["y"], f["hy"], f["cy"]) == (str(y.ptr), str(hy.ptr), str(cy.ptr))
    assert (f["workSpace"], f["workSpaceNumBytes"]) == (str(state.workspace.ptr), str(WS_BYTES))  # state 0's scratch
    assert (f["reserveSpace"], f["reserveSpaceNumBytes"]) == (str(reserve.ptr), str(RS_BYTES))
    assert w["DROPOUT_STATES"] is None
    assert isinstance(hip.as_stream_handle(state.stream), int)
    # the same shapes again: the same RNN descriptor; the outputs are reused, a new reserve is made
    rec = Rec(libs)
    op.run()
    assert "miopenCreateRNNDescriptor" not in rec.calls() and w["Y"] is y and w["RNN_SCRATCH"] is not reserve
    # another input size: a new RNN descriptor (Caffe2's cachedInputDims_)
    w["X"] = dev((SEQ, BATCH, INPUT + 1))
    rec = Rec(libs)
    op.run()
    assert rec.calls()[:2] == ["miopenCreateRNNDescriptor", "miopenSetRNNDescriptor"]


def test_recurrent_op_inference_and_gru_cell_output(libs: Libs) -> None:
    from miopen.caffe2 import RecurrentOp

    w = rnn_blobs(libs)
    w["CY"] = dev((LAYERS, BATCH, HIDDEN), fill=0xFF)
    rec = Rec(libs)
    RecurrentOp(["X", "HX", "CX", "W"], FWD_OUT, hidden_size=HIDDEN, num_layers=LAYERS, rnn_mode="gru",
                is_test=True, ws=w).run()
    assert "miopenRNNForwardTraining" not in rec.calls() and "miopenGetRNNTrainingReserveSize" not in rec.calls()
    f = rec.one("miopenRNNForwardInference")
    assert rec.one("miopenSetRNNDescriptor")["rnnMode"] == "3"
    assert (f["cx"], f["cy"]) == ("0", "0")  # a GRU has no cell state
    assert w["RNN_SCRATCH"] is None
    assert read(w["CY"]) == bytes(w["CY"].nbytes)  # CELL_OUTPUT is zeros, not garbage


def test_recurrent_gradient_op(libs: Libs) -> None:
    from miopen.caffe2 import RecurrentGradientOp, RecurrentOp

    w = rnn_blobs(libs)
    libs.set_out("miopenCreateWithStream/handle", 0x5B000)
    args = {"hidden_size": HIDDEN, "num_layers": LAYERS, "rnn_mode": "lstm"}
    fwd = RecurrentOp(["X", "HX", "CX", "W"], FWD_OUT, ws=w, **args)
    fwd.run()
    reserve = w["RNN_SCRATCH"]
    w["dY"] = dev(w["Y"].dims)
    w["dW"] = dev(w["W"].dims, fill=0xFF)
    rec = Rec(libs)
    bwd = RecurrentGradientOp(BWD_IN, BWD_OUT, ws=w, **args)
    assert bwd.run() is True
    calls = rec.calls()
    assert "miopenCreateRNNDescriptor" not in calls  # backward runs on the RNN that made the reserve
    assert calls.index("miopenRNNBackwardData") < calls.index("miopenRNNBackwardWeights")
    d = rec.one("miopenRNNBackwardData")
    bw = rec.one("miopenRNNBackwardWeights")
    assert read(w["dW"]) == bytes(w["dW"].nbytes)  # zeroed first: MIOpen accumulates into dW
    assert d["handle"] == bw["handle"] == str(0x5B000)
    assert (d["y"], d["dy"], d["w"], d["hx"], d["cx"]) == (
        str(w["Y"].ptr), str(w["dY"].ptr), str(w["W"].ptr), str(w["HX"].ptr), str(w["CX"].ptr))
    assert (d["dhy"], d["dcy"]) == ("0", "0")  # Caffe2 passes no output-state gradients
    assert (d["dx"], d["dhx"], d["dcx"]) == (str(w["dX"].ptr), str(w["dHX"].ptr), str(w["dCX"].ptr))
    assert w["dX"].dims == w["X"].dims and w["dHX"].dims == w["HX"].dims and w["dCX"].dims == w["CX"].dims
    assert (bw["x"], bw["hx"], bw["y"], bw["dw"]) == (str(w["X"].ptr), str(w["HX"].ptr), str(w["Y"].ptr),
                                                      str(w["dW"].ptr))
    # the reserve and the workspace backward data leaves for backward weights travel together
    assert d["reserveSpace"] == bw["reserveSpace"] == str(reserve.ptr)
    assert d["workSpace"] == bw["workSpace"] and d["workSpaceNumBytes"] == bw["workSpaceNumBytes"] == str(WS_BYTES)
    assert w["RNN_SCRATCH"] is reserve and w["DROPOUT_STATES"] is None
    # the output-state gradients, when given (9 inputs)
    w["dHY"], w["dCY"] = dev(w["HY"].dims), dev(w["CY"].dims)
    rec = Rec(libs)
    RecurrentGradientOp([*BWD_IN, "dHY", "dCY"], BWD_OUT, ws=w, **args).run()
    d = rec.one("miopenRNNBackwardData")
    assert (d["dhy"], d["dcy"]) == (str(w["dHY"].ptr), str(w["dCY"].ptr))


def test_recurrent_gradient_needs_its_forward_reserve(libs: Libs) -> None:
    from miopen.caffe2 import RecurrentGradientOp, RecurrentOp
    from miopen.ops.rnn import ReserveMismatchError

    w = rnn_blobs(libs)
    w["dY"] = dev((SEQ, BATCH, HIDDEN))
    w["RNN_SCRATCH"] = dev((RS_BYTES // 4,))
    args: dict[str, Any] = {"hidden_size": HIDDEN, "num_layers": LAYERS}
    rec = Rec(libs)
    with pytest.raises(ReserveMismatchError, match=r"input 4 \('RNN_SCRATCH'\) must hold the RNNReserve"):
        RecurrentGradientOp(BWD_IN, BWD_OUT, ws=w, **args).run()
    RecurrentOp(["X", "HX", "CX", "W"], FWD_OUT, ws=w, **args).run()
    rec = Rec(libs)
    with pytest.raises(ReserveMismatchError, match=r"hidden_size=5 \(the reserve's RNN has 4\)"):
        RecurrentGradientOp(BWD_IN, BWD_OUT, ws=w, hidden_size=5, num_layers=LAYERS).run()
    with pytest.raises(ReserveMismatchError, match=r"rnn_mode='miopenGRU' \(the reserve's RNN has 'miopenLSTM'\)"):
        RecurrentGradientOp(BWD_IN, BWD_OUT, ws=w, rnn_mode="gru", **args).run()
    w["X"] = dev((SEQ, BATCH, INPUT + 2))
    with pytest.raises(ReserveMismatchError, match=r"input size 10 \(the reserve's RNN has 8\)"):
        RecurrentGradientOp(BWD_IN, BWD_OUT, ws=w, **args).run()
    assert "miopenRNNBackwardData" not in rec.calls()


def test_recurrent_dropout_states(libs: Libs) -> None:
    from miopen.caffe2 import RecurrentGradientOp, RecurrentOp
    from miopen.workspace import PersistentBuffer

    libs.set_out("miopenDropoutGetStatesSize/stateSizeInBytes", 256)
    w = rnn_blobs(libs)
    rec = Rec(libs)
    fwd = RecurrentOp(["X", "HX", "CX", "W"], FWD_OUT, hidden_size=HIDDEN, num_layers=LAYERS, dropout=0.25, seed=7,
                      ws=w)
    fwd.run()
    d = rec.one("miopenSetDropoutDescriptor")
    assert (d["dropout"], d["seed"], d["stateSizeInBytes"]) == ("0.25", "7", "256")
    assert "miopenSetRNNDescriptor_V2" in rec.calls()
    states = w["DROPOUT_STATES"]
    assert isinstance(states, PersistentBuffer) and states.nbytes == 256 and d["states"] == str(states.ptr)
    w["dY"] = dev(w["Y"].dims)
    RecurrentGradientOp(BWD_IN, BWD_OUT, hidden_size=HIDDEN, num_layers=LAYERS, ws=w).run()
    assert w["DROPOUT_STATES"] is states


def test_recurrent_op_checks(libs: Libs) -> None:
    from miopen.caffe2 import RecurrentOp
    from miopen.errors import ShapeError

    ins = ["X", "HX", "CX", "W"]
    bad: list[tuple[dict[str, Any], type[BaseException], str]] = [
        ({"hidden_size": 0}, ValueError, "RecurrentOp: hidden_size must be an int > 0; got 0"),
        ({"num_layers": 1.5}, ValueError, "num_layers must be an int > 0"),
        ({"bidirectional": 2}, ValueError, "bidirectional must be a bool or 0/1; got 2"),
        ({"rnn_mode": "rnn"}, ValueError, "rnn_mode must be one of 'lstm', 'gru', 'relu', 'tanh'; got 'rnn'"),
        ({"input_mode": "auto"}, ValueError, "input_mode must be one of 'linear', 'skip'"),
        ({"dropout": 1.0}, ValueError, r"dropout must be a probability in \[0, 1\)"),
        ({"seed": -1}, ValueError, "seed must be an int >= 0"),
        ({"is_test": "yes"}, ValueError, "is_test must be a bool or 0/1"),
    ]
    for kw, exc, match in bad:
        args: dict[str, Any] = {"hidden_size": HIDDEN, "num_layers": LAYERS}
        args.update(kw)
        with pytest.raises(exc, match=match):
            RecurrentOp(ins, FWD_OUT, **args)
    with pytest.raises(ValueError, match="outputs takes 5 blob names; got 3"):
        RecurrentOp(ins, FWD_OUT[:3], hidden_size=HIDDEN, num_layers=LAYERS)
    w = rnn_blobs(libs)
    op = RecurrentOp(ins, FWD_OUT, hidden_size=HIDDEN, num_layers=LAYERS, ws=w)
    rec = Rec(libs)
    w["X"] = dev((SEQ * BATCH, INPUT))
    with pytest.raises(ShapeError, match=r"input 0 \('X'\) must be 3-D \(seq_len, batch, input_size\)"):
        op.run()
    w["X"] = dev((SEQ, BATCH, INPUT))
    w["W"] = dev((100,))
    with pytest.raises(ShapeError, match="w holds 400 bytes but this RNN's packed weights take 2048 bytes"):
        op.run()
    assert "miopenRNNForwardTraining" not in rec.calls()
    w["W"] = dev((512,), "float16")
    with pytest.raises(ShapeError, match="w is float16|w is miopenHalf"):
        op.run()


# ---------------------------------------------------------------------- RecurrentParamAccessOp


def test_param_types_map_to_miopen_ids(libs: Libs) -> None:
    from miopen.caffe2 import GET_PARAM, PARAM_TYPES, RecurrentParamAccessOp

    def pid(mode: str, param_type: str, input_type: str = "input") -> tuple[int, bool]:
        op = RecurrentParamAccessOp(GET_PARAM, ["X", "W"], ["P"], hidden_size=4, num_layers=1, rnn_mode=mode,
                                    param_type=param_type, input_type=input_type)
        return op.param_id, op.bias

    # Caffe2's LSTM table (recurrent_op_miopen.hip): input 0, forget 1, output 2, cell 3; +4 for recurrent
    assert [pid("lstm", t) for t in ("input_gate_w", "forget_gate_w", "output_gate_w", "cell_w")] == [
        (0, False), (1, False), (2, False), (3, False)]
    assert pid("lstm", "forget_gate_w", "recurrent") == (5, False)
    assert pid("lstm", "cell_b", "recurrent") == (7, True)
    assert pid("gru", "reset_gate_b", "recurrent") == (4, True)
    assert pid("relu", "w", "recurrent") == (1, False)
    assert set(PARAM_TYPES) == {"lstm", "gru", "relu", "tanh"}
    assert libs.calls() == []


def test_param_access_op_arguments(libs: Libs) -> None:
    from miopen.caffe2 import GET_PARAM, SET_PARAM, RecurrentParamAccessOp

    base: dict[str, Any] = {"hidden_size": 4, "num_layers": 2}
    bad: list[tuple[Any, list[str], list[str], dict[str, Any], str]] = [
        (GET_PARAM, ["X", "W"], ["P"], {}, "give either param_type .* or param_id .*, not neither"),
        (GET_PARAM, ["X", "W"], ["P"], {"param_type": "cell_w", "param_id": 3}, "not both"),
        (GET_PARAM, ["X", "W"], ["P"], {"param_type": "update_gate_w"}, "'update_gate_w' is not a lstm parameter"),
        (GET_PARAM, ["X", "W"], ["P"], {"param_type": "cell_w", "input_type": "hidden"},
         "input_type must be 'input' or 'recurrent'"),
        (GET_PARAM, ["X", "W"], ["P"], {"param_id": 8}, r"param_id must be an int in \[0, 8\) for lstm; got 8"),
        (GET_PARAM, ["X", "W"], ["P"], {"param_id": 1, "bias": 1}, "bias must be a bool"),
        (GET_PARAM, ["X", "W"], ["P"], {"param_id": 1, "layer": 2}, "layer must be below num_layers"),
        (GET_PARAM, ["X", "W"], ["P"], {"param_id": 1, "layer": -1}, "layer must be an int >= 0"),
        (GET_PARAM, ["X", "W", "P"], ["P"], {"param_id": 1}, "GET_PARAM takes 2 inputs"),
        (SET_PARAM, ["X", "W"], ["W"], {"param_id": 1}, "SET_PARAM takes 3 inputs"),
        (SET_PARAM, ["X", "W", "P"], ["W2"], {"param_id": 1}, r"writes the weights in place: outputs\[0\] must be"),
        ("PEEK", ["X", "W"], ["P"], {"param_id": 1}, "mode must be RecurrentParamOpMode"),
    ]
    for mode, ins, outs, kw, match in bad:
        with pytest.raises(ValueError, match=match):
            RecurrentParamAccessOp(mode, ins, outs, **base, **kw)
    op = RecurrentParamAccessOp("SET_PARAM", ["X", "W", "P"], ["W"], param_id=7, bias=True, **base)
    assert op.mode is SET_PARAM and (op.param_id, op.bias, op.layer) == (7, True, 0)
    assert libs.calls() == []


def test_param_get_and_set_by_offset_and_size(libs: Libs) -> None:
    from miopen.caffe2 import GET_PARAM, SET_PARAM, RecurrentParamAccessOp

    n = 512
    w = rnn_blobs(libs, params_bytes=n * 4)
    write_floats(w["W"], [float(i) for i in range(n)])
    # MIOpen's answers for layer 1, param 6 (scripted): 40 elements at element 100, described as (5, 8)
    libs.set_out("miopenGetRNNLayerParamOffset/layerParamOffset", 100)
    libs.set_out("miopenGetRNNLayerParamSize/numBytes", 40 * 4)
    libs.set_out("miopenGetTensorDescriptorSize/size", 2)
    libs.set_out("miopenGetTensorDescriptor/dimsA[0]", 5)
    libs.set_out("miopenGetTensorDescriptor/dimsA[1]", 8)
    libs.set_out("miopenCreateTensorDescriptor/tensorDesc", 0x6E000)
    rec = Rec(libs)
    get = RecurrentParamAccessOp(GET_PARAM, ["X", "W"], ["P"], hidden_size=HIDDEN, num_layers=LAYERS, layer=1,
                                 param_type="output_gate_w", input_type="recurrent", ws=w)
    assert get.run() is True
    calls = rec.calls()
    assert calls.index("miopenGetRNNParamsSize") < calls.index("miopenGetRNNLayerParamOffset")
    off = rec.one("miopenGetRNNLayerParamOffset")
    size = rec.one("miopenGetRNNLayerParamSize")
    assert (off["layer"], off["paramID"], off["paramDesc"]) == ("1", "6", str(0x6E000))
    assert (size["layer"], size["paramID"]) == ("1", "6")
    assert rec.one("miopenGetTensorDescriptor")["tensorDesc"] == str(0x6E000)  # how MIOpen describes it
    assert "miopenGetRNNLayerParam" not in calls and "miopenSetRNNLayerParam" not in calls
    p = w["P"]
    assert p.dims == (5, 8)
    assert floats(p) == [float(i) for i in range(100, 140)]
    # SET_PARAM: the data lands at that offset, the rest of the weights is untouched
    w["NEW"] = dev((5, 8))
    write_floats(w["NEW"], [-1.0 - i for i in range(40)])
    weights = w["W"]
    RecurrentParamAccessOp(SET_PARAM, ["X", "W", "NEW"], ["W"], hidden_size=HIDDEN, num_layers=LAYERS, layer=1,
                           param_id=6, ws=w).run()
    assert w["W"] is weights
    got = floats(weights)
    assert got[100:140] == [-1.0 - i for i in range(40)]
    assert got[:100] == [float(i) for i in range(100)] and got[140:] == [float(i) for i in range(140, n)]
    # a bias: MIOpen's bias offset and size calls
    libs.set_out("miopenGetRNNLayerBiasOffset/layerBiasOffset", 500)
    libs.set_out("miopenGetRNNLayerBiasSize/numBytes", 12 * 4)
    libs.set_out("miopenGetTensorDescriptorSize/size", 1)
    libs.set_out("miopenGetTensorDescriptor/dimsA[0]", 12)
    rec = Rec(libs)
    RecurrentParamAccessOp(GET_PARAM, ["X", "W"], ["B"], hidden_size=HIDDEN, num_layers=LAYERS,
                           param_type="forget_gate_b", ws=w).run()
    b = rec.one("miopenGetRNNLayerBiasOffset")
    assert (b["layer"], b["biasID"]) == ("0", "1")
    assert rec.one("miopenGetRNNLayerBiasSize")["biasID"] == "1"
    assert floats(w["B"]) == [float(i) for i in range(500, 512)]


def test_param_access_checks(libs: Libs) -> None:
    from miopen.caffe2 import GET_PARAM, SET_PARAM, RecurrentParamAccessOp
    from miopen.errors import ShapeError

    w = rnn_blobs(libs, params_bytes=2048)
    libs.set_out("miopenGetRNNLayerParamOffset/layerParamOffset", 500)
    libs.set_out("miopenGetRNNLayerParamSize/numBytes", 16 * 4)
    libs.set_out("miopenGetTensorDescriptorSize/size", 2)
    libs.set_out("miopenGetTensorDescriptor/dimsA[0]", 4)
    libs.set_out("miopenGetTensorDescriptor/dimsA[1]", 4)
    args: dict[str, Any] = {"hidden_size": HIDDEN, "num_layers": LAYERS, "param_id": 0, "ws": w}
    w["W"] = dev((100,))
    with pytest.raises(ShapeError, match=r"input 1 \('W'\) must be the packed weights, 2048 bytes \(512 float32\)"):
        RecurrentParamAccessOp(GET_PARAM, ["X", "W"], ["P"], **args).run()
    w["W"] = dev((512,))
    with pytest.raises(RuntimeError, match="places layer 0 param 0 at element 500, past the weights"):
        RecurrentParamAccessOp(GET_PARAM, ["X", "W"], ["P"], **args).run()
    libs.set_out("miopenGetRNNLayerParamOffset/layerParamOffset", 0)
    w["P"] = dev((15,))
    with pytest.raises(ShapeError, match=r"input 2 \('P'\) must hold layer 0 param 0 packed: 16 float32 \(dims"):
        RecurrentParamAccessOp(SET_PARAM, ["X", "W", "P"], ["W"], **args).run()
    libs.set_out("miopenGetTensorDescriptor/dimsA[1]", 5)
    with pytest.raises(RuntimeError, match=r"describes layer 0 param 0 as dims \(4, 5\) but sizes it 64 bytes"):
        RecurrentParamAccessOp(GET_PARAM, ["X", "W"], ["P"], **args).run()
    # skip input mode: the first layer has no input matrices (the runtime says so)
    w["X"] = dev((SEQ, BATCH, HIDDEN))
    with pytest.raises(ValueError, match="skip input mode"):
        RecurrentParamAccessOp(GET_PARAM, ["X", "W"], ["P"], input_mode="skip", **args).run()


def test_rnn_layer_offset_fills_the_callers_descriptor(libs: Libs) -> None:
    from miopen import api
    from miopen.descriptors import tensor_descriptor
    from miopen.ops.rnn import RNN

    rnn = RNN(8, 4, 1)
    libs.set_out("miopenCreateTensorDescriptor/tensorDesc", 0x6F000)
    mine = api.create_tensor_descriptor()
    rec = Rec(libs)
    rnn.layer_param_offset(0, 1, param_desc=mine)
    rnn.layer_bias_offset(0, 2, bias_desc=mine)
    assert rec.one("miopenGetRNNLayerParamOffset")["paramDesc"] == str(0x6F000)
    assert rec.one("miopenGetRNNLayerBiasOffset")["biasDesc"] == str(0x6F000)
    assert "miopenDestroyTensorDescriptor" not in rec.calls()  # the caller's, not destroyed
    with pytest.raises(TypeError, match="param_desc must be a TensorDescriptor"):
        rnn.layer_param_offset(0, 1, param_desc=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="bias_desc must be a descriptor of your own"):
        rnn.layer_bias_offset(0, 1, bias_desc=tensor_descriptor("float32", (2,)))


# ====================================================================== the real MIOpen 2.17.0 library

_REAL_SCRIPT = r"""
import array, json, math, sys
import miopen
from miopen import api, hip
lib, hip_path = sys.argv[1], sys.argv[2]
miopen.load_library(lib)
hip.set_hip_library(hip_path)      # the stub HIP: host memory, so the param operators can copy for real
from miopen import caffe2
from miopen.layout import packed_strides

out = {}
v = caffe2.miopen_runtime_version()
out["version"] = list(v) if v else None
out["errors"] = {str(int(s)): caffe2.miopen_get_error_string(s) for s in api.Status}
out["unknown_error"] = caffe2.miopen_get_error_string(1000)

wrappers = {}
w = caffe2.miopenTensorDescWrapper()
for T in (caffe2.miopenTypeWrapperF32, caffe2.miopenTypeWrapperHalf, caffe2.miopenTypeWrapperBFloat16,
          caffe2.miopenTypeWrapperF64):
    desc, changed = w.descriptor(T.type, (2, 3, 4, 5))
    got = api.get_tensor_descriptor(desc)
    wrappers[T.dtype_name] = {
        "type": int(T.type), "changed": changed, "got_type": int(got.data_type), "dims": list(got.dims_a),
        "strides": list(got.strides_a), "num_bytes": api.get_tensor_num_bytes(desc),
        "scaling": T.ScalingParamType.__name__, "bn": T.BNParamType.__name__,
        "one": [type(T.k_one()).__name__, T.k_one().value], "zero": [type(T.k_zero()).__name__, T.k_zero().value]}
out["wrappers"] = wrappers
steps = []
for args in [("float32", (2, 3, 4, 5)), ("float32", (2, 3, 4, 5)), ("float32", (8, 3, 4, 5)),
             ("float32", (8, 3, 4, 5), (60, 1, 15, 3)), ("float16", (8, 3, 4, 5), (60, 1, 15, 3)),
             ("float16", (8, 3, 4, 5), (60, 1, 15, 3)), ("float32", (6, 7))]:
    desc, changed = w.descriptor(*args)
    got = api.get_tensor_descriptor(desc)
    steps.append([changed, int(got.data_type), list(got.dims_a), list(got.strides_a), api.get_tensor_num_bytes(desc),
                  w.nbytes])
desc, changed = w.descriptor_for_order("NHWC", (2, 4, 5, 3), "float32")
got = api.get_tensor_descriptor(desc)
steps.append([changed, int(got.data_type), list(got.dims_a), list(got.strides_a), api.get_tensor_num_bytes(desc),
              w.nbytes])
out["steps"] = steps
w.close()

rnns = []
for cfg in json.loads(sys.argv[3]):
    ws = caffe2.Workspace()
    ws["X"] = caffe2.DeviceTensor.empty((3, 2, cfg["input"]), "float32", device=0)
    op = caffe2.RecurrentParamAccessOp(caffe2.GET_PARAM, ["X", "W"], ["P"], hidden_size=cfg["hidden"],
                                       num_layers=cfg["layers"], bidirectional=cfg["bi"], rnn_mode=cfg["mode"],
                                       input_mode=cfg["input_mode"], param_id=0, device=0, ws=ws)
    rnn = op.initialize(ws["X"], caffe2.miopenTypeWrapperF32)
    handle = op.miopen_wrapper.inline_miopen_handle()
    entry = {"params_size": rnn.params_size(handle=handle), "layout": []}
    for lid in range(rnn.num_layer_ids):
        for pid in range(rnn.params_per_layer):
            for bias in (False, True):
                op.layer, op.param_id, op.bias = lid, pid, bias
                if (not bias and cfg["input_mode"] == "skip" and lid < (2 if cfg["bi"] else 1)
                        and pid < rnn.params_per_layer // 2):
                    continue
                entry["layout"].append([lid, pid, bias, *op.locate(rnn, handle)])
    # GET and SET through the operators, on weights holding 0, 1, 2, ...
    n = entry["params_size"] // 4
    ws["W"] = caffe2.DeviceTensor.empty((n,), "float32", device=0)
    hip.memcpy(ws["W"].ptr, array.array("f", range(n)), n * 4, hip.MemcpyKind.HOST_TO_DEVICE)
    gets = []
    for lid, pid, bias, *_ in entry["layout"][::7]:
        kw = dict(hidden_size=cfg["hidden"], num_layers=cfg["layers"], bidirectional=cfg["bi"],
                  rnn_mode=cfg["mode"], input_mode=cfg["input_mode"], layer=lid, param_id=pid, bias=bias,
                  device=0, ws=ws)
        caffe2.RecurrentParamAccessOp(caffe2.GET_PARAM, ["X", "W"], ["P"], **kw).run()
        p = ws["P"]
        host = array.array("f", bytes(p.nbytes))
        hip.memcpy(host, p.ptr, p.nbytes, hip.MemcpyKind.DEVICE_TO_HOST)
        ws["NEW"] = caffe2.DeviceTensor.empty(p.dims, "float32", device=0)
        hip.memcpy(ws["NEW"].ptr, array.array("f", [-1.0] * len(host)), p.nbytes, hip.MemcpyKind.HOST_TO_DEVICE)
        caffe2.RecurrentParamAccessOp(caffe2.SET_PARAM, ["X", "W", "NEW"], ["W"], **kw).run()
        gets.append([lid, pid, bias, list(p.dims), host[0], host[-1]])
    after = array.array("f", bytes(n * 4))
    hip.memcpy(after, ws["W"].ptr, n * 4, hip.MemcpyKind.DEVICE_TO_HOST)
    entry["gets"] = gets
    entry["set_elements"] = [i for i, v in enumerate(after) if v == -1.0]
    rnns.append(entry)
out["rnns"] = rnns
print(json.dumps(out))
"""

RNN_CONFIGS = [
    {"mode": "lstm", "input": 16, "hidden": 32, "layers": 2, "bi": False, "input_mode": "linear"},
    {"mode": "lstm", "input": 16, "hidden": 32, "layers": 2, "bi": True, "input_mode": "linear"},
    {"mode": "gru", "input": 10, "hidden": 6, "layers": 3, "bi": True, "input_mode": "linear"},
    {"mode": "relu", "input": 5, "hidden": 7, "layers": 2, "bi": False, "input_mode": "linear"},
    {"mode": "tanh", "input": 3, "hidden": 4, "layers": 1, "bi": True, "input_mode": "linear"},
    {"mode": "lstm", "input": 12, "hidden": 12, "layers": 2, "bi": True, "input_mode": "skip"},
]
GATES = {"lstm": 4, "gru": 3, "relu": 1, "tanh": 1}


def expected_layout(cfg: dict[str, Any]) -> tuple[dict[tuple[int, int, bool], tuple[int, int, tuple[int, ...]]], int]:
    """MIOpen's packed RNN weights, computed here: for each layer, the input matrices of every
    direction (gate by gate), then the recurrent ones; after all matrices, the biases in the same
    order. Input matrices are (hidden, input_size) on the first layer (absent in skip mode),
    (hidden, hidden * directions) above; recurrent ones (hidden, hidden); biases (hidden,)."""
    g, hsz, dirs = GATES[cfg["mode"]], cfg["hidden"], 2 if cfg["bi"] else 1
    out: dict[tuple[int, int, bool], tuple[int, int, tuple[int, ...]]] = {}
    at = 0
    for layer in range(cfg["layers"]):
        in_dim = cfg["input"] if layer == 0 else hsz * dirs
        skip = cfg["input_mode"] == "skip" and layer == 0
        for part, cols in (("input", in_dim), ("recurrent", hsz)):
            if part == "input" and skip:
                continue
            for d in range(dirs):
                for gate in range(g):
                    pid = gate + (g if part == "recurrent" else 0)
                    out[(layer * dirs + d, pid, False)] = (at, hsz * cols * 4, (hsz, cols))
                    at += hsz * cols
    for layer in range(cfg["layers"]):
        for part in ("input", "recurrent"):
            for d in range(dirs):
                for gate in range(g):
                    pid = gate + (g if part == "recurrent" else 0)
                    out[(layer * dirs + d, pid, True)] = (at, hsz * 4, (hsz,))
                    at += hsz
    return out, at * 4


def _header_version() -> Version | None:
    """The release the version.h shipped with the real library declares (read as miogen reads it)."""
    from miogen.parse.version_header import detect_version

    from ..helpers import target
    from ..real_miopen import headers_dir

    inc = headers_dir()
    return detect_version(inc / "miopen" / "miopen.h", target()) if inc else None


@pytest.fixture(scope="module")
def real(runtime_libs: Libs) -> dict[str, Any]:
    from ..real_miopen import library_path

    path = library_path()
    env = dict(os.environ, MIOPEN_LOG_LEVEL="1")  # the real library binds its own 2.17.0 layer
    env.pop("MIOPEN_LIBRARY", None)
    res = subprocess.run([sys.executable, "-c", _REAL_SCRIPT, str(path), str(runtime_libs.hip._name),
                          json.dumps(RNN_CONFIGS)], capture_output=True, text=True, env=env, timeout=300,
                         check=False)
    assert res.returncode == 0, f"the real-library script failed:\n{res.stderr[-4000:]}"
    out: dict[str, Any] = json.loads(res.stdout.strip().splitlines()[-1])
    return out


@pytest.mark.real_library
def test_real_version_and_status_strings(real: dict[str, Any]) -> None:
    from miogen.spec.spec_io import load

    from ..helpers import SPECS

    want = _header_version()
    assert real["version"] is not None
    if want is not None:
        assert tuple(real["version"]) == want
    # MIOpen's own text for a status is the name of its enum constant (as the release's spec has them)
    spec = load(SPECS / f"{Version(*real['version'])}.yaml")
    status = next(e for e in spec.enums if e.name == "miopenStatus_t")
    names = {str(c.value): c.name for c in status.constants}
    assert len(names) >= 10
    for code, name in names.items():
        assert real["errors"][code] == name, code
    assert real["unknown_error"] not in names.values()


@pytest.mark.real_library
def test_real_type_wrappers(real: dict[str, Any]) -> None:
    from miopen import api

    want = {"float32": ("miopenFloat", 4, "c_float"), "float16": ("miopenHalf", 2, "c_float"),
            "bfloat16": ("miopenBFloat16", 2, "c_float"), "float64": ("miopenDouble", 8, "c_double")}
    assert set(real["wrappers"]) == set(want)
    for name, (member, size, scalar) in want.items():
        got = real["wrappers"][name]
        assert got["type"] == int(api.DataType[member]) == got["got_type"]
        assert got["dims"] == [2, 3, 4, 5] and got["strides"] == [60, 20, 5, 1]
        assert got["num_bytes"] == 2 * 3 * 4 * 5 * size
        assert got["scaling"] == got["bn"] == scalar
        assert got["one"] == [scalar, 1.0] and got["zero"] == [scalar, 0.0]
    assert [real["wrappers"][n]["changed"] for n in want] == [True] * 4


@pytest.mark.real_library
def test_real_tensor_desc_wrapper(real: dict[str, Any]) -> None:
    f32, f16 = 1, 0
    want = [
        (True, f32, [2, 3, 4, 5], [60, 20, 5, 1], 120 * 4),
        (False, f32, [2, 3, 4, 5], [60, 20, 5, 1], 120 * 4),
        (True, f32, [8, 3, 4, 5], [60, 20, 5, 1], 480 * 4),
        (True, f32, [8, 3, 4, 5], [60, 1, 15, 3], 480 * 4),
        (True, f16, [8, 3, 4, 5], [60, 1, 15, 3], 480 * 2),
        (False, f16, [8, 3, 4, 5], [60, 1, 15, 3], 480 * 2),
        (True, f32, [6, 7], [7, 1], 42 * 4),
        (True, f32, [2, 3, 4, 5], [60, 1, 15, 3], 120 * 4),  # NHWC (2, 4, 5, 3)
    ]
    assert len(real["steps"]) == len(want)
    for (changed, dt, dims, strides, nbytes, ours), w in zip(real["steps"], want, strict=True):
        assert (changed, dt, dims, strides, nbytes) == w
        assert ours == nbytes  # the wrapper's own byte count agrees with MIOpen's


@pytest.mark.real_library
@pytest.mark.parametrize("index", range(len(RNN_CONFIGS)))
def test_real_rnn_layer_offsets_and_sizes(real: dict[str, Any], index: int) -> None:
    cfg = RNN_CONFIGS[index]
    got = real["rnns"][index]
    layout, total = expected_layout(cfg)
    assert got["params_size"] == total
    seen = {(lid, pid, bias): (off, nbytes, tuple(dims)) for lid, pid, bias, off, nbytes, dims in got["layout"]}
    assert seen == layout
    assert sum(nbytes for _, nbytes, _ in layout.values()) == total


@pytest.mark.real_library
@pytest.mark.parametrize("index", range(len(RNN_CONFIGS)))
def test_real_param_get_and_set_operators(real: dict[str, Any], index: int) -> None:
    layout, total = expected_layout(RNN_CONFIGS[index])
    got = real["rnns"][index]
    assert got["gets"]
    written: set[int] = set()
    for lid, pid, bias, dims, first, last in got["gets"]:
        off, nbytes, want_dims = layout[(lid, pid, bias)]
        assert tuple(dims) == want_dims
        # the weights held 0, 1, 2, ...: the copy starts and ends where the layout says
        assert (first, last) == (float(off), float(off + nbytes // 4 - 1))
        written.update(range(off, off + nbytes // 4))
    assert set(got["set_elements"]) == written  # SET_PARAM wrote exactly those elements
    assert max(written) < total // 4
