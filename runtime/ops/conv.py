"""Convolutions: forward, backward data, backward weights and backward bias, 2-D and 3-D, with groups,
dilation and transposed mode; every shape checked in Python before MIOpen is called.

Shapes (MIOpen's, in logical N, C, spatial order; `k` = spatial kernel size):

* convolution: x (N, C, *in), w (K, C/groups, *k), y (N, K, *out) with
  out = (in + 2*pad - dilation*(k - 1) - 1) // stride + 1; C and K divisible by groups.
* transposed: x (N, C, *in), w (C, K/groups, *k), y (N, K, *out) with
  out = stride*(in - 1) + dilation*(k - 1) + 1 - 2*pad.

The algorithm comes from a `ConvPlanner` (immediate mode by default), planned once per problem and
cached; the scratch workspace comes from `resolve_workspace`. MIOpen's 2-D convolutions take only
alpha=1, beta=0 (`ScalingRuleError` otherwise). Immediate mode and Find 2.0 take no scaling at all, so
for a 3-D problem with other scaling the result is computed into a temporary buffer and blended in
with `op_tensor` (y = alpha*conv + beta*y).
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Sequence
from typing import Any

from .. import backend as _backend
from .. import descriptors
from .._generated import _support, api
from ..algo import ConvKey, ConvParams, ConvPlan, ConvPlanner, Direction, make_key
from ..descriptors import FrozenTensorDescriptor, check_conv_scaling, convolution_descriptor
from ..errors import ScalingRuleError, ShapeError
from ..tensor import Tensor, layout_of
from .. import handles as _handles
from .. import workspace as _workspace
from ..handles import inline_miopen_handle
from ..workspace import MIOpenWorkspace, PersistentBuffer, scratch
from ._common import (PLAIN_NUMBERS, _conv_params, _ints, _on_device, _output_dims, _same_dtype, _scalar, _tensor,
                      plain_geometry, resolve_handle, resolve_workspace)
from .tensor_ops import op_tensor

__all__ = ["conv_forward", "conv_backward_data", "conv_backward_weights", "conv_backward_bias", "conv_output_dims",
           "default_planner", "set_default_planner"]

IntOrSeq = int | Sequence[int]

_default: list[ConvPlanner] = [ConvPlanner()]


def default_planner() -> ConvPlanner:
    """The planner the ops use when given none (immediate mode, the process-wide algorithm cache)."""
    return _default[0]


def set_default_planner(planner: ConvPlanner) -> None:
    if not isinstance(planner, ConvPlanner):
        raise TypeError(f"set_default_planner: expected a ConvPlanner; got {type(planner).__name__}")
    _default[0] = planner


# --------------------------------------------------------------------------- shape math


def conv_output_dims(x_dims: Sequence[int], w_dims: Sequence[int], pads: IntOrSeq, strides: IntOrSeq,
                     dilations: IntOrSeq, groups: int = 1, transpose: bool = False,
                     output_pads: IntOrSeq | None = None) -> tuple[int, ...]:
    """The dims of y for a convolution of x by w (MIOpen's `GetForwardOutputTensor`, default padding mode).

    Raises ShapeError (naming the argument) for inconsistent channels/groups or an output pad not below its stride;
    like MIOpen, a kernel larger than the padded input gives length 1."""
    op = "conv_output_dims"
    x = _ints(x_dims, "x_dims", None, op)
    w = _ints(w_dims, "w_dims", None, op)
    cp = _conv_params(len(x), pads, strides, dilations, groups, transpose, op, output_pads)
    return _output_dims(x, w, cp, op, "x_dims", "w_dims")


# --------------------------------------------------------------------------- the ops


class _Problem:
    """One checked convolution in forward roles: x (input), w (filter), y (output); `shape` is the token of its
    checked shape (see `_CHECKED`), None when its arguments were not memoisable. A slotted class, not a frozen
    dataclass: one is made per call, and a frozen dataclass's __init__ costs a setattr per field."""

    __slots__ = ("direction", "x", "w", "y", "params", "alpha", "beta", "shape", "key")

    def __init__(self, direction: Direction, x: Tensor, w: Tensor, y: Tensor, params: ConvParams, alpha: float,
                 beta: float, shape: object = None) -> None:
        self.direction, self.x, self.w, self.y = direction, x, w, y
        self.params, self.alpha, self.beta, self.shape = params, alpha, beta, shape
        self.key: tuple[object, ...] | None = None  # its `_CHECKED` key (None: not memoisable)

    @property
    def out(self) -> Tensor:
        """The tensor this direction writes."""
        return {"forward": self.y, "backward_data": self.x, "backward_weights": self.w}[self.direction]


# Calls on a shape seen before skip the work that only depends on the shape: the checks of `_problem`
# (keyed by everything they read, with exactly typed ints so that no bool passes as an int) and the
# planner's key computation (keyed by everything the plan key holds; the plan is still checked to be in
# the planner's cache, and the convolution descriptor to be the cached one). Each `_CHECKED` entry carries
# a token (an object() of its own) that stands in `_PLANS`' keys for what its key holds (direction, dtypes,
# dims, strides, parameters): hashed by identity instead of hashing those tuples again on every call.
_CHECKED: dict[tuple[object, ...], tuple[ConvParams, float, float, object]] = {}
_PLANS: dict[tuple[object, ...], tuple[ConvPlan, api.ConvolutionDescriptor, FrozenTensorDescriptor,
                                      FrozenTensorDescriptor, FrozenTensorDescriptor, int]] = {}
_MEMO_SIZE = 1024
descriptors.on_clear(_PLANS.clear)


def _fast(direction: Direction, x: object, w: object, y: object, pads: object, strides: object, dilations: object,
          groups: object, transpose: object, alpha: object, beta: object, output_pads: object,
          planner: ConvPlanner | None, handle: api.Handle | None, stream: object, device: int | None,
          workspace: MIOpenWorkspace | None) -> ConvPlan | None:
    """A repeated unscaled call on the current device: the checks of a problem seen before (`_CHECKED`, keyed by the
    tensors' layouts, whose addresses are read afresh) and its plan (`_PLANS`, still confirmed by the planner's
    cache), without making Tensors or a `_Problem`. None: the full path decides."""
    # a Tensor's layout read in place (what layout_of answers for it, without the call); anything else through it
    xl = (x.ptr, (x.dims, x.strides, x.dtype)) if type(x) is Tensor else layout_of(x)
    wl = (w.ptr, (w.dims, w.strides, w.dtype)) if type(w) is Tensor else layout_of(w)
    yl = (y.ptr, (y.dims, y.strides, y.dtype)) if type(y) is Tensor else layout_of(y)
    if xl is None or wl is None or yl is None or device is not None:
        return None
    pl = planner if planner is not None else _default[0]
    last = _LAST[0]
    if (last is not None and last[0] is direction and last[1] == xl[1] and last[2] == wl[1] and last[3] == yl[1]
            and last[4] is pads and last[5] is strides and last[6] is dilations and last[7] is groups
            and last[8] is transpose and last[9] is alpha and last[10] is beta and last[11] is output_pads
            and last[12] is pl and last[13] is pl.mode and last[14] is pl.deterministic
            and last[15] is pl.benchmark):
        # the arguments of the last call that took this path, the very objects (so of the types checked then)
        known = last[16]
    else:
        if (type(transpose) is not bool or type(alpha) not in PLAIN_NUMBERS or type(beta) not in PLAIN_NUMBERS
                or not (type(pads) is int or plain_geometry(pads)) or not (type(strides) is int or plain_geometry(strides))
                or not (type(dilations) is int or plain_geometry(dilations)) or type(groups) is not int
                or not (output_pads is None or plain_geometry(output_pads)) or type(pl) is not ConvPlanner):
            return None
        known = _FAST.get((direction, xl[1], wl[1], yl[1], pads, strides, dilations, groups, transpose, alpha, beta,
                           output_pads, pl, pl.mode, pl.deterministic, pl.benchmark))
        if known is None:  # not checked before (or scaled): nothing may happen before the full path's checks
            return None
        _LAST[0] = (direction, xl[1], wl[1], yl[1], pads, strides, dilations, groups, transpose, alpha, beta,
                    output_pads, pl, pl.mode, pl.deterministic, pl.benchmark, known)
    # what can change between calls, read as _run_on reads it, in its order; any difference: the full path decides
    b = _backend.current()
    dev = b.current_device()
    if stream is None:  # the null stream: the thread's handle and scratch of the device, each in one lookup
        # (inline_miopen_handle's and scratch's first step; anything else, an OpenCL queue's handle included, asks them)
        h = handle
        if h is None:
            ph = getattr(_handles._pool._local, "window", _NONE).get(dev)
            h = (ph.handle if ph is not None and ph.stream is None and ph.handle._ptr is not None
                 else inline_miopen_handle(None, dev))
        ws = workspace
        if ws is None:
            ws = getattr(_workspace._scratch, "table", _NONE).get((dev, None))
            if ws is None:
                ws = scratch(dev, None)
    else:
        h = handle if handle is not None else inline_miopen_handle(stream, dev)
        ws = workspace if workspace is not None else scratch(dev, stream)
    plan: ConvPlan = known[6]
    cache, conv, xd, wd, yd = known[7], known[10], known[11], known[12], known[13]
    if (dev != known[0] or known[9] != descriptors._generation[0] or pl.cache is not cache
            or cache.generation != known[8] or (known[1] and h.address != known[1])
            or ws.cap() != known[2]
            or pl.workspace_limit_bytes != known[3] or b.library_id() != known[4]
            or conv._ptr is None or xd._ptr is None or wd._ptr is None or yd._ptr is None):
        return None
    cache.hits += 1  # the planner's cache still holds this plan (its generation says so): a hit, as on the full path
    call = known[5]
    if call is None:  # Find or Find 2.0: the planner runs it
        pl.run(plan, h, xd, xl[0], wd, wl[0], yd, yl[0], conv, ws, planned=True)
        return plan
    size = plan.workspace_bytes
    wsp = ws.get(size) if size else None
    if not size or wsp is None:
        size = 0
    # immediate mode: the typed call itself, in the order of ConvPlanner.run
    if direction == "forward":
        call(h, wd, wl[0], xd, xl[0], conv, yd, yl[0], wsp, size, plan.solution_id)
    elif direction == "backward_data":
        call(h, yd, yl[0], wd, wl[0], conv, xd, xl[0], wsp, size, plan.solution_id)
    else:
        call(h, yd, yl[0], xd, xl[0], conv, wd, wl[0], wsp, size, plan.solution_id)
    return plan


_NONE: dict[object, Any] = {}  # an empty table: what a thread without one finds

#: `_fast`'s memo, filled by `_run_on`: (direction, the layouts and arguments `_CHECKED` keys on, the planner and its
#: settings) -> (what `_PLANS`' key held then: device, the handle's address (Find; 0 otherwise), the workspace's cap
#: and the planner's own (its cap combines them), HIP library; the typed immediate function of the direction (None: Find, Find 2.0 run through the
#: planner), the plan, the planner's cache and its generation, the descriptor-cache generation, the convolution, x, w
#: and y descriptors)
_Entry = tuple[Any, ...]


class _FastMemo(dict[tuple[object, ...], _Entry]):
    """`_FAST`: a dict that forgets `_LAST` whenever an entry is stored or the whole is cleared."""

    __slots__ = ()

    def __setitem__(self, key: tuple[object, ...], value: _Entry) -> None:
        _LAST[0] = None
        super().__setitem__(key, value)

    def clear(self) -> None:
        _LAST[0] = None
        super().clear()


_FAST = _FastMemo()
descriptors.on_clear(_FAST.clear)
#: the last `_FAST` hit: its arguments (the objects themselves: the same objects again skip the type checks and the
#: key's hashing) and its entry; emptied whenever `_FAST` changes
_LAST: list[tuple[Any, ...] | None] = [None]

#: the typed Immediate call of each direction (looked up when a plan is remembered: a library change clears _FAST)
_IMMEDIATE = {"forward": "convolution_forward_immediate", "backward_data": "convolution_backward_data_immediate",
              "backward_weights": "convolution_backward_weights_immediate"}


def _problem(direction: Direction, op: str, names: tuple[str, str, str], x: object, w: object, y: object,
             pads: object, strides: object, dilations: object, groups: object, transpose: object, alpha: object,
             beta: object, output_pads: object = None) -> _Problem:
    """Every check, before any MIOpen call. `names` are the user's names of x, w, y."""
    xn, wn, yn = names
    tx, tw, ty = _tensor(x, xn, op), _tensor(w, wn, op), _tensor(y, yn, op)
    key: tuple[object, ...] | None = None
    if (type(transpose) is bool and type(alpha) in (float, int) and type(beta) in (float, int) and plain_geometry(pads)
            and plain_geometry(strides) and plain_geometry(dilations) and plain_geometry(groups) and plain_geometry(output_pads)):
        key = (direction, (tx.dims, tx.strides, tx.dtype), (tw.dims, tw.strides, tw.dtype),
               (ty.dims, ty.strides, ty.dtype), pads, strides, dilations, groups, transpose, alpha, beta, output_pads)
        known = _CHECKED.get(key)
        if known is not None:
            pb = _Problem(direction, tx, tw, ty, *known)
            pb.key = key
            return pb
    pb = _check_problem(direction, op, names, tx, tw, ty, pads, strides, dilations, groups, transpose, alpha, beta,
                        output_pads)
    if key is not None:
        if len(_CHECKED) >= _MEMO_SIZE:
            _CHECKED.clear()
        pb.shape = object()
        pb.key = key
        _CHECKED[key] = (pb.params, pb.alpha, pb.beta, pb.shape)
    return pb


def _check_problem(direction: Direction, op: str, names: tuple[str, str, str], tx: Tensor, tw: Tensor, ty: Tensor,
                   pads: object, strides: object, dilations: object, groups: object, transpose: object,
                   alpha: object, beta: object, output_pads: object) -> _Problem:
    xn, wn, yn = names
    a, b = _scalar(alpha, "alpha", op), _scalar(beta, "beta", op)
    for nm, t in ((xn, tx), (wn, tw), (yn, ty)):
        if t.ndim not in (4, 5):
            raise ShapeError(f"{op}: {nm} must be 4-D (2-D conv) or 5-D (3-D conv); got {t.ndim} dims ({t.dims})")
    if not tx.ndim == tw.ndim == ty.ndim:
        raise ShapeError(f"{op}: {xn}, {wn} and {yn} must have the same rank; got {xn}={tx.dims}, {wn}={tw.dims}, "
                         f"{yn}={ty.dims}")
    cp = _conv_params(tx.ndim, pads, strides, dilations, groups, transpose, op, output_pads)
    _same_dtype(op, **{xn: tx, wn: tw, yn: ty})
    expect = _output_dims(tx.dims, tw.dims, cp, op, xn, wn)
    if ty.dims != expect:
        raise ShapeError(f"{op}: {yn} must have dims {expect} for {xn}={tx.dims}, {wn}={tw.dims}, pads={cp.pads}, "
                         f"strides={cp.strides}, dilations={cp.dilations}, groups={cp.groups}"
                         f"{', transposed' if cp.transpose else ''}; got {ty.dims}")
    check_conv_scaling(tx.ndim - 2, a, b)
    return _Problem(direction, tx, tw, ty, cp, a, b)


def _run(pb: _Problem, planner: ConvPlanner | None, handle: api.Handle | None, stream: object, device: int | None,
         workspace: MIOpenWorkspace | None) -> ConvPlan:
    pl = planner if planner is not None else default_planner()
    if not isinstance(pl, ConvPlanner):
        raise TypeError(f"planner must be a ConvPlanner; got {type(pl).__name__}")
    if device is None:  # no device guard to enter
        return _run_on(pb, pl, handle, stream, None, workspace)
    with _on_device(device):
        return _run_on(pb, pl, handle, stream, device, workspace)


def _run_on(pb: _Problem, pl: ConvPlanner, handle: api.Handle | None, stream: object, device: int | None,
            workspace: MIOpenWorkspace | None) -> ConvPlan:
    cp = pb.params
    generation = descriptors._generation[0]
    cache = pl.cache
    cache_generation = cache.generation  # before any lookup: a plan found or made below is in this generation
    b = _backend.current()
    scaled = pb.alpha != 1.0 or pb.beta != 0.0
    dev = b.current_device() if device is None else device
    h = resolve_handle(handle, stream, dev)
    ws = resolve_workspace(workspace, dev, stream)
    x, w, y = pb.x, pb.w, pb.y
    shape: object = pb.shape if pb.shape is not None else (pb.direction, x.dtype, x.dims, x.strides, w.dims,
                                                           w.strides, y.dims, y.strides, cp)
    per_call = (dev, h.address if pl.search == "find" else 0, pl.cap(ws), id(_support.library()), b.library_id())
    memo_key = (pl, pl.mode, pl.deterministic, pl.benchmark, shape, *per_call)
    known = _PLANS.get(memo_key)
    current: ConvPlan | None = None
    if (known is not None and known[5] == descriptors._generation[0] and known[1]._ptr is not None
            and known[2]._ptr is not None and known[3]._ptr is not None and known[4]._ptr is not None):
        _, conv, xd, wd, yd, _ = known
        # the planner's cache decides (as in ConvPlanner.plan, this counts a hit); after its clear() the
        # planner runs again below (which counts a second miss)
        current = pl.cache.get(known[0].key)
    else:
        find_mode: api.ConvolutionFindMode | int | None = (
            b.conv_find_mode if b.conv_find_mode is not None else
            api.ConvolutionFindMode.miopenConvolutionFindModeNormal if pl.search == "find" and pl.benchmark else None)
        conv = convolution_descriptor(cp.pads, cp.strides, cp.dilations, cp.groups,
                                      "transpose" if cp.transpose else "conv", pl.deterministic, find_mode,
                                      cp.output_pads)
        xd, wd, yd = x.desc, w.desc, y.desc
    if current is not None:
        plan = current
    else:
        scratch: PersistentBuffer | None = None
        try:
            ptrs = (pb.x.ptr, pb.w.ptr, pb.y.ptr)
            if (pl.search == "find" or b.name == "OpenCL") and pb.beta != 0.0:
                # Find runs the candidates into the output buffer (on OpenCL immediate mode too, whose solution
                # list comes from a Find): keep the values beta scales
                key: ConvKey = pl.key(h, pb.direction, xd, wd, yd, cp, ws, device)
                if pl.cache.get(key) is None:
                    scratch = PersistentBuffer(pb.out.nbytes, ws.device, "Find output scratch", ws.allocator,
                                               stream=ws.stream)
                    ptrs = _with_out(pb, ptrs, scratch.data_ptr())
            plan = pl.plan(h, pb.direction, xd, wd, yd, conv, cp, ptrs=ptrs, workspace=ws, device=device)
        finally:
            if scratch is not None:
                scratch.close()
        if len(_PLANS) >= _MEMO_SIZE:
            _PLANS.clear()
        _PLANS[memo_key] = (plan, conv, xd, wd, yd, generation)
    if pb.key is not None and not scaled and device is None and type(pl) is ConvPlanner:
        if len(_FAST) >= _MEMO_SIZE:
            _FAST.clear()
        if generation == descriptors._generation[0]:
            # (a library change bumps the generation and empties _FAST: the library's id is left out)
            _FAST[pb.key + (pl, pl.mode, pl.deterministic, pl.benchmark)] = (
                dev, per_call[1], ws.cap(), pl.workspace_limit_bytes, per_call[4],
                getattr(api, _IMMEDIATE[pb.direction]) if plan.mode == "immediate" else None, plan, cache,
                cache_generation, generation, conv, xd, wd, yd)
    if not scaled or plan.mode == "find":
        pl.run(plan, h, xd, pb.x.ptr, wd, pb.w.ptr, yd, pb.y.ptr, conv, ws, pb.alpha, pb.beta)
        return plan
    # immediate mode / Find 2.0 take no alpha, beta: convolve into a temporary of the output's layout
    # (so the planned solution still applies), then blend
    out = pb.out
    with PersistentBuffer(out.nbytes, ws.device, "scaled convolution output", ws.allocator, stream=ws.stream) as tmp:
        tmp_t = Tensor.make(tmp.data_ptr(), out.dims, out.dtype, out.strides)
        xp, wp, yp = _with_out(pb, (pb.x.ptr, pb.w.ptr, pb.y.ptr), tmp_t.ptr)
        td = tmp_t.desc
        rx, rw, ry = {"forward": (xd, wd, td), "backward_data": (td, wd, yd),
                      "backward_weights": (xd, td, yd)}[pb.direction]
        pl.run(plan, h, rx, xp, rw, wp, ry, yp, conv, ws)
        # out = alpha*tmp + 0*tmp + beta*out
        op_tensor("add", tmp_t, tmp_t, out, pb.alpha, 0.0, pb.beta, handle=h)
    return plan


def _with_out(pb: _Problem, ptrs: tuple[int, int, int], out_ptr: int) -> tuple[int, int, int]:
    x, w, y = ptrs
    if pb.direction == "forward":
        return x, w, out_ptr
    if pb.direction == "backward_data":
        return out_ptr, w, y
    return x, out_ptr, y


def conv_forward(x: object, w: object, y: object, *, pads: IntOrSeq, strides: IntOrSeq, dilations: IntOrSeq,
                 groups: int = 1, transpose: bool = False, output_pads: IntOrSeq | None = None,
                 alpha: float = 1.0, beta: float = 0.0,
                 planner: ConvPlanner | None = None, handle: api.Handle | None = None, stream: object = None,
                 device: int | None = None, workspace: MIOpenWorkspace | None = None) -> ConvPlan:
    """y = alpha * conv(x, w) + beta * y. Returns the plan used (algorithm, workspace, fallback)."""
    plan = _fast("forward", x, w, y, pads, strides, dilations, groups, transpose, alpha, beta, output_pads, planner,
                 handle, stream, device, workspace)
    if plan is not None:
        return plan
    pb = _problem("forward", "conv_forward", ("x", "w", "y"), x, w, y, pads, strides, dilations, groups, transpose,
                  alpha, beta, output_pads)
    return _run(pb, planner, handle, stream, device, workspace)


def conv_backward_data(dy: object, w: object, dx: object, *, pads: IntOrSeq, strides: IntOrSeq,
                       dilations: IntOrSeq, groups: int = 1, transpose: bool = False,
                       output_pads: IntOrSeq | None = None, alpha: float = 1.0,
                       beta: float = 0.0, planner: ConvPlanner | None = None, handle: api.Handle | None = None,
                       stream: object = None, device: int | None = None,
                       workspace: MIOpenWorkspace | None = None) -> ConvPlan:
    """dx = alpha * conv_backward_data(dy, w) + beta * dx; dx has the forward input's dims, dy the output's."""
    plan = _fast("backward_data", dx, w, dy, pads, strides, dilations, groups, transpose, alpha, beta, output_pads,
                 planner, handle, stream, device, workspace)
    if plan is not None:
        return plan
    pb = _problem("backward_data", "conv_backward_data", ("dx", "w", "dy"), dx, w, dy, pads, strides, dilations,
                  groups, transpose, alpha, beta, output_pads)
    return _run(pb, planner, handle, stream, device, workspace)


def conv_backward_weights(dy: object, x: object, dw: object, *, pads: IntOrSeq, strides: IntOrSeq,
                          dilations: IntOrSeq, groups: int = 1, transpose: bool = False,
                       output_pads: IntOrSeq | None = None, alpha: float = 1.0,
                          beta: float = 0.0, planner: ConvPlanner | None = None, handle: api.Handle | None = None,
                          stream: object = None, device: int | None = None,
                          workspace: MIOpenWorkspace | None = None) -> ConvPlan:
    """dw = alpha * conv_backward_weights(dy, x) + beta * dw; dw has the filter's dims."""
    plan = _fast("backward_weights", x, dw, dy, pads, strides, dilations, groups, transpose, alpha, beta, output_pads,
                 planner, handle, stream, device, workspace)
    if plan is not None:
        return plan
    pb = _problem("backward_weights", "conv_backward_weights", ("x", "dw", "dy"), x, dw, dy, pads, strides,
                  dilations, groups, transpose, alpha, beta, output_pads)
    return _run(pb, planner, handle, stream, device, workspace)


def conv_backward_bias(dy: object, db: object, *, alpha: float = 1.0, beta: float = 0.0,
                       handle: api.Handle | None = None, stream: object = None, device: int | None = None) -> None:
    """db = sum of dy over N and the spatial dims; db is (1, C, 1, 1) or (1, C, 1, 1, 1).

    MIOpen implements only alpha=1, beta=0 here (and reads them as float for every dtype)."""
    op = "conv_backward_bias"
    tdy, tdb = _tensor(dy, "dy", op), _tensor(db, "db", op)
    a, b = _scalar(alpha, "alpha", op), _scalar(beta, "beta", op)
    if tdy.ndim not in (4, 5):
        raise ShapeError(f"{op}: dy must be 4-D or 5-D; got {tdy.ndim} dims ({tdy.dims})")
    want = (1, tdy.dims[1]) + (1,) * (tdy.ndim - 2)
    if tdb.dims != want:
        raise ShapeError(f"{op}: db must have dims {want} for dy={tdy.dims}; got {tdb.dims}")
    _same_dtype(op, dy=tdy, db=tdb)
    if (a, b) != (1.0, 0.0):
        raise ScalingRuleError(f"{op}: MIOpen's backward bias supports only alpha=1 and beta=0; got alpha={a}, "
                               f"beta={b}")
    if math.prod(tdy.dims) == 0:
        raise ShapeError(f"{op}: dy is empty ({tdy.dims})")
    with _on_device(device):
        h = resolve_handle(handle, stream, device)
        api.convolution_backward_bias(h, ctypes.c_float(a), tdy.desc, tdy.ptr, ctypes.c_float(b), tdb.desc, tdb.ptr)
