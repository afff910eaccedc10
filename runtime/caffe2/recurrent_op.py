"""Caffe2's `recurrent_op_miopen.h` by its own names, over `miopen.ops.rnn.RNN`.

Blobs, as Caffe2's schemas have them (X is (seq_len, batch, input_size)):

* ``RecurrentOp``: inputs [INPUT, HIDDEN_INPUT, CELL_INPUT, WEIGHT]; outputs [OUTPUT,
  HIDDEN_OUTPUT, CELL_OUTPUT, RNN_SCRATCH, DROPOUT_STATES]. Training (``is_test=False``) runs
  `miopenRNNForwardTraining` and puts the `RNNReserve` in RNN_SCRATCH; inference
  (``is_test=True``) runs `miopenRNNForwardInference` and leaves None there.
* ``RecurrentGradientOp``: inputs [INPUT, HIDDEN_INPUT, CELL_INPUT, WEIGHT, RNN_SCRATCH, OUTPUT,
  GRAD_OUTPUT(, GRAD_HIDDEN_OUTPUT, GRAD_CELL_OUTPUT)]; outputs [GRAD_INPUT, GRAD_HIDDEN_INPUT,
  GRAD_CELL_INPUT, GRAD_WEIGHT, DROPOUT_STATES, RNN_SCRATCH_OUT]. It zeroes GRAD_WEIGHT, then runs
  backward data and backward weights on the forward operator's RNN (the one that made the
  reserve), and hands the reserve on (RNN_SCRATCH_OUT may be RNN_SCRATCH itself).
* ``RecurrentParamAccessOp(RecurrentParamOpMode.GET_PARAM, ...)``: inputs [INPUT, WEIGHT],
  output [PARAM]; ``SET_PARAM``: inputs [INPUT, WEIGHT, PARAM], output [WEIGHT] (in place). One
  weight matrix or bias of one layer, located with MIOpen's layer param/bias offset and size
  calls and copied device to device on the operator's stream.

Arguments: ``hidden_size``, ``num_layers``, ``bidirectional`` (bool or 0/1), ``rnn_mode``
("lstm", "gru", "relu", "tanh"), ``input_mode`` ("linear", "skip"), ``dropout`` (between layers;
the RNN owns its dropout descriptor and generator states, which go to DROPOUT_STATES) and
``seed``. Forward and backward run on MIOpen state 0 (its handle, stream and scratch).

Differences from Caffe2: RNN_SCRATCH holds the `RNNReserve` (the reserve plus the backward
workspace that MIOpen's backward-weights pass reads from backward data), not a float tensor;
relu/tanh RNNs are accepted; the weights are checked before the param operators read them; a
SET_PARAM writes the packed weights (Caffe2's copied into scratch memory and was lost).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from typing import Literal

from .. import descriptors as _descriptors
from .._args import int_seq
from .. import backend as _backend
from .._generated import api
from ..descriptors import DataTypeLike
from ..errors import ShapeError
from ..layout import is_packed
from ..ops.rnn import RNN, RNNReserve, ReserveMismatchError
from .scopes import BlobScope
from ..tensor import Tensor
from .common import TypeWrapper, miopenTypeWrapper
from .operator import MIOPENOperator
from .wrapper import MIOPENState

__all__ = ["TensorDescriptors", "RecurrentBaseOp", "RecurrentOp", "RecurrentGradientOp", "RecurrentParamAccessOp", "RecurrentParamOpMode",
           "SET_PARAM", "GET_PARAM", "PARAM_TYPES"]

RNN_MODES = ("lstm", "gru", "relu", "tanh")
INPUT_MODES = ("linear", "skip")

#: Caffe2's param_type names -> (gate index, is bias); the param id is gate + gates * (input_type == "recurrent")
PARAM_TYPES: dict[str, dict[str, tuple[int, bool]]] = {
    "lstm": {"input_gate_w": (0, False), "forget_gate_w": (1, False), "output_gate_w": (2, False),
             "cell_w": (3, False), "input_gate_b": (0, True), "forget_gate_b": (1, True),
             "output_gate_b": (2, True), "cell_b": (3, True)},
    # MIOpen's GRU order: update gate, reset gate, new memory gate
    "gru": {"update_gate_w": (0, False), "reset_gate_w": (1, False), "new_memory_w": (2, False),
            "update_gate_b": (0, True), "reset_gate_b": (1, True), "new_memory_b": (2, True)},
    "relu": {"w": (0, False), "b": (0, True)},
    "tanh": {"w": (0, False), "b": (0, True)},
}
_GATES = {"lstm": 4, "gru": 3, "relu": 1, "tanh": 1}


class RecurrentParamOpMode(enum.Enum):
    SET_PARAM = "SET_PARAM"
    GET_PARAM = "GET_PARAM"


SET_PARAM = RecurrentParamOpMode.SET_PARAM
GET_PARAM = RecurrentParamOpMode.GET_PARAM


def _positive(value: object, name: str, op: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{op}: {name} must be an int > 0; got {value!r}")
    return value


def _choice(value: object, name: str, op: str, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value.strip().lower() not in choices:
        raise ValueError(f"{op}: {name} must be one of {', '.join(repr(c) for c in choices)}; got {value!r}")
    return value.strip().lower()


class TensorDescriptors:
    """Caffe2's ``detail::TensorDescriptors<T>`` (recurrent_op_miopen.h): `n` tensor descriptors of their
    own, one per time step, each created and set (`miopenSetTensorDescriptor`) to `dim` and `stride` with
    T's data type (`miopenTypeWrapper<T>::type`). `descs()` is the array the RNN calls take (per-step x or
    y descriptors); `close()` (or `with`; Caffe2's destructor) destroys each once.

    `T` is a type wrapper (`miopenTypeWrapperF32`, ...) or anything `miopenTypeWrapper` takes ("float32").
    A layer over `miopen.descriptors.TensorDescriptors(..., owned=True)`. Differences from Caffe2:
    ``stride=None`` means packed strides; dims and strides are checked (ints, >= 1) before any call.
    """

    def __init__(self, n: int, dim: Sequence[int], stride: Sequence[int] | None,
                 T: type[TypeWrapper] | DataTypeLike) -> None:  # noqa: N803 - Caffe2's name
        fn = "TensorDescriptors"
        self.T = T if isinstance(T, type) and issubclass(T, TypeWrapper) else miopenTypeWrapper(T)
        d = int_seq(dim, "dim", fn, lo=1)
        s = None if stride is None else int_seq(stride, "stride", fn, lo=1)
        self._descs = _descriptors.TensorDescriptors(n, d, s, self.T.type, owned=True, fn=fn)

    def descs(self) -> list[api.TensorDescriptor]:
        """The n descriptors (Caffe2's `descs()`: the `const miopenTensorDescriptor_t*` the RNN calls take)."""
        if self._descs.closed:
            raise ValueError("TensorDescriptors: closed (its descriptors were destroyed)")
        return self._descs.descs

    @property
    def dims(self) -> tuple[int, ...]:
        return self._descs.dims

    @property
    def strides(self) -> tuple[int, ...]:
        return self._descs.strides

    @property
    def closed(self) -> bool:
        return self._descs.closed

    def close(self) -> None:
        """Destroy each descriptor once (idempotent)."""
        self._descs.close()

    def __len__(self) -> int:
        return len(self._descs)

    def __enter__(self) -> TensorDescriptors:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"<TensorDescriptors n={len(self._descs)} {self.T.type.name} dims={self.dims} strides={self.strides}"
                f"{' closed' if self.closed else ''}>")


class RecurrentBaseOp(MIOPENOperator):
    """The RNN configuration and the RNN descriptor, re-made when the input size or dtype changes
    (Caffe2's `initialize` on `cachedInputDims_`)."""

    def __init__(self, inputs: Sequence[str], outputs: Sequence[str], *, hidden_size: int, num_layers: int,
                 bidirectional: bool | int = False, rnn_mode: str = "lstm", input_mode: str = "linear",
                 dropout: float = 0.0, seed: int = 0, ws: BlobScope | None = None, device: int | None = None,
                 stream: object = None, name: str = "") -> None:
        op = type(self).__name__
        self.hidden_size = _positive(hidden_size, "hidden_size", op)
        self.num_layers = _positive(num_layers, "num_layers", op)
        if bidirectional not in (0, 1) or not isinstance(bidirectional, int):
            raise ValueError(f"{op}: bidirectional must be a bool or 0/1; got {bidirectional!r}")
        self.bidirectional = bool(bidirectional)
        self.rnn_mode = _choice(rnn_mode, "rnn_mode", op, RNN_MODES)
        self.input_mode = _choice(input_mode, "input_mode", op, INPUT_MODES)
        if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) or not 0.0 <= dropout < 1.0:
            raise ValueError(f"{op}: dropout must be a probability in [0, 1); got {dropout!r}")
        self.dropout = float(dropout)
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ValueError(f"{op}: seed must be an int >= 0; got {seed!r}")
        self.seed = seed
        super().__init__(inputs, outputs, ws=ws, device=device, stream=stream, name=name,
                         args={"hidden_size": self.hidden_size, "num_layers": self.num_layers,
                               "bidirectional": int(self.bidirectional), "rnn_mode": self.rnn_mode,
                               "input_mode": self.input_mode, "dropout": self.dropout, "seed": self.seed})
        self.rnn: RNN | None = None

    @property
    def num_directions(self) -> int:
        return 2 if self.bidirectional else 1

    @property
    def is_lstm(self) -> bool:
        return self.rnn_mode == "lstm"

    def hidden_dims(self, batch: int) -> tuple[int, int, int]:
        return (self.num_layers * self.num_directions, batch, self.hidden_size)

    def _sequence_input(self, i: int, T: type[TypeWrapper]) -> Tensor:
        t = self.input(i)
        if t.ndim != 3:
            raise ShapeError(f"{self.type_name}: input {i} ({self.inputs[i]!r}) must be 3-D (seq_len, batch, "
                             f"input_size); got dims {t.dims}")
        self.check_dtype(i, t, T)
        return t

    def initialize(self, x: Tensor, T: type[TypeWrapper]) -> RNN:
        """The RNN for X's input size and T (made on the first run and again when either changes;
        a replaced RNN lives on as long as a reserve made with it)."""
        rnn = self.rnn
        if rnn is not None and not rnn.closed and rnn.input_size == x.dims[2] and rnn.dtype == T.type:
            return rnn
        mode = api.RNNMode.__members__[_RNN_MODES[self.rnn_mode]]
        input_mode = api.RNNInputMode.__members__[_INPUT_MODES[self.input_mode]]
        self.rnn = RNN(x.dims[2], self.hidden_size, self.num_layers, mode=mode, bidirectional=self.bidirectional,
                       input_mode=input_mode, bias=True,
                       algo="default", dtype=T.type, dropout=self.dropout, dropout_seed=self.seed,
                       stream=self.stream, device=self.device)
        return self.rnn

    def mismatches(self, rnn: RNN) -> list[str]:
        """The arguments of this operator that `rnn` was made with other values of."""
        theirs: dict[str, object] = {"hidden_size": rnn.hidden_size, "num_layers": rnn.num_layers,
                                     "bidirectional": rnn.bidirectional, "rnn_mode": rnn.mode.name,
                                     "input_mode": rnn.input_mode.name}
        mine: dict[str, object] = {"hidden_size": self.hidden_size, "num_layers": self.num_layers,
                                   "bidirectional": self.bidirectional, "rnn_mode": _RNN_MODES[self.rnn_mode],
                                   "input_mode": _INPUT_MODES[self.input_mode]}
        return [f"{arg}={mine[arg]!r} (the reserve's RNN has {theirs[arg]!r})"
                for arg in mine if mine[arg] != theirs[arg]]

    def close(self) -> None:
        """Destroy the RNN descriptor now (a reserve made with it can no longer be used)."""
        if self.rnn is not None:
            self.rnn.close()
            self.rnn = None

    def _zero(self, t: Tensor, stream: object) -> None:
        _backend.current().memset_async(t.ptr, 0, t.nbytes, stream)


# by name: the enums are looked up when used, in the bindings of the loaded release
_RNN_MODES = {"lstm": "miopenLSTM", "gru": "miopenGRU", "relu": "miopenRNNRELU", "tanh": "miopenRNNTANH"}
_INPUT_MODES = {"linear": "miopenRNNlinear", "skip": "miopenRNNskip"}


class RecurrentOp(RecurrentBaseOp):
    """Forward: Y, hy, cy (and the reserve when training) from X, hx, cx and the packed weights."""

    NUM_INPUTS = (4, 4)
    NUM_OUTPUTS = (5, 5)

    def __init__(self, inputs: Sequence[str], outputs: Sequence[str], *, hidden_size: int, num_layers: int,
                 bidirectional: bool | int = False, rnn_mode: str = "lstm", input_mode: str = "linear",
                 dropout: float = 0.0, seed: int = 0, is_test: bool | int = False, ws: BlobScope | None = None,
                 device: int | None = None, stream: object = None, name: str = "") -> None:
        super().__init__(inputs, outputs, hidden_size=hidden_size, num_layers=num_layers,
                         bidirectional=bidirectional, rnn_mode=rnn_mode, input_mode=input_mode, dropout=dropout,
                         seed=seed, ws=ws, device=device, stream=stream, name=name)
        if is_test not in (0, 1) or not isinstance(is_test, int):
            raise ValueError(f"{self.type_name}: is_test must be a bool or 0/1; got {is_test!r}")
        self.is_test = bool(is_test)
        self.args["is_test"] = int(self.is_test)

    def do_run_with_type(self, T: type[TypeWrapper]) -> bool:
        x = self._sequence_input(0, T)
        hx = self.input(1)
        cx = self.input(2) if self.is_lstm else None
        w = self.input(3)
        rnn = self.initialize(x, T)
        seq_len, batch = x.dims[0], x.dims[1]
        y = self.output(0, (seq_len, batch, self.hidden_size * self.num_directions), T)
        hy = self.output(1, self.hidden_dims(batch), T)
        cy = self.output(2, self.hidden_dims(batch), T)
        lstm = self.is_lstm

        def forward(st: MIOPENState) -> RNNReserve | None:
            if not lstm:
                self._zero(cy, st.stream())  # a GRU/RNN has no cell state: CELL_OUTPUT is zeros
            if self.is_test:
                rnn.forward_inference(x, hx, cx, w, y, hy, cy if lstm else None, handle=st.miopen_handle(),
                                      stream=st.stream(), workspace=st.workspace(), device=self.device)
                return None
            return rnn.forward_training(x, hx, cx, w, y, hy, cy if lstm else None, handle=st.miopen_handle(),
                                        stream=st.stream(), workspace=st.workspace(), device=self.device)

        reserve = self.miopen_wrapper.with_miopen_state(0, forward)
        self.set_output_blob(3, reserve)
        self.set_output_blob(4, rnn.dropout_states)
        return True


class RecurrentGradientOp(RecurrentBaseOp):
    """Backward: dX, dhx, dcx and dW from the forward pass's reserve (backward data, then weights)."""

    NUM_INPUTS = (7, 9)
    NUM_OUTPUTS = (6, 6)

    def do_run_with_type(self, T: type[TypeWrapper]) -> bool:
        x = self._sequence_input(0, T)
        hx = self.input(1)
        cx = self.input(2) if self.is_lstm else None
        w = self.input(3)
        reserve = self.input_blob(4)
        if not isinstance(reserve, RNNReserve):
            raise ReserveMismatchError(f"{self.type_name}: input 4 ({self.inputs[4]!r}) must hold the RNNReserve that "
                                       f"a training RecurrentOp put in its RNN_SCRATCH output; got "
                                       f"{type(reserve).__name__}")
        rnn = reserve.rnn
        wrong = self.mismatches(rnn)
        if rnn.input_size != x.dims[2]:
            wrong.append(f"input size {x.dims[2]} (the reserve's RNN has {rnn.input_size})")
        if wrong:
            raise ReserveMismatchError(f"{self.type_name}: the reserve in {self.inputs[4]!r} comes from a RecurrentOp "
                                       f"with other arguments: {'; '.join(wrong)}")
        y = self.input(5)
        dy = self.input(6)
        dhy = self.input(7) if len(self.inputs) > 7 else None
        dcy = self.input(8) if len(self.inputs) > 8 and self.is_lstm else None
        dx = self.output(0, x.dims, T)  # ResizeLike(INPUT)
        dhx = self.output(1, hx.dims, T)
        dcx = self.output(2, self.input(2).dims, T)
        dw = self.output(3, w.dims, T)
        lstm = self.is_lstm

        def backward(st: MIOPENState) -> None:
            h, stream = st.miopen_handle(), st.stream()
            self._zero(dw, stream)  # as Caffe2 does; MIOpen overwrites dW anyway (tests/real/kernels/test_real_miopen_gemm.py)
            if not lstm:
                self._zero(dcx, stream)
            rnn.backward_data(y, dy, w, dx, reserve=reserve, dhy=dhy, dcy=dcy, hx=hx, cx=cx, dhx=dhx,
                              dcx=dcx if lstm else None, handle=h, stream=stream, device=self.device)
            rnn.backward_weights(x, hx, y, dw, reserve=reserve, handle=h, stream=stream, device=self.device)

        self.miopen_wrapper.with_miopen_state(0, backward)
        self.set_output_blob(4, rnn.dropout_states)
        self.set_output_blob(5, reserve)
        return True


class RecurrentParamAccessOp(RecurrentBaseOp):
    """GET_PARAM copies one layer's weight matrix or bias out of the packed weights; SET_PARAM
    copies one in. Name it Caffe2's way (``param_type`` "input_gate_w", "forget_gate_b", ... and
    ``input_type`` "input"/"recurrent"), or by MIOpen's index (``param_id`` and ``bias``).
    ``layer`` is MIOpen's layer id (bidirectional: 2 * layer + direction)."""

    NUM_INPUTS = (2, 3)
    NUM_OUTPUTS = (1, 1)

    def __init__(self, mode: RecurrentParamOpMode | Literal["SET_PARAM", "GET_PARAM"], inputs: Sequence[str],
                 outputs: Sequence[str], *, hidden_size: int, num_layers: int, layer: int = 0,
                 param_type: str | None = None, input_type: str = "input", param_id: int | None = None,
                 bias: bool = False, bidirectional: bool | int = False, rnn_mode: str = "lstm",
                 input_mode: str = "linear", ws: BlobScope | None = None, device: int | None = None,
                 stream: object = None, name: str = "") -> None:
        op = type(self).__name__
        if isinstance(mode, str) and mode in RecurrentParamOpMode.__members__:
            mode = RecurrentParamOpMode[mode]
        if not isinstance(mode, RecurrentParamOpMode):
            raise ValueError(f"{op}: mode must be RecurrentParamOpMode.SET_PARAM or GET_PARAM; got {mode!r}")
        self.mode = mode
        n_in = 3 if mode is SET_PARAM else 2
        if isinstance(inputs, Sequence) and not isinstance(inputs, str) and len(inputs) != n_in:
            blobs = "INPUT, WEIGHT, PARAM" if n_in == 3 else "INPUT, WEIGHT"
            raise ValueError(f"{op}: {mode.name} takes {n_in} inputs ({blobs}); got {len(inputs)}: {list(inputs)}")
        super().__init__(inputs, outputs, hidden_size=hidden_size, num_layers=num_layers, bidirectional=bidirectional,
                         rnn_mode=rnn_mode, input_mode=input_mode, ws=ws, device=device, stream=stream, name=name)
        if mode is SET_PARAM and self.outputs[0] != self.inputs[1]:
            raise ValueError(f"{op}: SET_PARAM writes the weights in place: outputs[0] must be inputs[1] "
                             f"({self.inputs[1]!r}); got {self.outputs[0]!r}")
        if isinstance(layer, bool) or not isinstance(layer, int) or layer < 0:
            raise ValueError(f"{op}: layer must be an int >= 0; got {layer!r}")
        if layer >= self.num_layers * self.num_directions:
            raise ValueError(f"{op}: layer must be below num_layers * num_directions = "
                             f"{self.num_layers * self.num_directions}; got {layer}")
        self.layer = layer
        gates = _GATES[self.rnn_mode]
        if (param_type is None) == (param_id is None):
            raise ValueError(f"{op}: give either param_type (Caffe2's names: "
                             f"{', '.join(PARAM_TYPES[self.rnn_mode])}) or param_id (MIOpen's index), not "
                             f"{'both' if param_type is not None else 'neither'}")
        if param_type is not None:
            names = PARAM_TYPES[self.rnn_mode]
            if param_type not in names:
                raise ValueError(f"{op}: param_type {param_type!r} is not a {self.rnn_mode} parameter; expected one of "
                                 f"{', '.join(names)}")
            if input_type not in ("input", "recurrent"):
                raise ValueError(f"{op}: input_type must be 'input' or 'recurrent'; got {input_type!r}")
            gate, self.bias = names[param_type]
            self.param_id = gate + gates * (input_type == "recurrent")
        else:
            if isinstance(param_id, bool) or not isinstance(param_id, int) or not 0 <= param_id < 2 * gates:
                raise ValueError(f"{op}: param_id must be an int in [0, {2 * gates}) for {self.rnn_mode}; got "
                                 f"{param_id!r}")
            if not isinstance(bias, bool):
                raise ValueError(f"{op}: bias must be a bool; got {bias!r}")
            self.param_id, self.bias = param_id, bias
        self.args.update({"layer": layer, "param_type": param_type, "input_type": input_type,
                          "param_id": self.param_id, "bias": self.bias})

    def locate(self, rnn: RNN, handle: api.Handle) -> tuple[int, int, tuple[int, ...]]:
        """(offset in elements, size in bytes, dims) of the parameter inside the packed weights:
        `miopenGetRNNLayerParamOffset`/`BiasOffset` (which also describes it) and `...Size`."""
        desc = api.create_tensor_descriptor()
        try:
            if self.bias:
                offset = rnn.layer_bias_offset(self.layer, self.param_id, bias_desc=desc)
                nbytes = rnn.layer_bias_size(self.layer, self.param_id, handle=handle, device=self.device)
            else:
                offset = rnn.layer_param_offset(self.layer, self.param_id, param_desc=desc)
                nbytes = rnn.layer_param_size(self.layer, self.param_id, handle=handle, device=self.device)
            dims = tuple(api.get_tensor_descriptor(desc).dims_a)
        finally:
            desc.close()
        return offset, nbytes, dims

    def do_run_with_type(self, T: type[TypeWrapper]) -> bool:
        x = self._sequence_input(0, T)
        w = self.input(1)
        self.check_dtype(1, w, T)
        rnn = self.initialize(x, T)
        handle = self.miopen_wrapper.inline_miopen_handle()
        params = rnn.params_size(handle=handle, device=self.device)
        if w.nbytes != params or not is_packed(w.dims, w.strides):
            raise ShapeError(f"{self.type_name}: input 1 ({self.inputs[1]!r}) must be the packed weights, "
                             f"{params} bytes ({params // T.itemsize()} {T.dtype_name}); got dims {w.dims} strides "
                             f"{w.strides} ({w.nbytes} bytes)")
        offset, nbytes, dims = self.locate(rnn, handle)
        what = f"layer {self.layer} {'bias' if self.bias else 'param'} {self.param_id}"
        if not dims or math.prod(dims) * T.itemsize() != nbytes:
            raise RuntimeError(f"{self.type_name}: MIOpen describes {what} as dims {dims} but sizes it {nbytes} bytes")
        at = w.ptr + offset * T.itemsize()
        if at + nbytes > w.ptr + w.nbytes:
            raise RuntimeError(f"{self.type_name}: MIOpen places {what} at element {offset}, past the weights")
        if self.mode is GET_PARAM:
            out = self.output(0, dims, T)
            _backend.current().memcpy_dtod_async(out.ptr, at, nbytes, self.stream)
        else:
            data = self.input(2)
            self.check_dtype(2, data, T)
            if data.nbytes != nbytes or not is_packed(data.dims, data.strides):
                raise ShapeError(f"{self.type_name}: input 2 ({self.inputs[2]!r}) must hold {what} packed: "
                                 f"{math.prod(dims)} {T.dtype_name} (dims {dims}); got dims {data.dims} strides "
                                 f"{data.strides}")
            _backend.current().memcpy_dtod_async(at, data.ptr, nbytes, self.stream)
        return True
