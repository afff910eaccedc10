"""Fusion plans: build once, compile once, execute many times.

Two shapes of plan are supported (each op optional except the first):

* convolution -> bias -> activation   (`FusionPlan.conv_bias_activation`)
* batch-norm inference -> activation  (`FusionPlan.batch_norm_activation`)

or built op by op: `FusionPlan(x_dims, dtype).add_conv(...).add_bias().add_activation(...)`.
The op order is checked in Python; whether MIOpen can fuse the combination on this device is only
known at `compile()`, which turns MIOpen's refusal (miopenStatusUnsupportedOp, BadParm, ...) into a
`FusionError` naming the combination and the shapes. The op descriptors belong to the plan (MIOpen
frees them with it); `close()` releases the operator arguments and the plan.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from .. import layout
from .._generated import api
from ..algo import ConvParams
from ..descriptors import DataTypeLike, FrozenTensorDescriptor, convolution_descriptor, data_type, tensor_descriptor
from ..errors import FusionError, MIOpenError, ShapeError
from ..tensor import Tensor
from ._common import _conv_params, _ints, _on_device, _output_dims, _scalar, _tensor, resolve_handle
from .conv import IntOrSeq

__all__ = ["FusionPlan"]

OpKind = Literal["conv", "bias", "activation", "batch_norm_inference"]


@dataclass
class _Op:
    kind: OpKind
    desc: api.FusionOpDescriptor
    text: str
    param_dims: tuple[int, ...] = ()  # w (conv), bias, or the batch-norm parameter dims
    param_dtype: api.DataType | None = None


def _activation_mode(mode: object) -> api.ActivationMode:
    """A member, its int value, or a name ("relu", "miopenActivationRELU")."""
    from .activation import activation_mode

    return activation_mode(mode)  # type: ignore[arg-type]


def _bn_mode(mode: object) -> api.BatchNormMode:
    """A member, its int value, or a name ("spatial", "per_activation")."""
    from .batchnorm import batch_norm_mode

    return batch_norm_mode(mode, "FusionPlan")  # type: ignore[arg-type]


class FusionPlan:
    """A vertical MIOpen fusion plan for inputs of one shape, layout and dtype."""

    def __init__(self, x_dims: Sequence[int], dtype: DataTypeLike, *, x_strides: Sequence[int] | None = None,
                 device: int | None = None) -> None:
        dims = _ints(x_dims, "x_dims", None, "FusionPlan")
        if len(dims) not in (4, 5):
            raise ShapeError(f"FusionPlan: x_dims must be 4-D or 5-D; got {len(dims)} dims ({dims})")
        if any(d < 1 for d in dims):
            raise ShapeError(f"FusionPlan: x_dims must be >= 1; got {dims}")
        strides = layout.packed_strides(dims) if x_strides is None else _ints(x_strides, "x_strides", len(dims),
                                                                                "FusionPlan")
        self.dtype = data_type(dtype, "dtype", "FusionPlan")
        self.device = device
        self.x_dims = dims
        self.x_strides = layout.canonical_strides(dims, strides)
        self._x_desc: FrozenTensorDescriptor = tensor_descriptor(self.dtype, dims, strides)
        self._out_dims = dims
        self._ops: list[_Op] = []
        self._keep: list[object] = []  # descriptors the ops were made from
        self._args: api.OperatorArgs | None = None
        self._compiled = False
        self._lock = threading.Lock()
        self.compile_count = 0
        self._plan: api.FusionPlanDescriptor | None = api.create_fusion_plan(
            api.FusionDirection.miopenVerticalFusion, self._x_desc)

    # ---------------------------------------------------------------- construction helpers
    @classmethod
    def conv_bias_activation(cls, x_dims: Sequence[int], w_dims: Sequence[int], dtype: DataTypeLike, *,
                             pads: IntOrSeq, strides: IntOrSeq, dilations: IntOrSeq, groups: int = 1,
                             bias: bool = True,
                             activation: api.ActivationMode | int | str | None = "relu",
                             x_strides: Sequence[int] | None = None, device: int | None = None) -> FusionPlan:
        """convolution (+ bias) (+ activation); pass bias=False / activation=None to leave them out."""
        plan = cls(x_dims, dtype, x_strides=x_strides, device=device)
        try:
            plan.add_conv(w_dims, pads=pads, strides=strides, dilations=dilations, groups=groups)
            if bias:
                plan.add_bias()
            if activation is not None:
                plan.add_activation(activation)
        except BaseException:
            plan.close()
            raise
        return plan

    @classmethod
    def batch_norm_activation(cls, x_dims: Sequence[int], dtype: DataTypeLike, *,
                              mode: api.BatchNormMode | int | str = "spatial",
                              activation: api.ActivationMode | int | str | None = "relu",
                              x_strides: Sequence[int] | None = None, device: int | None = None) -> FusionPlan:
        """batch-norm inference (+ activation)."""
        plan = cls(x_dims, dtype, x_strides=x_strides, device=device)
        try:
            plan.add_batch_norm_inference(mode)
            if activation is not None:
                plan.add_activation(activation)
        except BaseException:
            plan.close()
            raise
        return plan

    # ---------------------------------------------------------------- properties
    @property
    def output_dims(self) -> tuple[int, ...]:
        return self._out_dims

    @property
    def compiled(self) -> bool:
        return self._compiled

    @property
    def closed(self) -> bool:
        return self._plan is None

    @property
    def ops(self) -> tuple[OpKind, ...]:
        return tuple(op.kind for op in self._ops)

    def describe(self) -> str:
        chain = " -> ".join(op.text for op in self._ops) or "(no ops)"
        return f"{chain} on x={self.x_dims} {self.dtype.name} -> y={self._out_dims}"

    def __repr__(self) -> str:
        state = "closed" if self.closed else ("compiled" if self._compiled else "building")
        return f"<FusionPlan {state}: {self.describe()}>"

    # ---------------------------------------------------------------- adding ops
    def _check_open(self, what: str) -> api.FusionPlanDescriptor:
        if self._plan is None:
            raise ValueError(f"FusionPlan.{what}: the plan is closed")
        return self._plan

    def _check_add(self, kind: OpKind) -> api.FusionPlanDescriptor:
        plan = self._check_open(f"add_{kind}")
        if self._compiled:
            raise FusionError(f"FusionPlan.add_{kind}: the plan is compiled; ops cannot be added any more")
        kinds = self.ops
        if kind in kinds:
            raise FusionError(f"FusionPlan.add_{kind}: the plan already has a {kind} op ({self.describe()})")
        if kinds and kinds[-1] == "activation":
            raise FusionError(f"FusionPlan.add_{kind}: nothing can follow the activation ({self.describe()})")
        if kind == "conv" and kinds:
            raise FusionError(f"FusionPlan.add_conv: the convolution must be the first op ({self.describe()})")
        if kind == "bias" and (not kinds or kinds[-1] != "conv"):
            raise FusionError(f"FusionPlan.add_bias: a bias must directly follow a convolution ({self.describe()})")
        return plan

    def add_conv(self, w_dims: Sequence[int], *, pads: IntOrSeq, strides: IntOrSeq, dilations: IntOrSeq,
                 groups: int = 1) -> FusionPlan:
        """A forward convolution by a filter of `w_dims` (given at execute time as `w`)."""
        plan = self._check_add("conv")
        w = _ints(w_dims, "w_dims", None, "FusionPlan.add_conv")
        cp: ConvParams = _conv_params(len(self.x_dims), pads, strides, dilations, groups, False, "FusionPlan.add_conv")
        out = _output_dims(self._out_dims, w, cp, "FusionPlan.add_conv", "x", "w_dims")
        conv = convolution_descriptor(cp.pads, cp.strides, cp.dilations, cp.groups)
        wd = tensor_descriptor(self.dtype, w)
        desc = api.create_op_conv_forward(plan, conv, wd)
        self._keep += [conv, wd]
        text = (f"conv(w={w}, pads={cp.pads}, strides={cp.strides}, dilations={cp.dilations}"
                f"{f', groups={cp.groups}' if cp.groups != 1 else ''})")
        self._ops.append(_Op("conv", desc, text, w, self.dtype))
        self._out_dims = out
        return self

    def add_bias(self) -> FusionPlan:
        """A per-channel bias of dims (1, K, 1, 1[, 1]) (given at execute time as `bias`)."""
        plan = self._check_add("bias")
        dims = (1, self._out_dims[1]) + (1,) * (len(self._out_dims) - 2)
        bd = tensor_descriptor(self.dtype, dims)
        desc = api.create_op_bias_forward(plan, bd)
        self._keep.append(bd)
        self._ops.append(_Op("bias", desc, f"bias{dims}", dims, self.dtype))
        return self

    def add_activation(self, mode: api.ActivationMode | int | str) -> FusionPlan:
        """An activation (its alpha, beta, gamma are given at execute time)."""
        m = _activation_mode(mode)
        plan = self._check_add("activation")
        desc = api.create_op_activation_forward(plan, m)
        self._ops.append(_Op("activation", desc, f"activation({m.name})"))
        return self

    def add_batch_norm_inference(self, mode: api.BatchNormMode | int | str = "spatial"
                                 ) -> FusionPlan:
        """Batch-norm inference; scale, bias, mean and variance are (1, C, 1, 1) (spatial) or
        (1, C, H, W) (per activation), float for half/bfloat16 inputs, else the input dtype."""
        m = _bn_mode(mode)
        plan = self._check_add("batch_norm_inference")
        out = self._out_dims
        dims = ((1, out[1]) + (1,) * (len(out) - 2)) if m == api.BatchNormMode.miopenBNSpatial else (1, *out[1:])
        pdt = (api.DataType.miopenFloat if self.dtype in (api.DataType.miopenHalf, api.DataType.miopenBFloat16)
               else self.dtype)
        pd = tensor_descriptor(pdt, dims)
        desc = api.create_op_batch_norm_inference(plan, m, pd)
        self._keep.append(pd)
        self._ops.append(_Op("batch_norm_inference", desc, f"batch_norm_inference({m.name}, {dims})", dims, pdt))
        return self

    # ---------------------------------------------------------------- compile / execute
    def compile(self, *, handle: api.Handle | None = None, stream: object = None) -> None:
        """Compile the plan (once; later calls do nothing). MIOpen's refusal becomes FusionError."""
        plan = self._check_open("compile")
        if self._compiled:
            return
        if not self._ops:
            raise FusionError("FusionPlan.compile: the plan has no ops")
        with _on_device(self.device):
            h = resolve_handle(handle, stream, self.device)
            try:
                api.compile_fusion_plan(h, plan)
            except MIOpenError as exc:
                status = getattr(exc, "status_name", None) or type(exc).__name__
                raise FusionError(f"MIOpen cannot fuse {self.describe()}: miopenCompileFusionPlan returned {status}"
                                  f" (the combination, a shape or the dtype is not supported by its fusion "
                                  f"kernels; run the ops separately)") from exc
            self.compile_count += 1
            self._args = api.create_operator_args()
            self._compiled = True

    def execute(self, x: object, y: object, *, w: object = None, bias: object = None, bn_scale: object = None,
                bn_bias: object = None, bn_mean: object = None, bn_variance: object = None, epsilon: float = 1e-5,
                activ_alpha: float = 0.0, activ_beta: float = 0.0, activ_gamma: float = 0.0,
                handle: api.Handle | None = None, stream: object = None) -> None:
        """Run the compiled plan on x into y with this call's parameters."""
        op = "FusionPlan.execute"
        plan = self._check_open("execute")
        if not self._compiled or self._args is None:
            raise FusionError(f"{op}: compile() the plan before executing it ({self.describe()})")
        tx, ty = _tensor(x, "x", op), _tensor(y, "y", op)
        if tx.dims != self.x_dims or tx.dtype != self.dtype:
            raise ShapeError(f"{op}: x must be {self.x_dims} {self.dtype.name} (the plan's input); got {tx.dims} "
                             f"{tx.dtype.name}")
        if layout.canonical_strides(tx.dims, tx.strides) != self.x_strides:
            raise ShapeError(f"{op}: x's strides {tx.strides} differ from the plan's input layout {self.x_strides}")
        if ty.dims != self._out_dims or ty.dtype != self.dtype:
            raise ShapeError(f"{op}: y must be {self._out_dims} {self.dtype.name}; got {ty.dims} {ty.dtype.name}")
        given = {"w": w, "bias": bias, "bn_scale": bn_scale, "bn_bias": bn_bias, "bn_mean": bn_mean,
                 "bn_variance": bn_variance}
        wanted: dict[OpKind, tuple[str, ...]] = {"conv": ("w",), "bias": ("bias",),
                                                 "batch_norm_inference": ("bn_scale", "bn_bias", "bn_mean",
                                                                          "bn_variance")}
        needed = {name for o in self._ops for name in wanted.get(o.kind, ())}
        extra = sorted(n for n, v in given.items() if v is not None and n not in needed)
        if extra:
            raise ValueError(f"{op}: {', '.join(extra)} given but the plan has no op that takes it "
                             f"({self.describe()})")
        missing = sorted(n for n in needed if given[n] is None)
        if missing:
            raise ValueError(f"{op}: {', '.join(missing)} missing ({self.describe()})")
        tensors: dict[str, Tensor] = {}
        for o in self._ops:
            for n in wanted.get(o.kind, ()):
                t = _tensor(given[n], n, op)
                if t.dims != o.param_dims or t.dtype != o.param_dtype:
                    assert o.param_dtype is not None
                    raise ShapeError(f"{op}: {n} must be {o.param_dims} {o.param_dtype.name}; got {t.dims} "
                                     f"{t.dtype.name}")
                tensors[n] = t
        eps = _scalar(epsilon, "epsilon", op)
        if "bn_variance" in tensors and eps <= 0:
            raise ValueError(f"{op}: epsilon must be > 0; got {eps}")
        aa, ab, ag = (_scalar(activ_alpha, "activ_alpha", op), _scalar(activ_beta, "activ_beta", op),
                      _scalar(activ_gamma, "activ_gamma", op))
        if math.prod(tx.dims) == 0:
            raise ShapeError(f"{op}: x is empty")
        with _on_device(self.device), self._lock:
            h = resolve_handle(handle, stream, self.device)
            args = self._args
            for o in self._ops:
                if o.kind == "conv":
                    api.set_op_args_conv_forward(args, o.desc, 1.0, 0.0, tensors["w"].ptr)
                elif o.kind == "bias":
                    api.set_op_args_bias_forward(args, o.desc, 1.0, 0.0, tensors["bias"].ptr)
                elif o.kind == "activation":
                    api.set_op_args_activ_forward(args, o.desc, 1.0, 0.0, aa, ab, ag)
                else:
                    api.set_op_args_batch_norm_inference(args, o.desc, 1.0, 0.0, tensors["bn_scale"].ptr,
                                                         tensors["bn_bias"].ptr, tensors["bn_mean"].ptr,
                                                         tensors["bn_variance"].ptr, eps)
            api.execute_fusion_plan(h, plan, self._x_desc, tx.ptr, ty.desc, ty.ptr, args)

    # ---------------------------------------------------------------- lifetime
    def close(self) -> None:
        """Free the operator arguments and the plan (its op descriptors go with it); idempotent."""
        args, self._args = self._args, None
        plan, self._plan = self._plan, None
        self._compiled = False
        try:
            if args is not None:
                args.close()
        finally:
            if plan is not None:
                plan.close()
            self._keep.clear()

    def __enter__(self) -> FusionPlan:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
