"""Tensor reduction: C = alpha * reduce(A) + beta * C over the dims where C has length 1.

The workspace and indices sizes are queried from MIOpen first; the workspace comes from
`resolve_workspace`, the indices buffer (min/max/amax only, int32 indices) from the caller.
"""

from __future__ import annotations

import math

from .._args import enum_arg
from .._bound import EnumMap
from .._generated import api
from ..descriptors import DataTypeLike, data_type, scaling_params
from ..errors import ShapeError
from ..workspace import MIOpenWorkspace
from ._common import _on_device, _same_dtype, _scalar, _tensor, resolve_handle, resolve_workspace

__all__ = ["reduce_tensor", "REDUCE_OPS"]

MAX_DIMS = 6
REDUCE_OPS: EnumMap[api.ReduceTensorOp] = EnumMap("ReduceTensorOp", {
    "add": "MIOPEN_REDUCE_TENSOR_ADD", "sum": "MIOPEN_REDUCE_TENSOR_ADD", "mul": "MIOPEN_REDUCE_TENSOR_MUL",
    "min": "MIOPEN_REDUCE_TENSOR_MIN", "max": "MIOPEN_REDUCE_TENSOR_MAX", "amax": "MIOPEN_REDUCE_TENSOR_AMAX",
    "avg": "MIOPEN_REDUCE_TENSOR_AVG", "mean": "MIOPEN_REDUCE_TENSOR_AVG", "norm1": "MIOPEN_REDUCE_TENSOR_NORM1",
    "norm2": "MIOPEN_REDUCE_TENSOR_NORM2"})
_WITH_INDICES = ("MIOPEN_REDUCE_TENSOR_MIN", "MIOPEN_REDUCE_TENSOR_MAX", "MIOPEN_REDUCE_TENSOR_AMAX")


def _reduce_op(op: api.ReduceTensorOp | int | str) -> api.ReduceTensorOp:
    return enum_arg(op, api.ReduceTensorOp, "op", "reduce_tensor", REDUCE_OPS)


def reduce_tensor(a: object, c: object, op: api.ReduceTensorOp | int | str, *, indices: object = None,
                  nan_propagation: api.NanPropagation | int | str = "MIOPEN_NOT_PROPAGATE_NAN",
                  indices_type: api.IndicesType | int | str = "MIOPEN_32BIT_INDICES",
                  compute_type: DataTypeLike | None = None, alpha: float = 1.0, beta: float = 0.0,
                  handle: api.Handle | None = None, stream: object = None, device: int | None = None,
                  workspace: MIOpenWorkspace | None = None) -> None:
    """c = alpha * op(a over the reduced dims) + beta * c.

    a and c have the same rank (<= 6) and dtype; each of c's dims is 1 (reduced) or equal to a's, and at
    least one dim is reduced. `indices` (a tensor/buffer of at least the size MIOpen asks for) requests
    the flattened indices of the min/max/amax elements; MIOpen produces only 32-bit indices."""
    name = "reduce_tensor"
    rop = _reduce_op(op)
    ta, tc = _tensor(a, "a", name), _tensor(c, "c", name)
    nan = enum_arg(nan_propagation, api.NanPropagation, "nan_propagation", name)
    itype = enum_arg(indices_type, api.IndicesType, "indices_type", name)
    al, be = _scalar(alpha, "alpha", name), _scalar(beta, "beta", name)
    if not 1 <= ta.ndim <= MAX_DIMS:
        raise ShapeError(f"{name}: a must have 1 to {MAX_DIMS} dims; got {ta.ndim} ({ta.dims})")
    if tc.ndim != ta.ndim:
        raise ShapeError(f"{name}: c must have the rank of a ({ta.ndim}); got a={ta.dims}, c={tc.dims}")
    bad = [i for i, (cd, ad) in enumerate(zip(tc.dims, ta.dims)) if cd not in (1, ad)]
    if bad:
        raise ShapeError(f"{name}: each of c's dims must be 1 (reduced) or equal to a's; got a={ta.dims}, "
                         f"c={tc.dims} (dim {bad[0]})")
    if tc.dims == ta.dims and not all(d == 1 for d in ta.dims):
        raise ShapeError(f"{name}: no dim is reduced (c has a's dims {ta.dims}); set the reduced dims of c to 1")
    if math.prod(ta.dims) == 0:
        raise ShapeError(f"{name}: a is empty ({ta.dims})")
    dt = _same_dtype(name, a=ta, c=tc)
    comp = dt if compute_type is None else data_type(compute_type, "compute_type", name)
    ti = None
    if indices is not None:
        if rop.name not in _WITH_INDICES:
            raise ValueError(f"{name}: indices exist only for min, max and amax; op is {rop.name}")
        if itype != api.IndicesType.MIOPEN_32BIT_INDICES:
            raise ValueError(f"{name}: MIOpen produces only 32-bit indices; got indices_type={itype.name}")
        ti = _tensor(indices, "indices", name)
        need = math.prod(tc.dims) * 4  # MIOpen's GetIndicesSize: one int32 per element of c
        if ti.nbytes < need:
            raise ShapeError(f"{name}: indices holds {ti.nbytes} bytes ({ti.dims} {ti.dtype.name}); {need} bytes "
                             f"(one int32 per element of c={tc.dims}) are needed")
    want_indices = (api.ReduceTensorIndices.MIOPEN_REDUCE_TENSOR_FLATTENED_INDICES if ti is not None
                    else api.ReduceTensorIndices.MIOPEN_REDUCE_TENSOR_NO_INDICES)
    s_alpha, s_beta = scaling_params(dt, al, be)  # double for double tensors, float otherwise
    with _on_device(device):
        h = resolve_handle(handle, stream, device)
        ad, cd = ta.desc, tc.desc
        with api.create_reduce_tensor_descriptor() as rdesc:
            api.set_reduce_tensor_descriptor(rdesc, rop, comp, nan, want_indices, itype)
            ws_bytes = api.get_reduction_workspace_size(h, rdesc, ad, cd)
            idx_bytes = api.get_reduction_indices_size(h, rdesc, ad, cd)
            idx_ptr: int | None = None
            if ti is not None:
                if ti.nbytes < idx_bytes:
                    raise ShapeError(f"{name}: indices holds {ti.nbytes} bytes ({ti.dims} {ti.dtype.name}); MIOpen "
                                     f"needs {idx_bytes} bytes for c={tc.dims}")
                idx_ptr, idx_size = ti.ptr, ti.nbytes
            else:
                idx_size = 0
            ws = resolve_workspace(workspace, device, stream)
            ws_ptr = ws.get(ws_bytes) if ws_bytes else None
            api.reduce_tensor(h, rdesc, idx_ptr, idx_size, ws_ptr, ws_bytes if ws_ptr is not None else 0, s_alpha,
                              ad, ta.ptr, s_beta, cd, tc.ptr)
