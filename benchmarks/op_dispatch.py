"""Runtime op dispatch: what `miopen.ops` adds on a repeated shape over the typed call it ends in.

Both sides run through the stub libMIOpen (generated from the pinned spec, quiet mode) and the stub
libamdhip64, exactly as the runtime tests do. The typed side is the bare `miopen.<function>(...)` call
with everything prepared (pooled handle, cached descriptors, planned algorithm, scalars); the op side
is the user's call (`ops.activation.activation_forward(x, y, "relu")`) on the same shape again, so the
handle, the descriptors and the plan come from the runtime's caches; every op once with `Tensor`s and once with
PyTorch-like tensors (data_ptr(), shape, stride(), dtype); and one LSTM step (`RNN.forward_inference`, sequence
length 1) against the typed calls it makes. Goal: op - typed <= 5 us per MIOpen call the op makes
(benchmarks/dispatch_setup.py: the goals, the LSTM shape, the rounds). Runs are interleaved (op, typed, op,
typed, ...) and the best of each is kept, so machine load hits both sides alike. Needs gcc.
Usage: python benchmarks/op_dispatch.py [--runs N] [--number N]
"""

from __future__ import annotations

import argparse
import ctypes
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
for p in (REPO, REPO / "benchmarks"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from dispatch_setup import (CALLS, GOAL_US, LSTM_BATCH, LSTM_HIDDEN, LSTM_INPUT, LSTM_STEP, STUB_NUMBER,  # noqa: E402
                            STUB_RUNS, print_rows)

__all__ = ["CALLS", "GOAL_US", "build_stubs", "cases", "interleaved", "measure"]


def build_stubs(tmp: Path) -> tuple[ctypes.CDLL, ctypes.CDLL]:
    """The stub libMIOpen of the pinned spec and the stub libamdhip64 (as tests/conftest.py builds them)."""
    from miogen.prove import cxx, stublib
    from miogen.semantics.annotations import load_annotations
    from miogen.semantics.resolve import resolve
    from miogen.spec.spec_io import load
    from miogen.spec.target import load_target

    specs = REPO / "specs" / "miopen"
    version = (specs / "pinned").read_text().strip()
    spec = load(specs / f"{version}.yaml")
    target = load_target()
    sem = resolve(spec, load_annotations(specs / "annotations.yaml"))
    header = tmp / "miopen.h"
    header.write_text(stublib.header_source(spec, f"MIOpen {version} declarations"))
    lib = cxx.compile_cpp(stublib.stub_source(spec, sem, header, "bench stub", target.status_type, target.version_getter),
                          tmp / "libMIOpen_stub.so", target, shared=True)
    hip_path = tmp / "libamdhip64_stub.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-O2", "-o", str(hip_path), str(REPO / "tests/fixtures/stub_hip.c")],
                   check=True)
    mi = ctypes.CDLL(str(lib))
    mi.miogen_stub_set_out.argtypes = [ctypes.c_char_p, ctypes.c_longlong]
    mi.miogen_stub_set_out_f.argtypes = [ctypes.c_char_p, ctypes.c_double]
    return mi, ctypes.CDLL(str(hip_path))


def interleaved(pairs: list[tuple[str, Callable[[], object], Callable[[], object]]], runs: int, number: int
                ) -> list[tuple[str, float, float]]:
    """Best per-call CPU time (s) of each side, runs interleaved across sides and cases.

    CPU time of this process, not wall time: on a loaded machine the time spent waiting for a core is
    not the code's (both sides still share cache and memory-bandwidth contention alike)."""
    clock = time.process_time
    best: dict[str, list[float]] = {name: [float("inf"), float("inf")] for name, _, _ in pairs}
    for k in range(runs):
        for name, op, typed in pairs:
            for side, fn in ((0, op), (1, typed)) if k % 2 == 0 else ((1, typed), (0, op)):  # who goes first alternates
                t0 = clock()
                for _ in range(number):
                    fn()
                dt = (clock() - t0) / number
                best[name][side] = min(best[name][side], dt)
    return [(name, best[name][0], best[name][1]) for name, _, _ in pairs]


class _TorchLike:
    """What the ops read of a PyTorch tensor: data_ptr(), shape, stride(), dtype."""

    def __init__(self, ptr: int, shape: tuple[int, ...]) -> None:
        from miopen.layout import packed_strides

        self._ptr, self.shape, self._stride = ptr, shape, packed_strides(shape)
        self.dtype = "torch.float32"

    def data_ptr(self) -> int:
        return self._ptr

    def stride(self) -> tuple[int, ...]:
        return self._stride


def measure(runs: int = STUB_RUNS, number: int = STUB_NUMBER) -> list[tuple[str, float, float]]:
    """[(case, op seconds per call, typed seconds per call)]; loads the stub libraries into `miopen`."""
    return interleaved(cases(), runs, number)


def cases(stubs: tuple[ctypes.CDLL, ctypes.CDLL] | None = None
          ) -> list[tuple[str, Callable[[], object], Callable[[], object]]]:
    """[(case, op call, typed call)], every cache warm; loads the stub libraries (`build_stubs`; these when given)
    into `miopen`."""
    os.environ.setdefault("MIOPEN_SKIP_VERSION_CHECK", "1")
    import miopen
    from miopen import hip
    from miopen.descriptors import tensor_descriptor
    from miopen.handles import inline_miopen_handle
    from miopen.ops import activation, batchnorm, conv, pooling, softmax
    from miopen.tensor import Tensor

    mi, hl = stubs or build_stubs(Path(tempfile.mkdtemp(prefix="miogen-bench-")))
    miopen.load_library(mi)
    hip.set_hip_library(hl)
    mi.miogen_stub_set_quiet(1)
    f32 = miopen.DataType.miopenFloat
    one, zero = ctypes.c_float(1.0), ctypes.c_float(0.0)
    h = inline_miopen_handle()

    X, Y = (8, 64, 56, 56), (8, 64, 28, 28)
    x, y = Tensor.make(0x10000, X, "float32"), Tensor.make(0x20000, X, "float32")
    xd = tensor_descriptor(f32, X)
    pairs: list[tuple[str, Callable[[], object], Callable[[], object]]] = []

    # activation (relu): the descriptor set once, reused
    adesc = miopen.create_activation_descriptor()
    miopen.set_activation_descriptor(adesc, miopen.ActivationMode.miopenActivationRELU, 0.0, 0.0, 0.0)
    pairs.append(("activation_forward (relu)",
                  lambda: activation.activation_forward(x, y, "relu"),
                  lambda: miopen.activation_forward(h, adesc, one, xd, 0x10000, zero, xd, 0x20000)))
    tx, ty = _TorchLike(0x10000, X), _TorchLike(0x20000, X)
    pairs.append(("activation_forward (relu), torch-like",
                  lambda: activation.activation_forward(tx, ty, "relu"),
                  lambda: miopen.activation_forward(h, adesc, one, xd, 0x10000, zero, xd, 0x20000)))

    # batch norm, spatial inference
    C = X[1]
    p = {k: Tensor.make(0x30000 + i * 0x1000, (C,), "float32") for i, k in enumerate(("w", "b", "m", "v"))}
    pd = tensor_descriptor(f32, (1, C, 1, 1))
    bn_typed = lambda: miopen.batch_normalization_forward_inference(  # noqa: E731
        h, miopen.BatchNormMode.miopenBNSpatial, one, zero, xd, 0x10000, xd, 0x20000, pd, 0x30000, 0x31000, 0x32000,
        0x33000, 1e-5)
    pairs.append(("batch_norm_forward_inference (spatial)",
                  lambda: batchnorm.batch_norm_forward_inference(x, y, p["w"], p["b"], p["m"], p["v"]), bn_typed))
    tp = {k: _TorchLike(v.ptr, v.dims) for k, v in p.items()}
    pairs.append(("batch_norm_forward_inference (spatial), torch-like",
                  lambda: batchnorm.batch_norm_forward_inference(tx, ty, tp["w"], tp["b"], tp["m"], tp["v"]),
                  bn_typed))

    # max pooling 2x2, the state of the first call passed again (its descriptor and index workspace)
    for k, v in enumerate(Y):
        mi.miogen_stub_set_out(f"miopenGetPoolingNdForwardOutputDim/tensorDimArr[{k}]".encode(), v)
    mi.miogen_stub_set_out(b"miopenPoolingGetWorkSpaceSizeV2/workSpaceSize", 4096)
    py = Tensor.make(0x40000, Y, "float32")
    yd = tensor_descriptor(f32, Y)
    state = pooling.pooling_forward(x, py, "max", 2)
    assert state.workspace is not None
    wsp, wsn = state.workspace.ptr, state.workspace.nbytes
    pool_typed = lambda: miopen.pooling_forward(h, state.desc, one, xd, 0x10000, zero, yd, 0x40000, True, wsp,  # noqa: E731
                                                wsn)
    pairs.append(("pooling_forward (max 2x2, state reused)",
                  lambda: pooling.pooling_forward(x, py, "max", 2, state=state), pool_typed))
    tpy = _TorchLike(0x40000, Y)
    tstate = pooling.pooling_forward(tx, tpy, "max", 2)
    pairs.append(("pooling_forward (max 2x2, state reused), torch-like",
                  lambda: pooling.pooling_forward(tx, tpy, "max", 2, state=tstate), pool_typed))

    # softmax (accurate, channel)
    sm_typed = lambda: miopen.softmax_forward_v2(h, one, xd, 0x10000, zero, xd, 0x20000,  # noqa: E731
                                                 miopen.SoftmaxAlgorithm.MIOPEN_SOFTMAX_ACCURATE,
                                                 miopen.SoftmaxMode.MIOPEN_SOFTMAX_MODE_CHANNEL)
    pairs.append(("softmax_forward", lambda: softmax.softmax_forward(x, y), sm_typed))
    pairs.append(("softmax_forward, torch-like", lambda: softmax.softmax_forward(tx, ty), sm_typed))

    # convolution forward 3x3, immediate mode: planned on the first call, then from the plan cache
    fn = "miopenConvolutionForward"
    mi.miogen_stub_set_out(f"{fn}GetSolutionCount/solutionCount".encode(), 1)
    mi.miogen_stub_set_out(f"{fn}GetSolution/solutionCount".encode(), 1)
    mi.miogen_stub_set_out_f(f"{fn}GetSolution/solutions[0].time".encode(), 1.5)
    mi.miogen_stub_set_out(f"{fn}GetSolution/solutions[0].workspace_size".encode(), 0)
    mi.miogen_stub_set_out(f"{fn}GetSolution/solutions[0].solution_id".encode(), 42)
    mi.miogen_stub_set_out(f"{fn}GetSolution/solutions[0].algorithm".encode(), 1)
    W, O = (128, 64, 3, 3), (8, 128, 56, 56)
    w, o = Tensor.make(0x50000, W, "float32"), Tensor.make(0x60000, O, "float32")
    plan = conv.conv_forward(x, w, o, pads=1, strides=1, dilations=1)
    assert plan.solution_id == 42, plan
    wd, od = tensor_descriptor(f32, W), tensor_descriptor(f32, O)
    from miopen.descriptors import convolution_descriptor

    cd = convolution_descriptor((1, 1), (1, 1), (1, 1))
    conv_typed = lambda: miopen.convolution_forward_immediate(h, wd, 0x50000, xd, 0x10000, cd, od, 0x60000,  # noqa: E731
                                                              None, 0, 42)
    pairs.append(("conv_forward (3x3, immediate plan cached)",
                  lambda: conv.conv_forward(x, w, o, pads=1, strides=1, dilations=1), conv_typed))
    tw, to = _TorchLike(0x50000, W), _TorchLike(0x60000, O)
    pairs.append(("conv_forward (3x3, immediate plan cached), torch-like",
                  lambda: conv.conv_forward(tx, tw, to, pads=1, strides=1, dilations=1), conv_typed))
    pairs += _lstm_step(h, mi)
    for _, op, typed in pairs:  # warm every cache
        op(), typed()
    return pairs


def _lstm_step(h: Any, mi: ctypes.CDLL) -> list[tuple[str, Callable[[], object], Callable[[], object]]]:
    """One LSTM step (dispatch_setup's shape), forward inference, with Tensors: the op (`RNN.forward_inference`)
    and the two typed calls it makes (the workspace size, the forward pass)."""
    import miopen
    from miopen.descriptors import tensor_descriptor
    from miopen.ops.rnn import RNN
    from miopen.tensor import Tensor
    from miopen.workspace import scratch

    B, I, H = LSTM_BATCH, LSTM_INPUT, LSTM_HIDDEN
    mi.miogen_stub_set_out(b"miopenGetRNNParamsSize/numBytes", 4 * 4 * H * (I + H + 2))
    mi.miogen_stub_set_out(b"miopenGetRNNWorkspaceSize/numBytes", 8192)
    rnn = RNN(I, H, 1, mode="lstm")
    nw = rnn.params_size() // 4
    x, y = Tensor.make(0x70000, (1, B, I), "float32"), Tensor.make(0x71000, (1, B, H), "float32")
    hx, cx, hy, cy = (Tensor.make(0x72000 + i * 0x1000, (1, B, H), "float32") for i in range(4))
    w = Tensor.make(0x80000, (nw,), "float32")
    op = lambda: rnn.forward_inference(x, hx, cx, w, y, hy, cy)  # noqa: E731
    op()
    xd, yd = rnn.x_descriptors((B,)), rnn.y_descriptors((B,))
    hd = tensor_descriptor(rnn.dtype, rnn.hidden_dims(B))
    wd = w.desc
    wsp = scratch(0, None).get(miopen.get_rnn_workspace_size(h, rnn.desc, xd))  # the scratch the op uses

    def typed() -> None:
        nbytes = miopen.get_rnn_workspace_size(h, rnn.desc, xd)
        miopen.rnn_forward_inference(h, rnn.desc, xd, 0x70000, hd, 0x72000, hd, 0x73000, wd, 0x80000, yd, 0x71000, hd,
                                     0x74000, hd, 0x75000, wsp, nbytes)

    return [(LSTM_STEP, op, typed)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=STUB_RUNS)
    ap.add_argument("--number", type=int, default=STUB_NUMBER)
    args = ap.parse_args()
    print(f"op dispatch over the typed call, CPU time, best of {args.runs} interleaved runs x {args.number} calls "
          f"(goal: op - typed <= {GOAL_US:.0f} us)")
    print_rows(measure(args.runs, args.number))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
