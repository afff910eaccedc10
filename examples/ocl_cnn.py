"""A small CNN, forward and backward, on MIOpen's OpenCL backend through the typed API, checked against numpy:
conv 3×3 -> batch norm (training) -> ReLU -> max pool 2×2 -> softmax, then the gradients back through each layer.

Run: MIOPEN_LIBRARY=/path/to/libMIOpen.so.1 (an OpenCL build of MIOpen, e.g. ../shared/real-miopen-ocl)
MIOPEN_FIND_MODE=NORMAL python examples/ocl_cnn.py (MIOpen 2.17.0's default find mode skips every OpenCL
solver). Needs pyopencl and an OpenCL device (PoCL's CPU device will do).
"""

from __future__ import annotations

import numpy as np
import pyopencl as cl

import miopen

ctx = cl.create_some_context(interactive=False)
queue = cl.CommandQueue(ctx)
handle = miopen.create_with_stream(queue.int_ptr)
F32 = miopen.DataType.miopenFloat


def upload(a: np.ndarray | int) -> cl.Buffer:
    host = np.zeros(a, np.float32) if isinstance(a, int) else np.ascontiguousarray(a, np.float32)
    return cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=host)


def download(buf: cl.Buffer, shape: tuple[int, ...]) -> np.ndarray:
    out = np.empty(shape, np.float32)
    cl.enqueue_copy(queue, out, buf)
    return out.astype(np.float64)


def tensor(*shape: int) -> miopen.TensorDescriptor:
    d = miopen.create_tensor_descriptor()
    miopen.set_4d_tensor_descriptor(d, F32, *shape)
    return d


def check(got: np.ndarray, want: np.ndarray, what: str) -> None:
    err = np.abs(got - want).max()
    assert err < 1e-4 * max(1.0, np.abs(want).max()), f"{what}: max error {err}"


N, C, H, W, K = 2, 3, 8, 8, 4
rng = np.random.default_rng(1)
x, w = rng.standard_normal((N, C, H, W)), rng.standard_normal((K, C, 3, 3)) * 0.3
gamma, beta = rng.uniform(0.5, 1.5, (1, K, 1, 1)), rng.standard_normal((1, K, 1, 1))
xt, wt, yt, bnt = tensor(N, C, H, W), tensor(K, C, 3, 3), tensor(N, K, H, W), tensor(1, K, 1, 1)
pt, st = tensor(N, K, H // 2, W // 2), tensor(N, K * (H // 2) * (W // 2), 1, 1)
X, Wb, G, B = upload(x), upload(w), upload(gamma), upload(beta)

# ---- forward
conv = miopen.create_convolution_descriptor()
miopen.init_convolution_descriptor(conv, miopen.ConvolutionMode.miopenConvolution, 1, 1, 1, 1, 1, 1)
Y1 = upload(N * K * H * W)
ws = max(miopen.convolution_forward_get_work_space_size(handle, wt, xt, conv, yt), 1)
WS = upload(ws)
algo = miopen.find_convolution_forward_algorithm(handle, xt, X.int_ptr, wt, Wb.int_ptr, conv, yt, Y1.int_ptr, 1,
                                                 WS.int_ptr, ws, False)[0].fwd_algo
miopen.convolution_forward(handle, 1.0, xt, X.int_ptr, wt, Wb.int_ptr, conv, algo, 0.0, yt, Y1.int_ptr, WS.int_ptr,
                           ws)
Y2, mean, inv = upload(N * K * H * W), upload(K), upload(K)
spatial = miopen.BatchNormMode.miopenBNSpatial
miopen.batch_normalization_forward_training(handle, spatial, 1.0, 0.0, yt, Y1.int_ptr, yt, Y2.int_ptr, bnt,
                                            G.int_ptr, B.int_ptr, 1.0, None, None, 1e-5, mean.int_ptr, inv.int_ptr)
relu = miopen.create_activation_descriptor()
miopen.set_activation_descriptor(relu, miopen.ActivationMode.miopenActivationRELU, 0.0, 0.0, 0.0)
Y3 = upload(N * K * H * W)
miopen.activation_forward(handle, relu, 1.0, yt, Y2.int_ptr, 0.0, yt, Y3.int_ptr)
pool = miopen.create_pooling_descriptor()
miopen.set_2d_pooling_descriptor(pool, miopen.PoolingMode.miopenPoolingMax, 2, 2, 0, 0, 2, 2)
pws = miopen.pooling_get_work_space_size_v2(pool, pt)
Y4, PW = upload(N * K * H * W // 4), upload(pws)
miopen.pooling_forward(handle, pool, 1.0, yt, Y3.int_ptr, 0.0, pt, Y4.int_ptr, True, PW.int_ptr, pws)
P = upload(N * K * H * W // 4)  # softmax over the flattened features of each sample
miopen.softmax_forward(handle, 1.0, st, Y4.int_ptr, 0.0, st, P.int_ptr)

xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
y1 = sum(np.einsum("nchw,kc->nkhw", xp[:, :, r:r + H, s:s + W], w[:, :, r, s]) for r in range(3) for s in range(3))
mu, var = y1.mean(axis=(0, 2, 3), keepdims=True), y1.var(axis=(0, 2, 3), keepdims=True)
xhat = (y1 - mu) / np.sqrt(var + 1e-5)
y2 = gamma * xhat + beta
y3 = np.maximum(y2, 0)
y4 = y3.reshape(N, K, H // 2, 2, W // 2, 2).max(axis=(3, 5))
e = np.exp(y4.reshape(N, -1) - y4.reshape(N, -1).max(axis=1, keepdims=True))
p = e / e.sum(axis=1, keepdims=True)
check(download(P, (N, K * H * W // 4)), p, "forward")

# ---- backward of the loss -log p[label]
labels = np.array([3, 17])
dp = np.zeros_like(p)
dp[np.arange(N), labels] = -1 / p[np.arange(N), labels]
DP, D4, D3, D2, D1, DX, DW = (upload(n) for n in (dp, N * K * H * W // 4, N * K * H * W, N * K * H * W,
                                                   N * K * H * W, N * C * H * W, K * C * 9))
DG, DB = upload(K), upload(K)
miopen.softmax_backward(handle, 1.0, st, P.int_ptr, st, DP.int_ptr, 0.0, st, D4.int_ptr)
miopen.pooling_backward(handle, pool, 1.0, pt, Y4.int_ptr, pt, D4.int_ptr, yt, Y3.int_ptr, 0.0, yt, D3.int_ptr,
                        PW.int_ptr)
miopen.activation_backward(handle, relu, 1.0, yt, Y3.int_ptr, yt, D3.int_ptr, yt, Y2.int_ptr, 0.0, yt, D2.int_ptr)
miopen.batch_normalization_backward(handle, spatial, 1.0, 0.0, 1.0, 0.0, yt, Y1.int_ptr, yt, D2.int_ptr, yt,
                                    D1.int_ptr, bnt, G.int_ptr, DG.int_ptr, DB.int_ptr, 1e-5, mean.int_ptr,
                                    inv.int_ptr)
bws = max(miopen.convolution_backward_data_get_work_space_size(handle, yt, wt, conv, xt), 1)
BW = upload(bws)
balgo = miopen.find_convolution_backward_data_algorithm(handle, yt, D1.int_ptr, wt, Wb.int_ptr, conv, xt, DX.int_ptr,
                                                        1, BW.int_ptr, bws, False)[0].bwd_data_algo
miopen.convolution_backward_data(handle, 1.0, yt, D1.int_ptr, wt, Wb.int_ptr, conv, balgo, 0.0, xt, DX.int_ptr,
                                 BW.int_ptr, bws)
gws = max(miopen.convolution_backward_weights_get_work_space_size(handle, yt, xt, conv, wt), 1)
GW = upload(gws)
galgo = miopen.find_convolution_backward_weights_algorithm(handle, yt, D1.int_ptr, xt, X.int_ptr, conv, wt,
                                                           DW.int_ptr, 1, GW.int_ptr, gws, False)[0].bwd_weights_algo
miopen.convolution_backward_weights(handle, 1.0, yt, D1.int_ptr, xt, X.int_ptr, conv, galgo, 0.0, wt, DW.int_ptr,
                                    GW.int_ptr, gws)

d4 = (p * (dp - (dp * p).sum(axis=1, keepdims=True))).reshape(y4.shape)
mask = y3 == np.repeat(np.repeat(y4, 2, axis=2), 2, axis=3)
d3 = mask * np.repeat(np.repeat(d4, 2, axis=2), 2, axis=3)
d2 = d3 * (y2 > 0)
m = N * H * W
dbeta, dgamma = d2.sum(axis=(0, 2, 3), keepdims=True), (d2 * xhat).sum(axis=(0, 2, 3), keepdims=True)
d1 = gamma / np.sqrt(var + 1e-5) / m * (m * d2 - dbeta - xhat * dgamma)
dxp = np.zeros_like(xp)
dw = np.zeros_like(w)
for r in range(3):
    for s in range(3):
        dxp[:, :, r:r + H, s:s + W] += np.einsum("nkhw,kc->nchw", d1, w[:, :, r, s])
        dw[:, :, r, s] = np.einsum("nkhw,nchw->kc", d1, xp[:, :, r:r + H, s:s + W])
check(download(DB, (1, K, 1, 1)), dbeta, "batch norm dbias")
check(download(DG, (1, K, 1, 1)), dgamma, "batch norm dscale")
check(download(DX, x.shape), dxp[:, :, 1:-1, 1:-1], "dx")
check(download(DW, w.shape), dw, "dw")
print("cnn forward and backward: ok")
