"""Caffe2's `common_miopen.h` by its own names: versions, status strings, `MIOPEN_ENFORCE`, the
`miopenTypeWrapper` family and `miopenTensorDescWrapper` — each one a thin name over the runtime.

Differences from Caffe2 (deliberate):

* `miopen_compiled_version()` / `miopen_runtime_version()` return `miopen.version.Version`
  tuples (``.as_int()`` packs major*1e6 + minor*1e3 + patch); Caffe2 returned a fixed 1399 for
  both and never asked the library.
* `check_miopen_versions()` really checks (Caffe2's body was empty).
* `miopen_get_error_string()` gives the library's own text (``miopenStatusBadParm``), not
  Caffe2's cuDNN-style renames (``MIOPEN_STATUS_BAD_PARAM``).
* `miopenTensorDescWrapper` takes any rank and explicit strides (Caffe2: 4-D, packed only), and
  `descriptor_for_order` honours NHWC (Caffe2 ignored the order).
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import ClassVar, TypeAlias

from .. import layout
from .._args import int_seq
from .. import version as _version
from .._generated import _support as _s
from .._generated import api, raw
from ..descriptors import DataTypeLike, data_type, itemsize, k_one, k_zero
from ..errors import check_status
from ..state import MAX_STATES_PER_GPU

__all__ = [
    "CAFFE2_COMPILE_TIME_MAX_MIOPEN_STATES", "MIOPEN_ENFORCE", "Version", "miopen_compiled_version",
    "miopen_runtime_version", "miopen_get_error_string", "check_miopen_versions", "TypeWrapper",
    "miopenTypeWrapperF32", "miopenTypeWrapperHalf", "miopenTypeWrapperBFloat16", "miopenTypeWrapperF64",
    "miopenTypeWrapper", "miopenTensorDescWrapper", "ScalingParam",
]

#: states per GPU that `MIOPENWrapper.with_miopen_state` offers (Caffe2's compile-time constant, 4)
CAFFE2_COMPILE_TIME_MAX_MIOPEN_STATES = MAX_STATES_PER_GPU

Version = _version.Version
ScalingParam: TypeAlias = "type[ctypes.c_float] | type[ctypes.c_double]"


# --------------------------------------------------------------------------- versions and statuses


def miopen_compiled_version() -> Version:
    """The MIOpen release of the bound bindings (Caffe2's `miopenCompiledVersion`)."""
    return _version.compiled_version()


def miopen_runtime_version() -> Version | None:
    """The loaded library's version (`miopenGetVersion`); None for a library older than MIOpen 2.3."""
    return _version.runtime_version()


def check_miopen_versions(policy: _version.Policy = "compatible") -> Version | None:
    """Caffe2's `CheckMIOPENVersions`, made real: `miopen.version.check_miopen_versions` (cached;
    `MIOPEN_SKIP_VERSION_CHECK=1` skips it). Returns the runtime version."""
    return _version.check_miopen_versions(policy)


def _status_code(status: object, fn: str) -> int:
    if isinstance(status, bool) or not isinstance(status, int):
        raise TypeError(f"{fn}: status must be a miopenStatus_t member or an int; got {type(status).__name__}")
    if not 0 <= int(status) < 1 << 32:
        raise ValueError(f"{fn}: status must be in [0, 2**32) (a miopenStatus_t value); got {int(status)}")
    return int(status)


def miopen_get_error_string(status: api.Status | int) -> str:
    """The library's text for a status (`miopenGetErrorString`, any code: unknown ones get MIOpen's
    own answer). Without a loadable library: the status name, or a note that the code is unknown."""
    code = _status_code(status, "miopen_get_error_string")
    try:
        text = raw.miopenGetErrorString(code)
    except _s.LibraryNotFoundError:
        from .._generated.errors import miopenStatus_t  # the status names, without binding a release

        members = {int(m): m.name for m in miopenStatus_t}
        return members.get(code, f"unknown miopenStatus_t value {code}")
    return text.decode("utf-8", "replace") if isinstance(text, bytes) else ""


def MIOPEN_ENFORCE(status: api.Status | int, what: str = "MIOPEN_ENFORCE") -> None:
    """Raise the status's exception (`miopen.MIOpenError` subclasses; GpuOperationsSkipped only warns)
    unless it is success. The generated functions already raise; this is for raw calls."""
    check_status(_status_code(status, "MIOPEN_ENFORCE"), what)


# --------------------------------------------------------------------------- type wrappers


class _TypeWrapperMeta(type):
    """`Wrapper.type` is looked up in the bound release's enum when read (bindings are per release)."""

    _dtype_name: str

    @property
    def type(cls) -> api.DataType:  # noqa: A003 - Caffe2's name
        """The `miopenDataType_t` (Caffe2's `miopenTypeWrapper<T>::type`)."""
        return data_type(cls._dtype_name)

    def __repr__(cls) -> str:
        return f"<{cls.__name__}: {cls._dtype_name}>"


class TypeWrapper(metaclass=_TypeWrapperMeta):
    """Caffe2's `miopenTypeWrapper<T>`: the data type, the host scalar types MIOpen reads for it, and
    the process-lifetime scaling constants. Use the subclasses; never instantiated."""

    _dtype_name: ClassVar[str] = ""
    #: numpy/torch name of T
    dtype_name: ClassVar[str] = ""
    #: ctypes type of alpha/beta (Caffe2's `ScalingParamType`): float, double for double
    ScalingParamType: ClassVar[ScalingParam] = ctypes.c_float
    #: ctypes type of batch-norm scale/bias/mean/variance (Caffe2's `BNParamType`)
    BNParamType: ClassVar[ScalingParam] = ctypes.c_float

    def __init__(self) -> None:
        raise TypeError(f"{type(self).__name__} is a static type wrapper; use the class itself")

    @classmethod
    def itemsize(cls) -> int:
        return layout.itemsize(cls._dtype_name)

    @classmethod
    def k_one(cls) -> ctypes.c_float | ctypes.c_double:
        """1 as a `ScalingParamType` that lives as long as the process (Caffe2's `kOne()`)."""
        return k_one(cls.type)

    @classmethod
    def k_zero(cls) -> ctypes.c_float | ctypes.c_double:
        """0 as a `ScalingParamType` that lives as long as the process (Caffe2's `kZero()`)."""
        return k_zero(cls.type)

    kOne = k_one
    kZero = k_zero


class miopenTypeWrapperF32(TypeWrapper):  # noqa: N801 - Caffe2's name
    """`miopenTypeWrapper<float>`: miopenFloat, float scaling and BN params."""

    _dtype_name = "miopenFloat"
    dtype_name = "float32"


class miopenTypeWrapperHalf(TypeWrapper):  # noqa: N801
    """`miopenTypeWrapper<at::Half>`: miopenHalf, float scaling and BN params."""

    _dtype_name = "miopenHalf"
    dtype_name = "float16"


class miopenTypeWrapperBFloat16(TypeWrapper):  # noqa: N801
    """`miopenTypeWrapper<at::BFloat16>`: miopenBFloat16, float scaling and BN params."""

    _dtype_name = "miopenBFloat16"
    dtype_name = "bfloat16"


class miopenTypeWrapperF64(TypeWrapper):  # noqa: N801
    """`miopenTypeWrapper<double>`: miopenDouble, double scaling and BN params (as cuDNN's wrapper)."""

    _dtype_name = "miopenDouble"
    dtype_name = "float64"
    ScalingParamType = ctypes.c_double
    BNParamType = ctypes.c_double


_WRAPPERS: tuple[type[TypeWrapper], ...] = (miopenTypeWrapperF32, miopenTypeWrapperHalf, miopenTypeWrapperBFloat16,
                                            miopenTypeWrapperF64)


def miopenTypeWrapper(dtype: DataTypeLike) -> type[TypeWrapper]:  # noqa: N802
    """The wrapper of a data type (`miopenTypeWrapper<T>`): a member, its value, or a numpy/torch
    dtype or name ("float32", "half", "torch.bfloat16", "miopenDouble")."""
    try:
        dt = data_type(dtype)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"miopenTypeWrapper: {exc}") from None
    for w in _WRAPPERS:
        if w.type == dt:
            return w
    raise TypeError(f"miopenTypeWrapper: dtype: no type wrapper for {dt.name}; Caffe2 has them for float32, "
                    f"float16, bfloat16 and float64")


# --------------------------------------------------------------------------- the descriptor wrapper


def _dims_arg(value: object, name: str, fn: str) -> tuple[int, ...]:
    return int_seq(value, name, fn)


class miopenTensorDescWrapper:  # noqa: N801 - Caffe2's name
    """One tensor descriptor of its own, re-set only when the type, dims or strides change
    (Caffe2's `miopenTensorDescWrapper`). `descriptor()` returns ``(descriptor, changed)``.

    Unlike the runtime's cached descriptors this one is mutable: it belongs to its owner (an
    operator), which must not use the descriptor after `close()`.
    """

    def __init__(self) -> None:
        self._desc: api.TensorDescriptor | None = api.create_tensor_descriptor()
        self.type: api.DataType | None = None
        self.dims: tuple[int, ...] = ()
        self.strides: tuple[int, ...] = ()
        self.sets = 0

    @property
    def desc(self) -> api.TensorDescriptor:
        if self._desc is None or self._desc.closed:
            raise ValueError("miopenTensorDescWrapper: this descriptor wrapper is closed")
        return self._desc

    def descriptor(self, dtype: DataTypeLike, dims: Sequence[int], strides: Sequence[int] | None = None
                   ) -> tuple[api.TensorDescriptor, bool]:
        """The descriptor of `dims` (logical N, C, ... order) with `strides` (default: packed) and
        whether it had to be re-set (`miopenSetTensorDescriptor`) for this call."""
        fn = "miopenTensorDescWrapper.descriptor"
        desc = self.desc
        dt = data_type(dtype)
        d = _dims_arg(dims, "dims", fn)
        if not d or any(x < 1 for x in d):
            raise ValueError(f"{fn}: dims must be non-empty and every dim >= 1; got {d}")
        s = layout.packed_strides(d) if strides is None else _dims_arg(strides, "strides", fn)
        if len(s) != len(d):
            raise ValueError(f"{fn}: strides needs one value per dim ({len(d)}); got {len(s)}: {s}")
        if any(x < 1 for x in s):
            raise ValueError(f"{fn}: strides must be >= 1; got {s}")
        if dt == self.type and d == self.dims and s == self.strides:
            return desc, False
        api.set_tensor_descriptor(desc, dt, list(d), list(s))
        self.type, self.dims, self.strides = dt, d, s
        self.sets += 1
        return desc, True

    Descriptor = descriptor

    def descriptor_for_order(self, order: str, dims: Sequence[int], dtype: DataTypeLike
                             ) -> tuple[api.TensorDescriptor, bool]:
        """Caffe2's `Descriptor<T>(order, dims)`: `dims` in the storage order's own axis order
        (NHWC: N, H, W, C), described as logical N, C, ... dims with channels-last strides."""
        storage = _storage_order(order, "miopenTensorDescWrapper.descriptor_for_order", len(dims))
        logical, strides = layout.descriptor_from_order_and_dims(storage, dims)
        return self.descriptor(dtype, logical, strides)

    @property
    def nbytes(self) -> int:
        """Bytes the current description spans (0 before the first `descriptor()`)."""
        if self.type is None:
            return 0
        return layout.num_bytes(self.dims, self.strides, itemsize(self.type))

    def close(self) -> None:
        if self._desc is not None:
            self._desc.close()
            self._desc = None

    def __enter__(self) -> miopenTensorDescWrapper:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        what = "unset" if self.type is None else f"{self.type.name} dims={self.dims} strides={self.strides}"
        return f"<miopenTensorDescWrapper {what}{' closed' if self._desc is None else ''}>"


def _storage_order(order: object, fn: str, ndim: int) -> layout.StorageOrder:
    """Caffe2's order argument ("NCHW" or "NHWC", any case) as the layout of a tensor of `ndim` dims."""
    if not isinstance(order, str) or order.strip().upper() not in ("NCHW", "NHWC"):
        raise ValueError(f"{fn}: order must be 'NCHW' or 'NHWC'; got {order!r}")
    return layout.StorageOrder.for_rank(max(ndim, 2), order.strip().upper() == "NHWC")
