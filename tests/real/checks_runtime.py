"""The handwritten runtime against the real library (HIP: the stub libamdhip64 the parent built, 2 devices).

Version checks read the real miopenGetVersion; the handle pool creates and destroys real handles; the descriptor
cache's layouts are what MIOpen sees; ConvPlanner in immediate mode picks from MIOpen's real solutions; the
runtime's own shape math (conv_output_dims, layout.num_bytes) is compared with the real library's answers.
"""

from __future__ import annotations

import gc
import itertools
import threading
import warnings

import miopen
from miopen import algo, descriptors, handles, hip, version
from miopen.errors import MIOpenVersionError, MIOpenVersionWarning, ShapeError
from miopen.ops import conv as ops_conv

from . import trace
from .common import DT, check, failing, handle, tensor

REAL = version.Version(2, 17, 0)


def expected_policy_outcome(bound: version.Version, runtime: version.Version, policy: str) -> str:
    """'error', 'warn' or 'ok' for a library of `runtime` bound to release `bound`, from the selection rules
    (runtime/version.py docstring), computed here."""
    if policy == "off" or bound == runtime:
        return "ok"
    if bound[:2] == runtime[:2]:
        return "warn"  # another patch release
    if policy == "strict" or runtime < bound:
        return "error"
    return "warn"  # a newer release than the bound one: what it added is unbound


def _outcome(policy: str) -> tuple[str, str]:
    version.reset_version_cache()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            got = version.check_miopen_versions(policy)  # type: ignore[arg-type]
        except MIOpenVersionError as exc:
            return "error", str(exc)
    assert got == REAL
    warned = [str(x.message) for x in w if issubclass(x.category, MIOpenVersionWarning)]
    return ("warn", warned[0]) if warned else ("ok", "")


@check("miopenGetVersion")
def version_policies() -> dict[str, str]:
    assert version.runtime_version() == REAL  # read from the real library
    compiled = version.compiled_version()
    assert miopen.bound_release() == str(compiled) == "2.17.0"  # the library's own version chose the layer
    out = {"compiled": str(compiled)}
    for policy in ("compatible", "strict", "off"):
        outcome, text = _outcome(policy)
        assert outcome == expected_policy_outcome(compiled, REAL, policy), (policy, outcome, text)
        if outcome == "error":
            assert "2.17.0" in text and str(compiled) in text and "libMIOpen" in text
        out[policy] = outcome
    # cached per library and policy: the second check does not call miopenGetVersion again
    version.reset_version_cache()
    try:
        version.check_miopen_versions("off")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                version.check_miopen_versions("strict")
            except MIOpenVersionError:
                pass
            m = trace.mark()
            try:
                version.check_miopen_versions("strict")
            except MIOpenVersionError:
                pass
    finally:
        version.reset_version_cache()
    out["cached"] = str(trace.count("miopenGetVersion", m) == 0 or out["strict"] == "error")
    return out


def _pool_policy() -> str:
    """The strictest policy the bound release passes with the real library ('off' when none does)."""
    compiled = version.compiled_version()
    for policy in ("strict", "compatible"):
        if expected_policy_outcome(compiled, REAL, policy) != "error":
            return policy
    return "off"


@check("miopenCreate", "miopenSetStream", "miopenDestroy")
def handle_pool() -> dict[str, object]:
    version.reset_version_cache()
    pool = handles.handle_pool()
    pool.close()
    compiled = version.compiled_version()
    out: dict[str, object] = {}
    if expected_policy_outcome(compiled, REAL, "compatible") == "error":
        # a mismatch refuses the first handle before any is created
        version.set_version_policy("compatible")
        m = trace.mark()
        try:
            handles.inline_miopen_handle(None, 0)
        except MIOpenVersionError as exc:
            out["compatible"] = f"refused before miopenCreate: {str(exc)[:60]}..."
        else:
            raise AssertionError("compatible policy accepted a mismatching library")
        assert trace.count("miopenCreate", m) == 0
    version.set_version_policy(_pool_policy())  # type: ignore[arg-type]
    try:
        m = trace.mark()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MIOpenVersionWarning)
            h0 = handles.inline_miopen_handle(None, 0)
        assert trace.count("miopenCreate", m) == 1 and not h0.closed
        assert handles.inline_miopen_handle(None, 0) is h0  # the same thread and device: the same handle
        assert trace.count("miopenCreate", m) == 1
        m = trace.mark()
        assert handles.inline_miopen_handle(0x1234, 0) is h0  # a new stream rebinds it ...
        assert trace.count("miopenSetStream", m) == 1
        handles.inline_miopen_handle(0x1234, 0)  # ... once
        assert trace.count("miopenSetStream", m) == 1
        h1 = handles.inline_miopen_handle(None, 1)  # another device, another handle
        assert h1 is not h0
        other: list[miopen.Handle] = []
        t = threading.Thread(target=lambda: other.append(handles.inline_miopen_handle(None, 0)))
        t.start()
        t.join()
        assert other[0] is not h0 and other[0] is not h1
        created = pool.size
        assert created == 3
        m = trace.mark()
        pool.close()
        assert trace.count("miopenDestroy", m) == created  # each real handle destroyed exactly once
        assert h0.closed and h1.closed
        out["policy used"] = _pool_policy()
        out["handles"] = created
    finally:
        version.set_version_policy("compatible")
        version.reset_version_cache()
    return out


@check("miopenSetTensorDescriptor", "miopenGetTensorDescriptor", "miopenGetTensorNumBytes",
       "miopenDestroyTensorDescriptor")
def descriptor_cache() -> int:
    import gc

    descriptors.clear_descriptor_caches()
    a = descriptors.tensor_descriptor("float32", (2, 3, 4, 5))
    assert descriptors.tensor_descriptor(DT.miopenFloat, [2, 3, 4, 5]) is a
    got = miopen.get_tensor_descriptor(a)
    assert (got.data_type, got.dims_a, got.strides_a) == (DT.miopenFloat, [2, 3, 4, 5], [60, 20, 5, 1])
    # NHWC storage: the logical NCHW dims with channels-last strides, as MIOpen sees them
    nhwc = descriptors.descriptor_from_order_and_dims("NHWC", (2, 4, 5, 3), "float16")
    got = miopen.get_tensor_descriptor(nhwc)
    assert (got.data_type, got.dims_a, got.strides_a) == (DT.miopenHalf, [2, 3, 4, 5], [60, 1, 15, 3])
    # size-1 dims: equal layouts share a descriptor whatever the stride of the size-1 dim
    b1 = descriptors.tensor_descriptor("float32", (2, 1, 4, 5), (20, 999, 5, 1))
    assert descriptors.tensor_descriptor("float32", (2, 1, 4, 5)) is b1
    # the runtime's byte counts (layout.num_bytes) against MIOpen's
    n = 0
    for dims, strides, dt in [((8, 64, 56, 56), None, "float32"), ((2, 3, 4, 5), (60, 1, 15, 3), "float16"),
                              ((3, 5, 7), (70, 14, 2), "float64"), ((1, 1, 1, 1, 9), None, "int8"),
                              ((4, 4), (1, 4), "bfloat16"), ((7,), (3,), "int32")]:
        d = descriptors.tensor_descriptor(dt, dims, strides)
        assert d.nbytes == miopen.get_tensor_num_bytes(d), (dims, strides, dt)
        n += 1
    distinct = len(descriptors.descriptor_cache())  # the NHWC half tensor above is one of them
    # cleared: each descriptor is destroyed once nobody holds it
    m = trace.mark()
    del a, nhwc, b1, d
    descriptors.clear_descriptor_caches()
    gc.collect()
    assert trace.count("miopenDestroyTensorDescriptor", m) == distinct
    return n


@check("miopenConvolutionForwardGetSolutionCount", "miopenConvolutionForwardGetSolution",
       "miopenConvolutionBackwardDataGetSolutionCount", "miopenConvolutionBackwardDataGetSolution",
       "miopenConvolutionBackwardWeightsGetSolutionCount", "miopenConvolutionBackwardWeightsGetSolution",
       "miopenInitConvolutionNdDescriptor")
def planner_immediate() -> dict[str, object]:
    """ConvPlanner('immediate') chooses from MIOpen's real solutions: the first in MIOpen's order that fits the
    workspace cap, with its workspace; cached by the whole problem."""
    h = handle()
    algo.algo_cache().clear()
    descriptors.clear_descriptor_caches()
    planner = algo.ConvPlanner("immediate", compile_ahead=False)
    cp = algo.ConvParams((1, 1), (1, 1), (1, 1))
    cd = descriptors.convolution_descriptor(cp.pads, cp.strides, cp.dilations)
    x = descriptors.tensor_descriptor("float32", (2, 4, 8, 8))
    w = descriptors.tensor_descriptor("float32", (8, 4, 3, 3))
    y = descriptors.tensor_descriptor("float32", (2, 8, 8, 8))
    out: dict[str, object] = {}
    sols = {
        "forward": miopen.convolution_forward_get_solution(h, w, x, cd, y, 32),
        "backward_data": miopen.convolution_backward_data_get_solution(h, y, w, cd, x, 32),
        "backward_weights": miopen.convolution_backward_weights_get_solution(h, y, x, cd, w, 32),
    }
    for direction, listed in sols.items():
        plan = planner.plan(h, direction, x, w, y, cd, cp, device=0)  # type: ignore[arg-type]
        first = listed[0]
        assert (plan.solution_id, plan.workspace_bytes, plan.algo, plan.fallback) == (
            first.solution_id, first.workspace_size, int(first.algorithm), None), direction
        m = trace.mark()
        assert planner.plan(h, direction, x, w, y, cd, cp, device=0) is plan  # type: ignore[arg-type]
        assert [c for c, _ in trace.CALLS[m:]] == []  # a cache hit calls nothing
        out[direction] = (plan.solution_id, miopen.ConvAlgorithm(plan.algo).name, plan.workspace_bytes)
    # a zero workspace cap still finds these (they need none)
    capped = algo.ConvPlanner("immediate", compile_ahead=False, workspace_limit_bytes=0)
    assert capped.plan(h, "forward", x, w, y, cd, cp, device=0).workspace_bytes == 0
    return out


@check()
def deterministic_on_2_17() -> str:
    """2.17.0 has no deterministic attribute (it came in 2.18): asking for it is a clear error, not a
    stray AttributeError or MIOpen's "Attribute does not exist"."""
    descriptors.clear_descriptor_caches()
    assert not version.has_feature("deterministic_attr")
    try:
        descriptors.convolution_descriptor((0, 0), (1, 1), (1, 1), deterministic=True)
    except NotImplementedError as exc:
        assert "deterministic" in str(exc) and "2.18" in str(exc) and "2.17.0" in str(exc)
        return str(exc)
    raise AssertionError("deterministic=True accepted by MIOpen 2.17.0")


def has_feature_table() -> dict[str, bool]:
    """What 2.17.0 offers, from its header and release notes (not from has_feature's own table)."""
    return {"get_version": True, "immediate": True, "fusion": True, "find2": False, "find2_preallocated": False,
            "deterministic_attr": False, "find_mode_api": False, "tensor_desc_v2": False, "batchnorm_v2": False,
            "seq_rnn": False, "solver_names": False}


@check()  # the version was read when the library was loaded: no call of its own
def features() -> dict[str, bool]:
    want = has_feature_table()
    got = {name: version.has_feature(name) for name in version.FEATURES}
    assert set(want) <= set(got), set(want) - set(got)
    assert {k: got[k] for k in want} == want
    # the find-mode API is exported by 2.17.0 (undeclared, for MIGraphX) but not part of its API: the bound
    # release's layer (and the version gate), not the symbol, decides
    from .common import _raw_lib

    assert hasattr(_raw_lib(), "miopenSetConvolutionFindMode") and not got["find_mode_api"]
    return got


@check("miopenGetConvolutionNdForwardOutputDim", "miopenConvolutionForwardGetSolutionCount",
       "miopenSetConvolutionGroupCount")
def conv_output_dims_vs_library() -> dict[str, int]:
    """The runtime's conv_output_dims (used to check y before any call) against the real library: where the
    runtime gives dims, MIOpen gives the same dims and a solution; where it raises ShapeError, MIOpen refuses the
    output dims or the convolution (our checks never refuse what MIOpen accepts)."""
    h = handle()
    counts = {"agree": 0, "both refuse": 0}
    for x, w, p, s, d, g, t, adj in itertools.product(
            [[1, 8, 2, 2], [2, 8, 7, 7], [1, 4, 5, 6], [1, 8, 3, 4, 5]],
            [[8, 8, 3, 3], [8, 4, 3, 3], [4, 2, 5, 5], [8, 2, 1, 1], [8, 8, 5, 5], [8, 4, 3, 2, 1]],
            [0, 2], [1, 2], [1, 2], [1, 2, 4], [False, True], [0, 1, -1]):
        if len(x) != len(w) or (adj and not t):
            continue
        nd = len(x) - 2
        try:
            mine = ops_conv.conv_output_dims(x, w, p, s, d, g, t, (adj,) * nd if t else None)
        except ShapeError:
            mine = None
        c = miopen.create_convolution_descriptor()
        miopen.init_convolution_nd_descriptor(c, [p] * nd, [s] * nd, [d] * nd,
                                              miopen.ConvolutionMode.miopenTranspose if t
                                              else miopen.ConvolutionMode.miopenConvolution)
        if g != 1:
            miopen.set_convolution_group_count(c, g)
        if t and adj:
            miopen.set_transpose_conv_nd_output_padding(c, [adj] * nd)
        xd, wd = tensor(x), tensor(w)
        status, _ = failing(lambda: miopen.get_convolution_nd_forward_output_dim(c, xd, wd))
        theirs = None
        if status == 0:
            dims = miopen.get_convolution_nd_forward_output_dim(c, xd, wd).output_tensor_dim_a
            if failing(lambda: miopen.convolution_forward_get_solution_count(h, wd, xd, c, tensor(dims)))[0] == 0:
                theirs = dims
        assert (None if mine is None else list(mine)) == theirs, (x, w, p, s, d, g, t, adj, mine, theirs)
        counts["agree" if theirs else "both refuse"] += 1
    return counts


@check("miopenGetPoolingNdForwardOutputDim", "miopenSetNdPoolingDescriptor", "miopenDestroyPoolingDescriptor")
def pooling_op_shape_check() -> str:
    """ops.pooling checks y against MIOpen's output dims before running: a wrong y is a ShapeError and
    miopenPoolingForward is never called; the pooling descriptor it made stays cached (shared by every
    stateless call of that geometry) until the descriptor caches are cleared, which destroys it."""
    from miopen.ops.pooling import pooling_forward
    from miopen.tensor import Tensor

    x = Tensor.make(hip.malloc(4 * 2 * 3 * 8 * 8), (2, 3, 8, 8), "float32")
    y = Tensor.make(hip.malloc(4 * 2 * 3 * 5 * 5), (2, 3, 5, 5), "float32")
    m = trace.mark()
    try:
        pooling_forward(x, y, "max", 2, 0, 2, handle=handle())
    except ShapeError as exc:
        message = str(exc)
    else:
        raise AssertionError("a wrong y was accepted")
    assert "(2, 3, 4, 4)" in message
    assert trace.count("miopenPoolingForward", m) == 0
    assert trace.count("miopenDestroyPoolingDescriptor", m) == 0  # kept for the next call of that geometry
    descriptors.clear_descriptor_caches()
    gc.collect()
    assert trace.count("miopenDestroyPoolingDescriptor", m) == 1
    return message


@check("miopenActivationForward", "miopenConvolutionForwardCompileSolution", isolated=True)
def ops_without_gpu() -> dict[str, str]:
    """Runtime ops that reach a kernel: MIOpen's failure comes back as its status exception, nothing cached."""
    from miopen.ops.activation import activation_forward
    from miopen.tensor import Tensor

    out = {}
    x = Tensor.make(hip.malloc(4 * 2 * 3 * 8 * 8), (2, 3, 8, 8), "float32")
    try:
        activation_forward(x, x, "relu", handle=handle())
    except miopen.MIOpenError as exc:
        out["activation_forward"] = type(exc).__name__
    algo.algo_cache().clear()
    planner = algo.ConvPlanner("immediate", compile_ahead=True)
    cp = algo.ConvParams((1, 1), (1, 1), (1, 1))
    cd = descriptors.convolution_descriptor(cp.pads, cp.strides, cp.dilations)
    xd = descriptors.tensor_descriptor("float32", (2, 4, 8, 8))
    wd = descriptors.tensor_descriptor("float32", (8, 4, 3, 3))
    yd = descriptors.tensor_descriptor("float32", (2, 8, 8, 8))
    try:
        planner.plan(handle(), "forward", xd, wd, yd, cd, cp, device=0)
    except miopen.MIOpenError as exc:
        out["ConvPlanner compile ahead"] = type(exc).__name__
    assert len(algo.algo_cache()) == 0
    return out


@check(isolated=True)
def real_hip_without_device() -> dict[str, str]:
    """Debian's real libamdhip64 on a machine with no GPU: the runtime's HIP layer reports it as HipError, the
    handle pool does not get as far as miopenCreate."""
    import os

    try:
        hip.set_hip_library("libamdhip64.so.5")
    except Exception as exc:  # noqa: BLE001
        return {"skip": f"no real libamdhip64: {exc}"}
    out = {}
    try:
        try:
            out["device_count"] = str(hip.device_count())
        except hip.HipError as exc:
            out["device_count"] = f"HipError {exc.name}"
        version.set_version_policy("off")
        m = trace.mark()
        try:
            handles.inline_miopen_handle()
        except hip.HipError as exc:
            out["inline_miopen_handle"] = f"HipError {exc.name}"
        assert trace.count("miopenCreate", m) == 0
    finally:
        version.set_version_policy("compatible")
        hip.set_hip_library(os.environ.get("MIOGEN_REAL_HIP"))
    return out

