"""MIOpen's own kernel compilation on the real Debian releases (tests/real/library/test_real_debian.py, `KERNELS`).

The worker runs inside the Debian root (tests/real/debian_chroot.sh) with the compilers the set-up script puts
there, and the stand-in GPU logs every code object loaded and every kernel launched ($STANDIN_HIP_LOG, see
tests/fixtures/standin_gpu/README.md). Each check calls ops through the typed API (and the runtime's ops), and
returns, per op, MIOpen's status and what reached the device: the code objects loaded ("amdgpu": an AMDGPU ELF
file; "amdgpu-bundled": one inside a clang offload bundle) and the kernels launched, by name. The stand-in does
not execute kernels: outputs are never checked, only that MIOpen built real code and launched it.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable
from typing import Any

import miopen

from .checks_debian import conv2d, tensor4

_KEEP: list[Any] = []


def buf(nbytes: int) -> int:
    b = ctypes.create_string_buffer(max(nbytes, 64) + 4096)
    _KEEP.append(b)
    return ctypes.addressof(b)


def _log() -> list[str]:
    path = os.environ["STANDIN_HIP_LOG"]
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return f.read().splitlines()


def device(call: Callable[[], object]) -> dict[str, Any]:
    """MIOpen's status of `call` (a typed or runtime call) and what it put on the device: the code objects it
    loaded (kind, bytes) and the kernels it launched (names, in order)."""
    before = len(_log())
    try:
        call()
        status = "miopenStatusSuccess"
    except miopen.MIOpenError as exc:
        status = exc.status.name if hasattr(exc.status, "name") else f"status {int(exc.status)}"
    new = _log()[before:]
    loads = [tuple(line.split()[1:3]) for line in new if line.startswith("load ")]
    return {"status": status, "code objects": sorted({kind for kind, _ in loads}),
            "code bytes": sum(int(n) for _, n in loads), "launched": [line.split()[1] for line in new
                                                                    if line.startswith("launch ")]}


def kernel_cache() -> list[str]:
    """The files of MIOpen's kernel cache ($MIOPEN_CUSTOM_CACHE_DIR): where it keeps what it compiled."""
    root = os.environ["MIOPEN_CUSTOM_CACHE_DIR"]
    return sorted(name for _, _, files in os.walk(root) for name in files)


def layers() -> dict[str, Any]:
    """Activation (ReLU), max pooling 2x2 (forward, which MIOpen's index workspace lets backward follow),
    softmax, batch norm inference and training (spatial), on 2x4x8x8 floats."""
    h = miopen.create()
    x = tensor4(2, 4, 8, 8)
    xp, yp = buf(2 * 4 * 64 * 4), buf(2 * 4 * 64 * 4)
    act = miopen.create_activation_descriptor()
    miopen.set_activation_descriptor(act, miopen.ActivationMode(3), 1.0, 0.0, 1.0)
    pool = miopen.create_pooling_descriptor()
    miopen.set_2d_pooling_descriptor(pool, miopen.PoolingMode(0), 2, 2, 0, 0, 2, 2)
    y2 = tensor4(2, 4, 4, 4)
    ws = miopen.pooling_get_work_space_size_v2(pool, y2)
    wsp = buf(ws)
    bn = tensor4(1, 4, 1, 1)
    s, b, m, v, sm, sv = (buf(16) for _ in range(6))
    spatial = miopen.BatchNormMode(1)
    out = {
        "activation": device(lambda: miopen.activation_forward(h, act, 1.0, x, xp, 0.0, x, yp)),
        "pooling": device(lambda: miopen.pooling_forward(h, pool, 1.0, x, xp, 0.0, y2, yp, True, wsp, ws)),
        "softmax": device(lambda: miopen.softmax_forward(h, 1.0, x, xp, 0.0, x, yp)),
        "batchnorm inference": device(lambda: miopen.batch_normalization_forward_inference(
            h, spatial, 1.0, 0.0, x, xp, x, yp, bn, s, b, m, v, 1e-5)),
        "batchnorm training": device(lambda: miopen.batch_normalization_forward_training(
            h, spatial, 1.0, 0.0, x, xp, x, yp, bn, s, b, 0.1, m, v, 1e-5, sm, sv)),
    }
    out["kernel cache"] = kernel_cache()
    return out


def conv_immediate() -> dict[str, Any]:
    """The 3x3 convolution (2x4x8x8, 8 filters, pad 1) by GetSolution + CompileSolution + Immediate, every listed
    solution of each direction with the workspace it asks for."""
    h = miopen.create()
    x, w, y, c = tensor4(2, 4, 8, 8), tensor4(8, 4, 3, 3), tensor4(2, 8, 8, 8), conv2d()
    xp, wp, yp = buf(2 * 4 * 64 * 4), buf(8 * 4 * 9 * 4), buf(2 * 8 * 64 * 4)
    out: dict[str, Any] = {}
    m = miopen
    for direction, listing, compile_, run in (
            ("fwd", lambda: m.convolution_forward_get_solution(h, w, x, c, y, 8),
             lambda s: m.convolution_forward_compile_solution(h, w, x, c, y, s),
             lambda s, ws, n: m.convolution_forward_immediate(h, w, wp, x, xp, c, y, yp, ws, n, s)),
            ("bwd", lambda: m.convolution_backward_data_get_solution(h, y, w, c, x, 8),
             lambda s: m.convolution_backward_data_compile_solution(h, y, w, c, x, s),
             lambda s, ws, n: m.convolution_backward_data_immediate(h, y, yp, w, wp, c, x, xp, ws, n, s)),
            ("wrw", lambda: m.convolution_backward_weights_get_solution(h, y, x, c, w, 8),
             lambda s: m.convolution_backward_weights_compile_solution(h, y, x, c, w, s),
             lambda s, ws, n: m.convolution_backward_weights_immediate(h, y, yp, x, xp, c, w, wp, ws, n, s))):
        for sol in listing():
            sid, n = sol.solution_id, sol.workspace_size
            wsp = buf(n) if n else None
            out[f"{direction} {sid} compile"] = device(lambda: compile_(sid))
            if int(sol.algorithm) == int(m.ConvAlgorithm.miopenConvolutionAlgoGEMM):
                continue  # rocBLAS aborts the process without its Tensile kernels (gemm_forward)
            out[f"{direction} {sid} run"] = device(lambda: run(sid, wsp, n))
    return out


def gemm_forward() -> list[int] | None:
    """The forward GEMM solution (rocBLAS): the set-up script trims rocBLAS's Tensile kernels (2.9 GB), so
    rocBLAS cannot initialise and aborts the process inside the call (run in a fork by the test)."""
    h = miopen.create()
    x, w, y, c = tensor4(2, 4, 8, 8), tensor4(8, 4, 3, 3), tensor4(2, 8, 8, 8), conv2d()
    listed = miopen.convolution_forward_get_solution(h, w, x, c, y, 8)
    gemm = [s for s in listed if int(s.algorithm) == int(miopen.ConvAlgorithm.miopenConvolutionAlgoGEMM)]
    if not gemm:  # MIOPEN_DEBUG_CONV_GEMM=0: the algorithms listed instead
        return [int(s.algorithm) for s in listed]
    gemm = gemm[:1]
    n = gemm[0].workspace_size
    miopen.convolution_forward_immediate(h, w, buf(2 * 4 * 64 * 4), x, buf(8 * 4 * 9 * 4), c, y, buf(2 * 8 * 64 * 4),
                                         buf(n), n, gemm[0].solution_id)
    return None


def conv_find2() -> dict[str, Any]:
    """Find 2.0 on the same forward convolution: the solutions it finds (solver id, workspace) and running the
    first with miopenRunSolution."""
    m = miopen
    h = m.create()
    p = m.create_conv_problem(conv2d(), m.ProblemDirection(0))
    descs = (tensor4(2, 4, 8, 8), tensor4(8, 4, 3, 3), tensor4(2, 8, 8, 8))
    for arg, t in enumerate(descs):
        m.set_problem_tensor_descriptor(p, m.TensorArgumentId(arg + 1), t)
    ptrs = (buf(2 * 4 * 64 * 4), buf(8 * 4 * 9 * 4), buf(2 * 8 * 64 * 4))
    found: list[Any] = []
    out: dict[str, Any] = {"find": device(lambda: found.extend(m.find_solutions(h, p, None, 8)))}
    out["solutions"] = [(m.get_solution_solver_id(s), m.get_solution_workspace_size(s)) for s in found if s]
    if found and found[0] is not None:
        first = found[0]
        n = m.get_solution_workspace_size(first)
        tensors = [(m.TensorArgumentId(i + 1), d, ptr) for i, (d, ptr) in enumerate(zip(descs, ptrs))]
        out["run first"] = device(lambda: m.run_solution(h, first, tensors, buf(n) if n else None, n))
    return out


def runtime_ops() -> dict[str, Any]:
    """The runtime's ops (miopen.ops) on the same shapes: activation, pooling, softmax, and a convolution planned
    by ConvPlanner in each mode, compiled ahead: the plan it picked and what ran."""
    from miopen import algo, hip
    from miopen.ops.activation import activation_forward
    from miopen.ops.conv import conv_forward
    from miopen.ops.pooling import pooling_forward
    from miopen.ops.softmax import softmax_forward
    from miopen.tensor import Tensor

    h = miopen.create()

    def t(*shape: int) -> Any:
        n = 4
        for d in shape:
            n *= d
        return Tensor.make(hip.malloc(n), shape, "float32")

    x, y, p = t(2, 4, 8, 8), t(2, 4, 8, 8), t(2, 4, 4, 4)
    out: dict[str, Any] = {
        "activation": device(lambda: activation_forward(x, y, "relu", handle=h)),
        "pooling": device(lambda: pooling_forward(x, p, "max", 2, 0, 2, handle=h)),
        "softmax": device(lambda: softmax_forward(x, y, handle=h)),
    }
    w, cy = t(8, 4, 3, 3), t(2, 8, 8, 8)
    for mode in ("immediate", "find", "find2"):
        algo.algo_cache().clear()
        planner = algo.ConvPlanner(mode, compile_ahead=True)  # type: ignore[arg-type]
        plans: list[Any] = []
        out[f"conv {mode}"] = device(lambda: plans.append(conv_forward(x, w, cy, pads=1, strides=1, dilations=1,
                                                                        planner=planner, handle=h)))
        out[f"conv {mode} plan"] = [(pl.solution_id, pl.algo, pl.workspace_bytes,
                                     pl.fallback) for pl in plans]
    return out
