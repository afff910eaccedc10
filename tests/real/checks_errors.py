"""Error fidelity across the whole 2.17.0 API: NULL descriptors and handles, and the status -> exception mapping.

Our typed API refuses None for every handle or descriptor parameter (TypeError, before any C call). For each such
(function, parameter) of the 2.17.0 spec, `null_handles_raw` calls MIOpen directly (raw ctypes, no Python
checks) with NULL there and plausible values elsewhere, to show MIOpen refuses it too (a failing status, or its
own abort: some functions dereference descriptors outside their try/catch). The few it accepts are listed and
explained in test_real_miopen.MIOPEN_ACCEPTS_NULL.
"""

from __future__ import annotations

import ctypes
import functools
import inspect
from pathlib import Path
from typing import Any

import miopen
from miopen import raw

from . import trace
from .common import DT, check, handle, raw_fn, status_name, tensor

SPEC = Path(__file__).resolve().parents[2] / "specs" / "miopen" / "2.17.0.yaml"


@functools.cache
def _spec() -> Any:
    from miogen.spec.spec_io import load

    return load(SPEC)


def handle_params() -> list[tuple[str, str]]:
    """(function, parameter) for every by-value handle/descriptor parameter of the 2.17.0 API."""
    return [(f.name, p.name) for f in _spec().functions for p in f.params
            if p.type.kind == "handle" and p.type.depth == 0]


@functools.cache
def _objects() -> dict[str, Any]:
    """One valid, set object of each handle type (created through the typed API)."""
    x = tensor([2, 4, 8, 8])
    conv = miopen.create_convolution_descriptor()
    miopen.init_convolution_descriptor(conv, miopen.ConvolutionMode.miopenConvolution, 1, 1, 1, 1, 1, 1)
    pool = miopen.create_pooling_descriptor()
    miopen.set_2d_pooling_descriptor(pool, miopen.PoolingMode.miopenPoolingMax, 2, 2, 0, 0, 2, 2)
    lrn = miopen.create_lrn_descriptor()
    miopen.set_lrn_descriptor(lrn, miopen.LRNMode.miopenLRNCrossChannel, 5, 1e-4, 0.75, 2.0)
    act = miopen.create_activation_descriptor()
    miopen.set_activation_descriptor(act, miopen.ActivationMode.miopenActivationRELU, 0, 0, 0)
    rnn = miopen.create_rnn_descriptor()
    miopen.set_rnn_descriptor(rnn, 8, 1, miopen.RNNInputMode.miopenRNNlinear,
                              miopen.RNNDirectionMode.miopenRNNunidirection, miopen.RNNMode.miopenLSTM,
                              miopen.RNNBiasMode.miopenRNNwithBias, miopen.RNNAlgo.miopenRNNdefault, DT.miopenFloat)
    ctc = miopen.create_ctc_loss_descriptor()
    miopen.set_ctc_loss_descriptor(ctc, DT.miopenFloat, 0, True)
    drop = miopen.create_dropout_descriptor()
    red = miopen.create_reduce_tensor_descriptor()
    miopen.set_reduce_tensor_descriptor(red, miopen.ReduceTensorOp.MIOPEN_REDUCE_TENSOR_ADD, DT.miopenFloat,
                                        miopen.NanPropagation.MIOPEN_NOT_PROPAGATE_NAN,
                                        miopen.ReduceTensorIndices.MIOPEN_REDUCE_TENSOR_NO_INDICES,
                                        miopen.IndicesType.MIOPEN_32BIT_INDICES)
    plan = miopen.create_fusion_plan(miopen.FusionDirection.miopenVerticalFusion, tensor([1, 8, 8, 8]))
    op = miopen.create_op_conv_forward(plan, conv, tensor([8, 8, 3, 3]))
    return {"miopenHandle_t": handle(), "miopenTensorDescriptor_t": x, "miopenConvolutionDescriptor_t": conv,
            "miopenPoolingDescriptor_t": pool, "miopenLRNDescriptor_t": lrn, "miopenActivationDescriptor_t": act,
            "miopenRNNDescriptor_t": rnn, "miopenCTCLossDescriptor_t": ctc, "miopenDropoutDescriptor_t": drop,
            "miopenReduceTensorDescriptor_t": red, "miopenFusionPlanDescriptor_t": plan,
            "miopenFusionOpDescriptor_t": op, "miopenOperatorArgs_t": miopen.create_operator_args()}


_SCRATCH = ctypes.create_string_buffer(1 << 16)  # zeroed host memory for every pointer argument


def _raw_arg(ctype: Any, param: Any, objs: dict[str, Any]) -> Any:
    t = param.type
    if t.depth >= 1:
        return ctypes.addressof(_SCRATCH) if ctype is ctypes.c_void_p else ctypes.cast(_SCRATCH, ctype)
    if t.kind == "handle":
        return objs[t.name].address
    if t.kind == "callback":
        return ctype()  # a NULL function pointer of the callback type
    if t.kind == "opaque":
        return None
    if t.kind == "float":
        return 0.0
    if t.kind == "bool":
        return False
    return 1  # counts, lengths, enums' first non-zero value is as good as any: MIOpen dereferences first


def null_handles_typed() -> int:
    """For every (function, handle parameter): the typed wrapper, given None there and valid values elsewhere,
    raises TypeError naming that parameter, and no C function is called."""
    objs = _objects()
    n = 0
    api = miopen.api
    for fn_name, param in handle_params():
        fn = next(f for f in _spec().functions if f.name == fn_name)
        wrapper = getattr(api, _snake(fn_name))
        sig = inspect.signature(wrapper)
        kwargs = {}
        for name, p in sig.parameters.items():
            kwargs[name] = _typed_value(str(p.annotation), objs)
        target = _snake_param(fn, param, sig)
        kwargs[target] = None
        m = trace.mark()
        try:
            wrapper(**kwargs)
        except TypeError as exc:
            assert f"{target} must be" in str(exc), (fn_name, param, str(exc))
        else:
            raise AssertionError(f"{fn_name}: None accepted for {param}")
        assert trace.CALLS[m:] == [], (fn_name, param, trace.CALLS[m:])
        n += 1
    return n


def _snake(c_name: str) -> str:
    from miogen.semantics.naming import function_name

    return function_name(c_name, "miopen")


def _snake_param(fn: Any, c_param: str, sig: inspect.Signature) -> str:
    from miogen.semantics.naming import param_name

    name = param_name(c_param)
    assert name in sig.parameters, (fn.name, c_param, list(sig.parameters))
    return name


def _typed_value(annotation: str, objs: dict[str, Any]) -> Any:
    """A plausible Python value for a typed parameter, from its annotation."""
    for cls_name, obj in ((type(o).__name__, o) for o in objs.values()):
        if annotation.startswith(f"Sequence[{cls_name}]"):
            return [obj]
        if annotation.split(" | ")[0] == cls_name:
            return obj
    if annotation.startswith("Sequence["):
        return [1]
    if "DeviceBuffer" in annotation:
        return ctypes.addressof(_SCRATCH)
    if annotation.startswith("float"):
        return 0.0
    if annotation.startswith("bool"):
        return False
    if annotation.startswith("Callable") or annotation.startswith("Stream") or annotation.endswith("| None"):
        return None
    head = annotation.split(" | ")[0]
    enum_cls = getattr(miopen, head, None)
    if isinstance(enum_cls, type) and issubclass(enum_cls, int):
        return next(iter(enum_cls))  # type: ignore[call-overload]
    return 1


def null_handles_raw(pairs: list[tuple[str, str]]) -> dict[str, str]:
    """MIOpen itself, called raw with NULL for one handle parameter at a time: its status per (function, param)."""
    objs = _objects()
    out = {}
    for fn_name, param in pairs:
        fn = next(f for f in _spec().functions if f.name == fn_name)
        _, argtypes = raw.PROTOTYPES[fn_name]
        args = [None if p.name == param else _raw_arg(at, p, objs) for p, at in zip(fn.params, argtypes)]
        trace.note(f"{fn_name}.{param}")
        status = raw_fn(fn_name)(*args)
        if fn_name == "miopenGetErrorString":
            status = 0
        out[f"{fn_name}.{param}"] = status_name(status) if isinstance(status, int) else repr(status)
    return out


@check("miopenCreateOpBatchNormInference", "miopenSet4dTensorDescriptor", "miopenInitConvolutionDescriptor")
def status_mapping() -> dict[str, str]:
    """Real failing statuses -> our exception classes (generated from specs/miopen/target.yaml): each status
    MIOpen 2.17.0 can be made to return without a kernel, caught as the documented class. (The bfloat16 cases
    call kernel functions, CTCLoss and the bias convolutions, on their refusal path only: MIOpen says
    NotImplemented before any kernel.)"""
    h = handle()
    out: dict[str, str] = {}

    def caught(call: Any) -> tuple[int, Exception]:
        try:
            call()
        except miopen.MIOpenError as exc:
            return int(exc.status), exc
        raise AssertionError("no error")

    bf16 = tensor([10, 2, 5], None, DT.miopenBFloat16)
    ctc = miopen.create_ctc_loss_descriptor()
    miopen.set_ctc_loss_descriptor(ctc, DT.miopenFloat, 0, True)
    buf = ctypes.addressof(_SCRATCH)
    cases = {
        # bfloat16 is refused before any kernel: miopenStatusNotImplemented
        "ctc bfloat16": lambda: miopen.ctc_loss(h, bf16, buf, [1], [1, 1], [10, 10], buf, bf16, buf,
                                                miopen.CTCLossAlgo.MIOPEN_CTC_LOSS_ALGO_DETERMINISTIC, ctc, buf, 0),
        "conv bias bfloat16": lambda: miopen.convolution_forward_bias(h, 1.0, tensor([1, 4, 1, 1], None,
                                                                                     DT.miopenBFloat16), buf, 0.0,
                                                                      tensor([2, 4, 3, 3], None, DT.miopenBFloat16),
                                                                      buf),
        "conv backward bias bfloat16": lambda: miopen.convolution_backward_bias(
            h, 1.0, tensor([2, 4, 3, 3], None, DT.miopenBFloat16), buf, 0.0,
            tensor([1, 4, 1, 1], None, DT.miopenBFloat16), buf),
        "negative length": lambda: miopen.set_4d_tensor_descriptor(tensor([1]), DT.miopenFloat, -1, 1, 1, 1),
        "stride 0": lambda: miopen.init_convolution_descriptor(miopen.create_convolution_descriptor(),
                                                               miopen.ConvolutionMode.miopenConvolution,
                                                               0, 0, 0, 0, 1, 1),
        # a batch norm that cannot follow a plan's first op: the fusion graph says UnsupportedOp
        "unfusable op": lambda: _unfusable(),
    }
    classes = {2: "MIOpenInvalidValueError", 3: "MIOpenBadParamError", 4: "MIOpenAllocFailedError",
               6: "MIOpenNotImplementedError", 7: "MIOpenUnknownError", 8: "MIOpenUnsupportedOpError"}
    builtin = {3: ValueError, 2: ValueError, 4: MemoryError, 6: NotImplementedError}
    for name, call in cases.items():
        status, exc = caught(call)
        assert type(exc).__name__ == classes[status], (name, status, type(exc))
        if status in builtin:
            assert isinstance(exc, builtin[status])
        assert status_name(status) in str(exc) and exc.function.startswith("miopen")
        out[name] = f"{status_name(status)} -> {type(exc).__name__}"
    return out


def _unfusable() -> None:
    x = tensor([1, 8, 8, 8])
    plan = miopen.create_fusion_plan(miopen.FusionDirection.miopenVerticalFusion, x)
    bn = miopen.create_tensor_descriptor()
    miopen.derive_bn_tensor_descriptor(bn, x, miopen.BatchNormMode.miopenBNSpatial)
    miopen.create_op_batch_norm_inference(plan, miopen.BatchNormMode.miopenBNSpatial, bn)
    miopen.create_op_batch_norm_inference(plan, miopen.BatchNormMode.miopenBNSpatial, bn)  # a second BN



def warm() -> int:
    """Build the objects in the zygote worker, so that forked children share them instead of each creating a
    handle (which takes MIOpen a fifth of a second)."""
    _spec()
    return len(_objects())
