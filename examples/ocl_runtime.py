"""A small CNN forward and backward, and the tensor ops, through the runtime (`miopen.ops`) on MIOpen's OpenCL
backend, checked against numpy: pyopencl arrays in, the runtime making handles, workspaces and temporaries.

Run: MIOPEN_LIBRARY=/path/to/libMIOpen.so.1 (an OpenCL build of MIOpen, e.g. ../shared/real-miopen-ocl) python
examples/ocl_runtime.py. Needs pyopencl and an OpenCL device (PoCL's CPU device will do).
"""

from __future__ import annotations

import numpy as np
import pyopencl.array as cla

import miopen
from miopen.ops import activation, batchnorm, conv, pooling, softmax, tensor_ops

queue = miopen.backend.opencl().default_queue()
rng = np.random.default_rng(0)


def dev(a: np.ndarray) -> cla.Array:
    return cla.to_device(queue, np.ascontiguousarray(a, np.float32))


def check(got: cla.Array, want: np.ndarray, what: str, tol: float = 1e-4) -> None:
    err = float(np.max(np.abs(got.get() - want)))
    assert err <= tol * max(1.0, float(np.max(np.abs(want)))), f"{what}: max error {err}"
    print(f"{what}: max error {err:.2g}")


# ---------------------------------------------------------------- tensor ops
a, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((1, 3, 1))
c = dev(np.zeros((2, 3, 4)))
tensor_ops.op_tensor("add", dev(a), dev(b), c, 2.0, -1.0, 0.0, stream=queue)
check(c, 2 * a - b, "op_tensor add")
tensor_ops.scale_tensor(c, 0.5, stream=queue)
check(c, a - b / 2, "scale_tensor")
tensor_ops.set_tensor(c, 3.0, stream=queue)
check(c, np.full((2, 3, 4), 3.0), "set_tensor")

# ---------------------------------------------------------------- conv -> batch norm -> relu -> max pool -> softmax
N, C, H, W, K = 2, 3, 8, 8, 4
x = rng.standard_normal((N, C, H, W))
w = rng.standard_normal((K, C, 3, 3)) * 0.3
geo = {"pads": 1, "strides": 1, "dilations": 1}
y = dev(np.zeros((N, K, H, W)))
conv.conv_forward(dev(x), dev(w), y, stream=queue, **geo)
xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
ref = sum(np.einsum("nchw,kc->nkhw", xp[:, :, i:i + H, j:j + W], w[:, :, i, j]) for i in range(3) for j in range(3))
check(y, ref, "conv forward")
gamma, beta = np.ones((1, K, 1, 1)), np.zeros((1, K, 1, 1))
z = dev(np.zeros((N, K, H, W)))
mean, inv = dev(np.zeros((1, K, 1, 1))), dev(np.zeros((1, K, 1, 1)))
batchnorm.batch_norm_forward_training(y, z, dev(gamma), dev(beta), "spatial", save_mean=mean, save_inv_var=inv,
                                      stream=queue)
zhat = (ref - ref.mean(axis=(0, 2, 3), keepdims=True)) / np.sqrt(ref.var(axis=(0, 2, 3), keepdims=True) + 1e-5)
check(z, zhat, "batch norm training")
activation.activation_forward(z, z, "relu", stream=queue)
r = np.maximum(zhat, 0)
check(z, r, "relu")
p = dev(np.zeros((N, K, H // 2, W // 2)))
pool_state = pooling.pooling_forward(z, p, "max", 2, 0, 2, stream=queue)
pooled = r.reshape(N, K, H // 2, 2, W // 2, 2).max(axis=(3, 5))
check(p, pooled, "max pooling")
s = dev(np.zeros((N, K, H // 2, W // 2)))
softmax.softmax_forward(p, s, stream=queue)
e = np.exp(pooled - pooled.max(axis=1, keepdims=True))
sm = e / e.sum(axis=1, keepdims=True)
check(s, sm, "softmax")

# ---------------------------------------------------------------- backward
ds = rng.standard_normal(sm.shape)
dp = dev(np.zeros(sm.shape))
softmax.softmax_backward(s, dev(ds), dp, stream=queue)
dpooled = sm * (ds - (ds * sm).sum(axis=1, keepdims=True))
check(dp, dpooled, "softmax backward")
dz = dev(np.zeros((N, K, H, W)))
pooling.pooling_backward(p, dp, z, dz, pool_state, stream=queue)
# each window's gradient goes to its first maximum (MIOpen's index), ties (relu's zeros) included
win = r.reshape(N, K, H // 2, 2, W // 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(N, K, H // 2, W // 2, 4)
first = np.eye(4)[win.argmax(axis=-1)] * dpooled[..., None]
dr = first.reshape(N, K, H // 2, W // 2, 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(N, K, H, W)
check(dz, dr, "max pooling backward")
dbn = dev(np.zeros((N, K, H, W)))
activation.activation_backward(z, dz, z, dbn, "relu", stream=queue)
dzhat = dr * (zhat > 0)
check(dbn, dzhat, "relu backward")
dyv, dg, db = dev(np.zeros((N, K, H, W))), dev(np.zeros((1, K, 1, 1))), dev(np.zeros((1, K, 1, 1)))
batchnorm.batch_norm_backward(y, dbn, dyv, dev(gamma), dg, db, "spatial", saved_mean=mean, saved_inv_var=inv,
                              stream=queue)
m = N * H * W
sd = 1 / np.sqrt(ref.var(axis=(0, 2, 3), keepdims=True) + 1e-5)
dyref = sd / m * (m * dzhat - dzhat.sum(axis=(0, 2, 3), keepdims=True)
                  - zhat * (dzhat * zhat).sum(axis=(0, 2, 3), keepdims=True))
check(dyv, dyref, "batch norm backward")
dw = dev(np.zeros(w.shape))
conv.conv_backward_weights(dyv, dev(x), dw, stream=queue, **geo)
dwref = np.stack([np.einsum("nkhw,nchw->kc", dyref, xp[:, :, i:i + H, j:j + W]) for i in range(3) for j in range(3)],
                 axis=-1).reshape(w.shape)
check(dw, dwref, "conv backward weights")
dx = dev(np.zeros(x.shape))
conv.conv_backward_data(dyv, dev(w), dx, stream=queue, **geo)
dxp = np.zeros(xp.shape)
for i in range(3):
    for j in range(3):
        dxp[:, :, i:i + H, j:j + W] += np.einsum("nkhw,kc->nchw", dyref, w[:, :, i, j])
check(dx, dxp[:, :, 1:-1, 1:-1], "conv backward data")
print("ocl_runtime: ok")
