"""The runtime's own argument checks (issue 17): enum-ish arguments refuse members of other enums, dims and
strides refuse bool/float/str, re-entering a held MIOpen state is an error (not a deadlock), error messages
stay short, and Caffe2's `TensorDescriptors` over the stub library."""

from __future__ import annotations

import enum
import importlib
import inspect
import re
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ..conftest import Libs

HANDLE = 0x5A000
OPS_MODULES = ("activation", "batchnorm", "conv", "ctc", "dropout", "fusion", "lrn", "pooling", "reduce", "rnn",
               "softmax", "tensor_ops")
LIMIT = 500  # the longest an argument error may be
#: what the ops hand back (made by the ops from arguments they checked): not entry points
RESULTS = ("pooling.PoolingState", "lrn.LRNState", "dropout.DropoutReserve", "rnn.RNNReserve", "ctc.CTCProblem")


@pytest.fixture(autouse=True)
def _fresh(libs: Libs) -> Iterator[None]:
    from miopen import descriptors, handles, state

    handles.handle_pool().close()
    state.miopen_states().close()
    descriptors.clear_descriptor_caches()
    libs.reset()
    libs.set_out("miopenCreate/handle", HANDLE)
    yield
    state.miopen_states().close()
    handles.handle_pool().close()
    descriptors.clear_descriptor_caches()


def T(ptr: int, dims: tuple[int, ...], dtype: str = "float32") -> Any:
    from miopen.tensor import Tensor

    return Tensor.make(ptr, dims, dtype)


def _enums() -> dict[str, type[enum.IntEnum]]:
    """Every enum of the bound release's typed API, by its typed name."""
    from miopen._generated import _support as s, api

    out = {}
    for name in s.bound_all():
        obj = getattr(api, name, None)
        if isinstance(obj, type) and issubclass(obj, enum.IntEnum):
            out[name] = obj
    return out


# --------------------------------------------------------------------------- every enum parameter of the ops

X, Y, DX, DY, W, B, M, V = (0x10000 * i for i in range(1, 9))


def _entries() -> dict[tuple[str, str], tuple[str, Callable[[object], object]]]:
    """(entry point, parameter) -> (its own enum, a call passing `v` for that parameter, the rest valid)."""
    from miopen.caffe2 import activation_ops as c2act
    from miopen.ops import activation as act, batchnorm as bn, ctc, dropout, fusion, lrn, pooling, reduce, rnn, \
        softmax as sm, tensor_ops

    x, y = T(X, (2, 3, 4, 4)), T(Y, (2, 3, 4, 4))
    dx, dy = T(DX, (2, 3, 4, 4)), T(DY, (2, 3, 4, 4))
    py = T(Y, (2, 3, 2, 2))
    p = (T(W, (1, 3, 1, 1)), T(B, (1, 3, 1, 1)), T(M, (1, 3, 1, 1)), T(V, (1, 3, 1, 1)))
    a2, c2 = T(X, (2, 3)), T(Y, (1, 3))
    probs, grads, losses = T(X, (2, 1, 3)), T(Y, (2, 1, 3)), T(M, (1,))
    ctc_args = (probs, grads, [1], [1], [2])
    fp = "FusionPlan"
    return {
        ("activation.activation_forward", "mode"): ("ActivationMode", lambda v: act.activation_forward(x, y, v)),
        ("activation.activation_backward", "mode"): ("ActivationMode",
                                                     lambda v: act.activation_backward(y, dy, x, dx, v)),
        ("activation.activation_mode", "mode"): ("ActivationMode", lambda v: act.activation_mode(v)),
        ("activation.activation_params", "mode"): ("ActivationMode", lambda v: act.activation_params(v)),
        ("batchnorm.batch_norm_mode", "mode"): ("BatchNormMode", lambda v: bn.batch_norm_mode(v)),
        ("batchnorm.bn_param_shape", "mode"): ("BatchNormMode", lambda v: bn.bn_param_shape((2, 3, 4, 4), v)),
        ("batchnorm.batch_norm_forward_training", "mode"): (
            "BatchNormMode", lambda v: bn.batch_norm_forward_training(x, y, p[0], p[1], v)),
        ("batchnorm.batch_norm_forward_inference", "mode"): (
            "BatchNormMode", lambda v: bn.batch_norm_forward_inference(x, y, p[0], p[1], p[2], p[3], v)),
        ("batchnorm.batch_norm_backward", "mode"): (
            "BatchNormMode", lambda v: bn.batch_norm_backward(x, dy, dx, p[0], p[2], p[3], v)),
        ("ctc.ctc_loss", "algo"): ("CTCLossAlgo", lambda v: ctc.ctc_loss(*ctc_args, losses, algo=v)),
        ("ctc.ctc_loss_workspace_size", "algo"): ("CTCLossAlgo",
                                                  lambda v: ctc.ctc_loss_workspace_size(*ctc_args, algo=v)),
        ("ctc.CTCProblem.check", "algo"): ("CTCLossAlgo",
                                           lambda v: ctc.CTCProblem.check("ctc", *ctc_args, 0, True, v)),
        ("dropout.Dropout", "rng_mode"): ("RNGType", lambda v: dropout.Dropout(rng_mode=v)),
        ("fusion.FusionPlan", "dtype"): ("DataType", lambda v: fusion.FusionPlan((2, 3, 4, 4), v)),
        ("fusion.FusionPlan.conv_bias_activation", "dtype"): ("DataType", lambda v: fusion.FusionPlan.conv_bias_activation(
            (2, 3, 4, 4), (3, 3, 1, 1), v, pads=0, strides=1, dilations=1)),
        ("fusion.FusionPlan.conv_bias_activation", "activation"): ("ActivationMode", lambda v: _closing(
            fusion.FusionPlan.conv_bias_activation((2, 3, 4, 4), (3, 3, 1, 1), "float32", pads=0, strides=1,
                                                   dilations=1, activation=v))),
        ("fusion.FusionPlan.batch_norm_activation", "dtype"): (
            "DataType", lambda v: fusion.FusionPlan.batch_norm_activation((2, 3, 4, 4), v)),
        ("fusion.FusionPlan.batch_norm_activation", "mode"): ("BatchNormMode", lambda v: _closing(
            fusion.FusionPlan.batch_norm_activation((2, 3, 4, 4), "float32", mode=v))),
        ("fusion.FusionPlan.batch_norm_activation", "activation"): ("ActivationMode", lambda v: _closing(
            fusion.FusionPlan.batch_norm_activation((2, 3, 4, 4), "float32", activation=v))),
        ("fusion.FusionPlan.add_activation", "mode"): ("ActivationMode",
                                                       lambda v: _on_plan(fp, lambda pl: pl.add_activation(v))),
        ("fusion.FusionPlan.add_batch_norm_inference", "mode"): (
            "BatchNormMode", lambda v: _on_plan(fp, lambda pl: pl.add_batch_norm_inference(v))),
        ("lrn.lrn_forward", "mode"): ("LRNMode", lambda v: lrn.lrn_forward(x, y, v)),
        ("lrn.lrn_mode", "mode"): ("LRNMode", lambda v: lrn.lrn_mode(v)),
        ("pooling.pooling_forward", "mode"): ("PoolingMode", lambda v: pooling.pooling_forward(x, py, v, 2)),
        ("pooling.pooling_mode", "mode"): ("PoolingMode", lambda v: pooling.pooling_mode(v)),
        ("reduce.reduce_tensor", "op"): ("ReduceTensorOp", lambda v: reduce.reduce_tensor(a2, c2, v)),
        ("reduce.reduce_tensor", "nan_propagation"): (
            "NanPropagation", lambda v: reduce.reduce_tensor(a2, c2, "add", nan_propagation=v)),
        ("reduce.reduce_tensor", "indices_type"): (
            "IndicesType", lambda v: reduce.reduce_tensor(a2, c2, "add", indices_type=v)),
        ("reduce.reduce_tensor", "compute_type"): (
            "DataType", lambda v: reduce.reduce_tensor(a2, c2, "add", compute_type=v)),
        ("rnn.RNN", "mode"): ("RNNMode", lambda v: rnn.RNN(4, 4, mode=v)),
        ("rnn.RNN", "bidirectional"): ("RNNDirectionMode", lambda v: rnn.RNN(4, 4, bidirectional=v)),
        ("rnn.RNN", "input_mode"): ("RNNInputMode", lambda v: rnn.RNN(4, 4, input_mode=v)),
        ("rnn.RNN", "bias"): ("RNNBiasMode", lambda v: rnn.RNN(4, 4, bias=v)),
        ("rnn.RNN", "algo"): ("RNNAlgo", lambda v: rnn.RNN(4, 4, algo=v)),
        ("rnn.RNN", "dtype"): ("DataType", lambda v: rnn.RNN(4, 4, dtype=v)),
        ("softmax.softmax_algorithm", "algorithm"): ("SoftmaxAlgorithm", lambda v: sm.softmax_algorithm(v)),
        ("softmax.softmax_mode", "mode"): ("SoftmaxMode", lambda v: sm.softmax_mode(v)),
        ("softmax.softmax_forward", "algorithm"): ("SoftmaxAlgorithm",
                                                   lambda v: sm.softmax_forward(x, y, algorithm=v)),
        ("softmax.softmax_forward", "mode"): ("SoftmaxMode", lambda v: sm.softmax_forward(x, y, mode=v)),
        ("softmax.softmax_backward", "algorithm"): ("SoftmaxAlgorithm",
                                                    lambda v: sm.softmax_backward(y, dy, dx, algorithm=v)),
        ("softmax.softmax_backward", "mode"): ("SoftmaxMode", lambda v: sm.softmax_backward(y, dy, dx, mode=v)),
        ("softmax.log_softmax_forward", "mode"): ("SoftmaxMode", lambda v: sm.log_softmax_forward(x, y, mode=v)),
        ("softmax.log_softmax_backward", "mode"): ("SoftmaxMode",
                                                   lambda v: sm.log_softmax_backward(y, dy, dx, mode=v)),
        ("tensor_ops.op_tensor", "op"): ("TensorOp", lambda v: tensor_ops.op_tensor(v, a2, a2, a2)),
        ("caffe2.MIOPENActivationOp", "mode"): ("ActivationMode", lambda v: c2act.MIOPENActivationOp(v, ["X"], ["Y"])),
        ("caffe2.MIOPENActivationGradientOp", "mode"): (
            "ActivationMode", lambda v: c2act.MIOPENActivationGradientOp(v, ["Y", "dY"], ["dX"])),
    }


def _closing(obj: Any) -> None:
    obj.close()


def _on_plan(_: str, add: Callable[[Any], object]) -> None:
    from miopen.ops.fusion import FusionPlan

    with FusionPlan((2, 3, 4, 4), "float32") as plan:
        add(plan)


_ENUMISH = re.compile(r"\b(?:\w*(?:Mode|Algorithm|Algo|DataType)Like|api\.(\w+))\b")


def _enum_params(obj: Callable[..., Any], enums: dict[str, type[enum.IntEnum]]) -> list[str]:
    """The parameters of `obj` whose annotation names an enum (or an ...Like alias of one)."""
    out = []
    for name, prm in inspect.signature(obj).parameters.items():
        text = str(prm.annotation)
        if any(m.group(1) is None or m.group(1) in enums for m in _ENUMISH.finditer(text)):
            out.append(name)
    return out


def _introspected(enums: dict[str, type[enum.IntEnum]]) -> set[tuple[str, str]]:
    """(entry point, parameter) for every enum-ish parameter of the public ops (functions, classes, their
    public methods) and of the Caffe2 activation operators."""
    found: set[tuple[str, str]] = set()
    targets: list[tuple[str, Any]] = []
    for mod_name in OPS_MODULES:
        mod = importlib.import_module(f"miopen.ops.{mod_name}")
        for name in mod.__all__:
            targets.append((f"{mod_name}.{name}", getattr(mod, name)))
    c2 = importlib.import_module("miopen.caffe2.activation_ops")
    targets += [(f"caffe2.{n}", getattr(c2, n)) for n in ("MIOPENActivationOp", "MIOPENActivationGradientOp")]
    for qual, obj in targets:
        if inspect.isfunction(obj):
            found.update((qual, p) for p in _enum_params(obj, enums))
        elif inspect.isclass(obj) and not issubclass(obj, BaseException):
            if qual not in RESULTS:  # their constructors (the ops make them); their methods are entry points
                found.update((qual, p) for p in _enum_params(obj, enums))
            for attr, member in vars(obj).items():
                fn = member.__func__ if isinstance(member, (classmethod, staticmethod)) else member
                if not attr.startswith("_") and inspect.isfunction(fn):
                    found.update((f"{qual}.{attr}", p) for p in _enum_params(fn, enums) if p not in ("self", "cls"))
    return found


def test_the_table_covers_every_enum_parameter_of_the_ops(libs: Libs) -> None:
    enums = _enums()
    found, table = _introspected(enums), set(_entries())
    assert found - table == set(), "enum parameters the table lacks"
    assert table - found == set(), "table entries that are no enum parameter"


def _entry_ids() -> list[str]:
    # the table's keys without importing miopen at collection time
    src = inspect.getsource(_entries)
    return sorted({f"{a}:{b}" for a, b in re.findall(r'\("([\w.]+)", "(\w+)"\): \(', src)})


@pytest.mark.parametrize("entry", _entry_ids())
def test_a_member_of_another_enum_is_refused(libs: Libs, entry: str) -> None:
    """Every enum parameter of every op refuses a member of every other enum (today: ran as its int value),
    before any MIOpen call for it, with a short TypeError/ValueError naming the parameter."""
    qual, param = entry.split(":")
    own, call = _entries()[(qual, param)]
    enums = _enums()
    assert own in enums
    for other_name, other in enums.items():
        if other_name == own:
            continue
        member = next(iter(other))
        with pytest.raises((TypeError, ValueError)) as info:
            call(member)
        msg = str(info.value)
        assert param in msg, (entry, other_name, msg)
        assert len(msg) < LIMIT, (entry, other_name, len(msg))


@pytest.mark.parametrize("own", ["ActivationMode", "PoolingMode", "BatchNormMode", "LRNMode", "SoftmaxMode",
                                 "SoftmaxAlgorithm", "RNGType", "TensorOp", "ReduceTensorOp", "CTCLossAlgo",
                                 "DataType"])
def test_enum_arg_accepts_own_members_values_and_names(libs: Libs, own: str) -> None:
    """The one helper: a member, its int value and its name are accepted; bools, floats and another enum's
    member are not; the typed API (as_enum) agrees on everything but names."""
    from miopen._args import enum_arg
    from miopen._generated import _support as s

    cls = _enums()[own]
    for m in cls:
        assert enum_arg(m, cls, "p", "f") is m
        assert enum_arg(int(m), cls, "p", "f") is m
        assert enum_arg(m.name, cls, "p", "f") is m
        assert s.as_enum(int(m), cls, "p", "f") is m
    for bad in (True, 1.0, None, b"x"):
        with pytest.raises(TypeError, match="f: p must be a member of"):
            enum_arg(bad, cls, "p", "f")
    with pytest.raises(TypeError, match=r"its int value or its name; got miopenStatus_t"):
        enum_arg(next(iter(_enums()["Status"])), cls, "p", "f")
    with pytest.raises(TypeError, match=r"\) or its name; got int 0"):
        enum_arg(0, cls, "p", "f", ints=False)


def test_enum_errors_stay_short_for_every_enum_of_the_bound_release(libs: Libs) -> None:
    """Every enum of the bound release (each release's in scripts/test_releases.sh): a wrong type, an unknown int,
    an unknown name and a missing member each give a message under LIMIT that names the parameter and how to list
    every member."""
    from miopen._args import enum_arg
    from miopen._generated import _support as s
    aliases = {f"alias{i}": None for i in range(100)}  # a long table of runtime spellings is cut as well
    longest = 0
    for name, cls in _enums().items():
        calls: list[Callable[[], object]] = [
            lambda: s.as_enum("x", cls, "the_param", "fn"),
            lambda: s.as_enum(1 << 40, cls, "the_param", "fn"),
            lambda: enum_arg("y" * 10_000, cls, "the_param", "fn", aliases),  # type: ignore[arg-type]
            lambda: enum_arg(2.5, cls, "the_param", "fn", aliases),  # type: ignore[arg-type]
        ]
        for call in calls:
            with pytest.raises((TypeError, ValueError)) as info:
                call()
            msg = str(info.value)
            assert "the_param" in msg and len(msg) < LIMIT, (name, msg)
            if len(cls) > s.LIST_MAX:
                assert f"list(miopen.{name})" in msg or "valid:" in msg, msg
            longest = max(longest, len(msg))
        with pytest.raises(AttributeError) as attr:
            getattr(cls, "z" * 10_000)
        assert len(str(attr.value)) < LIMIT
    assert longest > 100  # the messages were really produced


def test_name_list_caps_and_counts() -> None:
    from miopen._generated._support import LIST_MAX, name_list, quoted

    assert name_list(["a", "b"]) == "a, b"
    many = name_list(range(100), see="list(x)")
    assert many == ", ".join(map(str, range(LIST_MAX))) + ", ... (100 in all; see list(x))"
    assert len(quoted("q" * 10_000)) <= 60


# --------------------------------------------------------------------------- dims and strides


class _FloatLike:
    """A numpy-float-like scalar: __float__, no __index__."""

    def __float__(self) -> float:
        return 2.0

    def __repr__(self) -> str:
        return "float64(2.0)"


class _IntLike:
    """A numpy-int-like scalar: __index__ (accepted)."""

    def __init__(self, v: int) -> None:
        self.v = v

    def __index__(self) -> int:
        return self.v


def _bad_scalars() -> st.SearchStrategy[object]:
    strategies = [st.booleans(), st.floats(allow_nan=True), st.text(max_size=5), st.just(_FloatLike()),
                  st.integers(max_value=-1), st.integers(min_value=1 << 63, max_value=1 << 80),
                  st.just(None), st.just(b"2")]
    try:  # numpy scalars too, when numpy is there
        import numpy as np

        strategies += [st.sampled_from([np.float32(2.0), np.float64(3.0), np.bool_(True), np.int64(-1)])]
    except ImportError:
        pass
    return st.one_of(*strategies)


class _CAI:
    def __init__(self, shape: object, strides: object = None) -> None:
        self.__cuda_array_interface__ = {"shape": shape, "typestr": "<f4", "strides": strides, "data": (X, False),
                                         "version": 3}


def _dim_entries() -> dict[str, tuple[str, Callable[[tuple[object, ...]], object]]]:
    """entry -> (parameter named in the error, a call given 4 values in the parameter's place)."""
    from miopen import descriptors
    from miopen.caffe2 import TensorDescriptors, miopenTensorDescWrapper
    from miopen.ops import conv, pooling
    from miopen.tensor import Tensor, as_tensor

    x, y = T(X, (2, 3, 4, 4)), T(Y, (2, 3, 2, 2))
    wrapper = miopenTensorDescWrapper()  # its own descriptor, created here (not by the call checked)
    return {
        "Tensor.make dims": ("dims", lambda v: Tensor.make(X, v, "float32")),
        "Tensor.make strides": ("strides", lambda v: Tensor.make(X, (2, 3, 4, 4), "float32", v)),
        "as_tensor shape": ("shape", lambda v: as_tensor(_CAI(v))),
        "as_tensor strides": ("strides", lambda v: as_tensor(_CAI((2, 3, 4, 4), tuple(4 * e if type(e) is int
                                                                                        else e for e in v)))),
        "tensor_descriptor dims": ("dims", lambda v: descriptors.tensor_descriptor("float32", v)),
        "conv_output_dims x_dims": ("x_dims", lambda v: conv.conv_output_dims(v, (3, 3, 1, 1), 0, 1, 1)),
        "conv_output_dims pads": ("pads", lambda v: conv.conv_output_dims((2, 3, 4, 4), (3, 3, 1, 1), v[:2], 1, 1)),
        "pooling_forward window": ("window", lambda v: pooling.pooling_forward(x, y, "max", v[:2])),
        "TensorDescriptors dim": ("dim", lambda v: TensorDescriptors(2, v, None, "float32")),
        "TensorDescriptors stride": ("stride", lambda v: TensorDescriptors(2, (2, 3, 4, 4), v, "float32")),
        "miopenTensorDescWrapper dims": ("dims", lambda v: wrapper.descriptor("float32", v)),
    }


@pytest.mark.parametrize("entry", sorted(re.findall(r'"([\w. ]+)": \("', inspect.getsource(_dim_entries))))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(bad=_bad_scalars(), at=st.integers(0, 1))
def test_bad_dims_and_strides_are_refused_with_the_parameter_named(libs: Libs, entry: str, bad: object,
                                                                   at: int) -> None:
    """bool, float, str, None, bytes, numpy-like floats, negative and huge values: never coerced, always a
    TypeError/ValueError naming the parameter, before any MIOpen call."""
    param, call = _dim_entries()[entry]
    values: list[object] = [2, 3, 4, 4]
    values[at] = bad
    start = len(libs.log())
    with pytest.raises((TypeError, ValueError)) as info:
        call(tuple(values))
    msg = str(info.value)
    assert param in msg and len(msg) < LIMIT, msg
    if isinstance(bad, (bool, float, str, bytes, _FloatLike)) and entry.startswith(("Tensor.", "as_tensor")):
        assert f"{param}[{at}]" in msg, msg  # the index too
    assert [e for e in libs.log()[start:] if e[""] not in ("miopenGetVersion",)] == []


def test_index_objects_are_accepted(libs: Libs) -> None:
    from miopen.tensor import Tensor

    t = Tensor.make(X, (_IntLike(2), 3), "float32", [_IntLike(3), 1])  # type: ignore[list-item]
    assert (t.dims, t.strides) == ((2, 3), (3, 1))
    assert all(type(v) is int for v in t.dims + t.strides)


# --------------------------------------------------------------------------- re-entering a state


def _in_thread(fn: Callable[[], object], timeout: float = 10.0) -> BaseException | None:
    """Run `fn` in a thread; what it raised (None: nothing). A hang fails the test instead of hanging it."""
    box: list[BaseException | None] = [None]

    def run() -> None:
        try:
            fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            box[0] = exc

    th = threading.Thread(target=run, daemon=True)
    th.start()
    th.join(timeout)
    assert not th.is_alive(), "deadlocked: re-entering the state did not raise"
    return box[0]


def _nested_runtime() -> None:
    import miopen

    with miopen.with_miopen_state(0):
        with miopen.with_miopen_state(0):
            pass


def _nested_caffe2() -> None:
    from miopen import caffe2

    w = caffe2.MIOPENWrapper(0)
    w.with_miopen_state(1, lambda st: w.with_miopen_state(1, lambda inner: None))


def _nested_mutex() -> None:
    from miopen import caffe2

    synced = caffe2.miopen_states()[0][2]
    with synced.mutex:
        synced.reset()


@pytest.mark.parametrize("nested, idx", [(_nested_runtime, 0), (_nested_caffe2, 1), (_nested_mutex, 2)])
def test_reentering_a_state_in_one_thread_raises(libs: Libs, nested: Callable[[], None], idx: int) -> None:
    err = _in_thread(nested)
    assert isinstance(err, RuntimeError), err
    assert f"state {idx} of device 0" in str(err) and "another state_idx" in str(err)
    import miopen

    from miopen import state

    def again() -> None:
        with miopen.with_miopen_state(idx):
            pass

    assert _in_thread(again) is None  # released by the failed inner entry's unwinding
    assert not state.miopen_states()[0][idx].lock.locked()


def test_other_threads_still_wait_for_the_holder(libs: Libs) -> None:
    import miopen

    entered, release, order = threading.Event(), threading.Event(), []

    def holder() -> None:
        with miopen.with_miopen_state(0):
            entered.set()
            release.wait(10)
            order.append("holder done")

    def waiter() -> None:
        with miopen.with_miopen_state(0):
            order.append("waiter in")

    h = threading.Thread(target=holder, daemon=True)
    h.start()
    assert entered.wait(10)
    w = threading.Thread(target=waiter, daemon=True)
    w.start()
    w.join(0.3)
    assert w.is_alive() and order == []  # blocked, not refused
    release.set()
    h.join(10)
    w.join(10)
    assert order == ["holder done", "waiter in"]
    with miopen.with_miopen_state(1):  # the nested-but-other index is fine
        with miopen.with_miopen_state(2):
            pass


# --------------------------------------------------------------------------- Caffe2's TensorDescriptors


def test_caffe2_tensor_descriptors_create_set_and_destroy_each_once(libs: Libs) -> None:
    from miopen import caffe2
    from miopen.ops.rnn import RNN

    start = len(libs.log())
    tds = caffe2.TensorDescriptors(3, [4, 8], [8, 1], caffe2.miopenTypeWrapperHalf)
    log = libs.log()[start:]
    assert [e[""] for e in log] == ["miopenCreateTensorDescriptor", "miopenSetTensorDescriptor"] * 3
    descs = tds.descs()
    assert len({id(d) for d in descs}) == 3 and len(tds) == 3 and not any(d.closed for d in descs)
    for e in log[1::2]:  # each set to the dims, strides and T's type
        assert e["dataType"] == str(int(caffe2.miopenTypeWrapperHalf.type))
        assert (e["nbDims"], e["dimsA"], e["stridesA"]) == ("2", "[4,8]", "[8,1]")
    assert (tds.dims, tds.strides, tds.T) == ((4, 8), (8, 1), caffe2.miopenTypeWrapperHalf)
    assert caffe2.TensorDescriptors(1, [4, 8], None, "float32").T is caffe2.miopenTypeWrapperF32

    with RNN(8, 8, mode="gru", dtype="float16") as rnn:  # descs() is what the RNN calls take
        mark = len(libs.log())
        rnn.workspace_size(tds.descs())
        ws = [e for e in libs.log()[mark:] if e[""] == "miopenGetRNNWorkspaceSize"]
        assert len(ws) == 1 and ws[0]["sequenceLen"] == "3"

    mark = len(libs.log())
    with tds:
        pass
    tds.close()
    del tds
    import gc

    gc.collect()
    destroyed = [e for e in libs.log()[mark:] if e[""] == "miopenDestroyTensorDescriptor"]
    assert len(destroyed) == 3 and all(d.closed for d in descs)  # each once: not again by close() or the GC


def test_caffe2_tensor_descriptors_checks_before_any_call(libs: Libs) -> None:
    from miopen import caffe2

    start = len(libs.log())
    for args, exc, match in [
        ((0, [4, 8], [8, 1], "float32"), ValueError, "n must be a positive int"),
        ((2, [4, 8], [8], "float32"), ValueError, "dims and strides must have the same length"),
        ((2, [4, 8.0], [8, 1], "float32"), TypeError, r"dim\[1\] must be an int"),
        ((2, [4, 8], [8, 1], "int8"), TypeError, "no type wrapper for miopenInt8"),
        ((2, [4, 8], [8, 1], caffe2.miopenTypeWrapperF32.type.__class__.miopenHalf), None, None),
    ]:
        if exc is None:
            caffe2.TensorDescriptors(*args).close()
            continue
        with pytest.raises(exc, match=match):
            caffe2.TensorDescriptors(*args)
    closed = caffe2.TensorDescriptors(1, [1, 1], None, "float32")
    closed.close()
    with pytest.raises(ValueError, match="closed"):
        closed.descs()
    assert start <= len(libs.log())
