"""Handles, error strings, dropout, CTC loss, reduction and fusion plans against the real library.

Sources of the expectations (MIOpen 2.17.0): src/handle_api.cpp (error strings; the HIPNOGPU handle in
src/nogpu/handle.cpp ignores streams and allocators and reports no compute units, no memory and image width 0),
src/dropout_api.cpp (reserve = elements * sizeof(bool); states = min(256*64, image width) * sizeof(prngStates)),
src/ctc.cpp (GetCTCLossWorkspaceSize), src/reducetensor.cpp (ReductionKernelConfigurator with block 256, the
handle's wavefront 64, +4096 bytes for the dynamic reduction's descriptors), src/fused_api.cpp, src/fusion.cpp
and src/md_graph.cpp (activation/bias may not start a plan; the op's status is lost: the API returns
UnknownError).
"""

from __future__ import annotations

import ctypes
import itertools

import miopen
from miopen._generated.errors import miopenStatus_t

from .common import DT, check, failing, handle, prod, raw_fn, status_name, tensor

BADPARM = int(miopenStatus_t.miopenStatusBadParm)
UNKNOWN = int(miopenStatus_t.miopenStatusUnknownError)
#: miopenStatus_t values MIOpen 2.17.0's miopenGetErrorString knows (0..9); others are "Unknown error status"
KNOWN_STATUSES = range(10)


# ---------------------------------------------------------------------------- handle


@check("miopenGetVersion", "miopenGetErrorString")
def version_and_error_strings() -> dict[str, object]:
    v = miopen.get_version()
    assert (v.major, v.minor, v.patch) == (2, 17, 0)
    for s in miopen.Status:
        want = s.name if s.value in KNOWN_STATUSES else "Unknown error status"
        assert miopen.get_error_string(s) == want
    # a value no release declares: our API refuses it; MIOpen answers "Unknown error status"
    try:
        miopen.get_error_string(42)
    except ValueError as exc:
        assert "error=42" in str(exc)
    fn = raw_fn("miopenGetErrorString")
    return {"42 (raw)": fn(42).decode() if isinstance(fn(42), bytes) else fn(42)}


@check("miopenCreate", "miopenCreateWithStream", "miopenGetStream", "miopenSetStream", "miopenDestroy",
       "miopenGetKernelTime", "miopenEnableProfiling", "miopenSetAllocator")
def handle_basics() -> dict[str, object]:
    h = miopen.create()
    assert miopen.get_stream(h) is None  # the no-GPU handle has no stream
    miopen.set_stream(h, 0x1234)
    assert miopen.get_stream(h) is None  # SetStream is a no-op without a GPU
    h2 = miopen.create_with_stream(0x5678)
    assert miopen.get_stream(h2) is None and h2.address != h.address
    assert miopen.get_kernel_time(h) == 0.0
    miopen.enable_profiling(h, True)
    miopen.enable_profiling(h, False)
    assert miopen.get_kernel_time(h) == 0.0
    calls: list[str] = []

    def alloc(ctx: object, size: int) -> int:
        calls.append("alloc")
        return 0

    def free(ctx: object, ptr: object) -> None:
        calls.append("free")

    miopen.set_allocator(h, alloc, free, None)
    miopen.set_allocator(h, None, None)  # NULL callbacks restore MIOpen's own
    miopen.destroy(h)
    assert h.closed
    h2.close()
    return {"allocator calls": calls}


# ---------------------------------------------------------------------------- dropout


@check("miopenCreateDropoutDescriptor", "miopenGetDropoutDescriptor", "miopenRestoreDropoutDescriptor",
       "miopenDropoutGetStatesSize", "miopenDropoutGetReserveSpaceSize", "miopenDestroyDropoutDescriptor")
def dropout() -> dict[str, object]:
    h = handle()
    d = miopen.create_dropout_descriptor()
    fresh = miopen.get_dropout_descriptor(d, h)
    assert (fresh.dropout, fresh.seed, fresh.use_mask, fresh.state_evo, fresh.rng_mode) == (
        0.0, 0, False, False, miopen.RNGType.MIOPEN_RNG_PSEUDO_XORWOW)
    states = ctypes.create_string_buffer(64)
    for rate, seed, mask, evo in [(0.5, 123, False, False), (0.125, 2**64 - 1, True, True), (0.0, 0, True, False)]:
        miopen.restore_dropout_descriptor(d, h, rate, ctypes.addressof(states), 64, seed, mask, evo,
                                          miopen.RNGType.MIOPEN_RNG_PSEUDO_XORWOW)
        got = miopen.get_dropout_descriptor(d, h)
        assert (got.dropout, got.seed, got.use_mask, got.state_evo) == (rate, seed, mask, evo)
        # MIOpen writes the address of its own field holding the states pointer (`&desc.pstates`, in every
        # release so far); the binding reads through it (`holds: address_of_device_pointer`): the buffer comes back
        assert got.states == ctypes.addressof(states)
    # states: min(256 * 64, image width) PRNG states; the no-GPU handle reports image width 0
    assert miopen.dropout_get_states_size(h) == 0
    for dims in ([2, 3, 4, 5], [7], [1, 1, 1, 1, 1]):
        assert miopen.dropout_get_reserve_space_size(tensor(dims)) == prod(dims)  # sizeof(bool) each
    miopen.destroy_dropout_descriptor(d)
    return {"states size": 0}


@check("miopenSetDropoutDescriptor", isolated=True)
def dropout_set_descriptor() -> str:
    """SetDropoutDescriptor seeds the PRNG states with a kernel: with no GPU MIOpen fails to build it."""
    h = handle()
    d = miopen.create_dropout_descriptor()
    buf = ctypes.create_string_buffer(64)
    status, _ = failing(lambda: miopen.set_dropout_descriptor(d, h, 0.5, ctypes.addressof(buf), 64, 1, False, False,
                                                              miopen.RNGType.MIOPEN_RNG_PSEUDO_XORWOW))
    return status_name(status)


# ---------------------------------------------------------------------------- CTC loss


@check("miopenCreateCTCLossDescriptor", "miopenSetCTCLossDescriptor", "miopenGetCTCLossDescriptor",
       "miopenDestroyCTCLossDescriptor", "miopenGetCTCLossWorkspaceSize")
def ctc() -> dict[str, object]:
    out: dict[str, object] = {}
    for dt, blank, softmax in [(DT.miopenFloat, 0, True), (DT.miopenHalf, 7, False)]:
        c = miopen.create_ctc_loss_descriptor()
        miopen.set_ctc_loss_descriptor(c, dt, blank, softmax)
        got = miopen.get_ctc_loss_descriptor(c)
        assert (got.data_type, got.blank_label_id, got.apply_softmax_layer) == (dt, blank, softmax)
        miopen.destroy_ctc_loss_descriptor(c)
    h = handle()
    c = miopen.create_ctc_loss_descriptor()
    miopen.set_ctc_loss_descriptor(c, DT.miopenFloat, 0, True)
    probs, grads = tensor([10, 2, 5]), tensor([10, 2, 5])
    algo = miopen.CTCLossAlgo.MIOPEN_CTC_LOSS_ALGO_DETERMINISTIC
    cases = {
        # valid input: the workspace (computed below) exceeds the no-GPU handle's memory (0 bytes)
        "valid": ([1, 2, 1, 2], [2, 2], [10, 10], "exceeds GPU memory capacity"),
        "label id >= classes": ([1, 5, 1, 2], [2, 2], [10, 10], "Wrong label id"),
        "input longer than T": ([1, 2, 1, 2], [2, 2], [11, 10], "Wrong input time step"),
        "labels + repeats > input": ([1, 1, 1, 2], [3, 1], [3, 10], "label length exceeds input time step"),
    }
    for name, (labels, label_lengths, input_lengths, reason) in cases.items():
        status, text = failing(lambda: miopen.get_ctc_loss_workspace_size(h, probs, grads, labels, label_lengths,
                                                                          input_lengths, algo, c))
        assert status == BADPARM and reason in text, (name, text)
        out[name] = status_name(status)
    status, text = failing(lambda: miopen.get_ctc_loss_workspace_size(h, probs, tensor([10, 2, 6]), [1], [1, 1],
                                                                      [10, 10], algo, c))
    assert status == BADPARM and "dimensions do not match" in text
    # what the valid case needs (src/ctc.cpp), for the record: ints for lengths/offsets/repeats/labels/blanks,
    # floats for log-softmax, alphas and betas
    t, b, k, max_len, total = 10, 2, 5, 2, 4
    out["valid case would need"] = (4 * b + total + b * (2 * max_len + 1)) * 4 + (
        t * b * k + t * b * (2 * max_len + 1) + 2 * b * (2 * max_len + 1)) * 4
    return out


# ---------------------------------------------------------------------------- reduction


def reduce_workspace(in_dims: list[int], out_dims: list[int], op: str, indices: bool, itemsize: int) -> int:
    """src/reducetensor.cpp, block 256 and wavefront 64."""
    block, warp = 256, 64
    inv = prod(out_dims)
    red = prod(in_dims) // inv
    blockwise = block * 4
    if inv == 1:
        multi = red > blockwise
        grid = (red + block - 1) // block
    else:
        multi = red > blockwise
        grid = inv * min((red + blockwise - 1) // blockwise, 32)
    ws = grid if multi else 0
    need_idx = indices and op in ("MIOPEN_REDUCE_TENSOR_MIN", "MIOPEN_REDUCE_TENSOR_MAX", "MIOPEN_REDUCE_TENSOR_AMAX")
    size = ws * (itemsize + 4) + 64 + 4 if need_idx else ws * itemsize
    del warp
    return size + 4096


@check("miopenCreateReduceTensorDescriptor", "miopenSetReduceTensorDescriptor", "miopenGetReduceTensorDescriptor",
       "miopenGetReductionIndicesSize", "miopenGetReductionWorkspaceSize", "miopenDestroyReduceTensorDescriptor")
def reduction() -> int:
    h = handle()
    n = 0
    ops = list(miopen.ReduceTensorOp)
    for op, ind, nan, itype in itertools.product(ops, miopen.ReduceTensorIndices, miopen.NanPropagation,
                                                 miopen.IndicesType):
        r = miopen.create_reduce_tensor_descriptor()
        if ind == miopen.ReduceTensorIndices.MIOPEN_REDUCE_TENSOR_FLATTENED_INDICES and \
                itype != miopen.IndicesType.MIOPEN_32BIT_INDICES:
            status, text = failing(lambda: miopen.set_reduce_tensor_descriptor(r, op, DT.miopenFloat, nan, ind, itype))
            assert status == UNKNOWN and "Only int32 type is supported" in text
            continue
        miopen.set_reduce_tensor_descriptor(r, op, DT.miopenFloat, nan, ind, itype)
        got = miopen.get_reduce_tensor_descriptor(r)
        assert (got.reduce_tensor_op, got.reduce_tensor_comp_type, got.reduce_tensor_nan_opt,
                got.reduce_tensor_indices, got.reduce_tensor_indices_type) == (op, DT.miopenFloat, nan, ind, itype)
        miopen.destroy_reduce_tensor_descriptor(r)
    for op, ind in itertools.product(ops, miopen.ReduceTensorIndices):
        r = miopen.create_reduce_tensor_descriptor()
        miopen.set_reduce_tensor_descriptor(r, op, DT.miopenFloat, miopen.NanPropagation.MIOPEN_NOT_PROPAGATE_NAN,
                                            ind, miopen.IndicesType.MIOPEN_32BIT_INDICES)
        flat = ind == miopen.ReduceTensorIndices.MIOPEN_REDUCE_TENSOR_FLATTENED_INDICES
        for a_dims, c_dims in [([2, 3, 4, 5], [1, 3, 1, 1]), ([64, 64, 8], [1, 1, 1]), ([4096, 3], [1, 3]),
                               ([7, 2000], [7, 1]), ([5, 5], [5, 5])]:
            for dt, size in ((DT.miopenFloat, 4), (DT.miopenHalf, 2)):
                a, c = tensor(a_dims, None, dt), tensor(c_dims, None, dt)
                want_idx = prod(c_dims) * 4 if flat and op.name in (
                    "MIOPEN_REDUCE_TENSOR_MIN", "MIOPEN_REDUCE_TENSOR_MAX", "MIOPEN_REDUCE_TENSOR_AMAX") else 0
                assert miopen.get_reduction_indices_size(h, r, a, c) == want_idx, (op, ind, a_dims)
                if prod(a_dims) // prod(c_dims) > 1:  # MIOpen asserts toReduceLength > 1 for the workspace
                    want = reduce_workspace(a_dims, c_dims, op.name, flat, size)
                    assert miopen.get_reduction_workspace_size(h, r, a, c) == want, (op, ind, a_dims, dt)
                n += 1
    return n


@check("miopenGetReductionIndicesSize", "miopenGetReductionWorkspaceSize")
def reduction_errors() -> dict[str, str]:
    h = handle()
    r = miopen.create_reduce_tensor_descriptor()
    miopen.set_reduce_tensor_descriptor(r, miopen.ReduceTensorOp.MIOPEN_REDUCE_TENSOR_ADD, DT.miopenFloat,
                                        miopen.NanPropagation.MIOPEN_NOT_PROPAGATE_NAN,
                                        miopen.ReduceTensorIndices.MIOPEN_REDUCE_TENSOR_NO_INDICES,
                                        miopen.IndicesType.MIOPEN_32BIT_INDICES)
    out = {}
    for name, (a, c, reason) in {"rank": ([2, 3, 4], [1, 3], "number of dimensions"),
                                 "length": ([2, 3, 4], [1, 2, 1], "either be 1 or be equal")}.items():
        for fn in (miopen.get_reduction_indices_size, miopen.get_reduction_workspace_size):
            status, text = failing(lambda: fn(h, r, tensor(a), tensor(c)))
            assert status == UNKNOWN and reason in text, (name, fn.__name__)
        out[name] = status_name(status)
    return out


# ---------------------------------------------------------------------------- fusion


def _fusion_inputs():  # type: ignore[no-untyped-def]
    c = miopen.create_convolution_descriptor()
    miopen.init_convolution_descriptor(c, miopen.ConvolutionMode.miopenConvolution, 1, 1, 1, 1, 1, 1)
    x, w, b = tensor([1, 8, 8, 8]), tensor([8, 8, 3, 3]), tensor([1, 8, 1, 1])
    bn = miopen.create_tensor_descriptor()
    miopen.derive_bn_tensor_descriptor(bn, x, miopen.BatchNormMode.miopenBNSpatial)
    return c, x, w, b, bn


@check("miopenCreateFusionPlan", "miopenCreateOpConvForward", "miopenCreateOpBiasForward",
       "miopenCreateOpActivationForward", "miopenCreateOpActivationBackward", "miopenCreateOpBatchNormInference",
       "miopenCreateOpBatchNormForward", "miopenCreateOpBatchNormBackward", "miopenFusionPlanGetOp",
       "miopenFusionPlanConvolutionGetAlgo", "miopenFusionPlanConvolutionSetAlgo", "miopenFusionPlanGetWorkSpaceSize",
       "miopenDestroyFusionPlan")
def fusion_plans() -> dict[str, object]:
    h = handle()
    c, x, w, b, bn = _fusion_inputs()
    relu, spatial = miopen.ActivationMode.miopenActivationRELU, miopen.BatchNormMode.miopenBNSpatial
    make = {
        "conv": lambda p: miopen.create_op_conv_forward(p, c, w),
        "bias": lambda p: miopen.create_op_bias_forward(p, b),
        "act": lambda p: miopen.create_op_activation_forward(p, relu),
        "act_bwd": lambda p: miopen.create_op_activation_backward(p, relu),
        "bn_inf": lambda p: miopen.create_op_batch_norm_inference(p, spatial, bn),
        "bn_fwd": lambda p: miopen.create_op_batch_norm_forward(p, spatial, True),
        "bn_bwd": lambda p: miopen.create_op_batch_norm_backward(p, spatial),
    }
    out: dict[str, object] = {}
    for chain in (["conv", "bias", "act"], ["conv", "bn_inf", "act"], ["bn_inf", "act"], ["bn_fwd", "act"],
                  ["bn_bwd", "act_bwd"], ["conv", "act"]):
        p = miopen.create_fusion_plan(miopen.FusionDirection.miopenVerticalFusion, x)
        ops = [make[k](p) for k in chain]
        for i, op in enumerate(ops):  # the plan hands back the ops it holds, in order
            assert miopen.fusion_plan_get_op(p, i).address == op.address
            assert op._keep is not None and p in op._keep  # created ops keep their plan alive
        status, text = failing(lambda: miopen.fusion_plan_get_op(p, len(ops)))
        assert status == BADPARM and "out of bounds" in text
        assert failing(lambda: miopen.fusion_plan_get_op(p, -1))[0] == BADPARM
        assert miopen.fusion_plan_get_work_space_size(h, p, miopen.ConvFwdAlgorithm.miopenConvolutionFwdAlgoDirect) \
            == 0  # the largest workspace of its convolutions: the naive direct solvers need none
        out["+".join(chain)] = [a.name for a in miopen.fusion_plan_convolution_get_algo(p, 8)]
        miopen.destroy_fusion_plan(p)
        assert all(op.closed for op in ops)  # freed with the plan
    # a plan that starts with a convolution offers direct and Winograd; asking for one gives the first
    p = miopen.create_fusion_plan(miopen.FusionDirection.miopenVerticalFusion, x)
    make["conv"](p)
    algos = miopen.fusion_plan_convolution_get_algo(p, 8)
    assert [a.name for a in algos] == ["miopenConvolutionFwdAlgoDirect", "miopenConvolutionFwdAlgoWinograd"]
    assert miopen.fusion_plan_convolution_get_algo(p, 1) == algos[:1]
    assert miopen.fusion_plan_convolution_get_algo(p, 0) == []
    for a in algos:  # each offered algorithm can be chosen (on a fresh plan: choosing narrows the plan)
        q = miopen.create_fusion_plan(miopen.FusionDirection.miopenVerticalFusion, x)
        make["conv"](q)
        miopen.fusion_plan_convolution_set_algo(q, a)
    # one it does not offer: MIOpen throws BadParm, but the API returns its default, UnknownError
    status, text = failing(lambda: miopen.fusion_plan_convolution_set_algo(
        p, miopen.ConvFwdAlgorithm.miopenConvolutionFwdAlgoGEMM))
    assert status == UNKNOWN and "does not support the requested algorithm" in text
    out["set algo GEMM"] = status_name(status)
    # activation and bias cannot start a plan: MIOpen throws NotImplemented, but the API returns its default
    for k in ("act", "bias", "act_bwd"):
        q = miopen.create_fusion_plan(miopen.FusionDirection.miopenVerticalFusion, x)
        status, text = failing(lambda: make[k](q))
        assert status == UNKNOWN and "not supported as first ops" in text, k
        out[f"{k} first"] = status_name(status)
    return out


@check("miopenCreateOperatorArgs", "miopenSetOpArgsConvForward", "miopenSetOpArgsBiasForward",
       "miopenSetOpArgsActivForward", "miopenSetOpArgsActivBackward", "miopenSetOpArgsBatchNormInference",
       "miopenSetOpArgsBatchNormForward", "miopenSetOpArgsBatchNormBackward", "miopenDestroyOperatorArgs")
def fusion_args() -> dict[str, str]:
    c, x, w, b, bn = _fusion_inputs()
    relu, spatial = miopen.ActivationMode.miopenActivationRELU, miopen.BatchNormMode.miopenBNSpatial
    V = miopen.FusionDirection.miopenVerticalFusion
    bufs = [ctypes.create_string_buffer(256) for _ in range(8)]
    a = [ctypes.addressof(q) for q in bufs]
    p1 = miopen.create_fusion_plan(V, x)
    conv, bias, act = (miopen.create_op_conv_forward(p1, c, w), miopen.create_op_bias_forward(p1, b),
                       miopen.create_op_activation_forward(p1, relu))
    p2 = miopen.create_fusion_plan(V, x)
    bn_inf = miopen.create_op_batch_norm_inference(p2, spatial, bn)
    p3 = miopen.create_fusion_plan(V, x)
    bn_fwd = miopen.create_op_batch_norm_forward(p3, spatial, True)
    p4 = miopen.create_fusion_plan(V, x)
    bn_bwd = miopen.create_op_batch_norm_backward(p4, spatial)
    act_bwd = miopen.create_op_activation_backward(p4, relu)
    args = miopen.create_operator_args()
    miopen.set_op_args_conv_forward(args, conv, 1.0, 0.0, a[0])
    miopen.set_op_args_conv_forward(args, conv, None, None, a[0])  # NULL scalars (2.17.0 does not read them)
    miopen.set_op_args_bias_forward(args, bias, 1.0, 0.0, a[1])
    miopen.set_op_args_activ_forward(args, act, 1.0, 0.0, 0.5, 1.0, 0.0)
    miopen.set_op_args_batch_norm_inference(args, bn_inf, 1.0, 0.0, a[0], a[1], a[2], a[3], 1e-5)
    miopen.set_op_args_batch_norm_forward(args, bn_fwd, 1.0, 0.0, a[0], a[1], a[2], a[3], a[4], a[5], 0.1, 1e-5)
    # running statistics were asked for at creation: NULL running buffers are refused (BadParm) ...
    status, text = failing(lambda: miopen.set_op_args_batch_norm_forward(args, bn_fwd, 1.0, 0.0, a[0], a[1], a[2],
                                                                         a[3], None, None, 0.1, 1e-5))
    assert status == BADPARM and "runningMean or runningVariance is set to nullptr" in text
    # ... and accepted for an op created without them (the annotation's nullable)
    p5 = miopen.create_fusion_plan(V, x)
    bn_fwd_plain = miopen.create_op_batch_norm_forward(p5, spatial, False)
    miopen.set_op_args_batch_norm_forward(args, bn_fwd_plain, 1.0, 0.0, a[0], a[1], a[2], a[3], None, None, 0.1, 1e-5)
    miopen.set_op_args_batch_norm_backward(args, bn_bwd, 1.0, 0.0, a[0], a[1], a[2], a[3], a[4], a[5], a[6])
    miopen.set_op_args_activ_backward(args, act_bwd, 1.0, 0.0, a[7], None, 0.0, 0.0, 0.0)
    # an op of another kind: MIOpen's dynamic_cast throws std::bad_cast -> UnknownError
    out = {}
    for name, call in {"conv args on bias op": lambda: miopen.set_op_args_conv_forward(args, bias, 1.0, 0.0, a[0]),
                       "activ args on conv op": lambda: miopen.set_op_args_activ_forward(args, conv, 1.0, 0.0, 0, 0, 0),
                       "bn inference args on bn fwd op": lambda: miopen.set_op_args_batch_norm_inference(
                           args, bn_fwd, 1.0, 0.0, a[0], a[1], a[2], a[3], 1e-5)}.items():
        status, text = failing(call)
        assert status == UNKNOWN and "bad_cast" in text, (name, text)
        out[name] = status_name(status)
    miopen.destroy_operator_args(args)
    return out


@check("miopenCompileFusionPlan", "miopenExecuteFusionPlan", isolated=True)
def fusion_compile_execute() -> dict[str, str]:
    """Compiling builds kernels: with no GPU MIOpen fails (UnknownError); executing an uncompiled plan is BadParm."""
    h = handle()
    c, x, w, b, _ = _fusion_inputs()
    p = miopen.create_fusion_plan(miopen.FusionDirection.miopenVerticalFusion, x)
    conv = miopen.create_op_conv_forward(p, c, w)
    args = miopen.create_operator_args()
    buf = ctypes.create_string_buffer(8 * 8 * 8 * 4)
    miopen.set_op_args_conv_forward(args, conv, 1.0, 0.0, ctypes.addressof(buf))
    out = {"compile": status_name(failing(lambda: miopen.compile_fusion_plan(h, p))[0])}
    out["execute"] = status_name(failing(lambda: miopen.execute_fusion_plan(h, p, x, ctypes.addressof(buf), x,
                                                                            ctypes.addressof(buf), args))[0])
    return out




def fusion_get_op_keeps_plan() -> None:
    """An op handed back by fusion_plan_get_op belongs to the plan (MIOpen frees it with the plan), so like the
    create_op_* results it should keep the plan alive and be closed with it."""
    c, x, w, b, bn = _fusion_inputs()
    p = miopen.create_fusion_plan(miopen.FusionDirection.miopenVerticalFusion, x)
    miopen.create_op_conv_forward(p, c, w)
    op = miopen.fusion_plan_get_op(p, 0)
    assert op is not None and op._keep is not None and p in op._keep
