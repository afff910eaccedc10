"""Runtime op dispatch on MIOpen's OpenCL backend: what `miopen.ops` adds over the typed call, on real kernels.

The real OpenCL build of ../shared/real-miopen-ocl (tests/real_miopen.py unpacks it) on the first OpenCL device
(PoCL's CPU device here; $MIOGEN_OCL_PLATFORM picks another), with the cases of tests/real/ocl/bench.py on its
small shapes (pyopencl Arrays, a user queue passed as `stream=`). Both sides enqueue the same kernels; the
figure is the CPU time of the calling thread (PoCL runs the kernels on worker threads of this process, whose
time a process clock would add to either side): each run times the op's loop and the typed call's, one run
op first and the next typed first, the queue drained after each, and the figure is the median over the runs of
op - typed (PoCL's enqueue cost swings from run to run, so the best of each side separately, as the HIP stub's
figures take, is no steadier here).
Goal: op - typed <= 5 us, as on HIP. Prints why when it cannot run (no library, no pyopencl, no device).
With PoCL, POCL_DEVICES=basic runs each kernel in the enqueueing thread, so that thread's CPU time holds all of
both sides' work and nothing of worker threads (PoCL's default pthread device runs kernels on threads that share
the cores, and their interleaving moves the figure by several us from run to run): benchmarks/run_all.py judges
that one and shows the default device's.
With --lstm: one LSTM step (`RNN.forward_inference`) on the MIOpenGEMM build (../shared/real-miopen-ocl-gemm), against
the two typed calls it makes; goal 5 us per MIOpen call (benchmarks/dispatch_setup.py: the goals, the LSTM
shape, the rounds).
Usage: [POCL_DEVICES=basic] python benchmarks/ocl_dispatch.py [--runs N] [--number N] [--json] [--lstm]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
for p in (REPO, REPO / "benchmarks"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from dispatch_setup import (CALLS, GOAL_US, LSTM_BATCH, LSTM_HIDDEN, LSTM_INPUT, LSTM_STEP, OCL_NUMBER,  # noqa: E402
                            OCL_RUNS, print_rows)

__all__ = ["CALLS", "GOAL_US", "lstm_pairs", "lstm_unavailable", "measure", "measure_lstm", "pairs", "unavailable"]
Pairs = list[tuple[str, Callable[[], object], Callable[[], object]]]


def unavailable() -> str | None:
    """Why the figure cannot be measured here, or None."""
    try:
        import pyopencl as cl
    except ImportError as exc:
        return f"no pyopencl ({exc})"
    try:
        if not any(p.get_devices() for p in cl.get_platforms()):
            return "no OpenCL device (install PoCL: pocl-opencl-icd)"
    except Exception as exc:  # noqa: BLE001 - no ICD loader or platform: the reason is the figure's
        return f"no OpenCL platform ({exc})"
    from tests.real_miopen import OPENCL

    path, why = OPENCL.find()
    return None if path is not None else why


def pairs() -> tuple[Any, Pairs]:
    """(the queue, [(case, op call, typed call)]): the cases of tests/real/ocl/bench.py on its small shapes, on the
    real OpenCL build (bound here) and the first OpenCL device."""
    os.environ.setdefault("MIOPEN_SKIP_VERSION_CHECK", "1")
    import miopen
    from tests.real.ocl import bench
    from tests.real.ocl.common import cl, device
    from tests.real_miopen import OPENCL

    path, why = OPENCL.find()
    if path is None:
        raise RuntimeError(why)
    miopen.load_library(str(path))
    pcl = cl()
    q = pcl.CommandQueue(pcl.Context([device()]))
    h = miopen.create_with_stream(q.int_ptr)
    got: Pairs = []
    for name, sides, _ in bench._cases(q, h, False):
        op, typed = sides.get("op"), sides.get("typed")
        if op is not None and typed is not None:
            got.append((name, op, typed))
    return q, got


def measure(runs: int = OCL_RUNS, number: int = OCL_NUMBER) -> tuple[str, list[tuple[str, float, float]]]:
    """(device, [(case, op s per call, typed s per call)]): thread CPU time, the typed call's median over `runs`
    interleaved runs and the op's as that plus the median of the runs' differences."""
    from tests.real.ocl.common import device_label

    q, got = pairs()
    return device_label(), _paired(q, got, runs, number)


def lstm_unavailable() -> str | None:
    """Why the LSTM row cannot be measured here (its RNN kernels need the MIOpenGEMM build), or None."""
    why = unavailable()
    if why is not None:
        return why
    from tests.real_miopen import OPENCL_GEMM

    path, why = OPENCL_GEMM.find()
    return None if path is not None else why


def lstm_pairs() -> tuple[Any, Pairs]:
    """(the queue, [(LSTM_STEP, op call, typed call)]): one LSTM step on MIOpen's OpenCL build with MIOpenGEMM
    (../shared/real-miopen-ocl-gemm, bound here): the op on pyopencl Arrays against the two typed calls it makes
    (the workspace size, the forward pass)."""
    os.environ.setdefault("MIOPEN_SKIP_VERSION_CHECK", "1")
    import numpy as np
    import pyopencl.array as cla

    import miopen
    from miopen.descriptors import tensor_descriptor
    from miopen.handles import inline_miopen_handle
    from miopen.ops.rnn import RNN
    from miopen.workspace import scratch
    from tests.real.ocl.common import cl, device
    from tests.real_miopen import OPENCL_GEMM

    path, why = OPENCL_GEMM.find()
    if path is None:
        raise RuntimeError(why)
    miopen.load_library(str(path))
    pcl = cl()
    q = pcl.CommandQueue(pcl.Context([device()]))
    h = inline_miopen_handle(q)  # the op's own handle: both sides run on the same MIOpen state
    B, I, H = LSTM_BATCH, LSTM_INPUT, LSTM_HIDDEN
    r = np.random.default_rng(3)
    rnn = RNN(I, H, 1, mode="lstm", stream=q)
    nw = rnn.params_size(stream=q) // 4

    def arr(*shape: int) -> Any:
        return cla.to_device(q, r.uniform(-0.5, 0.5, shape).astype(np.float32))

    x, hx, cx, w = arr(1, B, I), arr(1, B, H), arr(1, B, H), arr(nw)
    y, hy, cy = arr(1, B, H), arr(1, B, H), arr(1, B, H)
    op = lambda: rnn.forward_inference(x, hx, cx, w, y, hy, cy, stream=q)  # noqa: E731
    op()
    xd, yd = rnn.x_descriptors((B,)), rnn.y_descriptors((B,))
    hd = tensor_descriptor(rnn.dtype, rnn.hidden_dims(B))
    wd = tensor_descriptor(rnn.dtype, (nw,))
    p = [a.base_data.int_ptr for a in (x, hx, cx, w, y, hy, cy)]
    wsp = scratch(0, q).get(miopen.get_rnn_workspace_size(h, rnn.desc, xd), q.int_ptr)  # the op's scratch

    def typed() -> None:
        nbytes = miopen.get_rnn_workspace_size(h, rnn.desc, xd)
        miopen.rnn_forward_inference(h, rnn.desc, xd, p[0], hd, p[1], hd, p[2], wd, p[3], yd, p[4], hd, p[5], hd, p[6],
                                     wsp, nbytes)

    return q, [(LSTM_STEP, op, typed)]


def measure_lstm(runs: int = OCL_RUNS, number: int = OCL_NUMBER) -> tuple[str, list[tuple[str, float, float]]]:
    """`lstm_pairs` measured as `measure`."""
    from tests.real.ocl.common import device_label

    q, got = lstm_pairs()
    return device_label(), _paired(q, got, runs, number)


def _paired(q: Any, pairs: Pairs, runs: int, number: int) -> list[tuple[str, float, float]]:
    """Thread CPU time per call of each side, interleaved runs (the side that goes first alternates: the first loop
    after a drain was seen to run up to 10 us per call slower on PoCL), the queue drained after each: (case, typed
    median + the median of op - typed, typed median)."""
    clock = time.thread_time
    times: dict[str, list[tuple[float, float]]] = {name: [] for name, _, _ in pairs}
    for _, op, typed in pairs:  # warm: kernel builds, the runtime's caches
        op(), typed()
    q.finish()
    for k in range(runs):
        for name, op, typed in pairs:
            run = {}
            for side, fn in ((0, op), (1, typed)) if k % 2 == 0 else ((1, typed), (0, op)):  # who goes first alternates
                t0 = clock()
                for _ in range(number):
                    fn()
                run[side] = (clock() - t0) / number
                q.finish()
            times[name].append((run[0], run[1]))
    rows = []
    for name, _, _ in pairs:
        typed_s = statistics.median(t for _, t in times[name])
        rows.append((name, typed_s + statistics.median(o - t for o, t in times[name]), typed_s))
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=OCL_RUNS)
    ap.add_argument("--number", type=int, default=OCL_NUMBER)
    ap.add_argument("--json", action="store_true", help="one JSON object: {device, rows} or {skipped: why}")
    ap.add_argument("--lstm", action="store_true", help="the LSTM step on the MIOpenGEMM build (its own process)")
    args = ap.parse_args()
    why = lstm_unavailable() if args.lstm else unavailable()
    if why is not None:
        print(json.dumps({"skipped": why}) if args.json else f"OpenCL dispatch not measured: {why}")
        return 0
    dev, rows = measure_lstm(args.runs, args.number) if args.lstm else measure(args.runs, args.number)
    if args.json:
        print(json.dumps({"device": dev, "rows": rows}))
        return 0
    print(f"OpenCL op dispatch over the typed call on {dev}: thread CPU time, median of {args.runs} interleaved runs x "
          f"{args.number} calls (goal: op - typed <= {GOAL_US:.0f} us)")
    print_rows(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
