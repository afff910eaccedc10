"""Checks of the real Debian-built MIOpen 3.x releases (tests/real/library/test_real_debian.py), run in a worker on the Debian
root's own Python with the stand-in GPU (tests/fixtures/standin_gpu): one gfx90a device, 104 compute units, 64 GiB.

Two kinds:
- `sweep`: every function of the bound release's typed API, called with arguments built from its signature
  (a valid object of each descriptor type, a 64 MiB buffer for device memory, small numbers); the outcome of each
  (success, MIOpen's status, a missing export, or a death inside the C call) is what the coverage table records.
- the focused checks (`CHECKS`): answers compared with values computed here from MIOpen's formulas
  (src/tensor.cpp, src/convolution.cpp, src/pooling.cpp), or with what the stand-in device is.

Nothing here assumes one release: the enums and functions come from the bound release, names are looked up.
"""

from __future__ import annotations

import ctypes
import functools
import inspect
from collections.abc import Callable
from typing import Any

import miopen

from . import trace

#: focused check name -> the C functions it claims (verified against the trace by the test)
CHECKS: dict[str, tuple[str, ...]] = {}


def check(*functions: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        CHECKS[fn.__name__] = functions
        return fn

    return register


# ---------------------------------------------------------------------------- objects of every handle type

BUFFER_BYTES = 64 << 20


@functools.cache
def buffer() -> int:
    """The address of 64 MiB of "device" memory (host memory: the stand-in GPU's memory is host memory)."""
    buf = ctypes.create_string_buffer(BUFFER_BYTES)
    _KEEP.append(buf)
    return ctypes.addressof(buf) + 4096  # leave room before it for offsets MIOpen may subtract


_KEEP: list[Any] = []


_HANDLE: list[Any] = []


def handle() -> Any:
    """The worker's handle (a new one after a check destroyed it)."""
    if not _HANDLE or _HANDLE[0].closed:
        _HANDLE[:] = [miopen.create()]
    return _HANDLE[0]


def tensor4(n: int = 2, c: int = 4, h: int = 8, w: int = 8, dtype: Any = None) -> Any:
    d = miopen.create_tensor_descriptor()
    miopen.set_4d_tensor_descriptor(d, miopen.DataType.miopenFloat if dtype is None else dtype, n, c, h, w)
    return d


def conv2d(pad: int = 1, stride: int = 1, dilation: int = 1) -> Any:
    c = miopen.create_convolution_descriptor()
    miopen.init_convolution_descriptor(c, miopen.ConvolutionMode(0), pad, pad, stride, stride, dilation, dilation)
    return c


def _factories() -> dict[str, Callable[[], Any]]:
    """A valid object per typed-handle class name (set, where MIOpen needs it set before use)."""
    m = miopen

    def pooling() -> Any:
        p = m.create_pooling_descriptor()
        m.set_2d_pooling_descriptor(p, m.PoolingMode(0), 2, 2, 0, 0, 2, 2)
        return p

    def lrn() -> Any:
        d = m.create_lrn_descriptor()
        m.set_lrn_descriptor(d, m.LRNMode(0), 5, 1e-4, 0.75, 2.0)
        return d

    def activation() -> Any:
        d = m.create_activation_descriptor()
        m.set_activation_descriptor(d, m.ActivationMode(3), 1.0, 0.0, 1.0)  # ReLU
        return d

    def rnn() -> Any:
        d = m.create_rnn_descriptor()
        m.set_rnn_descriptor(d, 8, 1, m.RNNInputMode(0), m.RNNDirectionMode(0), m.RNNMode(2), m.RNNBiasMode(1),
                             m.RNNAlgo(0), m.DataType.miopenFloat)  # LSTM, hidden 8, one layer
        return d

    def ctc() -> Any:
        d = m.create_ctc_loss_descriptor()
        m.set_ctc_loss_descriptor(d, m.DataType.miopenFloat, 0, False)
        return d

    def reduce() -> Any:
        d = m.create_reduce_tensor_descriptor()
        m.set_reduce_tensor_descriptor(d, m.ReduceTensorOp(0), m.DataType.miopenFloat, m.NanPropagation(0),
                                       m.ReduceTensorIndices(0), m.IndicesType(0))
        return d

    def plan() -> Any:
        return m.create_fusion_plan(m.FusionDirection(0), tensor4())

    def fusion_op() -> Any:
        return m.create_op_conv_forward(plan(), conv2d(), tensor4(8, 4, 3, 3))

    def problem() -> Any:
        return m.create_conv_problem(conv2d(), m.ProblemDirection(0))

    def solution() -> Any:
        p = problem()
        for arg, t in ((0, tensor4(2, 4, 8, 8)), (1, tensor4(8, 4, 3, 3)), (2, tensor4(2, 8, 8, 8))):
            m.set_problem_tensor_descriptor(p, m.TensorArgumentId(arg + 1), t)
        found = m.find_solutions(handle(), p, None, 1)
        return found[0]

    def seq() -> Any:
        d = m.create_seq_tensor_descriptor()
        m.set_rnn_data_seq_tensor_descriptor(d, m.DataType.miopenFloat, m.RNNBaseLayout(1), 4, 2, 5, [4, 3])
        return d

    def backend() -> Any:
        return m.backend_create_descriptor(m.BackendDescriptorType(0))

    return {"Handle": handle, "TensorDescriptor": tensor4, "ConvolutionDescriptor": conv2d,
            "PoolingDescriptor": pooling, "LRNDescriptor": lrn, "ActivationDescriptor": activation,
            "RNNDescriptor": rnn, "CTCLossDescriptor": ctc, "DropoutDescriptor": m.create_dropout_descriptor,
            "ReduceTensorDescriptor": reduce, "FusionPlanDescriptor": plan, "FusionOpDescriptor": fusion_op,
            "OperatorArgs": m.create_operator_args, "Problem": problem, "FindOptions": m.create_find_options,
            "Solution": solution, "SeqTensorDescriptor": seq, "MhaDescriptor": m.create_mha_descriptor,
            "SoftmaxDescriptor": m.create_softmax_descriptor, "BackendDescriptor": backend}


class NoArgument(Exception):
    """An argument of this type could not be made (its constructor failed): the function is not called."""


def _object(cls: str) -> Any:
    make = _factories().get(cls)
    if make is None:
        raise NoArgument(f"no factory for {cls}")
    try:
        return make()
    except Exception as exc:  # noqa: BLE001 - the reason goes into the table
        why = str(exc).splitlines()[0].split("; arguments:")[0][:120]  # no addresses: the table is stable
        raise NoArgument(f"making a {cls}: {type(exc).__name__}: {why}") from None


def argument(name: str, annotation: str) -> Any:
    """A value for one parameter, from its annotation (the typed API's own, as a string)."""
    depth, cut, kinds = 0, 0, []
    for i, ch in enumerate(annotation + "|"):  # "|" outside brackets separates the alternatives
        depth += {"[": 1, "]": -1}.get(ch, 0)
        if ch == "|" and depth == 0:
            kinds.append(annotation[cut:i].strip())
            cut = i + 1
    main = kinds[0]
    if main == "DeviceBuffer":
        return buffer()
    if main.startswith("Sequence["):
        inner = main[len("Sequence["):-1]
        if inner == "int":
            # one length for every array of a call (the typed API checks that they agree)
            return [1, 1, 8, 8] if "dim" in name.lower() or "len" in name.lower() else [1, 1, 1, 1]
        if inner == "float":
            return [1.0, 1.0, 1.0, 1.0]
        if inner.startswith("float | int"):  # the graph API's elements, typed by the attribute type (0: handles)
            return [1, 1, 1, 1]
        if inner.startswith("DeviceBuffer"):
            return [buffer(), buffer()]
        return [argument(name, inner), argument(name, inner)]
    if main == "int":
        lowered = name.lower()
        if "size" in lowered or "bytes" in lowered:
            return BUFFER_BYTES // 2
        return 1
    if main == "float":
        return 1.0
    if main == "bool":
        return False
    if main in ("Stream", "Callable[..., Any]"):
        return None
    if main in ("bytes", "str"):
        return b"" if main == "bytes" else ""
    enum = getattr(miopen, main, None)
    if isinstance(enum, type) and "int" in kinds:
        members = list(enum)
        return next((e for e in members if int(e) == 0), members[0])
    if "None" in kinds and main not in _factories():
        return None
    return _object(main)


def _signature(fn: Callable[..., Any]) -> list[tuple[str, str]]:
    return [(p.name, str(p.annotation)) for p in inspect.signature(fn).parameters.values()]


def bound_api() -> Any:
    """The typed API module of the bound release (its functions are the ones `miopen.<name>` binds)."""
    import importlib

    from miopen._generated._target import MODULES

    return importlib.import_module(f"miopen._generated.{MODULES[miopen.bound_release()]}.api")


def functions() -> dict[str, str]:
    """C function -> typed API name, for every function of the bound release."""
    out = {}
    api = bound_api()
    for name in api.__all__:
        fn = getattr(api, name)
        if inspect.isfunction(fn) and fn.__doc__ and fn.__doc__.startswith("miopen"):
            out[fn.__doc__.split("(")[0]] = name
    return out


def outcome_of(c_name: str, api_name: str) -> str:
    """Call one function with made-up valid-looking arguments; what happened, in a few words."""
    fn = getattr(bound_api(), api_name)
    try:
        args = [argument(n, a) for n, a in _signature(fn)]
    except NoArgument as exc:
        return f"not called: {exc}"
    before = trace.count(c_name)
    try:
        fn(*args)
    except miopen.MIOpenError as exc:
        return exc.status.name if hasattr(exc.status, "name") else f"status {int(exc.status)}"
    except miopen.MissingSymbolError:
        return "missing: the library does not export it"
    except (TypeError, ValueError) as exc:
        return f"refused by the typed API: {type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
    if trace.count(c_name) == before:
        return "not reached"
    return "miopenStatusSuccess"


def sweep(names: list[str], record: str) -> None:
    """The outcome of each function, appended to the file `record` as it comes ("name<TAB>outcome" lines: a
    forked child runs this, and what it found before MIOpen killed it stays); a death is attributed by the last
    note."""
    import os

    table = functions()
    fd = os.open(record, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        for c_name in names:
            trace.note(c_name)
            os.write(fd, f"{c_name}\t{outcome_of(c_name, table[c_name])}\n".encode())
    finally:
        os.close(fd)


# ---------------------------------------------------------------------------- focused checks

#: element sizes by data type name (TensorDescriptor::GetNumBytes: GetTypeSize)
ITEMSIZE = {"miopenHalf": 2, "miopenFloat": 4, "miopenInt32": 4, "miopenInt8": 1, "miopenInt8x4": 1,
            "miopenBFloat16": 2, "miopenDouble": 8, "miopenFloat8": 1, "miopenBFloat8": 1, "miopenFloat8_fnuz": 1,
            "miopenBFloat8_fnuz": 1, "miopenInt64": 8}


def packed(dims: list[int]) -> list[int]:
    out, acc = [], 1
    for d in reversed(dims):
        out.append(acc)
        acc *= d
    return out[::-1]


@check("miopenGetVersion", "miopenGetErrorString")
def version_and_errors() -> dict[str, Any]:
    v = miopen.get_version()
    for status in miopen.Status:
        text = miopen.get_error_string(status)
        assert isinstance(text, str) and text, status
    return {"version": f"{v.major}.{v.minor}.{v.patch}"}


@check("miopenCreateTensorDescriptor", "miopenSetTensorDescriptor", "miopenGetTensorDescriptor",
       "miopenGetTensorNumBytes", "miopenSet4dTensorDescriptor", "miopenGet4dTensorDescriptor")
def data_types_reach_c() -> dict[str, Any]:
    """Every data type of the bound release reaches C as its value: the tensor keeps it, and its byte count is
    that type's size times the element count. Returns value -> (name, bytes per element) as the library sized it."""
    seen = {}
    for dt in miopen.DataType:
        dims = [2, 3, 5, 7]
        d = miopen.create_tensor_descriptor()
        try:
            miopen.set_tensor_descriptor(d, dt, dims, packed(dims))
        except miopen.MIOpenError as exc:
            seen[int(dt)] = (dt.name, exc.status.name)
            continue
        got = miopen.get_tensor_descriptor(d)
        assert (int(got.data_type), got.dims_a, got.strides_a) == (int(dt), dims, packed(dims))
        nbytes = miopen.get_tensor_num_bytes(d)
        assert nbytes % 210 == 0, (dt, nbytes)
        seen[int(dt)] = (dt.name, nbytes // 210)
        if dt.name in ITEMSIZE:
            assert nbytes == 210 * ITEMSIZE[dt.name], (dt.name, nbytes)
        d4 = tensor4(8, 64, 56, 56, dt)
        g4 = miopen.get_4d_tensor_descriptor(d4)
        assert [g4.n_stride, g4.c_stride, g4.h_stride, g4.w_stride] == packed([8, 64, 56, 56])
    return seen


def conv_out(size: int, k: int, pad: int, stride: int, dil: int) -> int:
    """src/convolution.cpp GetForwardOutputTensor: max(1, (in + 2p - (1 + d(k - 1))) / s + 1)."""
    return max(1, (size + 2 * pad - (1 + dil * (k - 1))) // stride + 1)


@check("miopenInitConvolutionDescriptor", "miopenGetConvolutionForwardOutputDim",
       "miopenInitConvolutionNdDescriptor", "miopenGetConvolutionNdForwardOutputDim",
       "miopenSetConvolutionGroupCount")
def conv_output_dims() -> int:
    n_checked = 0
    for size in (1, 7, 28, 56):
        for k in (1, 3, 5):
            for pad in (0, 1, 2):
                for stride in (1, 2, 3):
                    for dil in (1, 2):
                        if size + 2 * pad < 1 + dil * (k - 1):
                            continue
                        c = conv2d(pad, stride, dil)
                        got = miopen.get_convolution_forward_output_dim(c, tensor4(2, 8, size, size),
                                                                        tensor4(16, 8, k, k))
                        want = conv_out(size, k, pad, stride, dil)
                        assert (got.n, got.c, got.h, got.w) == (2, 16, want, want), (size, k, pad, stride, dil)
                        n_checked += 1
    # 3-D with groups: channels per group
    c = miopen.create_convolution_descriptor()
    miopen.init_convolution_nd_descriptor(c, [1, 0, 2], [1, 2, 1], [1, 1, 2], miopen.ConvolutionMode(0))
    miopen.set_convolution_group_count(c, 4)
    x, w = miopen.create_tensor_descriptor(), miopen.create_tensor_descriptor()
    miopen.set_tensor_descriptor(x, miopen.DataType.miopenFloat, [2, 8, 9, 10, 11], packed([2, 8, 9, 10, 11]))
    miopen.set_tensor_descriptor(w, miopen.DataType.miopenFloat, [12, 2, 3, 3, 3], packed([12, 2, 3, 3, 3]))
    got = miopen.get_convolution_nd_forward_output_dim(c, x, w)
    assert got.output_tensor_dim_a == [2, 12, conv_out(9, 3, 1, 1, 1), conv_out(10, 3, 0, 2, 1), conv_out(11, 3, 2, 1, 2)], got
    return n_checked + 1


@check("miopenSet2dPoolingDescriptor", "miopenGetPoolingForwardOutputDim", "miopenPoolingGetWorkSpaceSizeV2")
def pooling_output_dims() -> int:
    """src/pooling.cpp GetForwardOutputTensor: (in + 2p - k) / s + 1 (k <= in + 2p here); the max-pooling
    workspace (index mode, uint8 indices) is one index per output element."""
    n = 0
    for size in (4, 7, 16):
        for k, pad, stride in ((2, 0, 2), (3, 1, 2), (3, 1, 1), (4, 0, 3)):
            p = miopen.create_pooling_descriptor()
            miopen.set_2d_pooling_descriptor(p, miopen.PoolingMode(0), k, k, pad, pad, stride, stride)
            got = miopen.get_pooling_forward_output_dim(p, tensor4(2, 3, size, size))
            want = (size + 2 * pad - k) // stride + 1
            assert (got.n, got.c, got.h, got.w) == (2, 3, want, want)
            ws = miopen.pooling_get_work_space_size_v2(p, tensor4(2, 3, want, want))
            assert ws >= 2 * 3 * want * want, (size, k, ws)
            n += 1
    return n


@check("miopenCreate", "miopenConvolutionForwardGetSolutionCount", "miopenConvolutionForwardGetSolution",
       "miopenConvolutionForwardGetSolutionWorkspaceSize", "miopenConvolutionForwardGetWorkSpaceSize",
       "miopenConvolutionBackwardDataGetSolutionCount", "miopenConvolutionBackwardDataGetSolution",
       "miopenConvolutionBackwardWeightsGetSolutionCount", "miopenConvolutionBackwardWeightsGetSolution")
def conv_solutions() -> dict[str, Any]:
    """The 3x3 convolution of the issue (8x64x56x56, 128 filters, pad 1) on the stand-in gfx90a: the solutions
    each direction lists, with their workspace; each solution's own workspace query agrees with its listing, and
    the legacy workspace size covers every listed solution."""
    x, w, y, c = tensor4(8, 64, 56, 56), tensor4(128, 64, 3, 3), tensor4(8, 128, 56, 56), conv2d()
    h = handle()
    out: dict[str, Any] = {}
    count = miopen.convolution_forward_get_solution_count(h, w, x, c, y)
    sols = miopen.convolution_forward_get_solution(h, w, x, c, y, count)
    assert len(sols) == count
    for s in sols:
        assert miopen.convolution_forward_get_solution_workspace_size(h, w, x, c, y, s.solution_id) == s.workspace_size
    assert miopen.convolution_forward_get_work_space_size(h, w, x, c, y) >= max(s.workspace_size for s in sols)
    out["fwd"] = [(s.solution_id, int(s.algorithm), s.workspace_size) for s in sols]
    n = miopen.convolution_backward_data_get_solution_count(h, y, w, c, x)
    out["bwd"] = [(s.solution_id, int(s.algorithm)) for s in
                  miopen.convolution_backward_data_get_solution(h, y, w, c, x, n)]
    n = miopen.convolution_backward_weights_get_solution_count(h, y, x, c, w)
    out["wrw"] = [(s.solution_id, int(s.algorithm)) for s in
                  miopen.convolution_backward_weights_get_solution(h, y, x, c, w, n)]
    return out


@check("miopenCreateRNNDescriptor", "miopenSetRNNDescriptor", "miopenGetRNNParamsSize")
def rnn_sizes() -> dict[str, int]:
    """LSTM, hidden 32, 2 layers, input 16, with bias (src/rnn.cpp paramsCal): 4 gates x (input x hidden +
    hidden x hidden) for layer 1, 4 x (2 x hidden x hidden) after, + 2 x 4 x hidden biases per layer; floats."""
    m = miopen
    d = m.create_rnn_descriptor()
    m.set_rnn_descriptor(d, 32, 2, m.RNNInputMode(0), m.RNNDirectionMode(0), m.RNNMode(2), m.RNNBiasMode(1),
                         m.RNNAlgo(0), m.DataType.miopenFloat)
    x = miopen.create_tensor_descriptor()
    miopen.set_tensor_descriptor(x, m.DataType.miopenFloat, [4, 16], [16, 1])
    want = 4 * (16 * 32 + 32 * 32) + 4 * (2 * 32 * 32) + 2 * 2 * 4 * 32
    got = m.get_rnn_params_size(handle(), d, x, m.DataType.miopenFloat)
    assert got == 4 * want, (got, want)
    return {"params_bytes": got}


@check("miopenDropoutGetStatesSize", "miopenDropoutGetReserveSpaceSize")
def dropout_sizes() -> dict[str, int]:
    """States: PRNG states for the threads of the launch, which MIOpen sizes from the device (non-zero with the
    stand-in's 104 compute units; 0 on 2.17.0's no-GPU handle); reserve: one byte per element."""
    states = miopen.dropout_get_states_size(handle())
    assert states > 0, states
    reserve = miopen.dropout_get_reserve_space_size(tensor4(2, 4, 8, 8))
    assert reserve == 2 * 4 * 8 * 8, reserve
    return {"states": states, "reserve": reserve}


@check("miopenCreateReduceTensorDescriptor", "miopenSetReduceTensorDescriptor", "miopenGetReductionWorkspaceSize",
       "miopenGetReductionIndicesSize")
def reduce_sizes() -> dict[str, int]:
    m = miopen
    d = m.create_reduce_tensor_descriptor()
    m.set_reduce_tensor_descriptor(d, m.ReduceTensorOp(0), m.DataType.miopenFloat, m.NanPropagation(0),
                                   m.ReduceTensorIndices(0), m.IndicesType(0))
    a, c = tensor4(2, 3, 4, 5), tensor4(2, 1, 4, 5)
    ws = m.get_reduction_workspace_size(handle(), d, a, c)
    idx = m.get_reduction_indices_size(handle(), d, a, c)
    assert idx == 0  # no indices asked for
    return {"workspace": ws, "indices": idx}
