"""Caffe2's `Operator<HIPContext>` shape: an operator is made with its input and output blob names
and its arguments, and runs on the named blobs of a workspace (`miopen.caffe2.scopes.BlobScope`).

`run(ws)` calls `run_on_device()`, which dispatches on the dtype of input 0 to
`do_run_with_type(T)` with T a type wrapper (`miopenTypeWrapperF32` or `miopenTypeWrapperHalf`,
Caffe2's `DispatchHelper<TensorTypes<float, at::Half>>`).

Blobs hold device tensors: a `miopen.Tensor`, a PyTorch tensor, a `__cuda_array_interface__`
object, or a `DeviceTensor` (a tensor that owns its memory, which is what operators write to an
output blob that does not already hold a tensor of the right dims and dtype: Caffe2's
`Output(i)->Resize(...)` + `mutable_data<T>()`).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from .. import backend as _backend
from .. import layout
from .._generated._pointers import buffer_bytes, check_extent, device_address
from ..descriptors import DataTypeLike, data_type, itemsize
from ..errors import ShapeError
from .scopes import BlobScope
from ..tensor import Tensor, as_tensor
from ..workspace import PersistentBuffer
from .common import TypeWrapper, miopenTypeWrapperF32, miopenTypeWrapperHalf
from .wrapper import MIOPENWrapper

__all__ = ["DeviceTensor", "MIOPENOperator", "Workspace"]

#: Caffe2's `Workspace` (a namespace of blobs) is `miopen.caffe2.scopes.BlobScope`
Workspace = BlobScope


@dataclass(frozen=True)
class DeviceTensor(Tensor):
    """A packed device tensor that owns its memory (a `PersistentBuffer`, freed with the last
    reference or by `close()`); a `miopen.Tensor` everywhere one is accepted."""

    buffer: PersistentBuffer | None = field(default=None, compare=False, repr=False)

    @classmethod
    def empty(cls, dims: Sequence[int], dtype: DataTypeLike, *, device: int | None = None,
              stream: object = None) -> DeviceTensor:
        """Uninitialised packed memory for `dims` of `dtype` on `device` (default: current), ordered on `stream`."""
        d = tuple(dims)
        if not d or any(isinstance(x, bool) or not isinstance(x, int) or x < 1 for x in d):
            raise ShapeError(f"DeviceTensor.empty: dims must be ints >= 1 (MIOpen has no empty tensors); got {d}")
        dt = data_type(dtype)
        dev = _backend.current().current_device() if device is None else device
        nbytes = math.prod(d) * itemsize(dt)
        with _backend.current().device_guard(dev):
            buf = PersistentBuffer(nbytes, dev, "caffe2 blob", stream=_backend.current().as_stream_handle(stream))
        assert buf.ptr is not None
        return cls(buf.ptr, d, layout.packed_strides(d), dt, buf)

    def view(self, dims: Sequence[int]) -> DeviceTensor:
        """The same memory seen with other packed dims (at most as many bytes)."""
        d = tuple(dims)
        need = math.prod(d) * itemsize(self.dtype)
        have = self.buffer.nbytes if self.buffer is not None else self.nbytes
        if need > have:
            raise ShapeError(f"DeviceTensor.view: dims {d} need {need} bytes; this tensor holds {have}")
        return DeviceTensor(self.ptr, d, layout.packed_strides(d), self.dtype, self.buffer)

    @property
    def capacity(self) -> int:
        """Bytes of the memory behind the tensor."""
        return self.buffer.nbytes if self.buffer is not None else self.nbytes

    @classmethod
    def from_host(cls, array: object, *, device: int | None = None, stream: object = None) -> DeviceTensor:
        """A new DeviceTensor holding a copy of a host array (a NumPy array, or anything `numpy.asarray` takes: its
        shape and dtype), copied before this returns."""
        host = _host_array(array, "DeviceTensor.from_host: array")
        t = cls.empty(host.shape, str(host.dtype), device=device, stream=stream)
        t.copy_from(host, stream=stream)
        return t

    def to_host(self, stream: object = None) -> Any:
        """A NumPy array (this tensor's dims and dtype) holding a copy of its elements, read after the work queued
        before it (OpenCL: on `stream`; HIP: hipMemcpy's order)."""
        np = _numpy("DeviceTensor.to_host")
        out = np.empty(self.dims, _NUMPY_DTYPES.get(self.dtype.name, "uint8"))
        if out.nbytes != self.nbytes:
            raise ShapeError(f"DeviceTensor.to_host: {self.dtype.name} has no NumPy dtype of {itemsize(self.dtype)} "
                             f"bytes")
        b = _backend.current()
        read = getattr(b, "read", None)
        if read is not None:  # OpenCL: a cl_mem read through its queue
            out[...] = np.frombuffer(read(self.ptr, self.nbytes, stream), out.dtype).reshape(self.dims)
        else:
            from .. import hip

            hip.memcpy(out, self.ptr, self.nbytes, hip.MemcpyKind.DEVICE_TO_HOST)  # after the device's work
        return out

    def copy_from(self, src: object, stream: object = None) -> None:
        """Fill this tensor from `src`: a host array (NumPy; its bytes, as many as this tensor holds), or any device
        buffer the typed API takes (`_pointers.ARRAY_KINDS`: an int address, a pyopencl Buffer or Array, data_ptr(),
        `__cuda_array_interface__`, DLPack), whose size, where known, must be at least this tensor's bytes; a
        device copy is ordered on `stream`."""
        fn = "DeviceTensor.copy_from"
        n = self.nbytes
        b = _backend.current()
        address = None if _is_host(src) else device_address(src, "src", fn)
        if address is None:
            host = _host_array(src, f"{fn}: src")
            if host.nbytes != n:
                raise ShapeError(f"{fn}: src holds {host.nbytes} bytes; this tensor holds {n} "
                                 f"(dims {self.dims}, {self.dtype.name})")
            write = getattr(b, "write", None)
            if write is not None:  # OpenCL
                write(self.ptr, host.tobytes(), stream)
                return
            from .. import hip

            hip.memcpy(self.ptr, host, n, hip.MemcpyKind.HOST_TO_DEVICE)
            return
        check_extent(buffer_bytes(src, "src", fn), n, "src", fn, "this tensor needs {need} bytes")
        if address == 0:
            raise ValueError(f"{fn}: src is a NULL device address")
        b.memcpy_dtod_async(self.ptr, address, n, stream)

    def close(self) -> None:
        """Free the memory now (every view of it becomes invalid)."""
        if self.buffer is not None:
            self.buffer.close()


#: MIOpen type name -> the NumPy dtype of its elements (to_host)
_NUMPY_DTYPES = {"miopenHalf": "float16", "miopenFloat": "float32", "miopenDouble": "float64", "miopenInt32": "int32",
                 "miopenInt8": "int8", "miopenInt64": "int64", "miopenBFloat16": "uint16", "miopenInt8x4": "uint32"}


def _numpy(fn: str) -> Any:
    try:
        import numpy
    except ImportError:
        raise ImportError(f"{fn} needs NumPy (pip install numpy)") from None
    return numpy


def _is_host(value: object) -> bool:
    """A NumPy array or other host buffer (memoryview, bytes): read as host memory, never as an address."""
    np = sys.modules.get("numpy")
    return (np is not None and isinstance(value, np.ndarray)) or isinstance(value, (bytes, bytearray, memoryview))


def _host_array(value: object, what: str) -> Any:
    """`value` as a C-contiguous NumPy array (errors name `what`)."""
    np = _numpy(what.split(":")[0])
    try:
        host = np.ascontiguousarray(value)
    except (TypeError, ValueError):
        host = None
    if host is None or host.dtype.hasobject:
        raise TypeError(f"{what} must be a host array (NumPy) or a device buffer; got {type(value).__name__}")
    return host


def _names(value: object, what: str, op: str, lo: int, hi: int) -> tuple[str, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise TypeError(f"{op}: {what} must be a list of blob names; got {type(value).__name__}")
    names = tuple(value)
    for i, n in enumerate(names):
        if not isinstance(n, str) or not n:
            raise TypeError(f"{op}: {what}[{i}] must be a non-empty blob name (str); got {n!r}")
    if not lo <= len(names) <= hi:
        want = str(lo) if lo == hi else f"{lo} to {hi}"
        raise ValueError(f"{op}: {what} takes {want} blob names; got {len(names)}: {list(names)}")
    return names


class MIOPENOperator:
    """The base of the operators here: blob names, arguments, a `MIOPENWrapper` for the operator's
    (device, stream), and the float/half dispatch. Subclasses set `NUM_INPUTS`/`NUM_OUTPUTS` and
    implement `do_run_with_type`."""

    #: (min, max) blob counts, as Caffe2's OPERATOR_SCHEMA
    NUM_INPUTS: ClassVar[tuple[int, int]] = (1, 1)
    NUM_OUTPUTS: ClassVar[tuple[int, int]] = (1, 1)
    #: the types run_on_device dispatches to (Caffe2: TensorTypes<float, at::Half>)
    DISPATCH_TYPES: ClassVar[tuple[type[TypeWrapper], ...]] = (miopenTypeWrapperF32, miopenTypeWrapperHalf)

    def __init__(self, inputs: Sequence[str], outputs: Sequence[str], *, ws: BlobScope | None = None,
                 device: int | None = None, stream: object = None, name: str = "",
                 args: Mapping[str, object] | None = None) -> None:
        op = type(self).__name__
        self.inputs = _names(inputs, "inputs", op, *self.NUM_INPUTS)
        self.outputs = _names(outputs, "outputs", op, *self.NUM_OUTPUTS)
        if ws is not None and not isinstance(ws, BlobScope):
            raise TypeError(f"{op}: ws must be a miopen.caffe2.scopes.BlobScope (a workspace) or None; got "
                            f"{type(ws).__name__}")
        self.ws = ws
        self.name = name
        self.miopen_wrapper = MIOPENWrapper(device, stream)
        self.args: dict[str, object] = dict(args or {})

    # ------------------------------------------------------------------ Caffe2's accessors

    @property
    def device(self) -> int:
        return self.miopen_wrapper.device

    @property
    def stream(self) -> object:
        return self.miopen_wrapper.stream

    @property
    def type_name(self) -> str:
        return type(self).__name__

    def get_single_argument(self, name: str, default: Any) -> Any:
        """An argument the operator was made with (Caffe2's `GetSingleArgument`)."""
        return self.args.get(name, default)

    def has_argument(self, name: str) -> bool:
        return name in self.args

    def _workspace(self) -> BlobScope:
        if self.ws is None:
            raise ValueError(f"{self.type_name}: no workspace: pass ws= when making the operator or to run()")
        return self.ws

    def input_blob(self, i: int) -> object:
        """The object in input blob `i`."""
        name = self.inputs[i]
        ws = self._workspace()
        if name not in ws:
            raise KeyError(f"{self.type_name}: input {i} names blob {name!r}, which the workspace does not have")
        return ws[name]

    def input(self, i: int) -> Tensor:
        """Input blob `i` as a device tensor (errors name the blob)."""
        return as_tensor(self.input_blob(i), f"{self.type_name}: input {i} ({self.inputs[i]!r})")

    def input_size(self) -> int:
        return len(self.inputs)

    def output_size(self) -> int:
        return len(self.outputs)

    def output(self, i: int, dims: Sequence[int], T: type[TypeWrapper]) -> Tensor:
        """Output blob `i` as a packed tensor of `dims` and T's type (Caffe2's `Resize` +
        `mutable_data<T>()`): the tensor already there when it fits (same dims, dtype, packed; or a
        DeviceTensor with the capacity), else new memory on the operator's device."""
        name = self.outputs[i]
        ws = self._workspace()
        d = tuple(dims)
        dt = T.type
        old = ws[name] if name in ws else None
        if old is not None:
            try:
                t = as_tensor(old, name)
            except (TypeError, ValueError):
                t = None
            if t is not None and t.dtype == dt and layout.is_packed(t.dims, t.strides):
                if t.dims == d:
                    return t
                if isinstance(t, DeviceTensor) and t.capacity >= math.prod(d) * itemsize(dt):
                    view = t.view(d)
                    ws[name] = view
                    return view
        new = DeviceTensor.empty(d, dt, device=self.device, stream=self.stream)
        ws[name] = new
        return new

    def set_output_blob(self, i: int, value: object) -> None:
        """Put `value` in output blob `i` as it is (reserves, states: what is not a tensor)."""
        self._workspace()[self.outputs[i]] = value

    # ------------------------------------------------------------------ running

    def run(self, ws: BlobScope | None = None) -> bool:
        """Run on `ws` (or the workspace the operator was made with); Caffe2's `Run()`."""
        if ws is not None:
            if not isinstance(ws, BlobScope):
                raise TypeError(f"{self.type_name}.run: ws must be a miopen.caffe2.scopes.BlobScope; got "
                                f"{type(ws).__name__}")
            self.ws = ws
        return self.run_on_device()

    def run_on_device(self) -> bool:
        """Dispatch on the dtype of input 0 to `do_run_with_type(T)` (float or half)."""
        dt = self.input(0).dtype
        for T in self.DISPATCH_TYPES:
            if T.type == dt:
                return self.do_run_with_type(T)
        names = ", ".join(T.dtype_name for T in self.DISPATCH_TYPES)
        raise TypeError(f"{self.type_name}: input 0 ({self.inputs[0]!r}) is {dt.name}; this operator runs on "
                        f"{names}")

    def do_run_with_type(self, T: type[TypeWrapper]) -> bool:
        raise NotImplementedError(f"{self.type_name}.do_run_with_type")

    def check_dtype(self, i: int, t: Tensor, T: type[TypeWrapper]) -> None:
        if t.dtype != T.type:
            raise ShapeError(f"{self.type_name}: input {i} ({self.inputs[i]!r}) is {t.dtype.name}, but input 0 is "
                             f"{T.type.name}")

    def __repr__(self) -> str:
        return (f"<{self.type_name} inputs={list(self.inputs)} outputs={list(self.outputs)} device={self.device}"
                f"{' ' + repr(self.name) if self.name else ''}>")
