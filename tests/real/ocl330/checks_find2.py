"""Find 2.0 on MIOpen 3.3.0's OpenCL build: each problem kind MIOpen 3.3.0 defines (convolution in its three
directions, softmax, activation, bias, batch norm, and fused problems) built through the typed API, found, and
every solution run against a float64 numpy reference; where MIOpen has no solver, its answer is returned."""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import miopen

from ..ocl.checks_conv import _conv_ref, _grads
from ..ocl.checks_layers import _softmax_bwd_ref, _softmax_ref
from ..ocl.common import Dev, close, desc, dev, handle, queue, rng, zeros

T = miopen.TensorArgumentId
D = miopen.ProblemDirection


def _problem_status(make: Callable[[], miopen.Problem]) -> tuple[miopen.Problem | None, str]:
    try:
        return make(), "ok"
    except miopen.MIOpenError as exc:
        return None, f"status {int(exc.status)}"


def _find(problem: miopen.Problem, n: int = 8) -> list[miopen.Solution] | str:
    """The solutions FindSolutions returns, or "status N" when it fails."""
    try:
        return [s for s in miopen.find_solutions(handle(), problem, None, n) if s is not None]
    except miopen.MIOpenError as exc:
        return f"status {int(exc.status)}"


def _run(sol: miopen.Solution, args: Sequence[tuple[int, int]]) -> None:
    wsz = miopen.get_solution_workspace_size(sol)
    ws = zeros(max(wsz, 1), np.uint8)
    miopen.run_solution(handle(), sol, [miopen.TensorArgument(i, None, p) for i, p in args],
                        ws.ptr if wsz else None, wsz)


def _each(sols: list[miopen.Solution], outs: Sequence[Dev], run: Callable[[miopen.Solution], None],
          want: Sequence[np.ndarray], what: str, tol: float = 1e-5) -> dict[str, float]:
    """Run every solution (the outputs zeroed first); {solver id: max abs error}, each asserted within `tol`."""
    got: dict[str, float] = {}
    for sol in sols:
        for o in outs:
            o.buf = dev(np.zeros_like(o.host)).buf
            o.ptr = o.buf.int_ptr
        run(sol)
        err = max(close(o.read().reshape(w.shape), w, f"{what} solver {miopen.get_solution_solver_id(sol)}", tol)
                  for o, w in zip(outs, want, strict=True))
        got[str(miopen.get_solution_solver_id(sol))] = err
    return got


def conv() -> dict[str, Any]:
    """Convolution problems forward, backward data, backward weights: {direction: {solver: error}} (or MIOpen's
    answer), each solution's result asserted against numpy within 1e-5 of its scale."""
    r = rng(331)
    out: dict[str, Any] = {}
    for xdims, wdims, p, s in (([2, 3, 7, 6], [4, 3, 3, 3], 1, 1), ([1, 4, 8, 8], [2, 4, 1, 1], 0, 1)):
        cd = miopen.create_convolution_descriptor()
        miopen.init_convolution_descriptor(cd, miopen.ConvolutionMode.miopenConvolution, p, p, s, s, 1, 1)
        xd_, wd_ = desc(xdims), desc(wdims)
        o = miopen.get_convolution_forward_output_dim(cd, xd_, wd_)
        ydims = [o.n, o.c, o.h, o.w]
        yd_ = desc(ydims)
        x, w, dy = (r.standard_normal(dm).astype(np.float32) for dm in (xdims, wdims, ydims))
        want_y = _conv_ref(x.astype(np.float64), w.astype(np.float64), p, s, 1)
        want_dx, want_dw = _grads(x.astype(np.float64), w.astype(np.float64), dy.astype(np.float64), p, s, 1)
        tag = f"{xdims} w{wdims}"
        for dname, direction, want, (ia, a), (ib, b), io in (
                ("forward", D.miopenProblemDirectionForward, want_y, (T.miopenTensorConvolutionX, x),
                 (T.miopenTensorConvolutionW, w), T.miopenTensorConvolutionY),
                ("backward data", D.miopenProblemDirectionBackward, want_dx, (T.miopenTensorConvolutionY, dy),
                 (T.miopenTensorConvolutionW, w), T.miopenTensorConvolutionX),
                ("backward weights", D.miopenProblemDirectionBackwardWeights, want_dw,
                 (T.miopenTensorConvolutionY, dy), (T.miopenTensorConvolutionX, x), T.miopenTensorConvolutionW)):
            problem = miopen.create_conv_problem(cd, direction)
            for tid, d in ((T.miopenTensorConvolutionX, xd_), (T.miopenTensorConvolutionW, wd_),
                           (T.miopenTensorConvolutionY, yd_)):
                miopen.set_problem_tensor_descriptor(problem, tid, d)
            sols = _find(problem)
            if isinstance(sols, str) or not sols:
                out[f"{dname} {tag}"] = sols or "no solution"
                continue
            ab, bb, ob = dev(a), dev(b), zeros(want.size)
            out[f"{dname} {tag}"] = _each(
                sols, [ob], lambda sol: _run(sol, [(ia, ab.ptr), (ib, bb.ptr), (io, ob.ptr)]),
                [want], f"Find 2.0 conv {dname} {tag}")
    queue().finish()
    return out


def softmax() -> dict[str, Any]:
    """Softmax problems forward and backward (ACCURATE, LOG × CHANNEL, INSTANCE): {case: {solver: error}}; the
    descriptor's alpha and beta ride along (y = alpha·softmax(x) + beta·y)."""
    r = rng(332)
    dims = [2, 5, 3, 2]
    x = r.uniform(-3, 3, dims).astype(np.float32)
    dy = r.standard_normal(dims).astype(np.float32)
    d = desc(dims)
    out: dict[str, Any] = {}
    for alg in ("ACCURATE", "LOG"):
        for mode in ("CHANNEL", "INSTANCE"):
            alpha, beta = (1.0, 0.0) if mode == "CHANNEL" else (2.0, 0.5)
            sd = miopen.create_softmax_descriptor()
            miopen.set_softmax_descriptor(sd, alpha, beta, getattr(miopen.SoftmaxAlgorithm, f"MIOPEN_SOFTMAX_{alg}"),
                                          getattr(miopen.SoftmaxMode, f"MIOPEN_SOFTMAX_MODE_{mode}"))
            y0 = r.standard_normal(dims).astype(np.float32)
            y = _softmax_ref(x.astype(np.float64), alg, mode)
            fwd = miopen.create_softmax_problem(sd, D.miopenProblemDirectionForward)
            miopen.set_problem_tensor_descriptor(fwd, T.miopenTensorSoftmaxX, d)
            miopen.set_problem_tensor_descriptor(fwd, T.miopenTensorSoftmaxY, d)
            sols = _find(fwd)
            xb = dev(x)
            key = f"forward {alg} {mode}"
            if isinstance(sols, str) or not sols:
                out[key] = sols or "no solution"
            else:
                yb = dev(y0)

                def run_fwd(sol: miopen.Solution) -> None:
                    yb.buf = dev(y0).buf
                    yb.ptr = yb.buf.int_ptr
                    _run(sol, [(T.miopenTensorSoftmaxX, xb.ptr), (T.miopenTensorSoftmaxY, yb.ptr)])

                out[key] = {}
                for sol in sols:
                    run_fwd(sol)
                    out[key][str(miopen.get_solution_solver_id(sol))] = close(
                        yb.read(), alpha * y + beta * y0, f"Find 2.0 softmax {key}", 1e-5)
            bwd = miopen.create_softmax_problem(sd, D.miopenProblemDirectionBackward)
            for tid in (T.miopenTensorSoftmaxY, T.miopenTensorSoftmaxDY, T.miopenTensorSoftmaxDX):
                miopen.set_problem_tensor_descriptor(bwd, tid, d)
            key = f"backward {alg} {mode}"
            sols = _find(bwd)
            if isinstance(sols, str) or not sols:
                out[key] = sols or "no solution"
                continue
            yv = y.astype(np.float32)
            dx0 = r.standard_normal(dims).astype(np.float32)
            want = alpha * _softmax_bwd_ref(yv.astype(np.float64), dy.astype(np.float64), alg, mode) + beta * dx0
            yb2, dyb = dev(yv), dev(dy)
            out[key] = {}
            for sol in sols:
                dxb = dev(dx0)
                _run(sol, [(T.miopenTensorSoftmaxY, yb2.ptr), (T.miopenTensorSoftmaxDY, dyb.ptr),
                           (T.miopenTensorSoftmaxDX, dxb.ptr)])
                out[key][str(miopen.get_solution_solver_id(sol))] = close(
                    dxb.read(), want, f"Find 2.0 softmax {key}", 1e-5)
    queue().finish()
    return out


def _activ_desc(mode: str = "miopenActivationRELU") -> miopen.ActivationDescriptor:
    ad = miopen.create_activation_descriptor()
    miopen.set_activation_descriptor(ad, getattr(miopen.ActivationMode, mode), 0.0, 0.0, 0.0)
    return ad


def single_ops() -> dict[str, str]:
    """Activation, bias and batch-norm problems on their own: {problem: MIOpen's answer to FindSolutions}."""
    dims = [2, 4, 3, 3]
    d = desc(dims)
    out: dict[str, str] = {}
    act, st = _problem_status(lambda: miopen.create_activation_problem(_activ_desc(),
                                                                       D.miopenProblemDirectionForward))
    if act is not None:
        miopen.set_problem_tensor_descriptor(act, T.miopenTensorActivationX, d)
        miopen.set_problem_tensor_descriptor(act, T.miopenTensorActivationY, d)
    out["activation forward"] = st if act is None else _answer(_find(act))
    bias, st = _problem_status(lambda: miopen.create_bias_problem(D.miopenProblemDirectionForward))
    if bias is not None:
        miopen.set_problem_tensor_descriptor(bias, T.miopenTensorBiasX, d)
        miopen.set_problem_tensor_descriptor(bias, T.miopenTensorBiasY, d)
        miopen.set_problem_tensor_descriptor(bias, T.miopenTensorBias, desc([1, 4, 1, 1]))
    out["bias forward"] = st if bias is None else _answer(_find(bias))
    bn, st = _problem_status(lambda: miopen.create_batchnorm_problem(miopen.BatchNormMode.miopenBNSpatial, True,
                                                                     D.miopenProblemDirectionInference))
    if bn is not None:
        _bn_tensors(bn, d)
    out["batch norm inference"] = st if bn is None else _answer(_find(bn))
    return out


def _answer(sols: list[miopen.Solution] | str) -> str:
    if isinstance(sols, str):
        return sols
    return "solvers " + ", ".join(str(miopen.get_solution_solver_id(s)) for s in sols) if sols else "no solution"


def _bn_tensors(bn: miopen.Problem, d: miopen.TensorDescriptor) -> None:
    miopen.set_problem_tensor_descriptor(bn, T.miopenTensorBatchnormX, d)
    miopen.set_problem_tensor_descriptor(bn, T.miopenTensorBatchnormY, d)
    for tid in (T.miopenTensorBatchnormScale, T.miopenTensorBatchnormBias, T.miopenTensorBatchnormEstimatedMean,
                T.miopenTensorBatchnormEstimatedVariance):
        miopen.set_problem_tensor_descriptor(bn, tid, desc([1, 4, 1, 1]))


def fused() -> dict[str, Any]:
    """fuse_problems: convolution + bias + ReLU, and batch-norm inference + ReLU; {case: {solver: error}} or
    MIOpen's answer, each solution's result asserted against numpy."""
    r = rng(333)
    out: dict[str, Any] = {}
    # convolution 3x3 pad 1 + bias + relu
    xdims, wdims = [1, 4, 6, 6], [4, 4, 3, 3]
    cd = miopen.create_convolution_descriptor()
    miopen.init_convolution_descriptor(cd, miopen.ConvolutionMode.miopenConvolution, 1, 1, 1, 1, 1, 1)
    x, w = r.standard_normal(xdims).astype(np.float32), r.standard_normal(wdims).astype(np.float32)
    b = r.standard_normal(4).astype(np.float32)
    want = np.maximum(_conv_ref(x.astype(np.float64), w.astype(np.float64), 1, 1, 1) + b.reshape(1, 4, 1, 1), 0)
    cp = miopen.create_conv_problem(cd, D.miopenProblemDirectionForward)
    miopen.set_problem_tensor_descriptor(cp, T.miopenTensorConvolutionX, desc(xdims))
    miopen.set_problem_tensor_descriptor(cp, T.miopenTensorConvolutionW, desc(wdims))
    miopen.set_problem_tensor_descriptor(cp, T.miopenTensorConvolutionY, desc(list(want.shape)))
    bp = miopen.create_bias_problem(D.miopenProblemDirectionForward)
    miopen.set_problem_tensor_descriptor(bp, T.miopenTensorBias, desc([1, 4, 1, 1]))
    ap = miopen.create_activation_problem(_activ_desc(), D.miopenProblemDirectionForward)
    miopen.fuse_problems(cp, bp)
    miopen.fuse_problems(cp, ap)
    sols = _find(cp)
    if isinstance(sols, str) or not sols:
        out["conv + bias + relu"] = sols or "no solution"
    else:
        xb, wb, bb, yb = dev(x), dev(w), dev(b), zeros(want.size)
        out["conv + bias + relu"] = _each(
            sols, [yb], lambda sol: _run(sol, [(T.miopenTensorConvolutionX, xb.ptr), (T.miopenTensorConvolutionW,
                                                                                          wb.ptr),
                                               (T.miopenTensorBias, bb.ptr), (T.miopenTensorActivationY, yb.ptr)]),
            [want], "Find 2.0 conv + bias + relu")
    # batch norm (spatial, inference) + relu
    dims = [2, 4, 3, 3]
    x = (r.standard_normal(dims) * 2 + 1).astype(np.float32)
    scale, bias = r.uniform(0.5, 2, 4).astype(np.float32), r.standard_normal(4).astype(np.float32)
    mean, var = r.standard_normal(4).astype(np.float32), r.uniform(0.5, 2, 4).astype(np.float32)
    eps = 1e-5
    c = (lambda a: a.reshape(1, 4, 1, 1).astype(np.float64))
    want = np.maximum(c(scale) * (x.astype(np.float64) - c(mean)) / np.sqrt(c(var) + eps) + c(bias), 0)
    bn = miopen.create_batchnorm_problem(miopen.BatchNormMode.miopenBNSpatial, True,
                                         D.miopenProblemDirectionInference)
    _bn_tensors(bn, desc(dims))
    miopen.fuse_problems(bn, miopen.create_activation_problem(_activ_desc(), D.miopenProblemDirectionForward))
    sols = _find(bn)
    if isinstance(sols, str) or not sols:
        out["batch norm inference + relu"] = sols or "no solution"
    else:
        eps_c = ctypes.c_double(eps)
        bufs = {T.miopenTensorBatchnormX: dev(x), T.miopenTensorBatchnormScale: dev(scale),
                T.miopenTensorBatchnormBias: dev(bias), T.miopenTensorBatchnormEstimatedMean: dev(mean),
                T.miopenTensorBatchnormEstimatedVariance: dev(var)}
        yb = zeros(x.size)
        out["batch norm inference + relu"] = _each(
            sols, [yb], lambda sol: _run(sol, [*((k, v.ptr) for k, v in bufs.items()),
                                               (T.miopenTensorActivationY, yb.ptr),
                                               (T.miopenScalarBatchnormEpsilon, ctypes.addressof(eps_c))]),
            [want], "Find 2.0 batch norm + relu")
    queue().finish()
    return out


def runtime_planner() -> dict[str, Any]:
    """miopen.ops.conv with ConvPlanner("find2") and ConvPlanner("auto") on pyopencl arrays, forward, backward
    data and backward weights, each against numpy: {mode: {direction: (plan mode, solver id)}}; "auto" plans
    with Find 2.0 on this release."""
    import pyopencl.array as cla

    from miopen.algo import AlgoCache, ConvPlanner
    from miopen.ops import conv as conv_ops

    r = rng(334)
    q = queue()
    xdims, wdims, p = [2, 3, 7, 6], [4, 3, 3, 3], 1
    x, w = r.standard_normal(xdims).astype(np.float32), r.standard_normal(wdims).astype(np.float32)
    want_y = _conv_ref(x.astype(np.float64), w.astype(np.float64), p, 1, 1)
    dy = r.standard_normal(want_y.shape).astype(np.float32)
    want_dx, want_dw = _grads(x.astype(np.float64), w.astype(np.float64), dy.astype(np.float64), p, 1, 1)
    geo = {"pads": p, "strides": 1, "dilations": 1}
    out: dict[str, Any] = {}
    for mode in ("find2", "auto"):
        planner = ConvPlanner(mode, cache=AlgoCache())  # type: ignore[arg-type]
        xa, wa, dya = (cla.to_device(q, a) for a in (x, w, dy))
        ya, dxa, dwa = (cla.zeros(q, s, np.float32) for s in (want_y.shape, xdims, wdims))
        plans = {"forward": conv_ops.conv_forward(xa, wa, ya, planner=planner, stream=q, **geo),
                 "backward data": conv_ops.conv_backward_data(dya, wa, dxa, planner=planner, stream=q, **geo),
                 "backward weights": conv_ops.conv_backward_weights(dya, xa, dwa, planner=planner, stream=q, **geo)}
        q.finish()
        close(ya.get(q), want_y, f"runtime conv forward {mode}", 1e-5)
        close(dxa.get(q), want_dx, f"runtime conv backward data {mode}", 1e-5)
        close(dwa.get(q), want_dw, f"runtime conv backward weights {mode}", 1e-5)
        out[mode] = {d: (pl.mode, pl.solution_id) for d, pl in plans.items()}
    return out
