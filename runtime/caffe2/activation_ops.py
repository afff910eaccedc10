"""Caffe2's `activation_ops_miopen.h` (and `elu_op_miopen`) by its own names, for every
`miopenActivationMode_t` of the bound release, over `miopen.ops.activation`.

``MIOPENActivationOp(mode, ["X"], ["Y"])`` computes Y = f(X);
``MIOPENActivationGradientOp(mode, ["Y", "dY"], ["dX"])`` computes dX from the forward output.
Caffe2 passed Y where MIOpen's backward reads X; that is right only where Y determines f'(X)
(PASTHRU, LOGISTIC, TANH, RELU, LEAKYRELU, ELU). For the other modes the gradient operator takes
X as a third input (``["Y", "dY", "X"]``) and refuses to run without it.

Arguments: ``alpha``/``beta``/``gamma`` of the descriptor (per-mode defaults of
`miopen.ops.activation`: ELU alpha 1, LEAKYRELU alpha 0.01, ...) and ``order`` ("NCHW" or
"NHWC": with NHWC, packed 4-D blobs hold N, H, W, C and are described that way; the values are
the same either way for these elementwise operators). As in Caffe2, a packed blob of another rank
is described as (N, size / N, 1, 1).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .. import layout
from .._args import enum_arg
from .._generated import api
from ..ops import activation as _activation
from .scopes import BlobScope
from ..tensor import Tensor, same_dims
from .common import TypeWrapper, _storage_order
from .operator import MIOPENOperator

__all__ = ["MIOPENActivationOpBase", "MIOPENActivationOp", "MIOPENActivationGradientOp",
           "GRADIENT_FROM_OUTPUT"]

#: modes whose derivative MIOpen can read from Y in place of X (the gradient's X input is optional)
GRADIENT_FROM_OUTPUT = frozenset({"PASTHRU", "LOGISTIC", "TANH", "RELU", "LEAKYRELU", "ELU"})


class MIOPENActivationOpBase(MIOPENOperator):
    """What the activation operators share: the mode, its parameters and the storage order."""

    def __init__(self, mode: _activation.ActivationModeLike, inputs: Sequence[str], outputs: Sequence[str], *,
                 alpha: float | None = None, beta: float | None = None, gamma: float | None = None,
                 order: str = "NCHW", ws: BlobScope | None = None, device: int | None = None,
                 stream: object = None, name: str = "") -> None:
        op = type(self).__name__
        self.mode = _mode(mode, op)
        # validated now (the per-mode defaults filled in): a bad value fails here, not at the first run
        self.alpha, self.beta, self.gamma = _activation.activation_params(self.mode, alpha, beta, gamma, op)
        _storage_order(order, op, 4)
        self.order = order.strip().upper()
        super().__init__(inputs, outputs, ws=ws, device=device, stream=stream, name=name,
                         args={"alpha": self.alpha, "beta": self.beta, "gamma": self.gamma, "order": self.order})

    @property
    def mode_name(self) -> str:
        return self.mode.name.removeprefix("miopenActivation")

    def _view(self, t: Tensor) -> Tensor:
        """How MIOpen sees a blob: a packed 4-D blob in storage order (NHWC: N, H, W, C) as logical
        N, C, H, W with its strides; any other packed blob as (N, size / N, 1, 1), as Caffe2 does;
        other tensors (strided views) as they are."""
        if not layout.is_packed(t.dims, t.strides):
            return t
        if t.ndim == 4:
            if self.order == "NHWC":
                dims, strides = layout.descriptor_from_order_and_dims(layout.StorageOrder.NHWC, t.dims)
                return Tensor.make(t.ptr, dims, t.dtype, strides)
            return t
        n = t.dims[0]
        return Tensor.make(t.ptr, (n, math.prod(t.dims) // n, 1, 1), t.dtype)

    def __repr__(self) -> str:
        return (f"<{self.type_name} {self.mode_name} alpha={self.alpha} beta={self.beta} gamma={self.gamma} "
                f"{self.order} inputs={list(self.inputs)} outputs={list(self.outputs)}>")


def _mode(mode: _activation.ActivationModeLike, op: str) -> api.ActivationMode:
    return enum_arg(mode, api.ActivationMode, "mode", op, _activation._ACTIVATION_ALIASES)


class MIOPENActivationOp(MIOPENActivationOpBase):
    """Y = f(X) (`miopenActivationForward` on the inline handle); Y may be X (in place)."""

    NUM_INPUTS = (1, 1)
    NUM_OUTPUTS = (1, 1)

    def do_run_with_type(self, T: type[TypeWrapper]) -> bool:
        x = self.input(0)
        y = self.output(0, x.dims, T)  # ResizeLike(X)
        _activation.activation_forward(self._view(x), self._view(y), self.mode, self.alpha, self.beta, self.gamma,
                                       handle=self.miopen_wrapper.inline_miopen_handle(), device=self.device)
        return True


class MIOPENActivationGradientOp(MIOPENActivationOpBase):
    """dX = f'(X) * dY from Y, dY (and X) (`miopenActivationBackward` on the inline handle)."""

    NUM_INPUTS = (2, 3)
    NUM_OUTPUTS = (1, 1)

    def __init__(self, mode: _activation.ActivationModeLike, inputs: Sequence[str], outputs: Sequence[str], *,
                 alpha: float | None = None, beta: float | None = None, gamma: float | None = None,
                 order: str = "NCHW", ws: BlobScope | None = None, device: int | None = None,
                 stream: object = None, name: str = "") -> None:
        super().__init__(mode, inputs, outputs, alpha=alpha, beta=beta, gamma=gamma, order=order, ws=ws,
                         device=device, stream=stream, name=name)
        if len(self.inputs) == 2 and self.mode_name not in GRADIENT_FROM_OUTPUT:
            raise ValueError(f"{self.type_name}: the {self.mode_name} gradient needs X: pass inputs [Y, dY, X]; "
                             f"only {', '.join(sorted(GRADIENT_FROM_OUTPUT))} can be differentiated from Y alone")

    def do_run_with_type(self, T: type[TypeWrapper]) -> bool:
        y = self.input(0)
        dy = self.input(1)
        self.check_dtype(1, dy, T)
        x = y
        if len(self.inputs) == 3:
            x = self.input(2)
            self.check_dtype(2, x, T)
        same_dims(self.type_name, Y=y, dY=dy, X=x)
        dx = self.output(0, y.dims, T)  # ResizeLike(Y)
        _activation.activation_backward(self._view(y), self._view(dy), self._view(x), self._view(dx), self.mode,
                                        self.alpha, self.beta, self.gamma,
                                        handle=self.miopen_wrapper.inline_miopen_handle(), device=self.device)
        return True
