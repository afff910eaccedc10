"""End-to-end proof of the generator on a real GPU library: cuDNN bindings rendered by miogen from
cuDNN's own headers (specs/cudnn/), driven on an NVIDIA GPU and checked against PyTorch.

Usage (on a machine with a CUDA GPU, PyTorch and the nvidia-cudnn wheel):
    python examples/cudnn_e2e.py PACKAGE_DIR
where PACKAGE_DIR holds the rendered package `cudnn_bindings` (see docs/cudnn.md).
Prints one line per check and exits 1 if any fails.
"""

from __future__ import annotations

import importlib
import sys
import time
from pathlib import Path
from typing import Any


def main() -> int:
    import torch

    sys.path.insert(0, sys.argv[1])
    m: Any = importlib.import_module("cudnn_bindings")
    m.load_library(_find_cudnn())
    failures = 0

    def check(name: str, ok: bool, detail: str = "") -> None:
        nonlocal failures
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {name}{': ' + detail if detail else ''}", flush=True)

    version = m.get_version()
    check("cudnnGetVersion", version // 10000 == 9, f"{version} (torch says {torch.backends.cudnn.version()})")
    check("version matches torch's cuDNN", version == torch.backends.cudnn.version())

    dev = torch.device("cuda")
    handle = m.create()
    m.set_stream(handle, torch.cuda.current_stream())  # an object with .cuda_stream
    check("cudnnCreate/cudnnSetStream", handle.address != 0, repr(handle))

    f32 = m.DataType.CUDNN_DATA_FLOAT
    dims, strides = [2, 3, 4, 5], [60, 20, 5, 1]
    xd = m.create_tensor_descriptor()
    m.set_tensor_nd_descriptor(xd, f32, dims, strides)
    back = m.get_tensor_nd_descriptor(xd, 8)
    check("tensor descriptor round trip (arrays out, count cut)",
          (back.data_type, back.dim_a, back.stride_a) == (f32, dims, strides), repr(back))

    x = torch.randn(*dims, device=dev)
    y = torch.empty_like(x)
    act = m.create_activation_descriptor()
    m.set_activation_descriptor(act, m.ActivationMode.CUDNN_ACTIVATION_RELU, m.NanPropagation.CUDNN_NOT_PROPAGATE_NAN,
                                0.0)
    m.activation_forward(handle, act, 1.0, xd, x, 0.0, xd, y)  # torch tensors as device buffers (data_ptr)
    torch.cuda.synchronize()
    check("cudnnActivationForward (ReLU) == torch.relu", torch.equal(y, torch.relu(x)))

    m.softmax_forward(handle, m.SoftmaxAlgorithm.CUDNN_SOFTMAX_ACCURATE, m.SoftmaxMode.CUDNN_SOFTMAX_MODE_CHANNEL,
                      1.0, xd, x, 0.0, xd, y)
    torch.cuda.synchronize()
    check("cudnnSoftmaxForward (channel) == torch.softmax(dim=1)",
          torch.allclose(y, torch.softmax(x, dim=1), atol=1e-6), f"max err {(y - torch.softmax(x, 1)).abs().max():.2e}")

    b = torch.randn_like(x)
    c = torch.zeros_like(x)
    op = m.create_op_tensor_descriptor()
    m.set_op_tensor_descriptor(op, m.OpTensorOp.CUDNN_OP_TENSOR_ADD, f32, m.NanPropagation.CUDNN_NOT_PROPAGATE_NAN)
    m.op_tensor(handle, op, 2.0, xd, x, 3.0, xd, b, 0.0, xd, c)
    torch.cuda.synchronize()
    check("cudnnOpTensor 2a + 3b", torch.allclose(c, 2 * x + 3 * b, atol=1e-5))

    try:
        m.set_tensor_nd_descriptor(xd, f32, [2, -3, 4, 5], strides)
        check("bad dims raise the mapped status exception", False, "no exception")
    except m.CuDNNBadParamError as exc:
        check("bad dims raise CuDNNBadParamError (a ValueError)", isinstance(exc, ValueError), str(exc)[:120])

    try:
        m.activation_forward(handle, act, 1.0, xd, "not a buffer", 0.0, xd, y)
        check("bad buffer raises before the call", False, "no exception")
    except TypeError as exc:
        check("bad buffer raises TypeError before the call", True, str(exc)[:100])

    # typed-call overhead on the real library (a cheap host-side call), same out-param allocation
    raw = m.raw
    import ctypes

    def raw_set() -> None:
        st = raw.cudnnSetTensor4dDescriptor(xd.address, 0, 0, 2, 3, 4, 5)
        if st:
            raise RuntimeError(st)

    def typed_set() -> None:
        m.set_tensor_4d_descriptor(xd, m.TensorFormat.CUDNN_TENSOR_NCHW, f32, 2, 3, 4, 5)

    def raw_get() -> tuple[int, ...]:
        outs = [ctypes.c_int() for _ in range(8)]
        dt = ctypes.c_uint()
        st = raw.cudnnGetTensor4dDescriptor(xd.address, ctypes.byref(dt), *(ctypes.byref(o) for o in outs))
        if st:
            raise RuntimeError(st)
        return tuple(o.value for o in outs)

    def typed_get() -> object:
        return m.get_tensor_4d_descriptor(xd)

    for name, r, t in (("cudnnSetTensor4dDescriptor", raw_set, typed_set), ("cudnnGetTensor4dDescriptor (9 outputs)",
                                                                             raw_get, typed_get)):
        r(), t()
        best_r = min(_time(r) for _ in range(5))
        best_t = min(_time(t) for _ in range(5))
        print(f"time {name}: raw {best_r * 1e6:.2f} us, typed {best_t * 1e6:.2f} us, ratio {best_t / best_r:.2f}")

    for obj in (op, act, xd, handle):
        obj.close()
        obj.close()  # destroyed exactly once
    check("handles closed", all(o.closed for o in (op, act, xd, handle)))
    print(f"{failures} failure(s)")
    return 1 if failures else 0


def _find_cudnn() -> str:
    """libcudnn.so.9 of the nvidia-cudnn wheel beside PyTorch (cu12 or cu13 layout)."""
    import site

    roots = [Path(p) for p in site.getsitepackages()]
    for root in roots:
        for lib in sorted(root.glob("nvidia/**/libcudnn.so.9")):
            print(f"library: {lib}")
            return str(lib)
    raise SystemExit(f"libcudnn.so.9 not found under {', '.join(map(str, roots))}")


def _time(fn: Any, n: int = 20000) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n


if __name__ == "__main__":
    raise SystemExit(main())
