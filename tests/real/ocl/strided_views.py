"""One cell of the strided-view table (docs/strided-views.md): an op of the runtime on one layout of x and y, on
MIOpen's OpenCL build on PoCL, against numpy. Run as `python -m tests.real.ocl.strided_views OP LAYOUT` in a
process of its own (MIOpen's kernel cache is keyed without strides: a case must not see another's kernels);
prints right, wrong (a result differs from numpy, or a write landed outside y's view), refused (the runtime
refused the view: ShapeError/ValueError) or error (MIOpen returned an error status)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

DIMS = (2, 3, 4, 6)
OPS = ("activation", "softmax", "max pooling", "avg pooling", "op_tensor", "op_tensor (broadcast B)",
       "BN inference", "LRN", "set_tensor", "scale_tensor", "transform_tensor")
LAYOUTS = ("packed", "channels-last", "stepped", "broadcast x", "x packed, y channels-last")


def packed(d: tuple[int, ...]) -> tuple[int, ...]:
    out, n = [], 1
    for v in reversed(d):
        out.append(n)
        n *= v
    return tuple(reversed(out))


def channels_last(d: tuple[int, ...]) -> tuple[int, ...]:
    n, c, h, w = d
    return (h * w * c, 1, w * c, c)


def stepped(d: tuple[int, ...]) -> tuple[int, ...]:
    """Every other element of a buffer twice as wide in w, with padded rows and planes (a sliced view)."""
    n, c, h, w = d
    return (c * (h + 1) * (2 * w + 1), (h + 1) * (2 * w + 1), 2 * w + 1, 2)


def broadcast(d: tuple[int, ...]) -> tuple[int, ...]:
    return (0,) + packed(d)[1:]


def strides(layout: str, d: tuple[int, ...], which: str) -> tuple[int, ...]:
    """The strides of `which` ("x" or "y") of dims `d` under `layout`."""
    if layout == "packed":
        return packed(d)
    if layout == "channels-last":
        return channels_last(d)
    if layout == "stepped":
        return stepped(d)
    if layout == "broadcast x":
        return broadcast(d) if which == "x" else packed(d)
    return packed(d) if which == "x" else channels_last(d)


def span(d: tuple[int, ...], s: tuple[int, ...]) -> int:
    return 1 + sum((a - 1) * b for a, b in zip(d, s))


def run(op: str, layout: str) -> str:
    import numpy as np
    import pyopencl as cl

    import miopen
    from miopen.errors import MIOpenError
    from miopen.ops import activation, batchnorm, lrn, pooling, softmax, tensor_ops
    from miopen.tensor import Tensor

    q = miopen.backend.opencl().default_queue()
    rng = np.random.default_rng(7)
    keep: list[Any] = []

    def buffer(d: tuple[int, ...], s: tuple[int, ...], fill: float | None = None) -> tuple[Tensor, Any, Any]:
        n = span(d, s)
        flat = (rng.standard_normal(n) if fill is None else np.full(n, fill)).astype(np.float32)
        buf = cl.Buffer(q.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=flat)
        keep.append(buf)
        return Tensor.make(buf, d, "float32", s), buf, flat

    def view(flat: Any, d: tuple[int, ...], s: tuple[int, ...]) -> Any:
        return np.lib.stride_tricks.as_strided(flat, d, tuple(4 * v for v in s))

    yd = (2, 3, 2, 3) if "pooling" in op else DIMS
    xs, ys = strides(layout, DIMS, "x"), strides(layout, yd, "y")
    x, _, xf = buffer(DIMS, xs)
    y, yb, yf = buffer(yd, ys, fill=0.5)
    X, Y0 = view(xf, DIMS, xs).astype(np.float64), view(yf, yd, ys).astype(np.float64)
    calls: dict[str, Callable[[], Any]] = {}
    want: Any = None
    if op == "activation":
        calls[op], want = (lambda: activation.activation_forward(x, y, "relu")), np.maximum(X, 0)
    elif op == "softmax":
        e = np.exp(X - X.max(axis=1, keepdims=True))
        calls[op], want = (lambda: softmax.softmax_forward(x, y)), e / e.sum(axis=1, keepdims=True)
    elif op in ("max pooling", "avg pooling"):
        mode = "max" if op == "max pooling" else "average_inclusive"
        blocks = X.reshape(2, 3, 2, 2, 3, 2)
        want = blocks.max(axis=(3, 5)) if mode == "max" else blocks.mean(axis=(3, 5))
        calls[op] = lambda: pooling.pooling_forward(x, y, mode, (2, 2), 0, (2, 2), do_backward=False)
    elif op == "op_tensor":
        b, _, bf = buffer(DIMS, xs)
        calls[op], want = (lambda: tensor_ops.op_tensor("add", x, b, y)), X + view(bf, DIMS, xs)
    elif op == "op_tensor (broadcast B)":
        b, _, bf = buffer((1, 3, 1, 1), (3, 1, 1, 1))
        calls[op], want = (lambda: tensor_ops.op_tensor("add", x, b, y)), X + bf.reshape(1, 3, 1, 1)
    elif op == "BN inference":
        p = [buffer((1, 3, 1, 1), (3, 1, 1, 1)) for _ in range(4)]
        w, bias, mean = (t[2].reshape(1, 3, 1, 1).astype(np.float64) for t in p[:3])
        var = np.abs(p[3][2]).reshape(1, 3, 1, 1).astype(np.float64)
        cl.enqueue_copy(q, p[3][1], np.abs(p[3][2]))
        want = (X - mean) / np.sqrt(var + 1e-5) * w + bias
        calls[op] = lambda: batchnorm.batch_norm_forward_inference(x, y, p[0][0], p[1][0], p[2][0], p[3][0])
    elif op == "LRN":
        sq = np.pad(X ** 2, ((0, 0), (1, 1), (0, 0), (0, 0)))
        total = sq[:, :-2] + sq[:, 1:-1] + sq[:, 2:]
        want = X * (1.0 + 1e-1 / 3 * total) ** -0.75
        calls[op] = lambda: lrn.lrn_forward(x, y, "cross_channel", 3, 1e-1, 0.75, 1.0, do_backward=False)
    elif op == "set_tensor":
        calls[op], want = (lambda: tensor_ops.set_tensor(y, 3.0)), np.full(yd, 3.0)
    elif op == "scale_tensor":
        calls[op], want = (lambda: tensor_ops.scale_tensor(y, 2.0)), 2 * Y0
    elif op == "transform_tensor":
        calls[op], want = (lambda: tensor_ops.transform_tensor(x, y)), X
    try:
        calls[op]()
    except (ValueError, TypeError) as exc:  # ShapeError is a ValueError
        return "refused" if not isinstance(exc, MIOpenError) else "error"
    except MIOpenError:
        return "error"
    out = np.empty_like(yf)
    cl.enqueue_copy(q, out, yb)
    q.finish()
    inside = np.zeros(len(yf), bool)
    idx = np.lib.stride_tricks.as_strided(np.arange(len(yf)), yd, tuple(8 * v for v in ys)).ravel()
    inside[idx] = True
    if not np.array_equal(out[~inside], yf[~inside]):
        return "wrong"
    got = view(out, yd, ys)
    return "right" if np.allclose(got, want, rtol=1e-4, atol=1e-5) else "wrong"


def markdown(results: dict[tuple[str, str], str]) -> str:
    """The table: one row per op, one column per layout."""
    lines = ["| op | " + " | ".join(LAYOUTS) + " |", "|---|" + "---|" * len(LAYOUTS)]
    for op in OPS:
        lines.append(f"| {op} | " + " | ".join(results[(op, lay)] for lay in LAYOUTS) + " |")
    return "\n".join(lines) + "\n"


def run_all(jobs: int = 2) -> dict[tuple[str, str], str]:
    """Every cell, each in a child forked from this process once it has imported numpy, pyopencl and miopen and
    loaded the library (no OpenCL call yet: a child starts with no context, queue or kernel of another case);
    `jobs` children at a time. A child that dies or prints nothing is "died"."""
    import os

    import numpy  # noqa: F401 - imported once, before the forks
    import pyopencl  # noqa: F401

    import miopen
    from miopen.ops import activation, batchnorm, lrn, pooling, softmax, tensor_ops  # noqa: F401

    miopen.load_library()
    cases = [(op, lay) for op in OPS for lay in LAYOUTS]
    running: dict[int, tuple[tuple[str, str], int]] = {}
    results: dict[tuple[str, str], str] = {}

    def reap() -> None:
        pid, _ = os.wait()
        case, fd = running.pop(pid)
        with os.fdopen(fd, "rb") as f:
            results[case] = f.read().decode().strip() or "died"

    for case in cases:
        while len(running) >= jobs:
            reap()
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                os.close(read)
                os.write(write, run(*case).encode())
            except BaseException:  # noqa: BLE001 - reported as "died"
                code = 1
            finally:
                os._exit(code)
        os.close(write)
        running[pid] = (case, read)
    while running:
        reap()
    return results


if __name__ == "__main__":
    if sys.argv[1:] == ["--all"]:
        import json

        print(json.dumps([[op, lay, r] for (op, lay), r in run_all().items()]))
    else:
        print(run(sys.argv[1], sys.argv[2]))
