"""Recurrent layers on MIOpen's packed-sequence RNN API (relu/tanh RNNs, LSTM, GRU).

`RNN` owns an RNN descriptor (and, with dropout, a dropout descriptor and its generator
states). A sequence is given either as a 3-D tensor ``(seq_len, batch, features)`` (every step
has the whole batch) or as a packed 2-D tensor ``(sum(batch_sizes), features)`` plus
``batch_sizes``: one batch size per time step, never increasing, like PyTorch's
``PackedSequence``. MIOpen receives one ``batch_t x features`` descriptor per step.

Hidden and cell states have dims ``(num_layers * num_directions, batch_sizes[0], hidden_size)``;
hx/cx, hy/cy, dhy/dcy and dhx/dcx are optional (None passes NULL: a zero initial state, or an
output that is not written). Cell states exist only for LSTM.

Training keeps two device buffers alive between calls, never drawn from the shared scratch:

* the *reserve* that `forward_training` fills and both backward passes read; it is returned as an
  `RNNReserve` and both backward calls must get that same object;
* the *backward workspace*: MIOpen's backward-weights pass reads the gate gradients that the
  backward-data pass leaves in its workspace (PyTorch's MIOpen RNN passes the workspace of
  `miopen_rnn_backward_input` on to `miopen_rnn_backward_weight` for this reason), so the
  `RNNReserve` also holds that workspace; `backward_weights` must follow `backward_data`, once: GRU's
  backward-weights pass changes that workspace (a second call gets the new-memory gate's input weights and bias
  wrong, measured on real kernels), so each `backward_weights` needs a `backward_data` of its own.

`backward_weights` overwrites dw with the gradient (it does not add into it; measured on MIOpen 2.17.0's kernels,
tests/real/kernels/test_real_miopen_gemm.py): sum gradients yourself.

The forward passes use the thread's scratch workspace (or the one given). Shapes, dtypes, layer
and parameter ids and the reserve are checked in Python before any MIOpen call; only the size
of the weights (`params_size`) needs a MIOpen size query before it can be checked.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import weakref
from enum import Enum
from collections.abc import Iterator, Sequence
from typing import Literal, TypeAlias

from .. import backend as _backend
from .._args import enum_arg, int_arg
from .._bound import EnumMap
from .._generated import api
from .._generated._support import HandleBase
from ..descriptors import DataTypeLike, FrozenTensorDescriptor, TensorDescriptors, _generation, data_type, \
    itemsize, tensor_descriptor
from ..errors import ShapeError
from ..layout import is_packed
from ..tensor import LayoutRecord, Tensor, as_tensor, layout_of, record_layouts, same_layouts
from ..workspace import MIOpenWorkspace, PersistentBuffer, scratch
from ..handles import inline_miopen_handle
from ._common import resolve_handle, resolve_workspace

_log = logging.getLogger(__name__)

__all__ = [
    "RNN", "RNNReserve", "ReserveMismatchError", "TensorLike", "ModeLike", "InputModeLike", "AlgoLike",
    "GATES_PER_MODE",
]

TensorLike: TypeAlias = "Tensor | api.SupportsDataPtr | api.SupportsCudaArrayInterface"
ModeLike: TypeAlias = "api.RNNMode | Literal['relu', 'tanh', 'lstm', 'gru']"
InputModeLike: TypeAlias = "api.RNNInputMode | Literal['linear', 'skip']"
AlgoLike: TypeAlias = "api.RNNAlgo | Literal['default', 'fundamental', 'rounded_dynamic']"

# matrices (and biases) per gate set: each layer and direction has 2 * this many param ids
# (ids 0..n-1 act on the layer's input, n..2n-1 on the recurrent hidden state)
GATES_PER_MODE: dict[str, int] = {"miopenRNNRELU": 1, "miopenRNNTANH": 1, "miopenLSTM": 4, "miopenGRU": 3}

_MODE_NAMES: EnumMap[api.RNNMode] = EnumMap("RNNMode", {
    "relu": "miopenRNNRELU", "tanh": "miopenRNNTANH", "lstm": "miopenLSTM", "gru": "miopenGRU"})
_INPUT_MODE_NAMES: EnumMap[api.RNNInputMode] = EnumMap("RNNInputMode", {
    "linear": "miopenRNNlinear", "skip": "miopenRNNskip"})
_ALGO_NAMES: dict[str, str] = {
    "default": "miopenRNNdefault",
    "fundamental": "miopenRNNfundamental",
    "rounded_dynamic": "miopenRNNroundedDynamic",
}


class ReserveMismatchError(ValueError):
    """A backward pass got a reserve that is not the one its forward pass produced, or a closed one."""


def _mode(value: ModeLike) -> api.RNNMode:
    return enum_arg(value, api.RNNMode, "mode", "RNN", _MODE_NAMES, ints=False)


def _input_mode(value: InputModeLike) -> api.RNNInputMode:
    return enum_arg(value, api.RNNInputMode, "input_mode", "RNN", _INPUT_MODE_NAMES, ints=False)


def _algo(value: AlgoLike) -> api.RNNAlgo:
    names: dict[str, api.RNNAlgo] = {k: getattr(api.RNNAlgo, v) for k, v in _ALGO_NAMES.items()
                                     if hasattr(api.RNNAlgo, v)}
    return enum_arg(value, api.RNNAlgo, "algo", "RNN", names, ints=False)


def _positive_int(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or isinstance(value, Enum) or value < 1:
        raise ValueError(f"RNN: {what} must be a positive int; got {value!r}")
    return value


def _index(value: object, what: str) -> int:
    return int_arg(value, what, "RNN")


def _device_scope(device: int | None) -> contextlib.AbstractContextManager[object]:
    return _backend.current().device_guard(device) if device is not None else contextlib.nullcontext()


def _ptr(t: Tensor | None) -> int | None:
    return None if t is None else t.ptr


_StepDescs: TypeAlias = "tuple[list[api.TensorDescriptor], list[api.TensorDescriptor], api.TensorDescriptor, api.TensorDescriptor]"


def _layouts(*objs: object) -> tuple[tuple[int | None, ...], tuple[object, ...]] | None:
    """(the addresses, the layouts) of tensors the fast paths have checked before (`layout_of`; None for an absent
    one), or None when any is not such a tensor (the full checks run)."""
    parts = [_ABSENT if obj is None else layout_of(obj) for obj in objs]
    for part in parts:
        if part is None:
            return None
    ptrs, lays = zip(*parts)
    return ptrs, lays


#: an absent tensor's part in `_layouts`: no address, no layout
_ABSENT = (None, None)


def _all_open(descs: tuple[HandleBase, ...]) -> bool:
    for d in descs:
        if d._ptr is None:
            return False
    return True


def _required_buffer(op: str, what: str, ptr: int | None) -> int:
    """A scratch buffer MIOpen never accepts as NULL (its RNN code clears it first): an empty one is an error here."""
    if ptr is None:
        raise ValueError(f"{op}: MIOpen needs a {what} here, but its size is 0 bytes")
    return ptr


# --------------------------------------------------------------------------- the reserve


def _release(buffers: list[PersistentBuffer]) -> None:
    if sys.is_finalizing():
        return
    for buf in buffers:
        try:
            buf.close()
        except Exception:  # cleanup must not raise: it may run from the garbage collector
            _log.warning("RNNReserve: could not free a %s buffer", buf.kind, exc_info=True)


class RNNReserve:
    """The training reserve of one `RNN.forward_training` call (a `PersistentBuffer`), plus the
    backward workspace that `backward_data` fills and `backward_weights` reads.

    Hand this exact object to `backward_data` and then `backward_weights`; `close()` (or `with`)
    frees both buffers.
    """

    def __init__(self, rnn: RNN, buffer: PersistentBuffer, batch_sizes: tuple[int, ...], dtype: api.DataType,
                 device: int, workspace_bytes: int, stream: int | None) -> None:
        self.rnn = rnn
        self.buffer = buffer
        self.batch_sizes = batch_sizes
        self.dtype = dtype
        self.device = device
        self.workspace_bytes = workspace_bytes
        self.backward_workspace: PersistentBuffer | None = None
        self.backward_data_done = False
        self._stream = stream
        self._closed = False
        self._lock = threading.Lock()
        # a reserve dropped without close() still frees its buffers (never during interpreter exit)
        self._buffers: list[PersistentBuffer] = [buffer]
        self._finalizer = weakref.finalize(self, _release, self._buffers)
        self._finalizer.atexit = False

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def nbytes(self) -> int:
        return self.buffer.nbytes

    @property
    def ptr(self) -> int | None:
        return self.buffer.ptr

    @property
    def seq_len(self) -> int:
        return len(self.batch_sizes)

    def _workspace(self) -> PersistentBuffer:
        """The backward workspace (allocated on first use; persistent until close())."""
        with self._lock:
            if self.backward_workspace is None:
                self.backward_workspace = PersistentBuffer(self.workspace_bytes, self.device, "rnn backward workspace",
                                                           stream=self._stream)
                self._buffers.append(self.backward_workspace)
            return self.backward_workspace

    def close(self) -> None:
        """Free the reserve and the backward workspace now (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._finalizer()

    def __enter__(self) -> RNNReserve:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = " closed" if self._closed else ""
        return (f"<RNNReserve {self.buffer.nbytes} bytes seq_len={self.seq_len} batch_sizes={self.batch_sizes} "
                f"{self.dtype.name}{state}>")


# --------------------------------------------------------------------------- sequences


class _Seq:
    """Batch sizes of a sequence tensor, checked: 3-D (T, N, F), or packed 2-D (sum(batch_sizes), F)."""

    @staticmethod
    def batch_sizes(op: str, name: str, t: Tensor, batch_sizes: Sequence[int] | None) -> tuple[int, ...]:
        if batch_sizes is not None:
            bs = _Seq.check_batch_sizes(op, batch_sizes)
            if t.ndim == 2:
                if t.dims[0] != sum(bs):
                    raise ShapeError(f"{op}: {name} has {t.dims[0]} rows but sum(batch_sizes) = {sum(bs)} "
                                     f"(batch_sizes={bs})")
                return bs
            if t.ndim == 3:
                if t.dims[0] != len(bs) or any(b != t.dims[1] for b in bs):
                    raise ShapeError(f"{op}: {name} has dims {t.dims} (seq_len, batch, features) but batch_sizes={bs}; "
                                     f"a sequence whose batch shrinks must be packed 2-D (sum(batch_sizes), "
                                     f"features)")
                return bs
            raise ShapeError(f"{op}: {name} must be 3-D (seq_len, batch, features) or packed 2-D "
                             f"(sum(batch_sizes), features); got dims {t.dims}")
        if t.ndim != 3:
            raise ShapeError(f"{op}: {name} must be 3-D (seq_len, batch, features); got dims {t.dims} (pass "
                             f"batch_sizes for a packed 2-D sequence)")
        seq_len, batch = t.dims[0], t.dims[1]
        if seq_len < 1 or batch < 1:
            raise ShapeError(f"{op}: {name} needs seq_len >= 1 and batch >= 1; got dims {t.dims}")
        return (batch,) * seq_len

    @staticmethod
    def check_batch_sizes(op: str, batch_sizes: Sequence[int]) -> tuple[int, ...]:
        if isinstance(batch_sizes, (str, bytes)) or not isinstance(batch_sizes, Sequence):
            raise TypeError(f"{op}: batch_sizes must be a sequence of ints; got {type(batch_sizes).__name__}")
        bs = tuple(batch_sizes)
        if not bs:
            raise ShapeError(f"{op}: batch_sizes must not be empty (seq_len >= 1)")
        for i, b in enumerate(bs):
            if isinstance(b, bool) or not isinstance(b, int) or b < 1:
                raise ShapeError(f"{op}: batch_sizes[{i}] must be an int >= 1; got {b!r}")
        for i in range(1, len(bs)):
            if bs[i] > bs[i - 1]:
                raise ShapeError(f"{op}: batch sizes must not increase from one time step to the next (MIOpen "
                                 f"requires sequences sorted by decreasing length); step {i} has {bs[i]} > "
                                 f"{bs[i - 1]} (batch_sizes={bs})")
        return bs


def _packed(op: str, name: str, t: Tensor) -> None:
    if not is_packed(t.dims, t.strides):
        raise ShapeError(f"{op}: {name} must be packed (contiguous); got dims {t.dims} strides {t.strides}")


# --------------------------------------------------------------------------- the RNN


class RNN:
    """An MIOpen RNN: mode relu/tanh/lstm/gru, uni- or bidirectional, `num_layers` deep.

    `input_size` is the feature size of the input sequence (in skip input mode it must equal
    `hidden_size`). Dropout between layers: `dropout` > 0 makes the RNN own a dropout descriptor
    and its generator states (created with the handle of `handle`/`stream`/`device`), or pass
    your own `dropout_desc`.
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, *, mode: ModeLike = "lstm",
                 bidirectional: bool | api.RNNDirectionMode = False, input_mode: InputModeLike = "linear",
                 bias: bool | api.RNNBiasMode = True, algo: AlgoLike = "default", dtype: DataTypeLike = "float32",
                 dropout: float = 0.0, dropout_seed: int = 0, dropout_desc: api.DropoutDescriptor | None = None,
                 handle: api.Handle | None = None, stream: object = None, device: int | None = None) -> None:
        self.input_size = _positive_int(input_size, "input_size")
        self.hidden_size = _positive_int(hidden_size, "hidden_size")
        self.num_layers = _positive_int(num_layers, "num_layers")
        self.mode = _mode(mode)
        if isinstance(bidirectional, api.RNNDirectionMode):
            self.direction = bidirectional
        elif isinstance(bidirectional, bool):
            self.direction = (api.RNNDirectionMode.miopenRNNbidirection if bidirectional
                              else api.RNNDirectionMode.miopenRNNunidirection)
        else:
            raise TypeError(f"RNN: bidirectional must be a bool or an RNNDirectionMode; got {bidirectional!r}")
        self.input_mode = _input_mode(input_mode)
        if isinstance(bias, api.RNNBiasMode):
            self.bias_mode = bias
        elif isinstance(bias, bool):
            self.bias_mode = api.RNNBiasMode.miopenRNNwithBias if bias else api.RNNBiasMode.miopenRNNNoBias
        else:
            raise TypeError(f"RNN: bias must be a bool or an RNNBiasMode; got {bias!r}")
        self.algo = _algo(algo)
        self.dtype = data_type(dtype, "dtype", "RNN")
        if self.input_mode == api.RNNInputMode.miopenRNNskip and self.input_size != self.hidden_size:
            raise ShapeError(f"RNN: skip input mode adds the input to the first layer's gates, so input_size must "
                             f"equal hidden_size; got input_size={self.input_size}, hidden_size={self.hidden_size}")
        if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) or not 0.0 <= dropout < 1.0:
            raise ValueError(f"RNN: dropout must be a probability in [0, 1); got {dropout!r}")
        if dropout and dropout_desc is not None:
            raise ValueError("RNN: pass either dropout (the RNN makes its own dropout descriptor) or dropout_desc, "
                             "not both")
        if dropout_desc is not None and not isinstance(dropout_desc, api.DropoutDescriptor):
            raise TypeError(f"RNN: dropout_desc must be an api.DropoutDescriptor; got {type(dropout_desc).__name__}")
        self.dropout = float(dropout)
        self._lock = threading.Lock()
        self._params_size: int | None = None
        self._w_desc: api.TensorDescriptor | None = None
        self._dropout_states: PersistentBuffer | None = None
        self._own_dropout: api.DropoutDescriptor | None = None
        self._closed = False
        #: forward_inference's fast path: the layouts of its tensors (None for an absent state) -> (descriptor-cache
        #: generation, every descriptor it uses, (x and y step descriptors, hidden-state and weights descriptors))
        self._checked: dict[tuple[object, ...], tuple[int, tuple[HandleBase, ...], _StepDescs]] = {}
        #: the layouts of the last call that took the fast path, and its entry of `_checked`
        self._last: tuple[tuple[object, ...], tuple[int, tuple[HandleBase, ...], _StepDescs]] | None = None
        #: the last two calls that took the fast path with Tensors or pyopencl Arrays, newest first: their objects
        #: (`record_layouts`), addresses and entry of `_checked`
        self._recent: tuple[tuple[LayoutRecord, tuple[int | None, ...],
                                  tuple[int, tuple[HandleBase, ...], _StepDescs]], ...] = ()
        self.desc = api.create_rnn_descriptor()
        try:
            if self.dropout:
                dev = _backend.current().current_device() if device is None else device
                with _device_scope(device):
                    h = resolve_handle(handle, stream, dev)
                    self._own_dropout = api.create_dropout_descriptor()
                    nbytes = api.dropout_get_states_size(h)
                    self._dropout_states = PersistentBuffer(nbytes, dev, "dropout states",
                                                            stream=_backend.current().as_stream_handle(stream))
                    api.set_dropout_descriptor(self._own_dropout, h, self.dropout, self._dropout_states.data_ptr(),
                                               nbytes, dropout_seed, False, False,
                                               api.RNGType.MIOPEN_RNG_PSEUDO_XORWOW)
                dropout_desc = self._own_dropout
            if dropout_desc is not None:
                api.set_rnn_descriptor_v2(self.desc, self.hidden_size, self.num_layers, dropout_desc, self.input_mode,
                                          self.direction, self.mode, self.bias_mode, self.algo, self.dtype)
            else:
                api.set_rnn_descriptor(self.desc, self.hidden_size, self.num_layers, self.input_mode, self.direction,
                                       self.mode, self.bias_mode, self.algo, self.dtype)
        except BaseException:
            self.close()
            raise
        self.dropout_desc = dropout_desc

    # ------------------------------------------------------------------ facts

    @property
    def bidirectional(self) -> bool:
        return self.direction == api.RNNDirectionMode.miopenRNNbidirection

    @property
    def num_directions(self) -> int:
        return 2 if self.bidirectional else 1

    @property
    def has_bias(self) -> bool:
        return self.bias_mode == api.RNNBiasMode.miopenRNNwithBias

    @property
    def num_layer_ids(self) -> int:
        """Layer ids of the param calls: num_layers * num_directions (the backward direction of
        layer l is id 2l+1 when bidirectional)."""
        return self.num_layers * self.num_directions

    @property
    def params_per_layer(self) -> int:
        """Param (and bias) ids per layer id: relu/tanh 2, LSTM 8, GRU 6."""
        return 2 * GATES_PER_MODE[self.mode.name]

    @property
    def output_size(self) -> int:
        """Features of each output step: hidden_size * num_directions."""
        return self.hidden_size * self.num_directions

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def dropout_states(self) -> PersistentBuffer | None:
        """The dropout generator states this RNN owns (None without dropout or with your own dropout_desc)."""
        return self._dropout_states

    def hidden_dims(self, batch: int) -> tuple[int, int, int]:
        """Dims of hx/cx/hy/cy/dhx/dcx/dhy/dcy for a batch of `batch` sequences."""
        return (self.num_layer_ids, batch, self.hidden_size)

    def __repr__(self) -> str:
        return (f"<RNN {self.mode.name} input={self.input_size} hidden={self.hidden_size} layers={self.num_layers} "
                f"{'bi' if self.bidirectional else 'uni'}directional {self.input_mode.name} {self.bias_mode.name} "
                f"{self.algo.name} {self.dtype.name}{' closed' if self._closed else ''}>")

    # ------------------------------------------------------------------ lifetime

    def close(self) -> None:
        """Destroy the descriptors and free the dropout states (idempotent)."""
        if self._closed:
            return
        self._closed = True
        desc = getattr(self, "desc", None)
        if desc is not None:
            desc.close()
        if self._w_desc is not None:
            self._w_desc.close()
        if self._own_dropout is not None:
            self._own_dropout.close()
        if self._dropout_states is not None:
            self._dropout_states.close()

    def __enter__(self) -> RNN:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_open(self, op: str) -> None:
        if self._closed:
            raise ValueError(f"{op}: this RNN is closed")

    # ------------------------------------------------------------------ descriptors

    def x_descriptors(self, batch_sizes: Sequence[int]) -> list[api.TensorDescriptor]:
        """One (batch_t, input_size) descriptor per time step."""
        return self._step_descs(_Seq.check_batch_sizes("RNN.x_descriptors", batch_sizes), self.input_size)

    def y_descriptors(self, batch_sizes: Sequence[int]) -> list[api.TensorDescriptor]:
        """One (batch_t, hidden_size * num_directions) descriptor per time step."""
        return self._step_descs(_Seq.check_batch_sizes("RNN.y_descriptors", batch_sizes), self.output_size)

    def _step_descs(self, batch_sizes: tuple[int, ...], features: int) -> list[api.TensorDescriptor]:
        descs: list[api.TensorDescriptor] = []
        start = 0
        while start < len(batch_sizes):  # runs of equal batch size share one cached descriptor
            end = start
            while end < len(batch_sizes) and batch_sizes[end] == batch_sizes[start]:
                end += 1
            descs.extend(TensorDescriptors(end - start, (batch_sizes[start], features), None, self.dtype).descs)
            start = end
        return descs

    def _x_desc(self, x_desc: api.TensorDescriptor | None = None) -> api.TensorDescriptor:
        """The descriptor the parameter calls read the input size from."""
        if x_desc is None:
            return tensor_descriptor(self.dtype, (1, self.input_size))
        if not isinstance(x_desc, api.TensorDescriptor):
            raise TypeError(f"RNN: x_desc must be a TensorDescriptor; got {type(x_desc).__name__}")
        if isinstance(x_desc, FrozenTensorDescriptor):
            if len(x_desc.dims) < 2 or x_desc.dims[1] != self.input_size:
                raise ShapeError(f"RNN: x_desc must describe (batch, {self.input_size}) steps; got dims {x_desc.dims}")
            if x_desc.dtype != self.dtype:
                raise ShapeError(f"RNN: x_desc is {x_desc.dtype.name} but the RNN is {self.dtype.name}")
        return x_desc

    def _seq_descs(self, op: str, seq: int | Sequence[int] | Sequence[api.TensorDescriptor], batch: int | None
                   ) -> list[api.TensorDescriptor]:
        if isinstance(seq, int) and not isinstance(seq, bool):
            if batch is None:
                raise TypeError(f"{op}: with a sequence length, pass batch as well")
            if seq < 1 or isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
                raise ShapeError(f"{op}: seq_len and batch must be >= 1; got {seq}, {batch!r}")
            return self._step_descs((batch,) * seq, self.input_size)
        if isinstance(seq, (str, bytes)) or not isinstance(seq, Sequence) or not seq:
            raise TypeError(f"{op}: pass seq_len and batch, batch_sizes, or per-step x descriptors; got {seq!r}")
        if batch is not None:
            raise TypeError(f"{op}: batch goes with a sequence length only")
        if all(isinstance(d, api.TensorDescriptor) for d in seq):
            descs = [d for d in seq if isinstance(d, api.TensorDescriptor)]
            frozen = [d for d in descs if isinstance(d, FrozenTensorDescriptor)]
            if len(frozen) == len(descs):
                for d in frozen:
                    self._x_desc(d)
                _Seq.check_batch_sizes(op, [d.dims[0] for d in frozen])
            return descs
        ints = [b for b in seq if isinstance(b, int)]
        if len(ints) != len(seq):
            raise TypeError(f"{op}: batch_sizes must be ints (or pass TensorDescriptors); got {seq!r}")
        return self._step_descs(_Seq.check_batch_sizes(op, ints), self.input_size)

    def weights_descriptor(self, *, handle: api.Handle | None = None, stream: object = None,
                           device: int | None = None) -> api.TensorDescriptor:
        """MIOpen's descriptor of the packed weights (`miopenGetRNNParamsDescriptor`); owned by the RNN."""
        self._check_open("RNN.weights_descriptor")
        with self._lock:
            if self._w_desc is not None:
                return self._w_desc
        with _device_scope(device):
            h = resolve_handle(handle, stream, device)
            desc = api.create_tensor_descriptor()
            try:
                api.get_rnn_params_descriptor(h, self.desc, self._x_desc(), desc, self.dtype)
            except BaseException:
                desc.close()
                raise
        with self._lock:
            if self._w_desc is None:
                self._w_desc = desc
            else:
                desc.close()
            return self._w_desc

    params_descriptor = weights_descriptor
    param_descriptor = weights_descriptor

    # ------------------------------------------------------------------ sizes

    def params_size(self, x_desc: api.TensorDescriptor | None = None, *, handle: api.Handle | None = None,
                    stream: object = None, device: int | None = None) -> int:
        """Bytes of the packed weights (`miopenGetRNNParamsSize`); cached for the RNN's own input size."""
        self._check_open("RNN.params_size")
        own = x_desc is None
        xd = self._x_desc(x_desc)
        if own and self._params_size is not None:
            return self._params_size
        with _device_scope(device):
            nbytes = api.get_rnn_params_size(resolve_handle(handle, stream, device), self.desc, xd, self.dtype)
        if own:
            self._params_size = nbytes
        return nbytes

    def workspace_size(self, seq: int | Sequence[int] | Sequence[api.TensorDescriptor], batch: int | None = None, *,
                       handle: api.Handle | None = None, stream: object = None, device: int | None = None) -> int:
        """Scratch bytes of a pass (`miopenGetRNNWorkspaceSize`) for `seq_len, batch`, for per-step
        `batch_sizes`, or for per-step x descriptors."""
        self._check_open("RNN.workspace_size")
        descs = self._seq_descs("RNN.workspace_size", seq, batch)
        with _device_scope(device):
            return api.get_rnn_workspace_size(resolve_handle(handle, stream, device), self.desc, descs)

    def reserve_size(self, seq: int | Sequence[int] | Sequence[api.TensorDescriptor], batch: int | None = None, *,
                     handle: api.Handle | None = None, stream: object = None, device: int | None = None) -> int:
        """Bytes of the training reserve (`miopenGetRNNTrainingReserveSize`); arguments as `workspace_size`."""
        self._check_open("RNN.reserve_size")
        descs = self._seq_descs("RNN.reserve_size", seq, batch)
        with _device_scope(device):
            return api.get_rnn_training_reserve_size(resolve_handle(handle, stream, device), self.desc, descs)

    # ------------------------------------------------------------------ checks

    def _tensor(self, op: str, name: str, obj: TensorLike | None) -> Tensor | None:
        if obj is None:
            return None
        t = as_tensor(obj, name)
        if t.dtype != self.dtype:
            raise ShapeError(f"{op}: {name} is {t.dtype.name} but the RNN is {self.dtype.name}")
        _packed(op, name, t)
        return t

    def _required(self, op: str, name: str, obj: TensorLike | None) -> Tensor:
        t = self._tensor(op, name, obj)
        if t is None:
            raise TypeError(f"{op}: {name} is required (got None)")
        return t

    def _sequence(self, op: str, name: str, t: Tensor, batch_sizes: Sequence[int] | None, features: int
                  ) -> tuple[int, ...]:
        bs = _Seq.batch_sizes(op, name, t, batch_sizes)
        if t.dims[-1] != features:
            what = "input_size" if name in ("x", "dx") else "hidden_size * num_directions"
            raise ShapeError(f"{op}: {name} must have {features} features ({what}) in its last dim; got dims {t.dims}")
        return bs

    def _same_sequence(self, op: str, ref: str, ref_bs: tuple[int, ...], name: str, t: Tensor,
                       batch_sizes: Sequence[int] | None, features: int, ref_t: Tensor) -> None:
        bs = self._sequence(op, name, t, batch_sizes if t.ndim == 2 else None, features)
        if bs != ref_bs or t.ndim != ref_t.ndim:
            raise ShapeError(f"{op}: {name} (dims {t.dims}) does not match the time steps of {ref} (dims "
                             f"{ref_t.dims}, batch_sizes={ref_bs})")

    def _hidden(self, op: str, batch: int, **states: Tensor | None) -> None:
        want = self.hidden_dims(batch)
        for name, t in states.items():
            if t is None:
                continue
            if name.lstrip("d").startswith("c") and self.mode != api.RNNMode.miopenLSTM:
                raise ShapeError(f"{op}: {name} is a cell state, which only LSTM has (this RNN is "
                                 f"{self.mode.name}); pass None")
            if t.dims != want:
                raise ShapeError(f"{op}: {name} must have dims {want} (num_layers * num_directions, batch_sizes[0], "
                                 f"hidden_size); got {t.dims}")

    def _check_weights(self, op: str, name: str, w: Tensor, params_size: int) -> None:
        nbytes = w.nbytes
        if nbytes != params_size:
            raise ShapeError(f"{op}: {name} holds {nbytes} bytes but this RNN's packed weights take {params_size} "
                             f"bytes ({params_size // itemsize(self.dtype)} {self.dtype.name} elements; see "
                             f"RNN.params_size())")

    def _reserve_object(self, op: str, reserve: object) -> RNNReserve:
        """The reserve itself: an open RNNReserve of this RNN (checked before the tensors)."""
        if not isinstance(reserve, RNNReserve):
            raise ReserveMismatchError(f"{op}: reserve must be the RNNReserve that forward_training returned; got "
                                       f"{type(reserve).__name__}")
        if reserve.rnn is not self:
            raise ReserveMismatchError(f"{op}: this reserve was produced by another RNN ({reserve.rnn!r}); pass the "
                                       f"reserve returned by this RNN's forward_training")
        if reserve.closed:
            raise ReserveMismatchError(f"{op}: this reserve is closed; run forward_training again")
        return reserve

    def _check_reserve(self, op: str, reserve: RNNReserve, batch_sizes: tuple[int, ...], device: int) -> RNNReserve:
        """The reserve matches this call's shape and device."""
        if reserve.batch_sizes != batch_sizes or reserve.dtype != self.dtype:
            raise ReserveMismatchError(f"{op}: this reserve was produced for another shape: forward_training had "
                                       f"batch_sizes={reserve.batch_sizes} ({reserve.dtype.name}), these tensors have "
                                       f"batch_sizes={batch_sizes}")
        if reserve.device != device:
            raise ReserveMismatchError(f"{op}: this reserve lives on device {reserve.device}, not {device}")
        return reserve

    # ------------------------------------------------------------------ passes

    def _forward_checks(self, op: str, x: TensorLike, hx: TensorLike | None, cx: TensorLike | None, w: TensorLike,
                        y: TensorLike, hy: TensorLike | None, cy: TensorLike | None,
                        batch_sizes: Sequence[int] | None
                        ) -> tuple[Tensor, Tensor | None, Tensor | None, Tensor, Tensor, Tensor | None, Tensor | None,
                                   tuple[int, ...]]:
        self._check_open(op)
        xt = self._required(op, "x", x)
        wt = self._required(op, "w", w)
        yt = self._required(op, "y", y)
        hxt, cxt = self._tensor(op, "hx", hx), self._tensor(op, "cx", cx)
        hyt, cyt = self._tensor(op, "hy", hy), self._tensor(op, "cy", cy)
        bs = self._sequence(op, "x", xt, batch_sizes, self.input_size)
        self._same_sequence(op, "x", bs, "y", yt, batch_sizes, self.output_size, xt)
        self._hidden(op, bs[0], hx=hxt, cx=cxt, hy=hyt, cy=cyt)
        return xt, hxt, cxt, wt, yt, hyt, cyt, bs

    def forward_training(self, x: TensorLike, hx: TensorLike | None, cx: TensorLike | None, w: TensorLike,
                         y: TensorLike, hy: TensorLike | None = None, cy: TensorLike | None = None, *,
                         batch_sizes: Sequence[int] | None = None, handle: api.Handle | None = None,
                         stream: object = None, workspace: MIOpenWorkspace | None = None,
                         device: int | None = None) -> RNNReserve:
        """y = RNN(x) keeping what the backward passes need: returns the `RNNReserve` (a persistent
        buffer sized by `miopenGetRNNTrainingReserveSize`) to hand to `backward_data` and then
        `backward_weights`. The workspace comes from scratch (or `workspace`)."""
        op = "RNN.forward_training"
        xt, hxt, cxt, wt, yt, hyt, cyt, bs = self._forward_checks(op, x, hx, cx, w, y, hy, cy, batch_sizes)
        dev = _backend.current().current_device() if device is None else device
        with _device_scope(device):
            h = resolve_handle(handle, stream, dev)
            sh = _backend.current().as_stream_handle(stream)
            self._check_weights(op, "w", wt, self.params_size(handle=h))
            x_descs = self._step_descs(bs, self.input_size)
            y_descs = self._step_descs(bs, self.output_size)
            hdesc = tensor_descriptor(self.dtype, self.hidden_dims(bs[0]))
            ws_bytes = api.get_rnn_workspace_size(h, self.desc, x_descs)
            rs_bytes = api.get_rnn_training_reserve_size(h, self.desc, x_descs)
            ws = resolve_workspace(workspace, dev, stream)
            ws_ptr = ws.get(ws_bytes, sh)
            reserve = RNNReserve(self, PersistentBuffer(rs_bytes, dev, "rnn reserve", stream=sh), bs, self.dtype, dev,
                                 ws_bytes, sh)
            try:
                api.rnn_forward_training(h, self.desc, x_descs, xt.ptr, hdesc, _ptr(hxt), hdesc, _ptr(cxt), wt.desc,
                                         wt.ptr, y_descs, yt.ptr, hdesc, _ptr(hyt), hdesc, _ptr(cyt), ws_ptr, ws_bytes,
                                         _required_buffer(op, "reserve", reserve.ptr), rs_bytes)
            except BaseException:
                reserve.close()
                raise
        return reserve

    def forward_inference(self, x: TensorLike, hx: TensorLike | None, cx: TensorLike | None, w: TensorLike,
                          y: TensorLike, hy: TensorLike | None = None, cy: TensorLike | None = None, *,
                          batch_sizes: Sequence[int] | None = None, handle: api.Handle | None = None,
                          stream: object = None, workspace: MIOpenWorkspace | None = None,
                          device: int | None = None) -> None:
        """y = RNN(x) without a reserve (no backward pass possible); workspace from scratch."""
        op = "RNN.forward_inference"
        parts = None
        if batch_sizes is None and device is None and not self._closed:
            objs = (x, hx, cx, w, y, hy, cy)
            known = None
            for recent in self._recent:  # the very objects of one of the last two calls: no layout read again
                if same_layouts(objs, recent[0]):
                    if recent[2][0] == _generation[0]:
                        ptrs, known = recent[1], recent[2]
                        for d in known[1]:  # its descriptors open (`_all_open`, written out)
                            if d._ptr is None:
                                known = None
                                break
                    break
            if known is None:
                parts = _layouts(x, hx, cx, w, y, hy, cy)
                if parts is not None:  # the shapes of an earlier call: its checks and descriptors
                    ptrs, last = parts[0], self._last
                    # the layouts of the last call again (the same objects: compared by identity first), else a lookup
                    known = last[1] if last is not None and last[0] == parts[1] else self._checked.get(parts[1])
                    if known is not None and known[0] == _generation[0] and _all_open(known[1]):
                        self._last = (parts[1], known)
                        record = record_layouts(objs, known[0])
                        if record is not None:
                            self._recent = ((record, ptrs, known), *self._recent[:1])
                    else:
                        known = None
            if known is not None:
                x_descs, y_descs, hdesc, wdesc = known[2]
                xp, hxp, cxp, wp, yp, hyp, cyp = ptrs
                b = _backend.current()
                dev = b.current_device()  # once (HIP asks it of the library): the handle's and the scratch's device
                h = handle if handle is not None else inline_miopen_handle(stream, dev)
                ws_bytes = api.get_rnn_workspace_size(h, self.desc, x_descs)
                sh = b.as_stream_handle(stream)
                ws_ptr = (workspace if workspace is not None else scratch(dev, sh)).get(ws_bytes, sh)
                if ws_ptr is None:
                    ws_ptr = _required_buffer(op, "workspace", ws_ptr)  # (raises)
                api.rnn_forward_inference(  # x, w and y are never None on a hit (the full checks refuse a None)
                    h, self.desc, x_descs, xp, hdesc, hxp, hdesc, cxp, wdesc, wp, y_descs, yp,  # type: ignore[arg-type]
                    hdesc, hyp, hdesc, cyp, ws_ptr, ws_bytes)
                return
        generation = _generation[0]
        xt, hxt, cxt, wt, yt, hyt, cyt, bs = self._forward_checks(op, x, hx, cx, w, y, hy, cy, batch_sizes)
        dev = _backend.current().current_device() if device is None else device
        with _device_scope(device):
            h = resolve_handle(handle, stream, dev)
            sh = _backend.current().as_stream_handle(stream)
            self._check_weights(op, "w", wt, self.params_size(handle=h))
            x_descs = self._step_descs(bs, self.input_size)
            y_descs = self._step_descs(bs, self.output_size)
            hdesc = tensor_descriptor(self.dtype, self.hidden_dims(bs[0]))
            if parts is not None and generation == _generation[0]:
                if len(self._checked) >= 64:
                    self._checked.clear()
                descs = (*x_descs, *y_descs, hdesc, wt.desc, self.desc)
                self._checked[parts[1]] = (generation, descs, (x_descs, y_descs, hdesc, wt.desc))
            ws_bytes = api.get_rnn_workspace_size(h, self.desc, x_descs)
            ws_ptr = resolve_workspace(workspace, dev, stream).get(ws_bytes, sh)
            api.rnn_forward_inference(h, self.desc, x_descs, xt.ptr, hdesc, _ptr(hxt), hdesc, _ptr(cxt), wt.desc,
                                      wt.ptr, y_descs, yt.ptr, hdesc, _ptr(hyt), hdesc, _ptr(cyt),
                                      _required_buffer(op, "workspace", ws_ptr), ws_bytes)

    def backward_data(self, y: TensorLike, dy: TensorLike, w: TensorLike, dx: TensorLike, *, reserve: RNNReserve,
                      dhy: TensorLike | None = None, dcy: TensorLike | None = None, hx: TensorLike | None = None,
                      cx: TensorLike | None = None, dhx: TensorLike | None = None, dcx: TensorLike | None = None,
                      batch_sizes: Sequence[int] | None = None, handle: api.Handle | None = None,
                      stream: object = None, device: int | None = None) -> None:
        """dx (and dhx/dcx) from dy (and dhy/dcy), reading `reserve` from `forward_training`.

        Packed 2-D tensors take their batch sizes from `reserve` unless `batch_sizes` is given.
        The gate gradients go to the reserve's backward workspace, which `backward_weights` reads.
        """
        op = "RNN.backward_data"
        self._check_open(op)
        reserve = self._reserve_object(op, reserve)
        yt = self._required(op, "y", y)
        dyt = self._required(op, "dy", dy)
        wt = self._required(op, "w", w)
        dxt = self._required(op, "dx", dx)
        states = {"dhy": self._tensor(op, "dhy", dhy), "dcy": self._tensor(op, "dcy", dcy),
                  "hx": self._tensor(op, "hx", hx), "cx": self._tensor(op, "cx", cx),
                  "dhx": self._tensor(op, "dhx", dhx), "dcx": self._tensor(op, "dcx", dcx)}
        if batch_sizes is None and yt.ndim == 2:
            batch_sizes = reserve.batch_sizes
        bs = self._sequence(op, "y", yt, batch_sizes, self.output_size)
        self._same_sequence(op, "y", bs, "dy", dyt, batch_sizes, self.output_size, yt)
        self._same_sequence(op, "y", bs, "dx", dxt, batch_sizes, self.input_size, yt)
        self._hidden(op, bs[0], **states)
        dev = _backend.current().current_device() if device is None else device
        res = self._check_reserve(op, reserve, bs, dev)
        with _device_scope(device):
            h = resolve_handle(handle, stream, dev)
            self._check_weights(op, "w", wt, self.params_size(handle=h))
            x_descs = self._step_descs(bs, self.input_size)
            y_descs = self._step_descs(bs, self.output_size)
            hdesc = tensor_descriptor(self.dtype, self.hidden_dims(bs[0]))
            ws = res._workspace()
            api.rnn_backward_data(h, self.desc, y_descs, yt.ptr, y_descs, dyt.ptr, hdesc, _ptr(states["dhy"]), hdesc,
                                  _ptr(states["dcy"]), wt.desc, wt.ptr, hdesc, _ptr(states["hx"]), hdesc,
                                  _ptr(states["cx"]), x_descs, dxt.ptr, hdesc, _ptr(states["dhx"]), hdesc,
                                  _ptr(states["dcx"]), _required_buffer(op, "workspace", ws.ptr), ws.nbytes, res.ptr,
                                  res.nbytes)
            res.backward_data_done = True

    def backward_weights(self, x: TensorLike, hx: TensorLike | None, y: TensorLike, dw: TensorLike, *,
                         reserve: RNNReserve, batch_sizes: Sequence[int] | None = None,
                         handle: api.Handle | None = None, stream: object = None, device: int | None = None) -> None:
        """dw = gradient of the weights, from `reserve` and the workspace `backward_data` left in it.

        MIOpen overwrites dw (it does not add into it). Call `backward_data` with the same reserve first,
        once per `backward_weights`: GRU's backward-weights pass changes the workspace it reads, so a
        second call without a new `backward_data` raises `ReserveMismatchError`.
        """
        op = "RNN.backward_weights"
        self._check_open(op)
        reserve = self._reserve_object(op, reserve)
        xt = self._required(op, "x", x)
        yt = self._required(op, "y", y)
        dwt = self._required(op, "dw", dw)
        hxt = self._tensor(op, "hx", hx)
        if batch_sizes is None and xt.ndim == 2:
            batch_sizes = reserve.batch_sizes
        bs = self._sequence(op, "x", xt, batch_sizes, self.input_size)
        self._same_sequence(op, "x", bs, "y", yt, batch_sizes, self.output_size, xt)
        self._hidden(op, bs[0], hx=hxt)
        dev = _backend.current().current_device() if device is None else device
        res = self._check_reserve(op, reserve, bs, dev)
        if not res.backward_data_done:
            raise ReserveMismatchError(f"{op}: call backward_data with this reserve first (once per backward_weights): "
                                       f"MIOpen's backward-weights pass reads the gate gradients that backward_data "
                                       f"leaves in the workspace, and GRU's pass changes them")
        with _device_scope(device):
            h = resolve_handle(handle, stream, dev)
            self._check_weights(op, "dw", dwt, self.params_size(handle=h))
            x_descs = self._step_descs(bs, self.input_size)
            y_descs = self._step_descs(bs, self.output_size)
            hdesc = tensor_descriptor(self.dtype, self.hidden_dims(bs[0]))
            ws = res._workspace()
            res.backward_data_done = False  # consumed: GRU's pass changes the workspace it reads
            api.rnn_backward_weights(h, self.desc, x_descs, xt.ptr, hdesc, _ptr(hxt), y_descs, yt.ptr, dwt.desc,
                                     dwt.ptr, ws.ptr, ws.nbytes, res.ptr, res.nbytes)

    # ------------------------------------------------------------------ per-layer parameters

    def _check_layer(self, op: str, layer: object) -> int:
        lid = _index(layer, "layer")
        if not 0 <= lid < self.num_layer_ids:
            extra = " (2 per layer: bidirectional)" if self.bidirectional else ""
            raise ValueError(f"{op}: layer must be in [0, {self.num_layer_ids}){extra}; got {lid}")
        return lid

    def _check_id(self, op: str, what: str, value: object) -> int:
        pid = _index(value, what)
        n = self.params_per_layer
        if not 0 <= pid < n:
            raise ValueError(f"{op}: {what} must be in [0, {n}) for {self.mode.name} ({n // 2} input and {n // 2} "
                             f"recurrent {'matrices' if what == 'param_id' else 'biases'}); got {pid}")
        return pid

    def _check_param(self, op: str, layer: object, param_id: object) -> tuple[int, int]:
        self._check_open(op)
        lid = self._check_layer(op, layer)
        pid = self._check_id(op, "param_id", param_id)
        gates = GATES_PER_MODE[self.mode.name]
        if self.input_mode == api.RNNInputMode.miopenRNNskip and lid < self.num_directions and pid < gates:
            raise ValueError(f"{op}: in skip input mode layer {lid} has no input matrices (param ids 0..{gates - 1}); "
                             f"got param_id {pid}")
        return lid, pid

    def _check_bias(self, op: str, layer: object, bias_id: object) -> tuple[int, int]:
        self._check_open(op)
        if not self.has_bias:
            raise ValueError(f"{op}: this RNN was made without biases (bias=False)")
        return self._check_layer(op, layer), self._check_id(op, "bias_id", bias_id)

    def layer_param_size(self, layer: int, param_id: int, *, handle: api.Handle | None = None,
                         stream: object = None, device: int | None = None) -> int:
        """Bytes of one weight matrix (`miopenGetRNNLayerParamSize`)."""
        lid, pid = self._check_param("RNN.layer_param_size", layer, param_id)
        with _device_scope(device):
            return api.get_rnn_layer_param_size(resolve_handle(handle, stream, device), self.desc, lid, self._x_desc(),
                                                pid)

    def layer_bias_size(self, layer: int, bias_id: int, *, handle: api.Handle | None = None, stream: object = None,
                        device: int | None = None) -> int:
        """Bytes of one bias vector (`miopenGetRNNLayerBiasSize`)."""
        lid, bid = self._check_bias("RNN.layer_bias_size", layer, bias_id)
        with _device_scope(device):
            return api.get_rnn_layer_bias_size(resolve_handle(handle, stream, device), self.desc, lid, bid)

    def layer_param_offset(self, layer: int, param_id: int, *,
                           param_desc: api.TensorDescriptor | None = None) -> int:
        """Offset in elements of a weight matrix inside the packed weights (`miopenGetRNNLayerParamOffset`);
        MIOpen describes the matrix in `param_desc` when one is given (the caller's)."""
        lid, pid = self._check_param("RNN.layer_param_offset", layer, param_id)
        return self._offset(False, lid, pid, param_desc)

    def layer_bias_offset(self, layer: int, bias_id: int, *, bias_desc: api.TensorDescriptor | None = None) -> int:
        """Offset in elements of a bias inside the packed weights (`miopenGetRNNLayerBiasOffset`);
        MIOpen describes the bias in `bias_desc` when one is given (the caller's)."""
        lid, bid = self._check_bias("RNN.layer_bias_offset", layer, bias_id)
        return self._offset(True, lid, bid, bias_desc)

    def _offset(self, bias: bool, lid: int, pid: int, desc: api.TensorDescriptor | None) -> int:
        what = "bias_desc" if bias else "param_desc"
        if desc is not None and not isinstance(desc, api.TensorDescriptor):
            raise TypeError(f"RNN: {what} must be a TensorDescriptor; got {type(desc).__name__}")
        if isinstance(desc, FrozenTensorDescriptor):
            raise ValueError(f"RNN: {what} must be a descriptor of your own, not a cached (frozen) one")
        own = desc is None
        d = api.create_tensor_descriptor() if desc is None else desc
        try:
            fn = api.get_rnn_layer_bias_offset if bias else api.get_rnn_layer_param_offset
            return fn(self.desc, lid, self._x_desc(), pid, d)
        finally:
            if own:
                d.close()

    def _layer_tensors(self, op: str, w: TensorLike, data: TensorLike | None, data_name: str
                       ) -> tuple[Tensor, Tensor | None]:
        wt = self._required(op, "w", w)
        dt = self._tensor(op, data_name, data)
        return wt, dt

    def get_layer_param(self, layer: int, param_id: int, w: TensorLike, out: TensorLike | None = None, *,
                        handle: api.Handle | None = None, stream: object = None,
                        device: int | None = None) -> api.TensorDescriptor:
        """The descriptor MIOpen gives a weight matrix; with `out`, the matrix is also copied there
        (`miopenGetRNNLayerParam`). The descriptor is the caller's (close() it when done)."""
        op = "RNN.get_layer_param"
        lid, pid = self._check_param(op, layer, param_id)
        wt, ot = self._layer_tensors(op, w, out, "out")
        return self._get_layer(op, False, lid, pid, wt, ot, handle, stream, device)

    def get_layer_bias(self, layer: int, bias_id: int, w: TensorLike, out: TensorLike | None = None, *,
                       handle: api.Handle | None = None, stream: object = None,
                       device: int | None = None) -> api.TensorDescriptor:
        """As `get_layer_param`, for a bias vector (`miopenGetRNNLayerBias`)."""
        op = "RNN.get_layer_bias"
        lid, bid = self._check_bias(op, layer, bias_id)
        wt, ot = self._layer_tensors(op, w, out, "out")
        return self._get_layer(op, True, lid, bid, wt, ot, handle, stream, device)

    def set_layer_param(self, layer: int, param_id: int, w: TensorLike, data: TensorLike, *,
                        handle: api.Handle | None = None, stream: object = None, device: int | None = None) -> None:
        """Copy `data` into one weight matrix of the packed weights `w` (`miopenSetRNNLayerParam`)."""
        op = "RNN.set_layer_param"
        lid, pid = self._check_param(op, layer, param_id)
        wt, dt = self._layer_tensors(op, w, data, "data")
        if dt is None:
            raise TypeError(f"{op}: data is required (got None)")
        self._set_layer(op, False, lid, pid, wt, dt, handle, stream, device)

    def set_layer_bias(self, layer: int, bias_id: int, w: TensorLike, data: TensorLike, *,
                       handle: api.Handle | None = None, stream: object = None, device: int | None = None) -> None:
        """Copy `data` into one bias vector of the packed weights `w` (`miopenSetRNNLayerBias`)."""
        op = "RNN.set_layer_bias"
        lid, bid = self._check_bias(op, layer, bias_id)
        wt, dt = self._layer_tensors(op, w, data, "data")
        if dt is None:
            raise TypeError(f"{op}: data is required (got None)")
        self._set_layer(op, True, lid, bid, wt, dt, handle, stream, device)

    def _part_size(self, h: api.Handle, bias: bool, lid: int, pid: int) -> int:
        if bias:
            return api.get_rnn_layer_bias_size(h, self.desc, lid, pid)
        return api.get_rnn_layer_param_size(h, self.desc, lid, self._x_desc(), pid)

    def _get_layer(self, op: str, bias: bool, lid: int, pid: int, wt: Tensor, ot: Tensor | None,
                   handle: api.Handle | None, stream: object, device: int | None) -> api.TensorDescriptor:
        with _device_scope(device):
            h = resolve_handle(handle, stream, device)
            self._check_weights(op, "w", wt, self.params_size(handle=h))
            if ot is not None:
                need = self._part_size(h, bias, lid, pid)
                if ot.nbytes < need:
                    raise ShapeError(f"{op}: out holds {ot.nbytes} bytes but layer {lid} "
                                     f"{'bias' if bias else 'param'} {pid} takes {need} bytes")
            desc = api.create_tensor_descriptor()
            try:
                fn = api.get_rnn_layer_bias if bias else api.get_rnn_layer_param
                fn(h, self.desc, lid, self._x_desc(), wt.desc, wt.ptr, pid, desc, _ptr(ot))
            except BaseException:
                desc.close()
                raise
            return desc

    def _set_layer(self, op: str, bias: bool, lid: int, pid: int, wt: Tensor, dt: Tensor,
                   handle: api.Handle | None, stream: object, device: int | None) -> None:
        with _device_scope(device):
            h = resolve_handle(handle, stream, device)
            self._check_weights(op, "w", wt, self.params_size(handle=h))
            need = self._part_size(h, bias, lid, pid)
            if dt.nbytes != need:
                raise ShapeError(f"{op}: data holds {dt.nbytes} bytes but layer {lid} {'bias' if bias else 'param'} "
                                 f"{pid} takes {need} bytes")
            # MIOpen reads the matrix shape from the descriptor: use the one it describes the part with
            desc = api.create_tensor_descriptor()
            try:
                get = api.get_rnn_layer_bias if bias else api.get_rnn_layer_param
                get(h, self.desc, lid, self._x_desc(), wt.desc, wt.ptr, pid, desc, None)
                put = api.set_rnn_layer_bias if bias else api.set_rnn_layer_param
                put(h, self.desc, lid, self._x_desc(), wt.desc, wt.ptr, pid, desc, dt.ptr)
            finally:
                desc.close()

    def layer_params(self) -> Iterator[tuple[int, int]]:
        """Every valid (layer, param_id) pair of this RNN."""
        for lid in range(self.num_layer_ids):
            for pid in range(self.params_per_layer):
                if (self.input_mode == api.RNNInputMode.miopenRNNskip and lid < self.num_directions
                        and pid < GATES_PER_MODE[self.mode.name]):
                    continue
                yield lid, pid
