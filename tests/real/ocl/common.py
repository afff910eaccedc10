"""OpenCL set-up and helpers for the numeric checks (inside the worker, `miopen` bound to the OpenCL build)."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import miopen

#: a table row: (op, dtype, path) -> what happened: "checked", "refused by MIOpen", "not buildable here"
Row = tuple[str, str, str]
CHECKED, REFUSED, NOT_BUILDABLE = "checked", "refused by MIOpen", "not buildable here"
#: check name ("module:function") -> the rows it claims: row -> (outcome, reason); the check returns
#: {row: outcome} for the rows it proved
CLAIMS: dict[str, dict[Row, tuple[str, str]]] = {}


#: the reasons a check gave for outcomes on this device (`note`), returned under "reasons" with its rows
REASONS: dict[Row, str] = {}
WRONG = "wrong result"


def numeric(*rows: tuple[str, ...]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a numeric check and the table rows it proves: (op, dtype, path[, outcome, reason]); the outcome
    is "checked" unless given (then with its reason). The claims are PoCL's (the local suite asserts them); on
    another device a check may prove other outcomes, with the reasons it noted (`note`) under "reasons"."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        name = f"ocl.{fn.__module__.rsplit('.', 1)[-1]}:{fn.__name__}"
        claims = CLAIMS.setdefault(name, {})
        for row in rows:
            op, dt, path, *rest = row
            claims[(op, dt, path)] = (rest[0], rest[1]) if rest else (CHECKED, "")

        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            REASONS.clear()
            out = fn(*args, **kwargs)
            if REASONS and isinstance(out, dict):
                out["reasons"] = dict(REASONS)
            return out

        return run

    return register


def note(row: Row, outcome: str, reason: str) -> str:
    """Record why `row` came out as `outcome` on this device; the outcome."""
    REASONS[row] = reason
    return outcome


def verdict(row: Row, got: np.ndarray, want: np.ndarray, tol: float) -> str:
    """CHECKED when `got` matches the float64 reference within `tol` (relative to its scale), else WRONG with
    the max error noted."""
    try:
        err = close(got, want, " ".join(row), tol)
    except AssertionError as exc:
        return note(row, WRONG, str(exc))
    REASONS.setdefault(row, f"max abs error {err:.2g}")
    return CHECKED


def small_group_reason(error: str, reported: int, local: int) -> str:
    """The reason of a wrong result whose kernel is written for `local`-wide work-groups on a device that reports
    CL_KERNEL_WORK_GROUP_SIZE `reported` (`error`: "max abs error ... (scale ...)", or empty)."""
    return (f"{error + ': ' if error else ''}CL_KERNEL_WORK_GROUP_SIZE {reported} reported < the kernel's {local}-wide "
            f"group, so the build's patch 04 drops its local size")


def small_group_cause(row: Row, outcome: str, local: int = 1024) -> str:
    """`outcome`; where it is WRONG and this device reports a CL_KERNEL_WORK_GROUP_SIZE under `local` (the group the
    kernel is written for), the row's reason names that cause (docs/real-miopen-gpu.md: NVIDIA reports 256, the
    OpenCL build then launches such kernels with no local size and the runtime's 256-wide groups compute garbage)."""
    if outcome != WRONG:
        return outcome
    pcl = cl()
    k = pcl.Program(queue().context, "__kernel void t(__global float* a) { a[get_global_id(0)] = 0.f; }").build().t
    reported = int(k.get_work_group_info(pcl.kernel_work_group_info.WORK_GROUP_SIZE, device()))
    if reported >= local:
        return outcome
    err = re.search(r"max abs error \S+ \(scale [^)]*\)", REASONS.get(row, ""))
    return note(row, WRONG, small_group_reason(err.group(0) if err else "", reported, local))


@functools.cache
def cl() -> Any:
    import pyopencl

    return pyopencl


@functools.cache
def device() -> Any:
    """The checks' OpenCL device: the first of the first platform whose name contains $MIOGEN_OCL_PLATFORM
    (any platform when unset: PoCL's CPU device here, NVIDIA's GPU on the device machine)."""
    import os

    want = os.environ.get("MIOGEN_OCL_PLATFORM", "").lower()
    for p in cl().get_platforms():
        if want in p.name.lower():
            devices = p.get_devices()
            if devices:
                return devices[0]
    raise RuntimeError(f"no OpenCL device on a platform named like {want!r}")


def has_extension(name: str) -> bool:
    """Whether the checks' device has the OpenCL extension `name` (cl_khr_fp16, cl_khr_fp64)."""
    return name in str(device().extensions).split()


def device_label() -> str:
    d = device()
    return f"{d.platform.name.strip()}: {d.name.strip()}"


@functools.cache
def queue() -> Any:
    """An in-order queue on the checks' device."""
    pcl = cl()
    return pcl.CommandQueue(pcl.Context([device()]))


@functools.cache
def handle() -> miopen.Handle:
    """The checks' handle: MIOpen enqueues on `queue()`."""
    return miopen.create_with_stream(queue().int_ptr)


_keep: list[object] = []


class Dev:
    """A device buffer holding a numpy array's bytes; `.ptr` is the cl_mem MIOpen takes."""

    def __init__(self, host: np.ndarray) -> None:
        pcl = cl()
        self.host = np.ascontiguousarray(host)
        self.buf = pcl.Buffer(queue().context, pcl.mem_flags.READ_WRITE | pcl.mem_flags.COPY_HOST_PTR,
                              hostbuf=self.host if self.host.nbytes else np.zeros(1, np.uint8))
        self.ptr: int = self.buf.int_ptr
        _keep.append(self)

    def read(self) -> np.ndarray:
        out = np.empty_like(self.host)
        cl().enqueue_copy(queue(), out, self.buf)
        queue().finish()
        return out


def dev(host: np.ndarray | Sequence[float], dtype: Any = np.float32) -> Dev:
    return Dev(np.asarray(host, dtype))


def zeros(n: int, dtype: Any = np.float32) -> Dev:
    return Dev(np.zeros(max(n, 1), dtype))


def desc(dims: Sequence[int], strides: Sequence[int] | None = None, dtype: str = "miopenFloat"
         ) -> miopen.TensorDescriptor:
    d = miopen.create_tensor_descriptor()
    miopen.set_tensor_descriptor(d, getattr(miopen.DataType, dtype), list(dims),
                                 list(packed(dims) if strides is None else strides))
    return d


def packed(dims: Sequence[int]) -> list[int]:
    out, acc = [], 1
    for d in reversed(dims):
        out.append(acc)
        acc *= d
    return out[::-1]


def strided_view(flat: np.ndarray, dims: Sequence[int], strides: Sequence[int]) -> np.ndarray:
    """The tensor (dims, strides in elements) inside a flat array, as a float64 copy."""
    item = flat.itemsize
    return np.lib.stride_tricks.as_strided(flat, shape=tuple(dims), strides=tuple(s * item for s in strides)
                                           ).astype(np.float64)


def space(dims: Sequence[int], strides: Sequence[int]) -> int:
    return 1 + sum((d - 1) * s for d, s in zip(dims, strides, strict=True))


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def close(got: np.ndarray, want: np.ndarray, what: str, tol: float = 2e-5) -> float:
    """Assert `got` matches the float64 reference `want` (relative to its scale); the max abs error."""
    got64, want64 = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got64.shape == want64.shape, f"{what}: shape {got64.shape} != {want64.shape}"
    err = float(np.max(np.abs(got64 - want64))) if got64.size else 0.0
    scale = max(1.0, float(np.max(np.abs(want64))) if want64.size else 1.0)
    assert err <= tol * scale, f"{what}: max abs error {err:.3g} (scale {scale:.3g})"
    return err


def status(call: Callable[[], object]) -> int:
    """0 when the typed call succeeds, else the status of the MIOpenError it raised."""
    try:
        call()
    except miopen.MIOpenError as exc:
        return int(exc.status)
    return 0
