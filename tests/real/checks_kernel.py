"""Every 2.17.0 function that compiles or launches a kernel, called through the typed API with valid descriptors.

There is no GPU: MIOpen's HIPNOGPU backend tries to build the kernel with a compiler that is not there and
fails with a status, or (Find) aborts the process from a failed compiler call. These checks run in a throwaway
worker; each returns the status it got, and the parent compares it with what is documented in
`test_real_miopen.KERNEL_OUTCOMES` (or sees the worker die inside the C function). Device buffers are host
memory of the right size, so nothing MIOpen might touch on the host side is out of bounds.
"""

from __future__ import annotations

import ctypes

from typing import Any

import miopen

from .common import Bound, DT, check, failing, handle, status_name, tensor

_keep: list[object] = []
CM: Any = Bound("ConvolutionMode")


def buf(nbytes: int) -> int:
    b = ctypes.create_string_buffer(max(nbytes, 16))
    _keep.append(b)
    return ctypes.addressof(b)


def st(call) -> str:  # type: ignore[no-untyped-def]
    return status_name(failing(call)[0])


def _conv():  # type: ignore[no-untyped-def]
    x, w, y = tensor([2, 4, 8, 8]), tensor([8, 4, 3, 3]), tensor([2, 8, 8, 8])
    c = miopen.create_convolution_descriptor()
    miopen.init_convolution_descriptor(c, CM.miopenConvolution, 1, 1, 1, 1, 1, 1)
    return handle(), x, w, y, c, buf(2 * 4 * 64 * 4), buf(8 * 4 * 9 * 4), buf(2 * 8 * 64 * 4)


@check("miopenOpTensor", "miopenSetTensor", "miopenScaleTensor", "miopenTransformTensor", isolated=True)
def tensor_ops() -> dict[str, str]:
    h = handle()
    a = tensor([2, 3, 4, 5])
    nhwc = tensor([2, 3, 4, 5], [60, 1, 15, 3])
    p, q, r = buf(480), buf(480), buf(480)
    return {
        "op_tensor": st(lambda: miopen.op_tensor(h, miopen.TensorOp.miopenTensorOpAdd, 1.0, a, p, 1.0, a, q, 0.0, a, r)),
        "set_tensor": st(lambda: miopen.set_tensor(h, a, p, 1.0)),
        "scale_tensor": st(lambda: miopen.scale_tensor(h, a, p, 2.0)),
        "transform_tensor": st(lambda: miopen.transform_tensor(h, 1.0, a, p, 0.0, nhwc, q)),
    }


@check("miopenConvolutionForwardCompileSolution", "miopenConvolutionForwardImmediate",
       "miopenConvolutionBackwardDataCompileSolution", "miopenConvolutionBackwardDataImmediate",
       "miopenConvolutionBackwardWeightsCompileSolution", "miopenConvolutionBackwardWeightsImmediate",
       "miopenConvolutionForwardGetSolution", "miopenConvolutionBackwardDataGetSolution",
       "miopenConvolutionBackwardWeightsGetSolution", isolated=True)
def conv_immediate() -> dict[str, str]:
    h, x, w, y, c, xp, wp, yp = _conv()
    f = miopen.convolution_forward_get_solution(h, w, x, c, y, 1)[0].solution_id
    b = miopen.convolution_backward_data_get_solution(h, y, w, c, x, 1)[0].solution_id
    g = miopen.convolution_backward_weights_get_solution(h, y, x, c, w, 1)[0].solution_id
    return {
        "fwd compile": st(lambda: miopen.convolution_forward_compile_solution(h, w, x, c, y, f)),
        "fwd immediate": st(lambda: miopen.convolution_forward_immediate(h, w, wp, x, xp, c, y, yp, None, 0, f)),
        "bwd compile": st(lambda: miopen.convolution_backward_data_compile_solution(h, y, w, c, x, b)),
        "bwd immediate": st(lambda: miopen.convolution_backward_data_immediate(h, y, yp, w, wp, c, x, xp, None, 0, b)),
        "wrw compile": st(lambda: miopen.convolution_backward_weights_compile_solution(h, y, x, c, w, g)),
        "wrw immediate": st(lambda: miopen.convolution_backward_weights_immediate(h, y, yp, x, xp, c, w, wp, None, 0,
                                                                                   g)),
    }


@check("miopenConvolutionForward", "miopenConvolutionBackwardData", "miopenConvolutionBackwardWeights",
       "miopenConvolutionForwardBias", "miopenConvolutionBackwardBias", isolated=True)
def conv_legacy() -> dict[str, str]:
    h, x, w, y, c, xp, wp, yp = _conv()
    bias, bp = tensor([1, 8, 1, 1]), buf(64)
    return {
        "forward": st(lambda: miopen.convolution_forward(h, 1.0, x, xp, w, wp, c, miopen.ConvFwdAlgorithm(1), 0.0, y,
                                                         yp, None, 0)),
        "backward data": st(lambda: miopen.convolution_backward_data(h, 1.0, y, yp, w, wp, c,
                                                                     miopen.ConvBwdDataAlgorithm(1), 0.0, x, xp, None,
                                                                     0)),
        "backward weights": st(lambda: miopen.convolution_backward_weights(h, 1.0, y, yp, x, xp, c,
                                                                           miopen.ConvBwdWeightsAlgorithm(1), 0.0, w,
                                                                           wp, None, 0)),
        "forward bias": st(lambda: miopen.convolution_forward_bias(h, 1.0, bias, bp, 0.0, y, yp)),
        "backward bias": st(lambda: miopen.convolution_backward_bias(h, 1.0, y, yp, 0.0, bias, bp)),
    }


@check("miopenFindConvolutionForwardAlgorithm", isolated=True)
def find_forward() -> str:
    h, x, w, y, c, xp, wp, yp = _conv()
    return st(lambda: miopen.find_convolution_forward_algorithm(h, x, xp, w, wp, c, y, yp, 4, None, 0, False))


@check("miopenFindConvolutionBackwardDataAlgorithm", isolated=True)
def find_backward_data() -> str:
    h, x, w, y, c, xp, wp, yp = _conv()
    return st(lambda: miopen.find_convolution_backward_data_algorithm(h, y, yp, w, wp, c, x, xp, 4, None, 0, False))


@check("miopenFindConvolutionBackwardWeightsAlgorithm", isolated=True)
def find_backward_weights() -> str:
    h, x, w, y, c, xp, wp, yp = _conv()
    return st(lambda: miopen.find_convolution_backward_weights_algorithm(h, y, yp, x, xp, c, w, wp, 4, None, 0,
                                                                         False))


@check("miopenPoolingForward", "miopenPoolingBackward", "miopenLRNForward", "miopenLRNBackward",
       "miopenActivationForward", "miopenActivationBackward", "miopenSoftmaxForward", "miopenSoftmaxBackward",
       "miopenSoftmaxForward_V2", "miopenSoftmaxBackward_V2", isolated=True)
def layers() -> dict[str, str]:
    h = handle()
    x, y = tensor([2, 3, 8, 8]), tensor([2, 3, 4, 4])
    xp, dxp, yp, dyp = buf(1536), buf(1536), buf(384), buf(384)
    p = miopen.create_pooling_descriptor()
    miopen.set_2d_pooling_descriptor(p, miopen.PoolingMode.miopenPoolingMax, 2, 2, 0, 0, 2, 2)
    pws = miopen.pooling_get_work_space_size_v2(p, y)
    pw = buf(pws)
    lrn = miopen.create_lrn_descriptor()
    miopen.set_lrn_descriptor(lrn, miopen.LRNMode.miopenLRNCrossChannel, 5, 1e-4, 0.75, 2.0)
    lw = buf(miopen.lrn_get_work_space_size(x))
    act = miopen.create_activation_descriptor()
    miopen.set_activation_descriptor(act, miopen.ActivationMode.miopenActivationRELU, 0.0, 0.0, 0.0)
    alg, mode = miopen.SoftmaxAlgorithm.MIOPEN_SOFTMAX_LOG, miopen.SoftmaxMode.MIOPEN_SOFTMAX_MODE_CHANNEL
    return {
        "pooling forward": st(lambda: miopen.pooling_forward(h, p, 1.0, x, xp, 0.0, y, yp, True, pw, pws)),
        "pooling backward": st(lambda: miopen.pooling_backward(h, p, 1.0, y, yp, y, dyp, x, xp, 0.0, x, dxp, pw)),
        "lrn forward": st(lambda: miopen.lrn_forward(h, lrn, 1.0, x, xp, 0.0, x, dxp, True, lw)),
        "lrn backward": st(lambda: miopen.lrn_backward(h, lrn, 1.0, x, xp, x, dxp, x, xp, 0.0, x, dxp, lw)),
        "activation forward": st(lambda: miopen.activation_forward(h, act, 1.0, x, xp, 0.0, x, dxp)),
        "activation backward": st(lambda: miopen.activation_backward(h, act, 1.0, x, xp, x, dxp, x, xp, 0.0, x, dxp)),
        "softmax forward": st(lambda: miopen.softmax_forward(h, 1.0, x, xp, 0.0, x, dxp)),
        "softmax backward": st(lambda: miopen.softmax_backward(h, 1.0, x, xp, x, dxp, 0.0, x, xp)),
        "softmax forward v2": st(lambda: miopen.softmax_forward_v2(h, 1.0, x, xp, 0.0, x, dxp, alg, mode)),
        "softmax backward v2": st(lambda: miopen.softmax_backward_v2(h, 1.0, x, xp, x, dxp, 0.0, x, xp, alg, mode)),
    }


@check("miopenBatchNormalizationForwardTraining", "miopenBatchNormalizationForwardInference",
       "miopenBatchNormalizationBackward", isolated=True)
def batchnorm() -> dict[str, str]:
    h = handle()
    x = tensor([2, 3, 8, 8])
    bn = miopen.create_tensor_descriptor()
    spatial = miopen.BatchNormMode.miopenBNSpatial
    miopen.derive_bn_tensor_descriptor(bn, x, spatial)
    xp, yp = buf(1536), buf(1536)
    s = [buf(12) for _ in range(6)]
    return {
        "forward training": st(lambda: miopen.batch_normalization_forward_training(
            h, spatial, 1.0, 0.0, x, xp, x, yp, bn, s[0], s[1], 0.1, s[2], s[3], 1e-5, s[4], s[5])),
        "forward inference": st(lambda: miopen.batch_normalization_forward_inference(
            h, spatial, 1.0, 0.0, x, xp, x, yp, bn, s[0], s[1], s[2], s[3], 1e-5)),
        "backward": st(lambda: miopen.batch_normalization_backward(
            h, spatial, 1.0, 0.0, 1.0, 0.0, x, xp, x, yp, x, xp, bn, s[0], s[1], s[2], 1e-5, s[3], s[4])),
    }


@check("miopenRNNForwardTraining", "miopenRNNForwardInference", "miopenRNNBackwardData", "miopenRNNBackwardWeights",
       "miopenGetRNNLayerParam", "miopenSetRNNLayerParam", "miopenGetRNNLayerBias", "miopenSetRNNLayerBias",
       isolated=True)
def rnn() -> dict[str, str]:
    h = handle()
    r = miopen.create_rnn_descriptor()
    miopen.set_rnn_descriptor(r, 16, 1, miopen.RNNInputMode.miopenRNNlinear,
                              miopen.RNNDirectionMode.miopenRNNunidirection, miopen.RNNMode.miopenLSTM,
                              miopen.RNNBiasMode.miopenRNNwithBias, miopen.RNNAlgo.miopenRNNdefault, DT.miopenFloat)
    xs, ys, hx = [tensor([4, 8])] * 3, [tensor([4, 16])] * 3, tensor([1, 4, 16])
    wsize = miopen.get_rnn_params_size(h, r, xs[0], DT.miopenFloat)
    wd = tensor([wsize // 4])
    ws, rs = miopen.get_rnn_workspace_size(h, r, xs), miopen.get_rnn_training_reserve_size(h, r, xs)
    wp, xp, yp, wsp, rsp, lp = buf(wsize), buf(384), buf(768), buf(ws), buf(rs), buf(1024)
    pd, bd = miopen.create_tensor_descriptor(), miopen.create_tensor_descriptor()
    miopen.get_rnn_layer_param(h, r, 0, xs[0], wd, wp, 0, pd, None)
    miopen.get_rnn_layer_bias(h, r, 0, xs[0], wd, wp, 0, bd, None)
    return {
        "forward training": st(lambda: miopen.rnn_forward_training(h, r, xs, xp, hx, None, hx, None, wd, wp, ys, yp,
                                                                   hx, None, hx, None, wsp, ws, rsp, rs)),
        "forward inference": st(lambda: miopen.rnn_forward_inference(h, r, xs, xp, hx, None, hx, None, wd, wp, ys, yp,
                                                                     hx, None, hx, None, wsp, ws)),
        "backward data": st(lambda: miopen.rnn_backward_data(h, r, ys, yp, ys, yp, hx, None, hx, None, wd, wp, hx, None,
                                                             hx, None, xs, xp, hx, None, hx, None, wsp, ws, rsp, rs)),
        "backward weights": st(lambda: miopen.rnn_backward_weights(h, r, xs, xp, hx, None, ys, yp, wd, wp, wsp, ws,
                                                                   rsp, rs)),
        "get layer param (copy)": st(lambda: miopen.get_rnn_layer_param(h, r, 0, xs[0], wd, wp, 0, pd, lp)),
        "set layer param (copy)": st(lambda: miopen.set_rnn_layer_param(h, r, 0, xs[0], wd, wp, 0, pd, lp)),
        "get layer bias (copy)": st(lambda: miopen.get_rnn_layer_bias(h, r, 0, xs[0], wd, wp, 0, bd, lp)),
        "set layer bias (copy)": st(lambda: miopen.set_rnn_layer_bias(h, r, 0, xs[0], wd, wp, 0, bd, lp)),
    }


@check("miopenCTCLoss", "miopenDropoutForward", "miopenDropoutBackward", "miopenReduceTensor", isolated=True)
def other() -> dict[str, str]:
    h = handle()
    c = miopen.create_ctc_loss_descriptor()
    miopen.set_ctc_loss_descriptor(c, DT.miopenFloat, 0, True)
    probs = tensor([10, 2, 5])
    d = miopen.create_dropout_descriptor()
    miopen.restore_dropout_descriptor(d, h, 0.5, buf(64), 64, 1, False, False, miopen.RNGType.MIOPEN_RNG_PSEUDO_XORWOW)
    x = tensor([2, 3, 4, 5])
    rs = miopen.dropout_get_reserve_space_size(x)
    red = miopen.create_reduce_tensor_descriptor()
    miopen.set_reduce_tensor_descriptor(red, miopen.ReduceTensorOp.MIOPEN_REDUCE_TENSOR_ADD, DT.miopenFloat,
                                        miopen.NanPropagation.MIOPEN_NOT_PROPAGATE_NAN,
                                        miopen.ReduceTensorIndices.MIOPEN_REDUCE_TENSOR_NO_INDICES,
                                        miopen.IndicesType.MIOPEN_32BIT_INDICES)
    cd = tensor([1, 3, 1, 1])
    rws = miopen.get_reduction_workspace_size(h, red, x, cd)
    return {
        "ctc loss": st(lambda: miopen.ctc_loss(h, probs, buf(400), [1, 2, 1, 2], [2, 2], [10, 10], buf(8), probs,
                                               buf(400), miopen.CTCLossAlgo.MIOPEN_CTC_LOSS_ALGO_DETERMINISTIC, c,
                                               buf(4096), 4096)),
        "dropout forward": st(lambda: miopen.dropout_forward(h, d, x, x, buf(480), x, buf(480), buf(rs), rs)),
        "dropout backward": st(lambda: miopen.dropout_backward(h, d, x, x, buf(480), x, buf(480), buf(rs), rs)),
        "reduce": st(lambda: miopen.reduce_tensor(h, red, None, 0, buf(rws), rws, 1.0, x, buf(480), 0.0, cd, buf(12))),
    }
