"""MIOpen's tensor ops on its OpenCL backend, through the typed API, checked against numpy.

Run: MIOPEN_LIBRARY=/path/to/libMIOpen.so.1 (an OpenCL build of MIOpen, e.g. ../shared/real-miopen-ocl) python
examples/ocl_tensor_ops.py. Needs pyopencl and an OpenCL device (PoCL's CPU device will do).
"""

from __future__ import annotations

import numpy as np
import pyopencl as cl

import miopen

ctx = cl.create_some_context(interactive=False)
queue = cl.CommandQueue(ctx)
handle = miopen.create_with_stream(queue.int_ptr)  # MIOpen enqueues its kernels on this queue
MF = cl.mem_flags


def upload(a: np.ndarray) -> cl.Buffer:
    return cl.Buffer(ctx, MF.READ_WRITE | MF.COPY_HOST_PTR, hostbuf=np.ascontiguousarray(a, np.float32))


def download(buf: cl.Buffer, shape: tuple[int, ...]) -> np.ndarray:
    out = np.empty(shape, np.float32)
    cl.enqueue_copy(queue, out, buf)
    return out


def tensor(shape: tuple[int, ...]) -> miopen.TensorDescriptor:
    d = miopen.create_tensor_descriptor()
    strides = [int(np.prod(shape[i + 1:])) for i in range(len(shape))]
    miopen.set_tensor_descriptor(d, miopen.DataType.miopenFloat, list(shape), strides)
    return d


rng = np.random.default_rng(0)
shape, bshape = (2, 3, 4, 5), (1, 3, 1, 1)
a, b, c = rng.standard_normal(shape), rng.standard_normal(bshape), rng.standard_normal(shape)
A, B, C = upload(a), upload(b), upload(c)

# C = alpha1*A + alpha2*B (B broadcast over n, h, w) + beta*C
miopen.op_tensor(handle, miopen.TensorOp.miopenTensorOpAdd, 2.0, tensor(shape), A.int_ptr, -1.0, tensor(bshape),
                 B.int_ptr, 0.5, tensor(shape), C.int_ptr)
c = 2.0 * a - b + 0.5 * c
assert np.allclose(download(C, shape), c, atol=1e-5)

# ScaleTensor then SetTensor
miopen.scale_tensor(handle, tensor(shape), C.int_ptr, 3.0)
assert np.allclose(download(C, shape), 3.0 * c, atol=1e-5)
miopen.set_tensor(handle, tensor(bshape), B.int_ptr, 0.25)
assert np.allclose(download(B, bshape), 0.25)

# TransformTensor into a tensor with padded rows: y = alpha*x + beta*y
ystrides = [90, 30, 6, 1]
Y = upload(np.zeros(180))
yd = miopen.create_tensor_descriptor()
miopen.set_tensor_descriptor(yd, miopen.DataType.miopenFloat, list(shape), ystrides)
miopen.transform_tensor(handle, 1.5, tensor(shape), A.int_ptr, 0.0, yd, Y.int_ptr)
flat = download(Y, (180,))
y = np.lib.stride_tricks.as_strided(flat, shape=shape, strides=[s * 4 for s in ystrides])
assert np.allclose(y, 1.5 * a, atol=1e-5)
print("tensor ops: ok")
