"""Caffe2's MIOpen layer by the names its users know, as a thin layer over the miopen runtime.

==================================  ===================================================
Caffe2 (C++)                        here
==================================  ===================================================
``MIOPENWrapper``                   `MIOPENWrapper` (`miopen.handles`, `miopen.state`)
``MIOPENState`` / ``MIOPENWorkspace``  `MIOPENState`, `MIOPENWorkspace`
``SyncedMIOPENState``               `SyncedMIOPENState` (``.mutex``, ``.state``, ``.reset()``)
``PerGPUMIOPENStates``              `PerGPUMIOPENStates` (``miopen_states()[device][idx]``)
``miopenTypeWrapper<T>``            `miopenTypeWrapper(dtype)`, `miopenTypeWrapperF32`, ``Half``,
                                    ``BFloat16``, ``F64``
``miopenTensorDescWrapper``         `miopenTensorDescWrapper`
``miopenCompiledVersion`` ...       `miopen_compiled_version`, `miopen_runtime_version`,
                                    `miopen_get_error_string`, `check_miopen_versions`,
                                    `MIOPEN_ENFORCE`
``MIOPENActivationOp<mode>`` ...    `MIOPENActivationOp(mode, ...)`, `MIOPENActivationGradientOp`
``detail::TensorDescriptors<T>``    `TensorDescriptors(n, dim, stride, T)` (``.descs()``, ``.close()``)
``RecurrentOp<T>`` ...              `RecurrentOp`, `RecurrentGradientOp`,
                                    `RecurrentParamAccessOp(RecurrentParamOpMode...)`
``RunOnDevice`` / ``DoRunWithType``  ``run_on_device()`` / ``do_run_with_type(T)``
``Workspace``                       `Workspace` (= `miopen.caffe2.scopes.BlobScope`)
``CreateOperator`` (Python)         `create_operator` / `CreateOperator`
==================================  ===================================================

```python
from miopen import caffe2
ws = caffe2.Workspace()
ws["X"] = caffe2.DeviceTensor.empty((8, 64, 56, 56), "float32")   # or a ROCm PyTorch tensor
caffe2.CreateOperator("Relu", ["X"], ["Y"]).run(ws)
```
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from .activation_ops import GRADIENT_FROM_OUTPUT, MIOPENActivationGradientOp, MIOPENActivationOp, \
    MIOPENActivationOpBase
from .common import CAFFE2_COMPILE_TIME_MAX_MIOPEN_STATES, MIOPEN_ENFORCE, TypeWrapper, Version, \
    check_miopen_versions, miopen_compiled_version, miopen_get_error_string, miopen_runtime_version, \
    miopenTensorDescWrapper, miopenTypeWrapper, miopenTypeWrapperBFloat16, miopenTypeWrapperF32, \
    miopenTypeWrapperF64, miopenTypeWrapperHalf
from .operator import DeviceTensor, MIOPENOperator, Workspace
from .recurrent_op import GET_PARAM, PARAM_TYPES, SET_PARAM, RecurrentBaseOp, RecurrentGradientOp, RecurrentOp, \
    RecurrentParamAccessOp, RecurrentParamOpMode, TensorDescriptors
from .wrapper import MIOPENState, MIOPENWorkspace, MIOPENWrapper, PerGPUMIOPENStates, SyncedMIOPENState, \
    miopen_states

__all__ = [
    "CAFFE2_COMPILE_TIME_MAX_MIOPEN_STATES", "MIOPEN_ENFORCE", "Version", "check_miopen_versions",
    "miopen_compiled_version", "miopen_runtime_version", "miopen_get_error_string", "TypeWrapper", "miopenTypeWrapper",
    "miopenTypeWrapperF32", "miopenTypeWrapperHalf", "miopenTypeWrapperBFloat16", "miopenTypeWrapperF64",
    "miopenTensorDescWrapper", "TensorDescriptors", "MIOPENWrapper", "MIOPENState", "MIOPENWorkspace", "SyncedMIOPENState",
    "PerGPUMIOPENStates", "miopen_states", "Workspace", "DeviceTensor", "MIOPENOperator", "MIOPENActivationOpBase",
    "MIOPENActivationOp", "MIOPENActivationGradientOp", "GRADIENT_FROM_OUTPUT", "RecurrentBaseOp", "RecurrentOp",
    "RecurrentGradientOp", "RecurrentParamAccessOp", "RecurrentParamOpMode", "SET_PARAM", "GET_PARAM", "PARAM_TYPES",
    "OPERATORS", "create_operator", "CreateOperator",
]

#: Caffe2's operator types of the MIOPEN engine -> how to make them
OPERATORS: dict[str, Callable[..., MIOPENOperator]] = {
    "Relu": partial(MIOPENActivationOp, "relu"),
    "ReluGradient": partial(MIOPENActivationGradientOp, "relu"),
    "Sigmoid": partial(MIOPENActivationOp, "logistic"),
    "SigmoidGradient": partial(MIOPENActivationGradientOp, "logistic"),
    "Tanh": partial(MIOPENActivationOp, "tanh"),
    "TanhGradient": partial(MIOPENActivationGradientOp, "tanh"),
    "Elu": partial(MIOPENActivationOp, "elu"),
    "EluGradient": partial(MIOPENActivationGradientOp, "elu"),
    "Recurrent": RecurrentOp,
    "RecurrentGradient": RecurrentGradientOp,
    "RecurrentParamSet": partial(RecurrentParamAccessOp, SET_PARAM),
    "RecurrentParamGet": partial(RecurrentParamAccessOp, GET_PARAM),
}


def create_operator(op_type: str, inputs: Sequence[str], outputs: Sequence[str], **args: Any) -> MIOPENOperator:
    """Caffe2's ``core.CreateOperator(op_type, inputs, outputs, engine="MIOPEN", **args)``: the
    operator of `op_type` (a key of `OPERATORS`) with its arguments (``ws``, ``device``,
    ``stream``, ``name`` as the operator classes take them; ``engine``, if given, must be MIOPEN)."""
    if not isinstance(op_type, str) or op_type not in OPERATORS:
        raise ValueError(f"create_operator: op_type {op_type!r} has no MIOPEN operator here; known: "
                         f"{', '.join(OPERATORS)}")
    engine = args.pop("engine", "MIOPEN")
    if engine not in ("MIOPEN", "miopen", "", None):
        raise ValueError(f"create_operator: engine must be 'MIOPEN'; got {engine!r}")
    return OPERATORS[op_type](inputs, outputs, **args)


CreateOperator = create_operator
