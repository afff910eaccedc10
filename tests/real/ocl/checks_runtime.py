"""The runtime ops (`miopen.ops.*`) on MIOpen's OpenCL backend, against the same float64 numpy references as the
typed-API checks: pyopencl Arrays in, the backend chosen from the library, handles, workspaces and temporaries
made by the runtime on the checks' queue (or on the backend's default queue), forward and backward."""

from __future__ import annotations

import numpy as np

import miopen
from miopen import backend
from miopen.algo import ConvPlanner
from miopen.errors import ShapeError
from miopen.ops import activation, batchnorm, conv, lrn, pooling, softmax, tensor_ops

from .checks_conv import _conv_ref, _grads
from .checks_layers import ACT_MODES, _act_ref, _lrn_ref, _pool_ref, _softmax_bwd_ref, _softmax_ref
from .checks_tensor import _op_ref
from .common import CHECKED, close, numeric, queue, rng, small_group_cause, verdict

F32 = "float32"
RT = "runtime"


def _arr(host: np.ndarray) -> object:
    import pyopencl.array as cla

    return cla.to_device(queue(), np.ascontiguousarray(host, np.float32))


def _zeros(shape: tuple[int, ...] | list[int]) -> object:
    import pyopencl.array as cla

    return cla.zeros(queue(), tuple(shape), np.float32)


def _get(a: object) -> np.ndarray:
    queue().finish()
    return a.get(queue())  # type: ignore[attr-defined, no-any-return]


@numeric(("backend", "-", f"{RT}: chosen from the library", CHECKED, ""))
def selection() -> dict[tuple[str, str, str], str]:
    """The OpenCL build is told apart by its exports; the handle pool makes handles on the caller's queue."""
    b = backend.current()
    assert b.name == "OpenCL" and backend.detect(miopen.load_library()) == "OpenCL", b
    h = miopen.handles.inline_miopen_handle(queue())
    assert miopen.get_stream(h) == queue().int_ptr
    assert miopen.handles.inline_miopen_handle(queue()) is h
    _queue_changes()
    return {("backend", "-", f"{RT}: chosen from the library"): CHECKED}


def _queue_changes() -> None:
    """What the dispatch memos must not hide: the op runs on the queue passed each call (another queue of the
    context re-binds the handle, a queue of another context gets that context's handle), and a queue object's
    handle is read again after the memo forgets it."""
    import pyopencl as cl
    import pyopencl.array as cla

    q = queue()
    x = np.arange(-8, 8, dtype=np.float32).reshape(1, 1, 4, 4)
    want = np.maximum(x, 0)
    other_ctx = cl.CommandQueue(cl.Context([q.device]), q.device)
    for qq in (q, cl.CommandQueue(q.context, q.device), q, other_ctx, q):
        xa = cla.to_device(qq, x)
        ya = cla.zeros(qq, x.shape, np.float32)
        for _ in range(2):  # the second call through the memos
            activation.activation_forward(xa, ya, "relu", stream=qq)
            h = miopen.handles.inline_miopen_handle(qq)
            assert miopen.get_stream(h) == qq.int_ptr, "the pooled handle is not bound to the call's queue"
            qq.finish()
            close(ya.get(qq), want, "runtime relu on the call's queue", 0)
        backend.opencl().forget_queues()
    assert (miopen.handles.inline_miopen_handle(other_ctx) is not miopen.handles.inline_miopen_handle(q))


@numeric(("Activation (10 modes)", F32, f"{RT}: forward, backward (POWER: MIOpen's dx)"))
def activation_ops() -> dict[tuple[str, str, str], str]:
    r = rng(40)
    q = queue()
    for mode in ACT_MODES:
        dims = [int(d) for d in r.integers(1, 5, size=4)]
        a, bb, g = (2.0, 0.5, 1.5) if mode == "POWER" else (float(r.uniform(0.2, 2)), float(r.uniform(0.5, 2)), 1.0)
        x = r.uniform(-2, 2, dims).astype(np.float32)
        dy = r.standard_normal(dims).astype(np.float32)
        xa, ya, dya, dxa = _arr(x), _zeros(dims), _arr(dy), _zeros(dims)
        activation.activation_forward(xa, ya, mode.lower(), a, bb, g, stream=q)
        y64, grad = _act_ref(mode, x.astype(np.float64), a, bb, g)
        close(_get(ya), y64, f"runtime activation {mode}", 1e-5)
        activation.activation_backward(ya, dya, xa, dxa, mode.lower(), a, bb, g, stream=q)
        close(_get(dxa), grad if mode == "POWER" else dy * grad, f"runtime activation {mode} backward", 1e-4)
    return {("Activation (10 modes)", F32, f"{RT}: forward, backward (POWER: MIOpen's dx)"): CHECKED}


@numeric(("Caffe2 MIOPENActivationOp / GradientOp", F32, "miopen.caffe2: NCHW and NHWC blobs, forward, backward"))
def caffe2_activation_ops() -> dict[tuple[str, str, str], str]:
    """Caffe2's activation operators over the runtime: blobs in a Workspace, outputs written into the blobs there."""
    from miopen import caffe2

    r = rng(41)
    q = queue()
    for mode, order in (("RELU", "NCHW"), ("TANH", "NHWC"), ("LOGISTIC", "NCHW"), ("ELU", "NHWC")):
        dims = [int(d) for d in r.integers(1, 5, size=4)]
        x = r.uniform(-2, 2, dims).astype(np.float32)
        dy = r.standard_normal(dims).astype(np.float32)
        ws = caffe2.Workspace()
        ws["X"], ws["Y"], ws["dY"], ws["dX"] = _arr(x), _zeros(dims), _arr(dy), _zeros(dims)
        op = caffe2.MIOPENActivationOp(mode.lower(), ["X"], ["Y"], order=order, stream=q)
        assert op.run(ws)
        y64, grad = _act_ref(mode, x.astype(np.float64), op.alpha, op.beta, op.gamma)
        close(_get(ws["Y"]), y64, f"caffe2 {mode} {order}", 1e-5)  # element-wise: the order only names the view
        back = caffe2.MIOPENActivationGradientOp(mode.lower(), ["Y", "dY", "X"], ["dX"], order=order, stream=q)
        assert back.run(ws)
        close(_get(ws["dX"]), dy * grad, f"caffe2 {mode} {order} backward", 1e-4)
    return {("Caffe2 MIOPENActivationOp / GradientOp", F32, "miopen.caffe2: NCHW and NHWC blobs, forward, backward"):
            CHECKED}


@numeric(("Softmax (accurate, log × channel, instance)", F32, f"{RT}: forward, backward, scale and shift"))
def softmax_ops() -> dict[tuple[str, str, str], str]:
    r = rng(41)
    q = queue()
    dims = [2, 5, 3, 2]
    x = r.uniform(-3, 3, dims).astype(np.float32)
    dy = r.standard_normal(dims).astype(np.float32)
    for i, (alg, mode) in enumerate((a, m) for a in ("ACCURATE", "LOG") for m in ("CHANNEL", "INSTANCE")):
        scale, shift = ((1.0, 0.0), (2.0, 0.5))[i % 2]
        y0 = r.standard_normal(dims).astype(np.float32)
        ya = _arr(y0)
        softmax.softmax_forward(_arr(x), ya, algorithm=alg.lower(), mode=mode.lower(), scale=scale, shift=shift,
                                stream=q)
        ref = _softmax_ref(x.astype(np.float64), alg, mode)
        close(_get(ya), scale * ref + shift * y0, f"runtime softmax {alg} {mode}", 1e-5)
        dx0 = r.standard_normal(dims).astype(np.float32)
        dxa = _arr(dx0)
        yv = ref.astype(np.float32)
        softmax.softmax_backward(_arr(yv), _arr(dy), dxa, algorithm=alg.lower(), mode=mode.lower(), scale=scale,
                                 shift=shift, stream=q)
        want = scale * _softmax_bwd_ref(yv.astype(np.float64), dy.astype(np.float64), alg, mode) + shift * dx0
        close(_get(dxa), want, f"runtime softmax {alg} {mode} backward", 1e-5)
    return {("Softmax (accurate, log × channel, instance)", F32, f"{RT}: forward, backward, scale and shift"): CHECKED}


@numeric(("Pooling max, average, average-inclusive", F32, f"{RT}: forward, backward (persistent workspace)"))
def pooling_ops() -> dict[tuple[str, str, str], str]:
    r = rng(42)
    q = queue()
    names = {"max": "max", "avg": "average", "avg-inclusive": "average_inclusive"}
    for k, s, p, dims in ((2, 2, 0, [2, 3, 6, 6]), (3, 2, 1, [1, 2, 7, 5])):
        x = r.standard_normal(dims).astype(np.float32)
        for ref_name, mode in names.items():
            want_y, _ = _pool_ref(x.astype(np.float64), None, ref_name, k, s, p)
            dy = r.standard_normal(want_y.shape).astype(np.float32)
            _, want_dx = _pool_ref(x.astype(np.float64), dy.astype(np.float64), ref_name, k, s, p)
            xa, ya, dxa = _arr(x), _zeros(want_y.shape), _zeros(dims)
            st = pooling.pooling_forward(xa, ya, mode, k, p, s, stream=q)
            close(_get(ya), want_y, f"runtime pooling {mode} k{k}", 1e-6)
            pooling.pooling_backward(ya, _arr(dy), xa, dxa, st, stream=q)
            close(_get(dxa), want_dx, f"runtime pooling {mode} k{k} backward", 1e-5)
            st.close()
    # stateless calls share the cached descriptor of their parameters: closing one state leaves the others whole
    x = r.standard_normal((1, 2, 4, 4)).astype(np.float32)
    want_y, _ = _pool_ref(x.astype(np.float64), None, "max", 2, 2, 0)
    xa = _arr(x)
    states = []
    for _ in range(2):
        ya = _zeros(want_y.shape)
        states.append(pooling.pooling_forward(xa, ya, "max", 2, 0, 2, stream=q))
        close(_get(ya), want_y, "runtime pooling, no state passed", 0)
    assert states[0].desc is states[1].desc
    states[0].close()
    assert not states[1].desc.closed
    dy = r.standard_normal(want_y.shape).astype(np.float32)
    _, want_dx = _pool_ref(x.astype(np.float64), dy.astype(np.float64), "max", 2, 2, 0)
    dxa = _zeros(x.shape)
    pooling.pooling_backward(ya, _arr(dy), xa, dxa, states[1], stream=q)
    close(_get(dxa), want_dx, "runtime pooling backward after another state closed", 1e-6)
    states[1].close()
    return {("Pooling max, average, average-inclusive", F32, f"{RT}: forward, backward (persistent workspace)"):
            CHECKED}


@numeric(("LRN within-channel", F32, f"{RT}: forward, backward"),
         ("LRN cross-channel", F32, f"{RT}: forward, any sign of x (the runtime corrects MIOpen's |x|)"),
         ("LRN cross-channel", F32, f"{RT}: backward, x > 0"))
def lrn_ops() -> dict[tuple[str, str, str], str]:
    r = rng(43)
    q = queue()
    dims = [2, 6, 5, 4]
    for mode, within in (("within_channel", True), ("cross_channel", False)):
        n, a, b, k = 3, 0.5, 0.6, 1.0
        for x in (r.uniform(0.1, 2, dims).astype(np.float32), r.standard_normal(dims).astype(np.float32)):
            dy = r.standard_normal(dims).astype(np.float32)
            want_y, want_dx = _lrn_ref(x.astype(np.float64), dy.astype(np.float64), within, n, a, b, k)
            xa, ya, dxa = _arr(x), _zeros(dims), _zeros(dims)
            st = lrn.lrn_forward(xa, ya, mode, n, a, b, k, stream=q)
            close(_get(ya), want_y, f"runtime LRN {mode} forward", 1e-5)
            if within or bool((x > 0).all()):
                lrn.lrn_backward(ya, _arr(dy), xa, dxa, st, stream=q)
                close(_get(dxa), want_dx, f"runtime LRN {mode} backward", 1e-4)
            st.close()
    return {("LRN within-channel", F32, f"{RT}: forward, backward"): CHECKED,
            ("LRN cross-channel", F32, f"{RT}: forward, any sign of x (the runtime corrects MIOpen's |x|)"): CHECKED,
            ("LRN cross-channel", F32, f"{RT}: backward, x > 0"): CHECKED}


@numeric(("BatchNorm spatial, per-activation", F32, f"{RT}: training, inference"),
         ("BatchNorm spatial, per-activation", F32, f"{RT}: backward"))
def batchnorm_ops() -> dict[tuple[str, str, str], str]:
    r = rng(44)
    fwd_row = ("BatchNorm spatial, per-activation", F32, f"{RT}: training, inference")
    bwd_row = ("BatchNorm spatial, per-activation", F32, f"{RT}: backward")
    fwd: list[str] = []
    bwd: list[str] = []
    q = queue()
    dims = [3, 4, 5, 2]
    eps = 1e-5
    for mode, axes in (("spatial", (0, 2, 3)), ("per_activation", (0,))):
        pshape = batchnorm.bn_param_shape(dims, mode)
        x = r.standard_normal(dims).astype(np.float32)
        w = r.uniform(0.5, 2, pshape).astype(np.float32)
        bias = r.standard_normal(pshape).astype(np.float32)
        dy = r.standard_normal(dims).astype(np.float32)
        x64 = x.astype(np.float64)
        mean = x64.mean(axis=axes, keepdims=True)
        var = x64.var(axis=axes, keepdims=True)
        inv = 1 / np.sqrt(var + eps)
        xhat = (x64 - mean) * inv
        want_y = xhat * w.reshape(mean.shape) + bias.reshape(mean.shape)
        xa, ya = _arr(x), _zeros(dims)
        wa, ba = _arr(w), _arr(bias)
        sm, sv = _zeros(pshape), _zeros(pshape)
        batchnorm.batch_norm_forward_training(xa, ya, wa, ba, mode, epsilon=eps, save_mean=sm, save_inv_var=sv,
                                              stream=q)
        fwd += [verdict(fwd_row, _get(ya), want_y, 1e-4), verdict(fwd_row, _get(sm), mean.reshape(pshape), 1e-5)]
        yi = _zeros(dims)
        batchnorm.batch_norm_forward_inference(xa, yi, wa, ba, _arr(mean.reshape(pshape)),
                                               _arr(var.reshape(pshape)), mode, epsilon=eps, stream=q)
        fwd.append(verdict(fwd_row, _get(yi), want_y, 1e-4))
        dxa, dwa, dba = _zeros(dims), _zeros(pshape), _zeros(pshape)
        batchnorm.batch_norm_backward(xa, _arr(dy), dxa, wa, dwa, dba, mode, epsilon=eps, saved_mean=sm,
                                      saved_inv_var=sv, stream=q)
        dy64 = dy.astype(np.float64)
        m = np.prod([dims[i] for i in axes])
        want_db = dy64.sum(axis=axes, keepdims=True)
        want_dw = (dy64 * xhat).sum(axis=axes, keepdims=True)
        want_dx = w.reshape(mean.shape) * inv / m * (m * dy64 - want_db - xhat * want_dw)
        bwd += [verdict(bwd_row, _get(dxa), want_dx, 1e-4), verdict(bwd_row, _get(dwa), want_dw.reshape(pshape), 1e-4),
                verdict(bwd_row, _get(dba), want_db.reshape(pshape), 1e-4)]
    return {fwd_row: next((o for o in fwd if o != CHECKED), CHECKED),
            bwd_row: small_group_cause(bwd_row, next((o for o in bwd if o != CHECKED), CHECKED))}


@numeric(("OpTensor add, mul, min, max", F32, f"{RT}: alpha1, alpha2, beta; broadcast B"),
         ("SetTensor, ScaleTensor", F32, f"{RT}: -"),
         ("TransformTensor", F32, f"{RT}: padded y; alpha, beta"),
         ("TransformTensor", F32, f"{RT}: y n-stride not a multiple of its c-stride, or channels-last",
          "refused by the runtime", "MIOpen writes these at the wrong offsets (probed): ShapeError"))
def tensor_op_ops() -> dict[tuple[str, str, str], str]:
    r = rng(45)
    q = queue()
    dims, bdims = [2, 3, 4], [1, 3, 1]
    a, b, c = (r.standard_normal(d).astype(np.float32) for d in (dims, bdims, dims))
    for op in ("add", "mul", "min", "max"):
        ca = _arr(c)
        tensor_ops.op_tensor(op, _arr(a), _arr(b), ca, 1.5, -0.5, 2.0, stream=q)
        close(_get(ca), _op_ref(op, a.astype(np.float64), b.astype(np.float64), c.astype(np.float64), 1.5, -0.5, 2.0),
              f"runtime op_tensor {op}")
    ya = _arr(a)
    tensor_ops.set_tensor(ya, -1.25, stream=q)
    close(_get(ya), np.full(dims, -1.25), "runtime set_tensor", 0)
    ya = _arr(a)
    tensor_ops.scale_tensor(ya, 3.0, stream=q)
    close(_get(ya), 3.0 * a, "runtime scale_tensor", 1e-6)
    # transform into a padded y (strides 90, 30, 6, 1) through a Buffer-backed Tensor
    import pyopencl as cl

    x4 = r.standard_normal((2, 3, 4, 5)).astype(np.float32)
    y0 = r.standard_normal(180).astype(np.float32)
    yb = cl.Buffer(q.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=y0)
    ty = miopen.Tensor.make(yb, (2, 3, 4, 5), "float32", (90, 30, 6, 1))
    # a y with gaps is refused on OpenCL (quirks.DENSE_ONLY: a stepped one is written at wrong offsets, see
    # docs/strided-views.md), this padded one too though it computed right: the runtime cannot tell them apart yet
    try:
        tensor_ops.transform_tensor(_arr(x4), ty, -1.5, 1.0, stream=q)
        raise AssertionError("transform_tensor into a y with gaps was not refused")
    except ShapeError as exc:
        assert "gaps" in str(exc)
    ty = miopen.Tensor.make(yb, (2, 3, 4, 5), "float32", (60, 20, 5, 1))  # dense: right
    tensor_ops.transform_tensor(_arr(x4), ty, -1.5, 1.0, stream=q)
    got = np.empty_like(y0)
    cl.enqueue_copy(q, got, yb)
    q.finish()
    view = got[:120].reshape(2, 3, 4, 5)
    want = -1.5 * x4 + y0[:120].reshape(2, 3, 4, 5)
    close(view, want, "runtime transform_tensor into a Buffer-backed y", 1e-6)
    refused = 0
    big = cl.Buffer(q.context, cl.mem_flags.READ_WRITE, 4 * 200)  # room for both layouts (extents 183 and 180)
    for strides in ((100, 30, 6, 1), (60, 1, 15, 3)):
        try:
            tensor_ops.transform_tensor(_arr(x4), miopen.Tensor.make(big, (2, 3, 4, 5), "float32", strides), stream=q)
        except ShapeError as exc:
            assert "wrong offsets" in str(exc) or "gaps" in str(exc)
            refused += 1
    assert refused == 2
    _buffer_changes(r)
    _fast_paths_as_full()
    _ops_again()
    return {("OpTensor add, mul, min, max", F32, f"{RT}: alpha1, alpha2, beta; broadcast B"): CHECKED,
            ("SetTensor, ScaleTensor", F32, f"{RT}: -"): CHECKED,
            ("TransformTensor", F32, f"{RT}: padded y; alpha, beta"): CHECKED,
            ("TransformTensor", F32, f"{RT}: y n-stride not a multiple of its c-stride, or channels-last"):
                "refused by the runtime"}


def _buffer_changes(r: np.random.Generator) -> None:
    """What the dispatch memos must not hide: the buffers (cl_mem) are read on every call, of new Arrays of a seen
    layout and of an Array whose buffer was swapped; forgotten descriptors are made again."""
    import pyopencl as cl

    from miopen.descriptors import clear_descriptor_caches

    q = queue()
    dims = (2, 3, 4)
    a0, b0 = r.standard_normal(dims).astype(np.float32), r.standard_normal(dims).astype(np.float32)
    ca = _zeros(dims)
    for i in range(3):  # new Arrays, the same layout: each call's own buffers
        a, b = a0 + i, b0 * i
        tensor_ops.op_tensor("add", _arr(a), _arr(b), ca, stream=q)
        close(_get(ca), a.astype(np.float64) + b, f"runtime op_tensor, new arrays #{i}", 1e-6)
    aa, ba = _arr(a0), _arr(b0)
    tensor_ops.op_tensor("mul", aa, ba, ca, stream=q)
    close(_get(ca), a0.astype(np.float64) * b0, "runtime op_tensor mul", 1e-6)
    swapped = r.standard_normal(dims).astype(np.float32)  # the same Array object on another buffer
    aa.base_data = cl.Buffer(q.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=swapped)
    c2 = _zeros(dims)
    tensor_ops.op_tensor("mul", aa, ba, c2, stream=q)
    close(_get(c2), swapped.astype(np.float64) * b0, "runtime op_tensor after the Array's buffer changed", 1e-6)
    close(_get(ca), a0.astype(np.float64) * b0, "runtime op_tensor: the earlier output untouched", 1e-6)
    clear_descriptor_caches()
    for _ in range(2):
        activation.activation_forward(aa, c2, "relu", stream=q)
        tensor_ops.op_tensor("add", aa, ba, ca, stream=q)
    close(_get(c2), np.maximum(swapped, 0), "runtime relu after the descriptors were forgotten", 0)
    close(_get(ca), swapped.astype(np.float64) + b0, "runtime op_tensor after the descriptors were forgotten", 1e-6)


@numeric(("Convolution", F32, f"{RT}: forward, backward data, backward weights; immediate (after a Find) and find"),
         ("Convolution", F32, f"{RT}: Immediate with a solution id of another problem", "refused by the runtime",
          "MIOpen does not check the id (garbage or a crash): ValueError"))
def conv_ops() -> dict[tuple[str, str, str], str]:
    r = rng(46)
    q = queue()
    xdims, wdims, p = [2, 3, 7, 6], [4, 3, 3, 3], 1
    x = r.standard_normal(xdims).astype(np.float32)
    w = r.standard_normal(wdims).astype(np.float32)
    want_y = _conv_ref(x.astype(np.float64), w.astype(np.float64), p, 1, 1)
    dy = r.standard_normal(want_y.shape).astype(np.float32)
    want_dx, want_dw = _grads(x.astype(np.float64), w.astype(np.float64), dy.astype(np.float64), p, 1, 1)
    geo = {"pads": p, "strides": 1, "dilations": 1}
    plans = []
    for planner in (ConvPlanner("immediate"), ConvPlanner("find")):
        ya, dxa, dwa = _zeros(want_y.shape), _zeros(xdims), _zeros(wdims)
        plans.append(conv.conv_forward(_arr(x), _arr(w), ya, planner=planner, stream=q, **geo))
        close(_get(ya), want_y, f"runtime conv forward {planner.mode}", 1e-5)
        conv.conv_backward_data(_arr(dy), _arr(w), dxa, planner=planner, stream=q, **geo)
        close(_get(dxa), want_dx, f"runtime conv backward data {planner.mode}", 1e-5)
        conv.conv_backward_weights(_arr(dy), _arr(x), dwa, planner=planner, stream=q, **geo)
        close(_get(dwa), want_dw, f"runtime conv backward weights {planner.mode}", 1e-5)
        # the same problem again with other data in new Arrays: the repeated-shape fast path (the plan and
        # descriptors remembered, the buffers read anew) computes with the new buffers, on real kernels
        x2, w2, dy2 = (r.standard_normal(a.shape).astype(np.float32) for a in (x, w, dy))
        want_y2 = _conv_ref(x2.astype(np.float64), w2.astype(np.float64), p, 1, 1)
        want_dx2, want_dw2 = _grads(x2.astype(np.float64), w2.astype(np.float64), dy2.astype(np.float64), p, 1, 1)
        ya, dxa, dwa = _zeros(want_y.shape), _zeros(xdims), _zeros(wdims)
        hits, full_path, full = planner.cache.hits, conv._run_on, []
        conv._run_on = lambda *a: full.append(a) or full_path(*a)  # type: ignore[assignment]
        try:
            conv.conv_forward(_arr(x2), _arr(w2), ya, planner=planner, stream=q, **geo)
            conv.conv_backward_data(_arr(dy2), _arr(w2), dxa, planner=planner, stream=q, **geo)
            conv.conv_backward_weights(_arr(dy2), _arr(x2), dwa, planner=planner, stream=q, **geo)
        finally:
            conv._run_on = full_path  # type: ignore[assignment]
        assert planner.cache.hits == hits + 3 and not full, (planner.mode, hits, planner.cache.hits, len(full))
        close(_get(ya), want_y2, f"runtime conv forward {planner.mode}, again with new buffers", 1e-5)
        close(_get(dxa), want_dx2, f"runtime conv backward data {planner.mode}, again with new buffers", 1e-5)
        close(_get(dwa), want_dw2, f"runtime conv backward weights {planner.mode}, again with new buffers", 1e-5)
    # the immediate plan of this problem run on another problem: refused unless MIOpen lists its solution there
    plan = plans[0]
    h = miopen.handles.inline_miopen_handle(q)
    keep = [_arr(np.zeros(dm)) for dm in ((1, 3, 9, 9), (4, 3, 5, 5), (1, 4, 7, 7))]
    xo, wt, yt = (miopen.tensor.as_tensor(a) for a in keep)
    from miopen.descriptors import convolution_descriptor

    cd = convolution_descriptor((1, 1), (1, 1), (1, 1))
    fake = ConvPlanner("immediate")
    try:
        fake.run(plan, h, xo.desc, xo.ptr, wt.desc, wt.ptr, yt.desc, yt.ptr, cd, None)
    except ValueError as exc:
        assert "not among the solutions MIOpen lists" in str(exc), exc
    else:
        raise AssertionError("an Immediate call with another problem's solution id was not refused")
    return {("Convolution", F32,
             f"{RT}: forward, backward data, backward weights; immediate (after a Find) and find"): CHECKED,
            ("Convolution", F32, f"{RT}: Immediate with a solution id of another problem"): "refused by the runtime"}


def _ops_again() -> None:
    """The activation, softmax, pooling and batch-norm checks run again on new Arrays of the shapes they have just
    run: the backward and training ops (and the forward ones) now take their repeated-shape fast paths, each hit
    counted, on real kernels and against numpy as the first time."""
    from miopen.ops._common import ShapeMemo

    checks = (activation_ops, softmax_ops, pooling_ops, batchnorm_ops)
    # twice first: an Array layout never seen has no fast-path key on its first call (its checks register it),
    # so the memo is filled on the second call of that shape
    first = [check() for check in checks]
    assert [check() for check in checks] == first
    memos = {"activation forward": activation._FORWARD, "activation backward": activation._BACKWARD,
             "softmax forward": softmax._FORWARD, "softmax backward": softmax._BACKWARD,
             "pooling backward": pooling._BACKWARD, "batch norm training": batchnorm._TRAINING,
             "batch norm inference": batchnorm._INFERENCE, "batch norm backward": batchnorm._BACKWARD}
    hits: dict[int, int] = {}
    real_get = ShapeMemo.get

    def counting(self: ShapeMemo[object], key: object) -> object:
        value = real_get(self, key)  # type: ignore[arg-type]
        if value is not None:
            hits[id(self)] = hits.get(id(self), 0) + 1
        return value

    ShapeMemo.get = counting  # type: ignore[method-assign, assignment]
    try:
        again = [check() for check in checks]
    finally:
        ShapeMemo.get = real_get  # type: ignore[method-assign]
    assert again == first, (first, again)
    missed = [name for name, memo in memos.items() if not hits.get(id(memo))]
    assert not missed, f"no fast-path hit: {missed}"


def _fast_paths_as_full() -> None:
    """The ops' repeated-shape fast paths on pyopencl Arrays answer what their full paths answer: new Arrays of a seen
    layout, an Array whose buffer was swapped, another queue of the context, a queue of another context, a closed
    descriptor, the descriptor caches cleared; each case run through the memos, then with them forgotten."""
    import pyopencl as cl
    import pyopencl.array as cla

    from miopen.descriptors import clear_descriptor_caches, tensor_descriptor
    from miopen.tensor import layout_of

    r = rng(46)
    memos = (activation._FORWARD, softmax._FORWARD, pooling._STATELESS, batchnorm._INFERENCE, tensor_ops._OP_TENSOR)
    dims, pdims = (1, 4, 8, 8), (1, 4, 1, 1)
    x = r.standard_normal(dims).astype(np.float32)
    b = r.standard_normal(dims).astype(np.float32)
    w, bias, mean = (r.standard_normal(pdims).astype(np.float32) for _ in range(3))
    var = r.uniform(0.5, 2, pdims).astype(np.float32)
    e = np.exp(x - x.max(1, keepdims=True))
    want = {"relu": np.maximum(x, 0), "softmax": e / e.sum(1, keepdims=True),
            "pool": x.reshape(1, 4, 4, 2, 4, 2).max((3, 5)), "bn": (x - mean) / np.sqrt(var + 1e-5) * w + bias,
            "add": x.astype(np.float64) + b}

    def run(q: object, xa: object) -> dict[str, np.ndarray]:
        arrs = {k: cla.to_device(q, v) for k, v in (("b", b), ("w", w), ("bias", bias), ("m", mean), ("v", var))}
        out = {k: cla.zeros(q, (1, 4, 4, 4) if k == "pool" else dims, np.float32) for k in want}
        activation.activation_forward(xa, out["relu"], "relu", stream=q)
        softmax.softmax_forward(xa, out["softmax"], stream=q)
        state = pooling.pooling_forward(xa, out["pool"], "max", 2, do_backward=False, stream=q)
        assert state.workspace is None and not state.closed and state.y_dims == (1, 4, 4, 4)
        batchnorm.batch_norm_forward_inference(xa, out["bn"], arrs["w"], arrs["bias"], arrs["m"], arrs["v"],
                                               stream=q)
        tensor_ops.op_tensor("add", xa, arrs["b"], out["add"], stream=q)
        q.finish()  # type: ignore[attr-defined]
        return {k: v.get(q) for k, v in out.items()}

    q = queue()
    other_q = cl.CommandQueue(q.context, q.device)
    other_ctx = cl.CommandQueue(cl.Context([q.device]), q.device)
    xa = cla.to_device(q, x)
    cases = [("first", q, lambda: xa), ("new Arrays", q, lambda: cla.to_device(q, x)), ("another queue", other_q,
             lambda: xa), ("another context", other_ctx, lambda: cla.to_device(other_ctx, x))]
    for name, qq, arr in cases:
        for forget in (False, True):
            if forget:
                for memo in memos:
                    memo._clear()  # its entries and its last hit
            got = run(qq, arr())
            for k, v in got.items():
                close(v, want[k], f"runtime {k} on pyopencl Arrays ({name}, fast paths {'off' if forget else 'on'})",
                      1e-5)
    assert layout_of(xa) is not None and all(len(m) for m in memos), "the fast paths were not taken"
    y = x[:, ::-1].copy()  # the same Array object on another buffer
    xa.base_data = cl.Buffer(q.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=y)
    close(run(q, xa)["relu"], np.maximum(y, 0), "runtime relu after the Array's buffer changed", 0)
    xa = cla.to_device(q, x)
    tensor_descriptor("float32", dims).close()  # a descriptor the memos hold, closed
    for k, v in run(q, xa).items():
        close(v, want[k], f"runtime {k} after its descriptor was closed", 1e-5)
    clear_descriptor_caches()
    for _ in range(2):
        for k, v in run(q, xa).items():
            close(v, want[k], f"runtime {k} after the descriptor caches were cleared", 1e-5)
