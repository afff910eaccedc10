"""Helpers for the checks (they run inside the worker, with `miopen` bound to the real library)."""

from __future__ import annotations

import ctypes
import functools
import os
from collections.abc import Callable, Sequence
from typing import Any

import miopen
from miopen import raw

class Bound:
    """`miopen.<enum>` of the bound release, looked up at use (importing a check module binds nothing)."""

    def __init__(self, enum: str) -> None:
        self._enum = enum

    def __getattr__(self, name: str) -> Any:
        return getattr(getattr(miopen, self._enum), name)

    def __iter__(self) -> Any:
        return iter(getattr(miopen, self._enum))

    def __getitem__(self, name: str) -> Any:
        return getattr(miopen, self._enum)[name]

    def __call__(self, value: int) -> Any:
        return getattr(miopen, self._enum)(value)


DT: Any = Bound("DataType")
#: element sizes by data type name (MIOpen's TensorDescriptor::GetNumBytes)
ITEMSIZE = {"miopenHalf": 2, "miopenFloat": 4, "miopenInt32": 4, "miopenInt8": 1, "miopenInt8x4": 1,
            "miopenBFloat16": 2, "miopenDouble": 8}


@functools.cache
def handle() -> miopen.Handle:
    """One handle for the checks of this worker (created through the typed API)."""
    return miopen.create()


def tensor(dims: Sequence[int], strides: Sequence[int] | None = None, dtype: Any = None) -> miopen.TensorDescriptor:
    """A tensor descriptor set through miopenSetTensorDescriptor (packed strides unless given)."""
    d = miopen.create_tensor_descriptor()
    miopen.set_tensor_descriptor(d, DT.miopenFloat if dtype is None else dtype, list(dims),
                                 list(packed(dims) if strides is None else strides))
    return d


def tensor4(n: int, c: int, h: int, w: int, dtype: Any = None) -> miopen.TensorDescriptor:
    d = miopen.create_tensor_descriptor()
    miopen.set_4d_tensor_descriptor(d, DT.miopenFloat if dtype is None else dtype, n, c, h, w)
    return d


def packed(dims: Sequence[int]) -> list[int]:
    """Packed (row-major) strides, computed here: stride[i] = prod(dims[i+1:])."""
    out, acc = [], 1
    for d in reversed(dims):
        out.append(acc)
        acc *= d
    return out[::-1]


def prod(xs: Sequence[int]) -> int:
    p = 1
    for x in xs:
        p *= x
    return p


def element_space(dims: Sequence[int], strides: Sequence[int]) -> int:
    """The elements a strided tensor spans: 1 + sum((d - 1) * s)."""
    return 1 + sum((d - 1) * s for d, s in zip(dims, strides, strict=True))


def status_of(call: Callable[[], object]) -> int:
    """0 when the typed call succeeds, else the status of the MIOpenError it raised."""
    try:
        call()
    except miopen.MIOpenError as exc:
        return int(exc.status)
    return 0


def status_name(status: int) -> str:
    try:
        return raw.miopenStatus_t(status).name
    except ValueError:
        return f"status {status}"


# ---------------------------------------------------------------------------- raw ctypes, bypassing our checks


@functools.cache
def _raw_lib() -> ctypes.CDLL:
    # a second CDLL object on the same library: its calls are not traced as typed-API calls
    return ctypes.CDLL(os.environ["MIOGEN_REAL_LIB"])


def raw_fn(name: str) -> Any:
    """The C function with the prototype of the bindings, on a CDLL of its own (no Python-side checks at all;
    not recorded as a typed-API call, but written to the trace file so a death inside it is attributed)."""
    from . import trace

    restype, argtypes = raw.PROTOTYPES[name]
    fn = getattr(_raw_lib(), name)
    fn.restype = restype
    fn.argtypes = argtypes

    def call(*args: Any) -> Any:
        trace.enter(name)
        result = fn(*args)
        trace.leave(name, result)
        return result

    return call


def c_ints(values: Sequence[int]) -> Any:
    return (ctypes.c_int * max(len(values), 1))(*values)


def out_int() -> ctypes.c_int:
    return ctypes.c_int(-12345)


def addr(obj: Any) -> int:
    """The raw handle of a typed handle object."""
    return int(obj.address)


# ---------------------------------------------------------------------------- the checks' registry

#: check name ("module:function") -> the C functions it calls through the typed API and checks
COVERS: dict[str, tuple[str, ...]] = {}
#: check name -> the C functions it calls through the typed API in a throwaway worker, because MIOpen may
#: abort the process there (kernel compiles and launches, Find, MIOpen's own crashes); outcome documented
ISOLATED: dict[str, tuple[str, ...]] = {}


def check(*functions: str, isolated: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a check and the C functions it exercises (verified against the worker's trace)."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        name = f"{fn.__module__.rsplit('.', 1)[-1]}:{fn.__name__}"
        (ISOLATED if isolated else COVERS)[name] = tuple(functions)
        return fn

    return register


# ---------------------------------------------------------------------------- MIOpen's stderr


def stderr_mark() -> int:
    """Where MIOpen's stderr (this worker's stderr file) ends now."""
    path = os.environ.get("MIOGEN_REAL_STDERR")
    return os.path.getsize(path) if path and os.path.exists(path) else 0


def stderr_since(mark: int) -> str:
    """What MIOpen printed to stderr since `mark` (its "MIOpen Error: ..." lines name the reason)."""
    path = os.environ.get("MIOGEN_REAL_STDERR")
    if not path:
        return ""
    with open(path, "rb") as f:
        f.seek(mark)
        return f.read().decode(errors="replace")


def failing(call: Callable[[], object]) -> tuple[int, str]:
    """(status, MIOpen's stderr text) of a typed call expected to fail with a status."""
    mark = stderr_mark()
    status = status_of(call)
    return status, stderr_since(mark)
