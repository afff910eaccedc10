"""MIOpen's known wrong results, told apart by a probe on the loaded library, and what the runtime does about them.

Two upstream bugs give wrong numbers without an error (seen in MIOpen 2.17.0; the same on any device):

* LRN across channels (`MIOpenLRNAcrossChannels4`) returns |x|·s^-beta for negative x. The scale s it stores in
  its workspace is right, so `ops.lrn.lrn_forward` works around it: y = x · s^-beta (an activation POWER and an
  OpTensor mul on the workspace).
* TransformTensor merges n and c with an integer division (`GetConsistentFlattenedTensorDescriptors`): a y
  whose n-stride is not a multiple of its c-stride, or a y whose strides are not in decreasing order
  (channels-last), is written at the wrong offsets. `ops.tensor_ops.transform_tensor` refuses those layouts.

Each bug is probed once per library with a tiny problem whose right answer is known, where the runtime can read
device memory back (the OpenCL backend); elsewhere (HIP) nothing is probed and nothing is changed.
"""

from __future__ import annotations

import dataclasses
import struct
import threading
from collections.abc import Callable

from . import backend as _backend
from ._generated import _support as _s
from ._generated import api

TYPE_CHECKING = False  # typing stays unimported at run time (import cost)
if TYPE_CHECKING:
    from .tensor import Tensor

_lock = threading.Lock()
#: (library id, bug) -> present
_found: dict[tuple[int, str], bool] = {}


def _probe(bug: str, run: Callable[[_backend.OpenCLBackend, api.Handle], bool], handle: api.Handle) -> bool:
    b = _backend.current()
    if not isinstance(b, _backend.OpenCLBackend):
        return False
    key = (id(_s.library()), bug)
    with _lock:
        known = _found.get(key)
    if known is None:
        try:
            known = run(b, handle)
        except Exception:  # noqa: BLE001 - a probe that cannot run tells nothing: assume no bug
            known = False
        with _lock:
            _found[key] = known
    return known


def _buffer(b: _backend.OpenCLBackend, values: list[float], stream: int | None) -> int:
    ptr = b.allocator().allocate(4 * len(values), stream)
    b.write(ptr, struct.pack(f"{len(values)}f", *values), stream)
    return ptr


def _read(b: _backend.OpenCLBackend, ptr: int, n: int, stream: int | None) -> list[float]:
    return list(struct.unpack(f"{n}f", b.read(ptr, 4 * n, stream)))


def _desc(dims: list[int], strides: list[int]) -> api.TensorDescriptor:
    d = api.create_tensor_descriptor()
    api.set_tensor_descriptor(d, api.DataType.miopenFloat, dims, strides)
    return d


def lrn_sign_bug(handle: api.Handle) -> bool:
    """Whether cross-channel LRN of the loaded library returns |x|·s^-beta for negative x."""

    def run(b: _backend.OpenCLBackend, h: api.Handle) -> bool:
        stream = api.get_stream(h)
        x = _buffer(b, [-1.0, -2.0], stream)
        y = _buffer(b, [0.0, 0.0], stream)
        d = _desc([1, 2, 1, 1], [2, 1, 1, 1])
        ld = api.create_lrn_descriptor()
        try:
            api.set_lrn_descriptor(ld, api.LRNMode.miopenLRNCrossChannel, 3, 1.0, 1.0, 1.0)
            api.lrn_forward(h, ld, 1.0, d, x, 0.0, d, y, False, None)
            got = _read(b, y, 2, stream)
        finally:
            ld.close()
            d.close()
            b.allocator().free(x, stream)
            b.allocator().free(y, stream)
        return all(v > 0 for v in got)  # right: both negative

    return _probe("lrn_sign", run, handle)


def transform_layout_bug(handle: api.Handle) -> bool:
    """Whether TransformTensor of the loaded library writes a y with n-stride 12 and c-stride 5 wrongly."""

    def run(b: _backend.OpenCLBackend, h: api.Handle) -> bool:
        stream = api.get_stream(h)
        dims, ys = [3, 2, 5], [12, 5, 1]
        xs = [float(i + 1) for i in range(30)]
        x = _buffer(b, xs, stream)
        y = _buffer(b, [0.0] * 36, stream)
        dx, dy = _desc(dims, [10, 5, 1]), _desc(dims, ys)
        try:
            api.transform_tensor(h, 1.0, dx, x, 0.0, dy, y)
            got = _read(b, y, 36, stream)
        finally:
            dx.close()
            dy.close()
            b.allocator().free(x, stream)
            b.allocator().free(y, stream)
        want = {n * 12 + c * 5 + w: xs[n * 10 + c * 5 + w] for n in range(3) for c in range(2) for w in range(5)}
        return any(got[i] != v for i, v in want.items())

    return _probe("transform_layout", run, handle)


def transform_layout_problem(dims: tuple[int, ...], strides: tuple[int, ...]) -> str | None:
    """Why a y of these dims and strides hits the TransformTensor bug (None: it does not)."""
    live = [(d, s) for d, s in zip(dims, strides) if d > 1]
    if len(dims) >= 2 and dims[0] > 1 and dims[1] > 1 and strides[1] and strides[0] % strides[1]:
        return f"its n-stride {strides[0]} is not a multiple of its c-stride {strides[1]}"
    if any(a[1] < b[1] for a, b in zip(live, live[1:])):
        return f"its strides {strides} are not in decreasing order (e.g. channels-last)"
    return None


def _library_changed() -> None:
    with _lock:
        _found.clear()


_s._on_reset.append(_library_changed)


#: ops whose OpenCL kernels (MIOpen 2.17.0 on PoCL) give wrong results without an error for any view but a packed
#: one (channels-last, stepped, or x and y of different strides: max error 0.5-7.5), and whose kernels MIOpen's
#: kernel cache keys without the strides (a layout's result depended on the layouts run before it in the process):
#: the runtime hands them packed tensors only (`check_packed`); tests/real/ocl/strided_views.py probes them
PACKED_ONLY = ("activation_forward", "softmax_forward", "log_softmax_forward", "pooling_forward", "op_tensor",
               "batch_norm_forward_inference")
#: ops whose OpenCL kernels are right for any dense view (packed in some order of the dims, channels-last; a
#: broadcast stride of 0) but write at wrong offsets for a view with gaps (a sliced or stepped one: half of a
#: SetTensor's values landed outside the view, without an error): the runtime refuses views with gaps for them
DENSE_ONLY = ("set_tensor", "scale_tensor", "transform_tensor")


def _packed(dims: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """Packed in the logical order (a size-1 dim's stride never matters)."""
    want = 1
    for d, s in zip(reversed(dims), reversed(strides)):
        if d != 1 and s != want:
            return False
        want *= d
    return True


def memory_order(*tensors: Tensor) -> tuple[Tensor, ...]:
    """Tensors of one dense layout (the same dims and strides, a permutation of a packed layout: channels-last, ...)
    described in the order of their memory, which is packed: for an element-wise op the same elements pair up, so
    MIOpen's OpenCL kernels, wrong for such views, compute them right. Any other set of tensors, or any backend but
    OpenCL (where MIOpen computes such views itself), as it is."""
    if not isinstance(_backend.current(), _backend.OpenCLBackend):
        return tensors
    first = tensors[0]
    dims, strides = first.dims, first.strides
    if any((t.dims, t.strides) != (dims, strides) for t in tensors[1:]):
        return tensors
    order = sorted(range(len(dims)), key=lambda i: -strides[i])
    new_dims, new_strides = tuple(dims[i] for i in order), tuple(strides[i] for i in order)
    if new_dims == dims or not _packed(new_dims, new_strides):
        return tensors
    return tuple(dataclasses.replace(t, dims=new_dims, strides=new_strides) for t in tensors)


def _dense(dims: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """Packed in some order of the dims, with no gap (size-1 dims and broadcast strides of 0 aside)."""
    want = 1
    for s, d in sorted((s, d) for d, s in zip(dims, strides) if d != 1 and s != 0):
        if s != want:
            return False
        want *= d
    return True


def check_packed(fn: str, **tensors: object) -> None:
    """On the OpenCL backend, refuse a view that is not packed for an op of `PACKED_ONLY` (a ShapeError naming the
    op, the tensor and its strides); elsewhere nothing. Each argument is a `Tensor`."""
    if (fn not in PACKED_ONLY and fn not in DENSE_ONLY) or not isinstance(_backend.current(), _backend.OpenCLBackend):
        return
    dense = fn in DENSE_ONLY
    for name, t in tensors.items():
        dims, strides = t.dims, t.strides  # type: ignore[attr-defined]
        if not (_dense(dims, strides) if dense else _packed(dims, strides)):
            from .errors import ShapeError

            what = ("views with gaps (sliced or stepped: it writes at wrong offsets)" if dense else
                    "views that are not packed (and its kernel cache ignores strides)")
            raise ShapeError(f"{fn}: {name} has strides {strides} for dims {dims}: on MIOpen's OpenCL backend this "
                             f"op gives wrong results for {what}; copy it into a "
                             f"{'dense' if dense else 'packed'} tensor first")
