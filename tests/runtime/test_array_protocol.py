"""One array protocol (issues 30.5, 32.3, 29.1): the typed API, the ops and Caffe2's DeviceTensor take the same device
buffers, read by one reader in one order (`_pointers.ARRAY_KINDS`): an int address, a c_void_p, a pyopencl Buffer or
Array, `data_ptr()` (PyTorch), `__cuda_array_interface__`, DLPack (kDLROCM, kDLCUDA). A buffer whose size is known is
checked against what the call needs, with an error naming the parameter, the bytes it holds and the bytes needed.

On the stub libraries device memory is host memory (the stub libamdhip64 allocates with malloc), so every kind here
wraps a NumPy array's address and DeviceTensor's copies can be read back. The pyopencl kinds run on the real OpenCL
build on PoCL (skipped without it, as tests/real/kernels/test_real_miopen_ocl.py)."""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ..conftest import Libs

DIMS = (2, 4, 8, 8)
N = 2 * 4 * 8 * 8


class TorchLike:
    """What the package reads of a PyTorch tensor on a GPU: data_ptr(), shape, stride(), dtype, is_cuda."""

    is_cuda = True

    def __init__(self, host: np.ndarray, dims: tuple[int, ...] = DIMS) -> None:
        self.host, self.shape = host, dims
        self.dtype = "torch.float32"

    def data_ptr(self) -> int:
        return int(self.host.ctypes.data)

    def stride(self) -> tuple[int, ...]:
        from miopen.layout import packed_strides

        return packed_strides(self.shape)


class ArrayInterface:
    """A `__cuda_array_interface__` exporter of a packed float32 layout."""

    def __init__(self, host: np.ndarray, dims: tuple[int, ...] = DIMS) -> None:
        self.host = host
        self.__cuda_array_interface__ = {"shape": dims, "typestr": "<f4", "data": (int(host.ctypes.data), False),
                                         "version": 3}


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32), ("dtype", _DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


_new_capsule = ctypes.pythonapi.PyCapsule_New
_new_capsule.restype = ctypes.py_object
_new_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


class DLPackLike:
    """A DLPack exporter of a packed float32 layout on `device_type` (kDLROCM = 10, kDLCUDA = 2)."""

    def __init__(self, host: np.ndarray, device_type: int, dims: tuple[int, ...] = DIMS) -> None:
        self.host = host
        self.shape = (ctypes.c_int64 * len(dims))(*dims)
        self.tensor = _DLTensor(int(host.ctypes.data), _DLDevice(device_type, 0), len(dims), _DLDataType(2, 32, 1),
                                self.shape, None, 0)
        self.device_type = device_type

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.device_type, 0

    def __dlpack__(self, stream: object = None) -> object:
        return _new_capsule(ctypes.addressof(self.tensor), b"dltensor", None)


def _host(seed: int = 0, n: int = N) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(n).astype(np.float32)


#: every kind the stub can hold, from a host array (the stub's device memory): (kind, make)
KINDS: dict[str, Callable[[np.ndarray], object]] = {
    "int": lambda h: int(h.ctypes.data),
    "c_void_p": lambda h: ctypes.c_void_p(int(h.ctypes.data)),
    "data_ptr()": TorchLike,
    "__cuda_array_interface__": ArrayInterface,
    "DLPack kDLROCM": lambda h: DLPackLike(h, 10),
    "DLPack kDLCUDA": lambda h: DLPackLike(h, 2),
}
#: the kinds without a layout of their own: the ops take them through Tensor.make(buffer, dims, dtype)
BARE = {"int", "c_void_p"}


def _relu_descs() -> tuple[Any, Any, Any]:
    import miopen

    h = miopen.Handle.from_address(1)
    d = miopen.TensorDescriptor.from_address(2)
    ad = miopen.ActivationDescriptor.from_address(3)
    return h, d, ad


def _stub_extent(d: Any) -> int:
    """The bytes the stub's descriptor `d` spans (the stub's known outputs), as the bound release's wrappers read them."""
    from miopen._generated import _state

    assert _state.bound_modules is not None
    need = _state.bound_modules[1]._extent_miopenTensorDescriptor_t(d, "f")
    assert isinstance(need, int) and need > 16
    return need


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kind_through_the_typed_api(libs: Libs, kind: str) -> None:
    import miopen

    h, d, ad = _relu_descs()
    host = _host(n=max(N, _stub_extent(d) // 4 + 1))
    value = KINDS[kind](host)
    miopen.activation_forward(h, ad, 1.0, d, value, 0.0, d, value)
    call = libs.log("miopenActivationForward")[-1]
    assert int(call["x"]) == int(call["y"]) == host.ctypes.data


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kind_through_an_op(libs: Libs, kind: str) -> None:
    from miopen.ops import activation
    from miopen.tensor import Tensor

    host = _host()
    value = KINDS[kind](host)
    tensor = Tensor.make(value, DIMS, "float32") if kind in BARE else value
    activation.activation_forward(tensor, tensor, "relu")
    call = libs.log("miopenActivationForward")[-1]
    assert int(call["x"]) == int(call["y"]) == host.ctypes.data


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kind_into_a_device_tensor_and_back(libs: Libs, kind: str) -> None:
    from miopen.caffe2 import DeviceTensor

    host = _host(seed=3)
    t = DeviceTensor.empty(DIMS, "float32")
    t.copy_from(KINDS[kind](host))
    assert np.array_equal(t.to_host(), host.reshape(DIMS))
    back = DeviceTensor.from_host(host.reshape(DIMS) * 2)
    assert back.dims == DIMS and np.array_equal(back.to_host(), host.reshape(DIMS) * 2)


def test_device_tensor_refuses_a_source_too_small(libs: Libs) -> None:
    from miopen.caffe2 import DeviceTensor
    from miopen.errors import ShapeError

    t = DeviceTensor.empty(DIMS, "float32")
    with pytest.raises(ValueError, match=rf"^DeviceTensor.copy_from: src holds 16 bytes, but this tensor needs {4 * N} "
                                         r"bytes"):
        t.copy_from(ArrayInterface(_host(n=4), (4,)))
    with pytest.raises(ShapeError, match=rf"src holds 16 bytes; this tensor holds {4 * N}"):
        t.copy_from(np.zeros(4, np.float32))
    with pytest.raises(TypeError, match=r"src must be a host array \(NumPy\) or a device buffer; got object"):
        t.copy_from(object())


class Both(TorchLike):
    """data_ptr() and __cuda_array_interface__ at different addresses: which one a reader takes shows its order."""

    def __init__(self, host: np.ndarray, other: np.ndarray) -> None:
        super().__init__(host)
        self.__cuda_array_interface__ = ArrayInterface(other).__cuda_array_interface__


def test_one_order_everywhere(libs: Libs) -> None:
    """An object of two kinds is read as the earlier of ARRAY_KINDS by every reader: the typed API, Tensor.make, the
    ops (as_tensor), DeviceTensor."""
    import miopen
    from miopen._generated._pointers import ARRAY_KINDS, array_kind, device_address
    from miopen.caffe2 import DeviceTensor
    from miopen.ops import activation
    from miopen.tensor import Tensor, as_tensor

    assert ARRAY_KINDS.index("data_ptr()") < ARRAY_KINDS.index("__cuda_array_interface__")
    first, second = _host(seed=1), _host(seed=2)
    both = Both(first, second)
    assert array_kind(both) == "data_ptr()"
    want = first.ctypes.data
    assert device_address(both, "x", "f") == want
    assert Tensor.make(both, DIMS, "float32").ptr == want and as_tensor(both).ptr == want
    h, d, ad = _relu_descs()
    miopen.activation_forward(h, ad, 1.0, d, both, 0.0, d, both)
    activation.activation_forward(both, both, "relu")
    assert [int(c["x"]) for c in libs.log("miopenActivationForward")] == [want, want]
    t = DeviceTensor.empty(DIMS, "float32")
    t.copy_from(both)
    assert np.array_equal(t.to_host(), first.reshape(DIMS))


def test_known_sizes_checked_in_the_typed_api(libs: Libs) -> None:
    """A buffer whose size is known is checked against its descriptor's extent and a workspace against the byte count
    passed with it; an int address is not (its size cannot be known), and nothing is called after a refusal."""
    import miopen

    h, d, ad = _relu_descs()
    need = _stub_extent(d)
    small = ArrayInterface(_host(n=4), (4,))
    big = ArrayInterface(_host(n=need // 4 + 1), (need // 4 + 1,))
    with pytest.raises(ValueError, match=rf"^miopenActivationForward: x holds 16 bytes, but its descriptor spans {need} "
                                         r"bytes .*past its end"):
        miopen.activation_forward(h, ad, 1.0, d, small, 0.0, d, big)
    with pytest.raises(ValueError, match=rf"^miopenActivationForward: y holds 16 bytes, but its descriptor spans {need}"):
        miopen.activation_forward(h, ad, 1.0, d, big, 0.0, d, small)
    assert not libs.log("miopenActivationForward")
    miopen.activation_forward(h, ad, 1.0, d, small.__cuda_array_interface__["data"][0], 0.0, d, big)  # an int: passes
    assert len(libs.log("miopenActivationForward")) == 1
    cd = miopen.ConvolutionDescriptor.from_address(4)
    with pytest.raises(ValueError, match=r"^miopenConvolutionForward: work_space holds 16 bytes, but work_space_size is "
                                         r"64 bytes"):
        miopen.convolution_forward(h, 1.0, d, big, d, big, cd, 0, 0.0, d, big, small, 64)
    assert not libs.log("miopenConvolutionForward")


_POCL_PROGRAM = r'''
import numpy as np, pyopencl as cl, pyopencl.array as cla, miopen
from miopen.caffe2 import DeviceTensor
from miopen.ops import activation
from miopen.tensor import Tensor
q = miopen.backend.opencl().default_queue()
h = miopen.create_with_stream(q.int_ptr)
D = (1, 1, 64, 64)
d = miopen.create_tensor_descriptor()
miopen.set_4d_tensor_descriptor(d, miopen.DataType.miopenFloat, *D)
ad = miopen.create_activation_descriptor()
miopen.set_activation_descriptor(ad, miopen.ActivationMode.miopenActivationRELU, 0.0, 0.0, 0.0)
host = np.random.default_rng(7).standard_normal(D).astype(np.float32)
relu = np.maximum(host, 0)
mf = cl.mem_flags
def buffer():
    return cl.Buffer(q.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=host)
def array():
    return cla.to_device(q, host)
def read(v):
    out = np.empty(D, np.float32)
    cl.enqueue_copy(q, out, v if isinstance(v, cl.Buffer) else v.base_data); q.finish()
    return out
got = []
for kind, make in (("Buffer", buffer), ("Array", array)):
    x, y = make(), make()
    miopen.activation_forward(h, ad, 1.0, d, x, 0.0, d, y)
    got.append(f"typed-{kind}={np.array_equal(read(y), relu)}")
    x, y = make(), make()
    tx, ty = (Tensor.make(x, D, "float32"), Tensor.make(y, D, "float32")) if kind == "Buffer" else (x, y)
    activation.activation_forward(tx, ty, "relu", stream=q)
    got.append(f"op-{kind}={np.array_equal(read(y), relu)}")
    t = DeviceTensor.empty(D, "float32")
    t.copy_from(make(), stream=q)
    got.append(f"devicetensor-{kind}={np.array_equal(t.to_host(stream=q), host)}")
small, big = cl.Buffer(q.context, mf.READ_WRITE, 16), buffer()
def refused(call):
    try:
        call()
    except ValueError as exc:
        return "holds 16 bytes" in str(exc) and "16384 bytes" in str(exc)
    return False
got.append(f"refused-typed-x={refused(lambda: miopen.activation_forward(h, ad, 1.0, d, small, 0.0, d, big))}")
got.append(f"refused-typed-y={refused(lambda: miopen.activation_forward(h, ad, 1.0, d, big, 0.0, d, small))}")
got.append(f"refused-tensor={refused(lambda: Tensor.make(small, D, 'float32'))}")
got.append(f"refused-devicetensor={refused(lambda: DeviceTensor.empty(D, 'float32').copy_from(small))}")
gone = buffer(); gone.release()
try:
    miopen.activation_forward(h, ad, 1.0, d, gone, 0.0, d, big)
    got.append("refused-released=False")
except ValueError as exc:
    got.append(f"refused-released={'released' in str(exc)}")
print(" ".join(got))
'''


@pytest.mark.real_kernels
def test_pyopencl_kinds_on_pocl(tmp_path: Path) -> None:
    """A pyopencl Buffer and Array through the typed API, an op and a DeviceTensor on the real OpenCL build (right
    results); a 16-byte Buffer for a 1x1x64x64 float tensor, and a released one, refused everywhere, never a crash."""
    from ..real.kernels.test_real_miopen_ocl import _run_program

    r = _run_program(["-c", _POCL_PROGRAM], tmp_path)
    got = dict(item.split("=") for item in r.stdout.split())
    assert got and set(got.values()) == {"True"}, got
    assert len(got) == 11, got


def test_hip_allocations_sized_by_the_hip_runtime(libs: Libs) -> None:
    """A data_ptr() object in a HIP allocation (a DeviceTensor, a PyTorch tensor) is sized by hipMemPtrGetInfo where the
    HIP runtime is loaded: too small for its descriptor, the typed API refuses it; an address HIP did not allocate is
    not sized (accepted as before)."""
    import miopen
    from miopen import hip
    from miopen.caffe2 import DeviceTensor

    h, d, ad = _relu_descs()
    need = _stub_extent(d)
    small = DeviceTensor.empty((4,), "float32")
    big = DeviceTensor.empty((need // 4 + 1,), "float32")
    assert hip.allocation_bytes(small.ptr) == 16 and hip.allocation_bytes(big.ptr) == big.capacity
    assert hip.allocation_bytes(int(_host().ctypes.data)) is None  # not HIP's
    with pytest.raises(ValueError, match=rf"^miopenActivationForward: x holds 16 bytes, but its descriptor spans {need}"):
        miopen.activation_forward(h, ad, 1.0, d, small, 0.0, d, big)
    assert not libs.log("miopenActivationForward")
    miopen.activation_forward(h, ad, 1.0, d, big, 0.0, d, TorchLike(_host(n=4), (4,)))  # not HIP's memory: unsized
    assert len(libs.log("miopenActivationForward")) == 1
