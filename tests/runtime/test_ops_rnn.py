"""miopen.ops.rnn and miopen.ops.ctc driven through the stub libMIOpen and libamdhip64 (`libs`).

The stub logs every call with its arguments (descriptor arrays as [a,b,c], NULL as 0) and
returns scripted sizes. Tensor descriptors are primed with distinct addresses per shape so the
log shows which descriptor reached which argument.
"""

from __future__ import annotations

import functools

from collections.abc import Iterator
from typing import Any

import pytest

from ..conftest import Libs
from .standins import ClArray, ClBuffer

pytestmark = pytest.mark.usefixtures("libs")

F32 = "float32"
WS_BYTES = 1024
RS_BYTES = 4096
PARAMS_BYTES = 2048  # 512 float32 elements


# --------------------------------------------------------------------------- helpers


def T(ptr: int, dims: tuple[int, ...], dtype: str = F32, strides: tuple[int, ...] | None = None) -> Any:
    from miopen.tensor import Tensor

    return Tensor.make(ptr, dims, dtype, strides)


def W(ptr: int = 0xA000, nbytes: int = PARAMS_BYTES) -> Any:
    return T(ptr, (nbytes // 4,))


def mark(libs: Libs) -> int:
    return len(libs.log())


def since(libs: Libs, n: int) -> list[dict[str, str]]:
    return libs.log()[n:]


def names(entries: list[dict[str, str]]) -> list[str]:
    return [e[""] for e in entries]


def one(libs: Libs, fn: str, n: int = 0) -> dict[str, str]:
    calls = [e for e in since(libs, n) if e[""] == fn]
    assert len(calls) == 1, f"{fn} called {len(calls)} times: {names(since(libs, n))}"
    return calls[0]


def arr(value: str) -> list[int]:
    assert value.startswith("[") and value.endswith("]"), value
    inner = value[1:-1]
    return [int(v) for v in inner.split(",")] if inner else []


def script_sizes(libs: Libs, ws: int = WS_BYTES, rs: int = RS_BYTES, params: int = PARAMS_BYTES) -> None:
    libs.set_out("miopenGetRNNWorkspaceSize/numBytes", ws)
    libs.set_out("miopenGetRNNTrainingReserveSize/numBytes", rs)
    libs.set_out("miopenGetRNNParamsSize/numBytes", params)


class Primer:
    """Gives each (dims) a distinct descriptor address in the descriptor cache."""

    def __init__(self, libs: Libs) -> None:
        from miopen.descriptors import descriptor_cache

        self.libs = libs
        descriptor_cache().clear()
        self.next = 0x300000
        self.addr: dict[tuple[int, ...], int] = {}

    def __call__(self, *dims: int, dtype: str = F32) -> int:
        from miopen.descriptors import tensor_descriptor

        key = tuple(dims)
        if key not in self.addr:
            self.libs.set_out("miopenCreateTensorDescriptor/tensorDesc", self.next)
            desc = tensor_descriptor(dtype, key)
            assert desc.address == self.next
            self.addr[key] = self.next
            self.next += 0x100
            self.libs.set_out("miopenCreateTensorDescriptor/tensorDesc", 0x7F0000)  # anything made later
        return self.addr[key]


@pytest.fixture()
def prime(libs: Libs) -> Iterator[Primer]:
    from miopen.descriptors import descriptor_cache

    yield Primer(libs)
    descriptor_cache().clear()


class Recorder:
    """An allocator that records what it hands out (wrapping the stub HIP allocator)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.allocs: list[tuple[int, int]] = []
        self.frees: list[int] = []

    def allocate(self, nbytes: int, stream: int | None) -> int:
        ptr: int = self.inner.allocate(nbytes, stream)
        self.allocs.append((nbytes, ptr))
        return ptr

    def free(self, ptr: int, stream: int | None) -> None:
        self.frees.append(ptr)
        self.inner.free(ptr, stream)


@pytest.fixture()
def rec(libs: Libs, monkeypatch: pytest.MonkeyPatch) -> Recorder:
    from miopen import hip

    r = Recorder(hip.get_allocator())
    monkeypatch.setattr(hip, "get_allocator", lambda: r)
    return r


def lstm(**kw: Any) -> Any:
    from miopen.ops.rnn import RNN

    args: dict[str, Any] = {"mode": "lstm", "bidirectional": True}
    args.update(kw)
    return RNN(8, 16, 2, **args)


# --------------------------------------------------------------------------- the descriptor


@pytest.mark.parametrize("mode, value", [("relu", 0), ("tanh", 1), ("lstm", 2), ("gru", 3)])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_descriptor_mode_direction_layers(libs: Libs, mode: Any, value: int, bidirectional: bool) -> None:
    from miopen.ops.rnn import RNN

    n = mark(libs)
    rnn = RNN(8, 16, 3, mode=mode, bidirectional=bidirectional, input_mode="linear", bias=False, algo="default")
    assert names(since(libs, n)) == ["miopenCreateRNNDescriptor", "miopenSetRNNDescriptor"]
    e = one(libs, "miopenSetRNNDescriptor", n)
    assert (e["hsize"], e["nlayers"], e["rnnMode"], e["direction"]) == ("16", "3", str(value), str(int(bidirectional)))
    assert (e["inMode"], e["biasMode"], e["algo"], e["dataType"]) == ("0", "0", "0", "1")
    assert rnn.num_layer_ids == 3 * (2 if bidirectional else 1)
    assert rnn.params_per_layer == {"relu": 2, "tanh": 2, "lstm": 8, "gru": 6}[mode]
    assert rnn.hidden_dims(5) == (rnn.num_layer_ids, 5, 16)
    rnn.close()
    assert names(since(libs, n))[-1] == "miopenDestroyRNNDescriptor"


def test_descriptor_skip_bias_algo_enums(libs: Libs) -> None:
    from miopen import api
    from miopen.ops.rnn import RNN

    n = mark(libs)
    RNN(16, 16, mode=api.RNNMode.miopenGRU, bidirectional=api.RNNDirectionMode.miopenRNNbidirection,
        input_mode="skip", bias=True, algo="fundamental")
    e = one(libs, "miopenSetRNNDescriptor", n)
    assert (e["rnnMode"], e["direction"], e["inMode"], e["biasMode"], e["algo"]) == ("3", "1", "1", "1", "1")


def test_dropout_owns_descriptor_and_states(libs: Libs, rec: Recorder) -> None:
    libs.set_out("miopenDropoutGetStatesSize/stateSizeInBytes", 256)
    libs.set_out("miopenCreateDropoutDescriptor/dropoutDesc", 0x5D0000)
    n = mark(libs)
    rnn = lstm(dropout=0.25, dropout_seed=7)
    calls = names(since(libs, n))
    for fn in ("miopenCreateDropoutDescriptor", "miopenDropoutGetStatesSize", "miopenSetDropoutDescriptor"):
        assert calls.index(fn) < calls.index("miopenSetRNNDescriptor_V2")
    assert "miopenSetRNNDescriptor" not in calls
    d = one(libs, "miopenSetDropoutDescriptor", n)
    assert rec.allocs == [(256, int(d["states"]))]  # the states are a persistent buffer, 256 bytes
    assert (d["stateSizeInBytes"], d["seed"], d["dropout"]) == ("256", "7", "0.25")
    v2 = one(libs, "miopenSetRNNDescriptor_V2", n)
    assert v2["dropoutDesc"] == str(0x5D0000)
    rnn.close()
    assert rec.frees == [rec.allocs[0][1]]
    assert "miopenDestroyDropoutDescriptor" in names(since(libs, n))


# --------------------------------------------------------------------------- forward


def test_forward_training_sizes_first_arrays_and_reserve(libs: Libs, prime: Primer, rec: Recorder) -> None:
    from miopen import hip
    from miopen.ops.rnn import RNNReserve
    from miopen.workspace import PersistentBuffer, scratch

    rnn = lstm()  # 2 layers, bidirectional: hidden state (4, batch, 16); output 32 features
    script_sizes(libs)
    x4, x2 = prime(4, 8), prime(2, 8)
    y4, y2 = prime(4, 32), prime(2, 32)
    hd = prime(4, 4, 16)
    x, y = T(0x1000, (10, 8)), T(0x2000, (10, 32))
    hy, cy = T(0x3000, (4, 4, 16)), T(0x4000, (4, 4, 16))
    n = mark(libs)
    reserve = rnn.forward_training(x, None, None, W(), y, hy, cy, batch_sizes=[4, 4, 2])
    calls = names(since(libs, n))
    fwd = calls.index("miopenRNNForwardTraining")
    for q in ("miopenGetRNNParamsSize", "miopenGetRNNWorkspaceSize", "miopenGetRNNTrainingReserveSize"):
        assert calls.index(q) < fwd
    e = one(libs, "miopenRNNForwardTraining", n)
    assert e["sequenceLen"] == "3"
    assert arr(e["xDesc"]) == [x4, x4, x2]
    assert arr(e["yDesc"]) == [y4, y4, y2]
    assert e["hxDesc"] == e["cxDesc"] == e["hyDesc"] == e["cyDesc"] == str(hd)
    assert (e["x"], e["y"], e["hy"], e["cy"]) == (str(0x1000), str(0x2000), str(0x3000), str(0x4000))
    assert e["hx"] == "0" and e["cx"] == "0"  # None: zero initial state
    assert e["w"] == str(0xA000)
    ws = one(libs, "miopenGetRNNWorkspaceSize", n)
    assert ws["sequenceLen"] == "3" and arr(ws["xDesc"]) == [x4, x4, x2]
    assert arr(one(libs, "miopenGetRNNTrainingReserveSize", n)["xDesc"]) == [x4, x4, x2]
    # workspace from the thread's scratch, reserve a persistent buffer of the queried size
    assert int(e["workSpace"]) == scratch(hip.current_device()).ptr
    assert e["workSpaceNumBytes"] == str(WS_BYTES)
    assert isinstance(reserve, RNNReserve) and isinstance(reserve.buffer, PersistentBuffer)
    assert reserve.buffer.kind == "rnn reserve" and reserve.nbytes == RS_BYTES
    assert (RS_BYTES, int(e["reserveSpace"])) in rec.allocs
    assert e["reserveSpace"] == str(reserve.ptr) and e["reserveSpaceNumBytes"] == str(RS_BYTES)
    assert reserve.batch_sizes == (4, 4, 2)


def test_forward_uses_given_workspace(libs: Libs, rec: Recorder) -> None:
    from miopen import hip
    from miopen.workspace import MIOpenWorkspace

    rnn = lstm(bidirectional=False)
    script_sizes(libs, ws=3000)
    mine = MIOpenWorkspace(hip.current_device(), allocator=rec)
    n = mark(libs)
    rnn.forward_inference(T(0x1000, (3, 2, 8)), None, None, W(), T(0x2000, (3, 2, 16)), workspace=mine)
    e = one(libs, "miopenRNNForwardInference", n)
    assert e["workSpace"] == str(mine.ptr) and e["workSpaceNumBytes"] == "3000"
    assert (3000, mine.ptr) in rec.allocs
    mine.close()


def test_forward_inference_uniform_batch_null_states(libs: Libs, prime: Primer) -> None:
    from miopen import hip
    from miopen.workspace import scratch

    rnn = lstm(mode="gru", bidirectional=False)  # 2 layers: hidden (2, 3, 16)
    script_sizes(libs)
    xd, yd, hd = prime(3, 8), prime(3, 16), prime(2, 3, 16)
    hx = T(0x5000, (2, 3, 16))
    n = mark(libs)
    rnn.forward_inference(T(0x1000, (5, 3, 8)), hx, None, W(), T(0x2000, (5, 3, 16)))
    calls = names(since(libs, n))
    assert "miopenGetRNNTrainingReserveSize" not in calls
    assert calls.index("miopenGetRNNWorkspaceSize") < calls.index("miopenRNNForwardInference")
    e = one(libs, "miopenRNNForwardInference", n)
    assert e["sequenceLen"] == "5"
    assert arr(e["xDesc"]) == [xd] * 5 and arr(e["yDesc"]) == [yd] * 5
    assert e["hxDesc"] == str(hd) and e["hx"] == str(0x5000)
    assert (e["cx"], e["hy"], e["cy"]) == ("0", "0", "0")
    assert int(e["workSpace"]) == scratch(hip.current_device()).ptr


@pytest.mark.parametrize("layers, bidirectional, first", [(1, False, 1), (3, False, 3), (1, True, 2), (3, True, 6)])
def test_hidden_dims_layers_directions(libs: Libs, prime: Primer, layers: int, bidirectional: bool,
                                       first: int) -> None:
    from miopen.errors import ShapeError
    from miopen.ops.rnn import RNN

    rnn = RNN(8, 16, layers, mode="tanh", bidirectional=bidirectional)
    script_sizes(libs)
    hd = prime(first, 2, 16)
    out = 16 * (2 if bidirectional else 1)
    n = mark(libs)
    rnn.forward_inference(T(0x1000, (4, 2, 8)), T(0x5000, (first, 2, 16)), None, W(), T(0x2000, (4, 2, out)))
    e = one(libs, "miopenRNNForwardInference", n)
    assert e["hxDesc"] == e["hyDesc"] == str(hd)
    wrong = (first + 1, 2, 16)
    n = mark(libs)
    with pytest.raises(ShapeError, match=r"hx must have dims \(%d, 2, 16\)" % first):
        rnn.forward_inference(T(0x1000, (4, 2, 8)), T(0x5000, wrong), None, W(), T(0x2000, (4, 2, out)))
    assert since(libs, n) == []


_POSITIONS = ("x", "hx", "cx", "w", "y", "hy", "cy")
#: what may happen to one argument of an LSTM step between two calls
_CHANGES = ("new buffer", "short buffer", "release", "offset", "equal shape", "other shape", "narrower shape",
            "other dtype", "other strides", "None", "Tensor", "new array", "deleted offset")


def _change(args: dict[str, Any], name: str, change: str, fresh: Any) -> None:
    """Apply `change` to argument `name` of `args` (`fresh()`: a new buffer address)."""
    import numpy as np

    from miopen.tensor import Tensor

    a = args[name]
    if a is None or isinstance(a, Tensor):
        dims = (PARAMS_BYTES // 4,) if name == "w" else (1, 4, 8 if name == "x" else 16)
        if change == "Tensor":
            args[name] = Tensor.make(fresh(), dims, F32)
        elif change == "None" and name not in ("x", "w", "y"):
            args[name] = None
        else:
            args[name] = ClArray(fresh(), dims)
        return
    if change == "new buffer":
        a.base_data = ClBuffer(fresh(), a.base_data.size)
    elif change == "short buffer":
        a.base_data = ClBuffer(fresh(), a.base_data.size - 4)
    elif change == "release":
        a.base_data.release()
    elif change == "offset":
        a.offset = 4
    elif change == "deleted offset":
        a.__dict__.pop("offset", None)
    elif change == "equal shape":
        a.shape = tuple(list(a.shape))  # an equal tuple, another object
    elif change == "other shape":
        from miopen.layout import packed_strides

        a.shape = (a.shape[0] // 2,) if len(a.shape) == 1 else (1, 2, a.shape[-1])
        a.strides = tuple(a.dtype.itemsize * s for s in packed_strides(a.shape))
    elif change == "narrower shape":  # the strides object kept
        a.shape = (a.shape[0] // 2,) if len(a.shape) == 1 else (1, 2, a.shape[-1])
    elif change == "other dtype":
        a.dtype = np.dtype("float16")
    elif change == "other strides":
        a.strides = tuple(2 * s for s in a.strides)
    elif change == "None":
        if name not in ("x", "w", "y"):
            args[name] = None
    elif change == "Tensor":
        dims = a.shape if isinstance(a, ClArray) else a.dims
        args[name] = Tensor.make(fresh(), dims, F32)
    elif change == "new array":
        args[name] = ClArray(fresh(), a.shape if isinstance(a, ClArray) else a.dims)


def _outcome(libs: Libs, call: Any) -> object:
    """The arguments `miopenRNNForwardInference` got from `call` (but the RNN descriptor: each RNN has its own),
    or its error."""
    n = mark(libs)
    try:
        call()
    except Exception as exc:  # noqa: BLE001 - compared by type and message
        return type(exc), str(exc)
    e = dict(one(libs, "miopenRNNForwardInference", n))
    del e["rnnDesc"]
    return e


from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_STEPS = st.lists(st.one_of(st.just("again"), st.just("swap states"), st.just("clear caches"),
                            st.just("close a descriptor"), st.tuples(st.sampled_from(_POSITIONS),
                                                                     st.sampled_from(_CHANGES))),
                  min_size=1, max_size=12)


def _check_steps(libs: Libs, steps: list[Any]) -> None:
    """Three calls, then each step followed by a call: one RNN's call (its fast paths) equals a new RNN's."""
    from miopen._generated._pointers import watch_releases
    from miopen.descriptors import clear_descriptor_caches, tensor_descriptor
    from miopen.ops.rnn import RNN

    watch_releases(ClBuffer)
    libs.reset()
    libs.set_out("miopenGetRNNWorkspaceSize/numBytes", WS_BYTES)
    libs.set_out("miopenGetRNNParamsSize/numBytes", PARAMS_BYTES)
    addresses = iter(range(0x100000, 0x10000000, 0x1000))
    fresh = functools.partial(next, addresses)
    args: dict[str, Any] = {name: ClArray(fresh(), (1, 4, 8 if name == "x" else 16)) for name in _POSITIONS}
    args["w"] = ClArray(fresh(), (PARAMS_BYTES // 4,))
    rnn = RNN(8, 16, 1, mode="lstm")
    try:
        for step in ["again", "again", "again", *steps]:  # the third call on: the fast paths
            if step == "swap states":
                args["hx"], args["cx"], args["hy"], args["cy"] = args["hy"], args["cy"], args["hx"], args["cx"]
            elif step == "clear caches":  # (as a library change does): the descriptors made next are others
                clear_descriptor_caches()
                libs.set_out("miopenCreateTensorDescriptor/tensorDesc", fresh())
            elif step == "close a descriptor":
                tensor_descriptor(F32, (1, 4, 16)).close()
            elif step != "again":
                _change(args, *step, fresh)
            a = dict(args)
            got = _outcome(libs, lambda: rnn.forward_inference(**a))
            with RNN(8, 16, 1, mode="lstm") as full:
                want = _outcome(libs, lambda: full.forward_inference(**a))
            assert got == want, (step, steps)
    finally:
        rnn.close()


def test_forward_inference_each_change_equals_the_full_checks(libs: Libs) -> None:
    """Each change to one argument of an LSTM step between calls (a buffer swapped, released or too short, an offset
    set or deleted, an equal or another shape (strides kept or not), another dtype or strides, None for a state, a Tensor, a new array),
    and each event (the states of the call before: an LSTM loop alternates hx/hy; a closed cached descriptor; the
    caches cleared), then the same again: one RNN's call (its fast paths: the objects of its last two calls, their
    layouts) passes MIOpen what a new RNN passes for the same arguments (the full checks), or raises its error."""
    events: list[Any] = ["swap states", "close a descriptor", "clear caches"]
    for step in [*events, *[(name, change) for name in _POSITIONS for change in _CHANGES]]:
        _check_steps(libs, [step, "again", step, "again"])


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=_STEPS)
def test_forward_inference_repeated_calls_equal_the_full_checks(libs: Libs, steps: list[Any]) -> None:
    """Any sequence of those changes and events, each followed by a call: each call of one RNN equals a new
    RNN's (the arguments MIOpen gets, or the error)."""
    _check_steps(libs, steps)


def test_forward_inference_alternating_states_read_no_layout(libs: Libs, monkeypatch: pytest.MonkeyPatch) -> None:
    """An LSTM loop that alternates two sets of states (hy of one step the hx of the next) on the same arrays reads
    no layout again after its first calls: the objects of the last two calls are recognised as they are."""
    from miopen.ops import rnn as rnn_mod

    script_sizes(libs)
    x, y, w = ClArray(0x1000, (1, 4, 8)), ClArray(0x2000, (1, 4, 16)), ClArray(0x3000, (PARAMS_BYTES // 4,))
    a, b = [ClArray(0x10000 + i * 0x1000, (1, 4, 16)) for i in range(2)], [ClArray(0x20000 + i * 0x1000, (1, 4, 16))
                                                                         for i in range(2)]
    rnn = rnn_mod.RNN(8, 16, 1, mode="lstm")
    for k in range(3):
        src, dst = (a, b) if k % 2 == 0 else (b, a)
        rnn.forward_inference(x, src[0], src[1], w, y, dst[0], dst[1])
    reads: list[object] = []
    real = rnn_mod._layouts
    monkeypatch.setattr(rnn_mod, "_layouts", lambda *objs: reads.append(objs) or real(*objs))
    n = mark(libs)
    for k in range(4):
        src, dst = (a, b) if k % 2 == 0 else (b, a)
        rnn.forward_inference(x, src[0], src[1], w, y, dst[0], dst[1])
    calls = [e for e in since(libs, n) if e[""] == "miopenRNNForwardInference"]
    assert [(e["hx"], e["hy"]) for e in calls] == [(str(0x10000), str(0x20000)), (str(0x20000), str(0x10000))] * 2
    assert reads == []
    b[0].base_data = ClBuffer(0x30000, b[0].base_data.size)  # a state's buffer swapped: read again, and passed
    n = mark(libs)
    rnn.forward_inference(x, a[0], a[1], w, y, b[0], b[1])
    assert len(reads) == 1 and one(libs, "miopenRNNForwardInference", n)["hy"] == str(0x30000)
    rnn.close()


# --------------------------------------------------------------------------- backward and the reserve


def _train(libs: Libs, rnn: Any) -> Any:
    script_sizes(libs)
    return rnn.forward_training(T(0x1000, (10, 8)), None, None, W(), T(0x2000, (10, 32)), batch_sizes=[4, 4, 2])


def test_backward_passes_get_the_forward_reserve(libs: Libs, prime: Primer, rec: Recorder) -> None:
    rnn = lstm()
    x4, x2, y4, y2 = prime(4, 8), prime(2, 8), prime(4, 32), prime(2, 32)
    n0 = mark(libs)
    reserve = _train(libs, rnn)
    fwd = one(libs, "miopenRNNForwardTraining", n0)
    assert [a for a in rec.allocs if a[0] == RS_BYTES] == [(RS_BYTES, reserve.ptr)]
    n = mark(libs)
    dhx = T(0x6000, (4, 4, 16))
    rnn.backward_data(T(0x2000, (10, 32)), T(0x2800, (10, 32)), W(), T(0x1800, (10, 8)), reserve=reserve, dhx=dhx)
    bd = one(libs, "miopenRNNBackwardData", n)
    rnn.backward_weights(T(0x1000, (10, 8)), None, T(0x2000, (10, 32)), W(0xB000), reserve=reserve)
    bw = one(libs, "miopenRNNBackwardWeights", n)
    # the same persistent reserve reaches both backward passes
    assert fwd["reserveSpace"] == bd["reserveSpace"] == bw["reserveSpace"] == str(reserve.ptr)
    assert bd["reserveSpaceNumBytes"] == bw["reserveSpaceNumBytes"] == str(RS_BYTES)
    assert [a for a in rec.allocs if a[0] == RS_BYTES] == [(RS_BYTES, reserve.ptr)]  # allocated once
    # backward weights reads the workspace backward data wrote: one persistent buffer for both
    assert reserve.backward_workspace is not None
    assert bd["workSpace"] == bw["workSpace"] == str(reserve.backward_workspace.ptr)
    assert bd["workSpaceNumBytes"] == bw["workSpaceNumBytes"] == str(WS_BYTES)
    assert bd["workSpace"] != fwd["workSpace"]  # not the shared scratch
    # descriptor arrays and optional states
    assert bd["sequenceLen"] == bw["sequenceLen"] == "3"
    assert arr(bd["yDesc"]) == arr(bd["dyDesc"]) == [y4, y4, y2] and arr(bd["dxDesc"]) == [x4, x4, x2]
    assert arr(bw["xDesc"]) == [x4, x4, x2] and arr(bw["yDesc"]) == [y4, y4, y2]
    assert (bd["dhy"], bd["dcy"], bd["hx"], bd["cx"], bd["dcx"]) == ("0",) * 5
    assert bd["dhx"] == str(0x6000) and bd["dx"] == str(0x1800) and bd["dy"] == str(0x2800)
    assert bw["hx"] == "0" and bw["dw"] == str(0xB000)
    assert "miopenGetRNNTrainingReserveSize" not in names(since(libs, n))
    kept = {int(fwd["reserveSpace"]), int(bd["workSpace"])}
    assert not kept & set(rec.frees)
    reserve.close()
    assert reserve.closed and kept <= set(rec.frees)


def test_failed_forward_frees_the_reserve(libs: Libs, rec: Recorder) -> None:
    from miopen.errors import MIOpenError

    rnn = lstm()
    script_sizes(libs)
    libs.set_status("miopenRNNForwardTraining", 3, once=True)
    with pytest.raises(MIOpenError):
        rnn.forward_training(T(0x1000, (10, 8)), None, None, W(), T(0x2000, (10, 32)), batch_sizes=[4, 4, 2])
    reserve_ptrs = [p for s, p in rec.allocs if s == RS_BYTES]
    assert len(reserve_ptrs) == 1 and rec.frees == reserve_ptrs


def test_dropped_reserve_is_freed(libs: Libs, rec: Recorder) -> None:
    import gc

    rnn = lstm()
    reserve = _train(libs, rnn)
    _bd(rnn, reserve)
    assert reserve.backward_workspace is not None
    kept = {reserve.ptr, reserve.backward_workspace.ptr}
    assert kept <= {p for _, p in rec.allocs} and not kept & set(rec.frees)
    del reserve
    gc.collect()
    assert kept <= set(rec.frees)


def _bd(rnn: Any, reserve: object, **kw: Any) -> None:
    args: dict[str, Any] = {"y": T(0x2000, (10, 32)), "dy": T(0x2800, (10, 32)), "w": W(), "dx": T(0x1800, (10, 8))}
    args.update(kw)
    rnn.backward_data(reserve=reserve, **args)


def _bw(rnn: Any, reserve: object, **kw: Any) -> None:
    args: dict[str, Any] = {"x": T(0x1000, (10, 8)), "hx": None, "y": T(0x2000, (10, 32)), "dw": W(0xB000)}
    args.update(kw)
    rnn.backward_weights(reserve=reserve, **args)


def test_reserve_errors_raise_before_any_call(libs: Libs) -> None:
    from miopen.ops.rnn import ReserveMismatchError
    from miopen.workspace import PersistentBuffer

    rnn, other = lstm(), lstm()
    reserve = _train(libs, rnn)
    foreign = _train(libs, other)
    raw = PersistentBuffer(RS_BYTES, 0, "rnn reserve")
    cases: list[tuple[object, str]] = [
        (raw, "must be the RNNReserve"),
        (None, "must be the RNNReserve"),
        (foreign, "produced by another RNN"),
    ]
    for bad, msg in cases:
        for call in (_bd, _bw):
            n = mark(libs)
            with pytest.raises(ReserveMismatchError, match=msg):
                call(rnn, bad)
            assert since(libs, n) == []
    raw.close()
    # backward weights needs backward data's workspace first
    n = mark(libs)
    with pytest.raises(ReserveMismatchError, match="call backward_data with this reserve first"):
        _bw(rnn, reserve)
    assert since(libs, n) == []
    # ... and once per backward_weights: GRU's backward-weights pass changes that workspace (real kernels show it)
    _bd(rnn, reserve)
    _bw(rnn, reserve)
    n = mark(libs)
    with pytest.raises(ReserveMismatchError, match="once per backward_weights"):
        _bw(rnn, reserve)
    assert since(libs, n) == []
    _bd(rnn, reserve)
    _bw(rnn, reserve)
    # another shape: 3-D tensors with a uniform batch, or other packed batch sizes
    for kw in ({"y": T(0x2000, (3, 4, 32)), "dy": T(0x2800, (3, 4, 32)), "dx": T(0x1800, (3, 4, 8))},
               {"batch_sizes": [4, 3, 3]}):
        n = mark(libs)
        with pytest.raises(ReserveMismatchError, match="produced for another shape"):
            _bd(rnn, reserve, **kw)
        assert since(libs, n) == []
    # closed
    reserve.close()
    for call in (_bd, _bw):
        n = mark(libs)
        with pytest.raises(ReserveMismatchError, match="closed"):
            call(rnn, reserve)
        assert since(libs, n) == []


# --------------------------------------------------------------------------- shape checks


def _fi(rnn: Any, **kw: Any) -> None:
    args: dict[str, Any] = {"x": T(0x1000, (10, 8)), "hx": None, "cx": None, "w": W(), "y": T(0x2000, (10, 32)),
                            "batch_sizes": [4, 4, 2]}
    args.update(kw)
    rnn.forward_inference(**args)


def LT(*args: Any, **kwargs: Any) -> functools.partial[Any]:
    """A tensor made when the test runs (collection binds no library)."""
    return functools.partial(T, *args, **kwargs)


BAD_FORWARD: list[tuple[dict[str, Any], str]] = [
    ({"batch_sizes": [2, 4, 4]}, "must not increase"),
    ({"batch_sizes": [4, 4, 0]}, r"batch_sizes\[2\] must be an int >= 1"),
    ({"batch_sizes": []}, "must not be empty"),
    ({"batch_sizes": [4, 4, 3]}, r"x has 10 rows but sum\(batch_sizes\) = 11"),
    ({"x": LT(0x1000, (10, 9))}, r"x must have 8 features \(input_size\)"),
    ({"y": LT(0x2000, (10, 16))}, r"y must have 32 features \(hidden_size \* num_directions\)"),
    ({"y": LT(0x2000, (9, 32))}, r"y has 9 rows"),
    ({"x": LT(0x1000, (5, 8)), "batch_sizes": None}, r"x must be 3-D \(seq_len, batch, features\)"),
    ({"x": LT(0x1000, (3, 4, 8)), "batch_sizes": [4, 4, 2]}, "must be packed 2-D"),
    ({"hx": LT(0x5000, (2, 4, 16))}, r"hx must have dims \(4, 4, 16\)"),
    ({"cx": LT(0x5000, (4, 2, 16))}, r"cx must have dims \(4, 4, 16\)"),
    ({"hy": LT(0x5000, (4, 4, 8))}, r"hy must have dims \(4, 4, 16\)"),
    ({"x": LT(0x1000, (10, 8), "float16")}, "x is miopenHalf but the RNN is miopenFloat"),
    ({"x": LT(0x1000, (10, 8), strides=(16, 1))}, "x must be packed"),
    ({"y": None}, "y is required"),
    ({"w": LT(0xA000, (511,))}, "w holds 2044 bytes but this RNN's packed weights take 2048 bytes"),
]


@pytest.mark.parametrize("kw, msg", BAD_FORWARD, ids=[m for _, m in BAD_FORWARD])
@pytest.mark.parametrize("training", [False, True])
def test_bad_forward_raises_before_any_call(libs: Libs, kw: dict[str, Any], msg: str, training: bool) -> None:
    kw = {k: v() if isinstance(v, functools.partial) else v for k, v in kw.items()}
    rnn = lstm()
    script_sizes(libs)
    rnn.params_size()  # the weights' size is known (the one check that needs a MIOpen query)
    n = mark(libs)
    with pytest.raises((ValueError, TypeError), match=msg):
        if training:
            args: dict[str, Any] = {"x": T(0x1000, (10, 8)), "hx": None, "cx": None, "w": W(),
                                    "y": T(0x2000, (10, 32)), "batch_sizes": [4, 4, 2]}
            args.update(kw)
            rnn.forward_training(**args)
        else:
            _fi(rnn, **kw)
    assert since(libs, n) == []


def test_cell_states_only_for_lstm(libs: Libs) -> None:
    from miopen.errors import ShapeError

    gru = lstm(mode="gru")
    reserve = _train(libs, gru)
    cell = T(0x5000, (4, 4, 16))
    for call, kw in ((_fi, {"cx": cell}), (_fi, {"cy": cell}), (_bd, {"dcy": cell}), (_bd, {"dcx": cell})):
        n = mark(libs)
        with pytest.raises(ShapeError, match="only LSTM has"):
            if call is _fi:
                _fi(gru, **kw)
            else:
                _bd(gru, reserve, **kw)
        assert since(libs, n) == []


def test_bad_construction_raises_before_any_call(libs: Libs) -> None:
    from miopen.errors import ShapeError
    from miopen.ops.rnn import RNN

    cases: list[tuple[dict[str, Any], type[Exception], str]] = [
        ({"input_mode": "skip"}, ShapeError, "input_size must equal hidden_size"),
        ({"mode": "elman"}, ValueError, "mode=.elman. is not a miopenRNNMode_t"),
        ({"dropout": 1.0}, ValueError, r"dropout must be a probability in \[0, 1\)"),
        ({"algo": "fast"}, ValueError, "algo=.fast. is not a miopenRNNAlgo_t"),
        ({"bias": "yes"}, TypeError, "bias must be a bool"),
    ]
    for kw, exc, msg in cases:
        n = mark(libs)
        with pytest.raises(exc, match=msg):
            RNN(8, 16, 2, **kw)
        assert since(libs, n) == []
    n = mark(libs)
    with pytest.raises(ValueError, match="num_layers must be a positive int"):
        RNN(8, 16, 0)
    assert since(libs, n) == []


def test_closed_rnn_refuses(libs: Libs) -> None:
    rnn = lstm()
    rnn.close()
    n = mark(libs)
    with pytest.raises(ValueError, match="this RNN is closed"):
        _fi(rnn)
    with pytest.raises(ValueError, match="this RNN is closed"):
        rnn.get_layer_param(0, 0, W())
    assert since(libs, n) == []


# --------------------------------------------------------------------------- sizes and descriptors


def test_params_size_cached_and_weights_descriptor(libs: Libs, prime: Primer) -> None:
    rnn = lstm()
    script_sizes(libs, params=4444)
    xd = prime(1, 8)
    n = mark(libs)
    assert rnn.params_size() == 4444
    assert rnn.params_size() == 4444
    e = one(libs, "miopenGetRNNParamsSize", n)  # queried once
    assert e["xDesc"] == str(xd) and e["dtype"] == "1"
    libs.set_out("miopenCreateTensorDescriptor/tensorDesc", 0x990000)
    wd = rnn.weights_descriptor()
    assert wd.address == 0x990000 and rnn.weights_descriptor() is wd
    g = one(libs, "miopenGetRNNParamsDescriptor", n)
    assert (g["xDesc"], g["wDesc"], g["dtype"]) == (str(xd), str(0x990000), "1")


def test_workspace_and_reserve_size_forms(libs: Libs, prime: Primer) -> None:
    rnn = lstm()
    script_sizes(libs)
    x2, x1 = prime(2, 8), prime(1, 8)
    n = mark(libs)
    assert rnn.workspace_size(3, 2) == WS_BYTES
    assert rnn.reserve_size([2, 2, 1]) == RS_BYTES
    assert rnn.workspace_size(rnn.x_descriptors([2, 1])) == WS_BYTES
    ws = [e for e in since(libs, n) if e[""] == "miopenGetRNNWorkspaceSize"]
    assert [(e["sequenceLen"], arr(e["xDesc"])) for e in ws] == [("3", [x2, x2, x2]), ("2", [x2, x1])]
    rs = one(libs, "miopenGetRNNTrainingReserveSize", n)
    assert arr(rs["xDesc"]) == [x2, x2, x1]
    n = mark(libs)
    with pytest.raises(ValueError, match="must not increase"):
        rnn.reserve_size([1, 2])
    with pytest.raises(TypeError, match="pass batch as well"):
        rnn.workspace_size(3)
    assert since(libs, n) == []


# --------------------------------------------------------------------------- per-layer parameters


@pytest.mark.parametrize("mode, n_ids", [("relu", 2), ("tanh", 2), ("lstm", 8), ("gru", 6)])
def test_param_and_bias_id_ranges_per_mode(libs: Libs, mode: Any, n_ids: int) -> None:
    from miopen.ops.rnn import RNN

    rnn = RNN(8, 16, 2, mode=mode, bidirectional=True)  # layer ids 0..3
    script_sizes(libs)
    libs.set_out("miopenGetRNNLayerParamSize/numBytes", 64)
    libs.set_out("miopenGetRNNLayerBiasSize/numBytes", 64)
    rnn.params_size()
    n = mark(libs)
    assert rnn.layer_param_size(3, n_ids - 1) == 64
    assert rnn.layer_bias_size(3, n_ids - 1) == 64
    e = one(libs, "miopenGetRNNLayerParamSize", n)
    assert (e["layer"], e["paramID"]) == ("3", str(n_ids - 1))
    b = one(libs, "miopenGetRNNLayerBiasSize", n)
    assert (b["layer"], b["biasID"]) == ("3", str(n_ids - 1))
    bad: list[tuple[Any, str]] = [
        (lambda: rnn.layer_param_size(0, n_ids), rf"param_id must be in \[0, {n_ids}\)"),
        (lambda: rnn.layer_param_size(0, -1), rf"param_id must be in \[0, {n_ids}\)"),
        (lambda: rnn.layer_bias_size(0, n_ids), rf"bias_id must be in \[0, {n_ids}\)"),
        (lambda: rnn.layer_param_size(4, 0), r"layer must be in \[0, 4\)"),
        (lambda: rnn.layer_param_size(-1, 0), r"layer must be in \[0, 4\)"),
        (lambda: rnn.layer_param_offset(0, n_ids), rf"param_id must be in \[0, {n_ids}\)"),
        (lambda: rnn.get_layer_param(4, 0, W()), r"layer must be in \[0, 4\)"),
        (lambda: rnn.set_layer_param(0, n_ids, W(), T(0xC000, (16,))), rf"param_id must be in \[0, {n_ids}\)"),
        (lambda: rnn.set_layer_bias(0, n_ids, W(), T(0xC000, (16,))), rf"bias_id must be in \[0, {n_ids}\)"),
    ]
    n = mark(libs)
    for fn, msg in bad:
        with pytest.raises(ValueError, match=msg):
            fn()
    assert since(libs, n) == []


def test_layer_range_unidirectional(libs: Libs) -> None:
    rnn = lstm(bidirectional=False)  # 2 layers: ids 0..1
    n = mark(libs)
    with pytest.raises(ValueError, match=r"layer must be in \[0, 2\)"):
        rnn.layer_param_offset(2, 0)
    with pytest.raises(TypeError, match="layer must be an int"):
        rnn.layer_param_offset(1.0, 0)
    assert since(libs, n) == []


def test_get_and_set_layer_param_arguments(libs: Libs, prime: Primer) -> None:
    rnn = lstm()
    script_sizes(libs)
    libs.set_out("miopenGetRNNLayerParamSize/numBytes", 16 * 16 * 4)
    xd = prime(1, 8)
    w = W()
    wd = prime(PARAMS_BYTES // 4)
    rnn.params_size()
    libs.set_out("miopenCreateTensorDescriptor/tensorDesc", 0x880000)
    n = mark(libs)
    desc = rnn.get_layer_param(3, 7, w, T(0xC000, (16, 16)))
    assert desc.address == 0x880000
    calls = names(since(libs, n))
    assert calls.index("miopenGetRNNLayerParamSize") < calls.index("miopenGetRNNLayerParam")
    g = one(libs, "miopenGetRNNLayerParam", n)
    assert (g["layer"], g["paramID"], g["xDesc"], g["wDesc"], g["w"]) == ("3", "7", str(xd), str(wd), str(0xA000))
    assert (g["paramDesc"], g["layerParam"]) == (str(0x880000), str(0xC000))
    desc.close()
    # without out: only the descriptor is filled (layerParam NULL)
    n = mark(libs)
    rnn.get_layer_param(1, 2, w).close()
    g = one(libs, "miopenGetRNNLayerParam", n)
    assert (g["layer"], g["paramID"], g["layerParam"]) == ("1", "2", "0")
    assert "miopenGetRNNLayerParamSize" not in names(since(libs, n))
    # set: size checked, MIOpen's own descriptor of the matrix, then the copy into w
    n = mark(libs)
    rnn.set_layer_param(2, 5, w, T(0xD000, (16, 16)))
    calls = names(since(libs, n))
    assert calls.index("miopenGetRNNLayerParamSize") < calls.index("miopenGetRNNLayerParam") \
        < calls.index("miopenSetRNNLayerParam")
    s = one(libs, "miopenSetRNNLayerParam", n)
    assert (s["layer"], s["paramID"], s["w"], s["wDesc"]) == ("2", "5", str(0xA000), str(wd))
    assert (s["paramDesc"], s["layerParam"]) == (str(0x880000), str(0xD000))
    assert one(libs, "miopenGetRNNLayerParam", n)["layerParam"] == "0"
    # data of the wrong size: refused after the size query, before the copy
    n = mark(libs)
    from miopen.errors import ShapeError

    with pytest.raises(ShapeError, match="data holds 512 bytes but layer 2 param 5 takes 1024 bytes"):
        rnn.set_layer_param(2, 5, w, T(0xD000, (8, 16)))
    assert "miopenSetRNNLayerParam" not in names(since(libs, n))


def test_get_and_set_layer_bias_and_offsets(libs: Libs, prime: Primer) -> None:
    rnn = lstm()
    script_sizes(libs)
    libs.set_out("miopenGetRNNLayerBiasSize/numBytes", 64)
    libs.set_out("miopenGetRNNLayerBiasOffset/layerBiasOffset", 480)
    libs.set_out("miopenGetRNNLayerParamOffset/layerParamOffset", 96)
    xd = prime(1, 8)
    rnn.params_size()
    n = mark(libs)
    rnn.set_layer_bias(3, 6, W(), T(0xE000, (16,)))
    s = one(libs, "miopenSetRNNLayerBias", n)
    assert (s["layer"], s["biasID"], s["layerBias"], s["xDesc"]) == ("3", "6", str(0xE000), str(xd))
    n = mark(libs)
    rnn.get_layer_bias(0, 1, W(), T(0xE100, (16,))).close()
    g = one(libs, "miopenGetRNNLayerBias", n)
    assert (g["layer"], g["biasID"], g["layerBias"]) == ("0", "1", str(0xE100))
    assert rnn.layer_bias_offset(1, 4) == 480
    assert rnn.layer_param_offset(2, 3) == 96
    bo = one(libs, "miopenGetRNNLayerBiasOffset", n)
    po = one(libs, "miopenGetRNNLayerParamOffset", n)
    assert (bo["layer"], bo["biasID"], po["layer"], po["paramID"]) == ("1", "4", "2", "3")


def test_no_bias_and_skip_mode_ids(libs: Libs) -> None:
    from miopen.ops.rnn import RNN

    plain = lstm(bias=False)
    skip = RNN(16, 16, 2, mode="gru", bidirectional=True, input_mode="skip")
    n = mark(libs)
    with pytest.raises(ValueError, match="without biases"):
        plain.layer_bias_size(0, 0)
    with pytest.raises(ValueError, match="without biases"):
        plain.set_layer_bias(0, 0, W(), T(0xE000, (16,)))
    # skip mode: the input layer (both directions) has no input matrices (GRU ids 0..2)
    for layer, pid in ((0, 0), (1, 2)):
        with pytest.raises(ValueError, match="skip input mode"):
            skip.layer_param_offset(layer, pid)
    assert since(libs, n) == []
    pairs = list(skip.layer_params())
    assert (0, 0) not in pairs and (1, 2) not in pairs and (0, 3) in pairs and (2, 0) in pairs
    assert len(pairs) == 4 * 6 - 2 * 3


# --------------------------------------------------------------------------- CTC loss


def _ctc(**kw: Any) -> None:
    from miopen.ops.ctc import ctc_loss

    args: dict[str, Any] = {
        "probs": T(0x10000, (6, 3, 5)), "gradients": T(0x20000, (6, 3, 5)),
        "labels": [1, 2, 3, 3, 4], "label_lengths": [2, 1, 2], "input_lengths": [6, 4, 5],
        "losses": T(0x30000, (3,)),
    }
    args.update(kw)
    ctc_loss(**args)


def test_ctc_loss_sequence_and_arrays(libs: Libs, prime: Primer) -> None:
    from miopen import hip
    from miopen.workspace import scratch

    pd = prime(6, 3, 5)
    libs.set_out("miopenGetCTCLossWorkspaceSize/workSpaceSize", 777)
    libs.set_out("miopenCreateCTCLossDescriptor/ctcLossDesc", 0xC7C000)
    n = mark(libs)
    _ctc(blank_label_id=4, apply_softmax=False, labels=[1, 2, 3, 3, 0], label_lengths=[2, 1, 2])
    calls = [c for c in names(since(libs, n)) if "CTC" in c]
    assert calls == ["miopenCreateCTCLossDescriptor", "miopenSetCTCLossDescriptor", "miopenGetCTCLossWorkspaceSize",
                     "miopenCTCLoss", "miopenDestroyCTCLossDescriptor"]
    d = one(libs, "miopenSetCTCLossDescriptor", n)
    assert (d["dataType"], d["blank_label_id"], d["apply_softmax_layer"]) == ("1", "4", "0")
    q = one(libs, "miopenGetCTCLossWorkspaceSize", n)
    e = one(libs, "miopenCTCLoss", n)
    for entry in (q, e):  # the stub shows the first 3 elements of these length-less arrays
        assert arr(entry["labels"]) == [1, 2, 3]
        assert arr(entry["labelLengths"]) == [2, 1, 2]
        assert arr(entry["inputLengths"]) == [6, 4, 5]
        assert entry["probsDesc"] == entry["gradientsDesc"] == str(pd)
        assert entry["ctcLossDesc"] == str(0xC7C000)
    assert (e["probs"], e["gradients"], e["losses"]) == (str(0x10000), str(0x20000), str(0x30000))
    assert e["workSpaceSize"] == "777" and int(e["workSpace"]) == scratch(hip.current_device()).ptr


def test_ctc_workspace_size_helper(libs: Libs) -> None:
    from miopen.ops.ctc import ctc_loss_workspace_size

    libs.set_out("miopenGetCTCLossWorkspaceSize/workSpaceSize", 555)
    n = mark(libs)
    size = ctc_loss_workspace_size(T(0x10000, (6, 3, 5)), T(0x20000, (6, 3, 5)), [1, 2, 3], [1, 1, 1], [2, 2, 2])
    assert size == 555
    assert "miopenCTCLoss" not in names(since(libs, n))
    assert arr(one(libs, "miopenGetCTCLossWorkspaceSize", n)["labelLengths"]) == [1, 1, 1]


BAD_CTC: list[tuple[dict[str, Any], str]] = [
    ({"labels": [1, 2, 3, 3]}, r"len\(labels\) must be sum\(label_lengths\) = 5; got 4"),
    ({"label_lengths": [2, 3]}, r"label_lengths needs one length per batch entry \(3"),
    ({"input_lengths": [6, 4, 5, 1]}, r"input_lengths needs one length per batch entry \(3"),
    ({"input_lengths": [6, 0, 5]}, "batch entry 1: label length 1 exceeds its input length 0"),
    ({"labels": [1, 2, 3, 4, 4], "input_lengths": [6, 4, 2]}, "batch entry 2: label length 2 plus 1 repeated"),
    ({"input_lengths": [7, 4, 5]}, r"input_lengths\[0\] = 7 exceeds the 6 time steps"),
    ({"label_lengths": [2, -1, 4]}, "must not be negative"),
    ({"labels": [1, 2, 3, 3, 5]}, r"labels must be classes in \[0, 5\); labels\[4\] = 5"),
    ({"blank_label_id": 5}, r"blank_label_id must be a class in \[0, 5\)"),
    ({"probs": LT(0x10000, (6, 15))}, r"probs must be 3-D \(T, N, C\)"),
    ({"gradients": LT(0x20000, (6, 3, 4))}, "gradients must have the dims of probs"),
    ({"gradients": LT(0x20000, (6, 3, 5), "float16")}, "gradients is miopenHalf but probs is miopenFloat"),
    ({"losses": LT(0x30000, (2,))}, r"losses needs one value per batch entry \(3\)"),
    ({"labels": [1, 2, 3.0, 3, 4]}, r"labels\[2\] must be an int"),
]


@pytest.mark.parametrize("kw, msg", BAD_CTC, ids=[m for _, m in BAD_CTC])
def test_ctc_bad_input_raises_before_any_call(libs: Libs, kw: dict[str, Any], msg: str) -> None:
    kw = {k: v() if isinstance(v, functools.partial) else v for k, v in kw.items()}
    n = mark(libs)
    with pytest.raises((ValueError, TypeError), match=msg):
        _ctc(**kw)
    assert since(libs, n) == []
