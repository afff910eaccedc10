"""The ops (convolutions, fusion plans, tensor ops, reductions) driven through the stub libMIOpen.

Each test checks the call sequence and the argument values MIOpen requires, read back from the
stub's log; every bad input must raise before the first MIOpen call.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ..conftest import Libs

X, W, Y = 0x1000_0000, 0x2000_0000, 0x3000_0000  # device addresses of the test tensors


class Allocator:
    """A scripted device allocator: hands out distinct addresses, can fail, records frees."""

    def __init__(self, fail: bool = False, base: int = 0x7000_0000) -> None:
        self.fail = fail
        self.next = base
        self.allocated: list[tuple[int, int]] = []
        self.freed: list[int] = []
        self.emptied = 0

    def allocate(self, nbytes: int, stream: int | None) -> int:
        if self.fail:
            raise MemoryError(f"out of memory ({nbytes} bytes)")
        ptr, self.next = self.next, self.next + max(nbytes, 1) + 0x1000
        self.allocated.append((ptr, nbytes))
        return ptr

    def free(self, ptr: int, stream: int | None) -> None:
        self.freed.append(ptr)

    def empty_cache(self) -> None:
        self.emptied += 1


@pytest.fixture(autouse=True)
def _fresh(libs: Libs) -> Iterator[None]:
    from miopen import algo, descriptors, handles, version, workspace
    from miopen.ops import conv

    version.reset_version_cache()
    version.set_version_policy("compatible")
    handles.handle_pool().close()
    descriptors.descriptor_cache().clear()
    descriptors._conv_cache.clear()  # no public clear for the convolution descriptor cache
    algo.algo_cache().clear()
    workspace.set_workspace_limit(None)
    conv.set_default_planner(algo.ConvPlanner())
    yield
    workspace.set_workspace_limit(None)


def _ws(alloc: Allocator | None = None) -> Any:
    from miopen import workspace

    return workspace.MIOpenWorkspace(0, alloc or Allocator())


def _t(ptr: int, dims: tuple[int, ...], dtype: str = "float32", strides: tuple[int, ...] | None = None) -> Any:
    from miopen.tensor import Tensor

    return Tensor.make(ptr, dims, dtype, strides)


def _solutions(libs: Libs, fn: str, sols: list[tuple[float, int, int, int]]) -> None:
    """Script `fn`GetSolutionCount/GetSolution: (time, workspace_size, solution_id, algorithm) each."""
    libs.set_out(f"{fn}GetSolutionCount/solutionCount", len(sols))
    libs.set_out(f"{fn}GetSolution/solutionCount", len(sols))
    for k, (time, ws, sid, algo_) in enumerate(sols):
        libs.set_out(f"{fn}GetSolution/solutions[{k}].time", time)
        libs.set_out(f"{fn}GetSolution/solutions[{k}].workspace_size", ws)
        libs.set_out(f"{fn}GetSolution/solutions[{k}].solution_id", sid)
        libs.set_out(f"{fn}GetSolution/solutions[{k}].algorithm", algo_)


def _fwd(**kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"pads": (1, 1), "strides": (1, 1), "dilations": (1, 1)}
    base.update(kw)
    return base


# ===================================================================== output dims


def _cpp_formula(x: tuple[int, ...], w: tuple[int, ...], p: tuple[int, ...], s: tuple[int, ...],
                 d: tuple[int, ...], g: int, transpose: bool) -> tuple[int, ...]:
    """MIOpen's GetForwardOutputTensorWithLayout (default padding), transcribed with C++ integer division."""

    def cdiv(a: int, b: int) -> int:  # C++ truncates toward zero
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b > 0) else -q

    spatial = []
    for i in range(len(x) - 2):
        if transpose:
            spatial.append(max(1, s[i] * (x[2 + i] - 1) + 1 + d[i] * (w[2 + i] - 1) - 2 * p[i]))
        else:
            spatial.append(max(1, cdiv(x[2 + i] - (1 + d[i] * (w[2 + i] - 1)) + 2 * p[i], s[i]) + 1))
    c = w[1] * g if transpose else w[0]
    return (x[0], c, *spatial)


@pytest.mark.parametrize(
    ("x", "w", "p", "s", "d", "g", "t", "expect"),
    [
        ((1, 4, 8, 8), (8, 4, 3, 3), 1, 1, 1, 1, False, (1, 8, 8, 8)),
        ((2, 6, 9, 9), (12, 3, 3, 3), 0, 2, 1, 2, False, (2, 12, 4, 4)),
        ((1, 4, 10, 10), (8, 4, 3, 3), 0, 1, 2, 1, False, (1, 8, 6, 6)),
        ((1, 2, 5, 6, 7), (4, 2, 3, 3, 3), 1, (1, 2, 2), 1, 1, False, (1, 4, 5, 3, 4)),
        ((1, 8, 4, 4), (8, 3, 3, 3), 1, 2, 1, 1, True, (1, 3, 7, 7)),
        ((1, 8, 4, 4), (8, 2, 3, 3), 0, 1, 1, 4, True, (1, 8, 6, 6)),
        ((1, 4, 5, 5), (4, 3, 3, 3), 1, 2, 2, 2, True, (1, 6, 11, 11)),
        ((3, 32, 7, 7), (32, 1, 3, 3), 1, 1, 1, 32, False, (3, 32, 7, 7)),  # depthwise
    ],
)
def test_conv_output_dims_known_cases(x: Any, w: Any, p: Any, s: Any, d: Any, g: int, t: bool,
                                      expect: tuple[int, ...]) -> None:
    from miopen.ops.conv import conv_output_dims

    assert conv_output_dims(x, w, p, s, d, g, t) == expect


def test_conv_output_dims_matches_miopens_formula_and_brute_force() -> None:
    import miopen.errors as errors
    from miopen.ops.conv import conv_output_dims

    checked = 0
    for n_in, k, p, s, d in itertools.product(range(1, 9), range(1, 4), range(0, 3), range(1, 4), range(1, 3)):
        x, w = (1, 2, n_in, n_in + 1), (4, 2, k, k)
        span = d * (k - 1) + 1
        got = conv_output_dims(x, w, (p, p), (s, s), (d, d))
        if n_in + 2 * p < span:  # MIOpen clamps to 1 (and its solvers accept it: tests/real)
            assert got == _cpp_formula(x, w, (p, p), (s, s), (d, d), 1, False) and got[2] == 1
            continue
        assert got == _cpp_formula(x, w, (p, p), (s, s), (d, d), 1, False)
        # brute force: the window positions o with o*s + span <= n + 2p
        assert got[2] == sum(1 for o in range(n_in + 2 * p) if o * s + span <= n_in + 2 * p)
        # transposed: conv_output_dims inverts the forward shape (no output padding: the smallest such length)
        tx = (1, 4, got[2], got[3])
        if s * (got[2] - 1) + span - 2 * p < 1 or s * (got[3] - 1) + span - 2 * p < 1:
            # a transposed output that would vanish is clamped to 1, as MIOpen does
            assert conv_output_dims(tx, (4, 2, k, k), (p, p), (s, s), (d, d), 1, True) == \
                _cpp_formula(tx, (4, 2, k, k), (p, p), (s, s), (d, d), 1, True)
            continue
        tout = conv_output_dims(tx, (4, 2, k, k), (p, p), (s, s), (d, d), 1, True)
        assert tout == _cpp_formula(tx, (4, 2, k, k), (p, p), (s, s), (d, d), 1, True)
        assert conv_output_dims((1, 2, *tout[2:]), w, (p, p), (s, s), (d, d))[2:] == got[2:]
        checked += 1
    assert checked > 300


def test_conv_output_dims_agrees_with_the_library_call(libs: Libs) -> None:
    from miopen import api, descriptors
    from miopen.ops.conv import conv_output_dims

    cases = [((2, 6, 9, 9), (12, 3, 3, 3), (0, 0), (2, 2), (1, 1), 2, False),
             ((1, 4, 5, 5), (4, 3, 3, 3), (1, 1), (2, 2), (2, 2), 2, True),
             ((1, 2, 5, 6, 7), (4, 2, 3, 3, 3), (1, 1, 1), (1, 2, 2), (1, 1, 1), 1, False)]
    for x, w, p, s, d, g, t in cases:
        expect = _cpp_formula(x, w, p, s, d, g, t)  # what MIOpen computes, scripted into the stub
        libs.set_out("miopenGetTensorDescriptorSize/size", len(x))
        libs.set_out("miopenGetConvolutionNdForwardOutputDim/nDim", len(x))
        for k, v in enumerate(expect):
            libs.set_out(f"miopenGetConvolutionNdForwardOutputDim/outputTensorDimA[{k}]", v)
        cd = descriptors.convolution_descriptor(p, s, d, g, "transpose" if t else "conv")
        res = api.get_convolution_nd_forward_output_dim(cd, descriptors.tensor_descriptor("float32", x),
                                                        descriptors.tensor_descriptor("float32", w))
        # the stub writes only 3 elements of outputTensorDimA (it sizes the array from its own constant for
        # miopenGetTensorDescriptorSize, not from the scripted value), so compare the leading three
        assert res[0] == len(x) and tuple(res[1][:3]) == expect[:3]
        assert conv_output_dims(x, w, p, s, d, g, t) == expect


@pytest.mark.parametrize(
    ("args", "exc", "match"),
    [
        (((1, 4, 8, 8), (8, 3, 3, 3), 1, 1, 1), "ShapeError", "w_dims's dim 1 must be x_dims's channels / groups"),
        (((1, 6, 8, 8), (8, 3, 3, 3), 1, 1, 1, 4), "ShapeError", "divisible by groups"),
        (((1, 6, 8, 8), (9, 3, 3, 3), 1, 1, 1, 2), "ShapeError", "output channels \\(9\\) must be divisible"),
        (((1, 4, 8, 8), (8, 4, 3, 3), (1, 1, 1), 1, 1), "ShapeError", "pads needs 2 values"),
        (((1, 4, 8, 8), (8, 4, 3, 3), 1, 0, 1), "ShapeError", "strides must be >= 1"),
        (((1, 4, 8, 8), (8, 4, 3, 3), -1, 1, 1), "ShapeError", "pads must be >= 0"),
        (((1, 4, 8), (8, 4, 3), 1, 1, 1), "ShapeError", "4-D .* or 5-D"),
        (((1, 4, 8, 8), (8, 4, 3, 3), 1, 1, 1, True), "TypeError", "groups must be an int"),
        (((1, 4, 8, 8), (3, 4, 3, 3), 1, 1, 1, 1, True), "ShapeError", "transposed convolution w_dims's dim 0"),
        (((1, 4, 8, 8), (8, 4, 3, 3), "1", 1, 1), "TypeError", "pads must be an int or a sequence"),
    ],
)
def test_conv_output_dims_errors_name_the_argument(args: tuple[Any, ...], exc: str, match: str) -> None:
    import miopen.errors as errors
    from miopen.ops.conv import conv_output_dims

    with pytest.raises(getattr(errors, exc, TypeError), match=match):
        conv_output_dims(*args)


# ===================================================================== convolutions: immediate mode


def test_immediate_forward_sequence_and_cache(libs: Libs) -> None:
    from miopen.ops.conv import conv_forward

    _solutions(libs, "miopenConvolutionForward", [(2.0, 0, 11, 0), (1.0, 4096, 22, 1)])
    alloc = Allocator()
    ws = _ws(alloc)
    x, w, y = _t(X, (1, 4, 8, 8)), _t(W, (8, 4, 3, 3)), _t(Y, (1, 8, 8, 8))
    plan = conv_forward(x, w, y, **_fwd(), workspace=ws)
    assert (plan.mode, plan.solution_id, plan.workspace_bytes, plan.fallback) == ("immediate", 22, 4096, None)
    calls = libs.calls()
    order = [calls.index(f"miopenConvolutionForward{s}")
             for s in ("GetSolutionCount", "GetSolution", "CompileSolution", "Immediate")]
    assert order == sorted(order)
    assert libs.log("miopenConvolutionForwardCompileSolution")[0]["solution_id"] == "22"
    run = libs.log("miopenConvolutionForwardImmediate")[0]
    assert (run["solution_id"], run["workSpaceSize"], run["workSpace"]) == ("22", "4096", str(alloc.allocated[0][0]))
    assert alloc.allocated[0][1] == 4096
    assert (run["x"], run["w"], run["y"]) == (str(X), str(W), str(Y))
    # a second identical problem: no search, no compile; the same solution runs
    again = conv_forward(x, w, y, **_fwd(), workspace=ws)
    assert again is plan
    calls = libs.calls()
    for fn in ("GetSolutionCount", "GetSolution", "CompileSolution"):
        assert calls.count(f"miopenConvolutionForward{fn}") == 1
    assert calls.count("miopenConvolutionForwardImmediate") == 2
    assert len(alloc.allocated) == 1  # the grow-only workspace is reused


@pytest.mark.parametrize("forget_checks", [False, True])
def test_memoised_shapes_each_keep_their_own_plan(libs: Libs, forget_checks: bool) -> None:
    """The class: a call on a shape seen before reuses that shape's plan and no other's, whether its arguments
    were memoised (their checked shape stands for them in the plan memo), the check memo was emptied meanwhile
    (overflow: new tokens, the planner's cache answers), or they cannot be memoised (a list of pads)."""
    from miopen.ops import conv

    _solutions(libs, "miopenConvolutionForward", [(1.0, 0, 11, 0)])
    shapes = {"a": ((1, 4, 8, 8), (1, 8, 8, 8)), "b": ((1, 4, 10, 10), (1, 8, 10, 10)),
              "c": ((2, 4, 8, 8), (2, 8, 8, 8))}
    tensors = {k: (_t(X, xd), _t(W, (8, 4, 3, 3)), _t(Y, yd)) for k, (xd, yd) in shapes.items()}
    plans = {k: conv.conv_forward(*t, **_fwd()) for k, t in tensors.items()}
    assert len({id(p) for p in plans.values()}) == 3
    assert {k: p.key.x[0] for k, p in plans.items()} == {k: xd for k, (xd, _) in shapes.items()}
    searches = libs.calls().count("miopenConvolutionForwardGetSolution")
    if forget_checks:
        conv._CHECKED.clear()
    for k in ("b", "a", "c", "a"):
        assert conv.conv_forward(*tensors[k], **_fwd()) is plans[k]
        assert conv.conv_forward(*tensors[k], **_fwd(pads=[1, 1])) is plans[k]  # not memoisable: the full key
    assert libs.calls().count("miopenConvolutionForwardGetSolution") == searches  # no shape planned again


def test_immediate_backward_data_and_weights_roles(libs: Libs) -> None:
    from miopen.ops.conv import conv_backward_data, conv_backward_weights

    _solutions(libs, "miopenConvolutionBackwardData", [(1.0, 0, 31, 0)])
    _solutions(libs, "miopenConvolutionBackwardWeights", [(1.0, 512, 41, 1)])
    dy, w, dx = _t(Y, (2, 8, 8, 8)), _t(W, (8, 4, 3, 3)), _t(X, (2, 4, 8, 8))
    p = conv_backward_data(dy, w, dx, **_fwd(), workspace=_ws())
    assert p.key.direction == "backward_data" and p.solution_id == 31
    run = libs.log("miopenConvolutionBackwardDataImmediate")[0]
    assert (run["dy"], run["w"], run["dx"], run["solution_id"]) == (str(Y), str(W), str(X), "31")
    x, dw = _t(X, (2, 4, 8, 8)), _t(W, (8, 4, 3, 3))
    q = conv_backward_weights(dy, x, dw, **_fwd(), workspace=_ws())
    assert q.key.direction == "backward_weights" and q.workspace_bytes == 512
    run = libs.log("miopenConvolutionBackwardWeightsImmediate")[0]
    assert (run["dy"], run["x"], run["dw"], run["workSpaceSize"]) == (str(Y), str(X), str(W), "512")
    assert "miopenConvolutionForwardImmediate" not in libs.calls()


# ===================================================================== legacy find


def test_find_mode_queries_workspace_before_find_and_runs_with_it(libs: Libs) -> None:
    from miopen import algo
    from miopen.ops.conv import conv_forward

    libs.set_out("miopenConvolutionForwardGetWorkSpaceSize/workSpaceSize", 2048)
    libs.set_out("miopenFindConvolutionForwardAlgorithm/returnedAlgoCount", 1)
    libs.set_out("miopenFindConvolutionForwardAlgorithm/perfResults[0].memory", 1024)
    libs.set_out("miopenFindConvolutionForwardAlgorithm/perfResults[0].fwd_algo", 3)
    alloc = Allocator()
    ws = _ws(alloc)
    planner = algo.ConvPlanner("find", cache=algo.AlgoCache())
    plan = conv_forward(_t(X, (1, 4, 8, 8)), _t(W, (8, 4, 3, 3)), _t(Y, (1, 8, 8, 8)), **_fwd(), planner=planner,
                        workspace=ws)
    calls = libs.calls()
    assert calls.index("miopenConvolutionForwardGetWorkSpaceSize") < calls.index("miopenFindConvolutionForwardAlgorithm")
    find = libs.log("miopenFindConvolutionForwardAlgorithm")[0]
    assert (find["workSpaceSize"], find["workSpace"]) == ("2048", str(ws.ptr))
    assert (find["x"], find["w"], find["y"]) == (str(X), str(W), str(Y))
    assert (plan.algo, plan.workspace_bytes) == (3, 1024)
    run = libs.log("miopenConvolutionForward")[0]
    assert (run["algo"], run["workSpaceSize"], run["alpha"], run["beta"]) == ("3", "1024", "1", "0")
    assert calls.index("miopenFindConvolutionForwardAlgorithm") < calls.index("miopenConvolutionForward")
    conv_forward(_t(X, (1, 4, 8, 8)), _t(W, (8, 4, 3, 3)), _t(Y, (1, 8, 8, 8)), **_fwd(), planner=planner,
                 workspace=ws)
    assert libs.calls().count("miopenFindConvolutionForwardAlgorithm") == 1
    assert libs.calls().count("miopenConvolutionForward") == 2


def test_find_mode_3d_beta_keeps_the_output_out_of_the_search(libs: Libs) -> None:
    from miopen import algo
    from miopen.ops.conv import conv_backward_weights

    libs.set_out("miopenConvolutionBackwardWeightsGetWorkSpaceSize/workSpaceSize", 0)
    libs.set_out("miopenFindConvolutionBackwardWeightsAlgorithm/returnedAlgoCount", 1)
    libs.set_out("miopenFindConvolutionBackwardWeightsAlgorithm/perfResults[0].memory", 0)
    # the algorithm union: the stub writes its first member (fwd_algo); the planner reads bwd_weights_algo
    libs.set_out("miopenFindConvolutionBackwardWeightsAlgorithm/perfResults[0].fwd_algo", 1)
    alloc = Allocator()
    dy, x, dw = _t(Y, (1, 8, 4, 4, 4)), _t(X, (1, 4, 4, 4, 4)), _t(W, (8, 4, 3, 3, 3))
    conv_backward_weights(dy, x, dw, pads=1, strides=1, dilations=1, alpha=2.0, beta=1.0,
                          planner=algo.ConvPlanner("find", cache=algo.AlgoCache()), workspace=_ws(alloc))
    find = libs.log("miopenFindConvolutionBackwardWeightsAlgorithm")[0]
    scratch = alloc.allocated[0][0]
    assert find["dw"] == str(scratch) != str(W)  # Find wrote into scratch, not into the accumulated dw
    assert alloc.allocated[0][1] == 8 * 4 * 27 * 4 and scratch in alloc.freed
    run = libs.log("miopenConvolutionBackwardWeights")[0]
    assert (run["dw"], run["alpha"], run["beta"], run["algo"]) == (str(W), "2", "1", "1")


# ===================================================================== fallbacks


def test_cap_forces_the_zero_workspace_fallback(libs: Libs) -> None:
    from miopen import algo
    from miopen.ops.conv import conv_forward

    _solutions(libs, "miopenConvolutionForward", [(1.0, 1 << 30, 7, 5), (3.0, 4 << 20, 8, 1), (5.0, 0, 9, 0)])
    planner = algo.ConvPlanner("immediate", workspace_limit_bytes=1 << 20, cache=algo.AlgoCache())
    plan = conv_forward(_t(X, (1, 4, 8, 8)), _t(W, (8, 4, 3, 3)), _t(Y, (1, 8, 8, 8)), **_fwd(), planner=planner,
                        workspace=_ws())
    assert (plan.solution_id, plan.workspace_bytes) == (9, 0)  # the only candidate within the cap: GEMM
    assert plan.fallback is not None and "1073741824" in plan.fallback and "1048576" in plan.fallback
    run = libs.log("miopenConvolutionForwardImmediate")[0]
    assert (run["solution_id"], run["workSpaceSize"], run["workSpace"]) == ("9", "0", "0")


def test_out_of_memory_falls_back_and_the_fallback_is_cached(libs: Libs) -> None:
    from miopen.ops.conv import conv_forward

    _solutions(libs, "miopenConvolutionForward", [(1.0, 8192, 5, 3), (4.0, 0, 6, 0)])
    alloc = Allocator(fail=True)
    ws = _ws(alloc)
    x, w, y = _t(X, (1, 4, 8, 8)), _t(W, (8, 4, 3, 3)), _t(Y, (1, 8, 8, 8))
    plan = conv_forward(x, w, y, **_fwd(), workspace=ws)
    assert (plan.solution_id, plan.workspace_bytes) == (6, 0)
    assert plan.fallback is not None and "out of memory" in plan.fallback
    assert alloc.emptied == 1  # the allocator cache was emptied before giving up
    assert libs.log("miopenConvolutionForwardCompileSolution")[0]["solution_id"] == "6"
    assert libs.log("miopenConvolutionForwardImmediate")[0]["solution_id"] == "6"
    conv_forward(x, w, y, **_fwd(), workspace=ws)
    assert libs.calls().count("miopenConvolutionForwardGetSolution") == 1
    assert [e["solution_id"] for e in libs.log("miopenConvolutionForwardImmediate")] == ["6", "6"]


def test_out_of_memory_prefers_gemm_among_zero_workspace_solutions(libs: Libs) -> None:
    from miopen.ops.conv import conv_forward

    _solutions(libs, "miopenConvolutionForward", [(1.0, 8192, 5, 3), (2.0, 0, 6, 1), (4.0, 0, 7, 0)])
    plan = conv_forward(_t(X, (1, 4, 8, 8)), _t(W, (8, 4, 3, 3)), _t(Y, (1, 8, 8, 8)), **_fwd(),
                        workspace=_ws(Allocator(fail=True)))
    assert plan.solution_id == 7  # GEMM (algorithm 0), as PyTorch's getSolution(force_default=true) does


# ===================================================================== descriptors, 3-D, scaling


def test_groups_dilation_transpose_reach_the_descriptor(libs: Libs) -> None:
    from miopen.ops.conv import conv_forward

    _solutions(libs, "miopenConvolutionForward", [(1.0, 0, 1, 0)])
    x, w, y = _t(X, (1, 4, 5, 5)), _t(W, (4, 3, 3, 3)), _t(Y, (1, 6, 11, 11))
    plan = conv_forward(x, w, y, pads=(1, 1), strides=(2, 2), dilations=(2, 2), groups=2, transpose=True,
                        workspace=_ws())
    init = libs.log("miopenInitConvolutionNdDescriptor")[0]
    assert (init["spatialDim"], init["padA"], init["strideA"], init["dilationA"], init["c_mode"]) == \
        ("2", "[1,1]", "[2,2]", "[2,2]", "1")
    assert libs.log("miopenSetConvolutionGroupCount")[0]["groupCount"] == "2"
    assert plan.key.conv.groups == 2 and plan.key.conv.transpose
    dims = {e["dimsA"] for e in libs.log("miopenSetTensorDescriptor")}
    assert {"[1,4,5,5]", "[4,3,3,3]", "[1,6,11,11]"} <= dims


def test_plain_convolution_sets_no_group_count(libs: Libs) -> None:
    from miopen.ops.conv import conv_forward

    _solutions(libs, "miopenConvolutionForward", [(1.0, 0, 1, 0)])
    conv_forward(_t(X, (1, 4, 8, 8)), _t(W, (8, 4, 3, 3)), _t(Y, (1, 8, 8, 8)), **_fwd(), workspace=_ws())
    assert libs.log("miopenInitConvolutionNdDescriptor")[0]["c_mode"] == "0"
    assert "miopenSetConvolutionGroupCount" not in libs.calls()


def test_three_d_convolution(libs: Libs) -> None:
    from miopen.ops.conv import conv_forward

    _solutions(libs, "miopenConvolutionForward", [(1.0, 256, 3, 1)])
    x, w, y = _t(X, (2, 4, 6, 8, 8)), _t(W, (8, 2, 3, 3, 3)), _t(Y, (2, 8, 6, 4, 4))
    plan = conv_forward(x, w, y, pads=1, strides=(1, 2, 2), dilations=1, groups=2, workspace=_ws())
    init = libs.log("miopenInitConvolutionNdDescriptor")[0]
    assert (init["spatialDim"], init["padA"], init["strideA"]) == ("3", "[1,1,1]", "[1,2,2]")
    assert libs.log("miopenSetConvolutionGroupCount")[0]["groupCount"] == "2"
    assert any(e["nbDims"] == "5" and e["dimsA"] == "[2,8,6,4,4]" for e in libs.log("miopenSetTensorDescriptor"))
    assert libs.log("miopenConvolutionForwardImmediate")[0]["workSpaceSize"] == "256" and plan.solution_id == 3


@pytest.mark.parametrize("which", ["forward", "backward_data", "backward_weights"])
@pytest.mark.parametrize(("alpha", "beta"), [(2.0, 0.0), (1.0, 1.0)])
def test_2d_scaling_rule_raises_before_any_call(libs: Libs, which: str, alpha: float, beta: float) -> None:
    import miopen.errors as errors
    from miopen.ops import conv

    x, w, y = _t(X, (1, 4, 8, 8)), _t(W, (8, 4, 3, 3)), _t(Y, (1, 8, 8, 8))
    fn, args = {"forward": (conv.conv_forward, (x, w, y)), "backward_data": (conv.conv_backward_data, (y, w, x)),
                "backward_weights": (conv.conv_backward_weights, (y, x, w))}[which]
    before = libs.calls()
    with pytest.raises(errors.ScalingRuleError, match="alpha=1 and beta=0"):
        fn(*args, **_fwd(), alpha=alpha, beta=beta)
    assert libs.calls() == before


def test_3d_scaling_in_immediate_mode_is_blended_with_op_tensor(libs: Libs) -> None:
    from miopen.ops.conv import conv_forward

    _solutions(libs, "miopenConvolutionForward", [(1.0, 0, 4, 0)])
    alloc = Allocator()
    x, w, y = _t(X, (1, 2, 4, 4, 4)), _t(W, (3, 2, 1, 1, 1)), _t(Y, (1, 3, 4, 4, 4))
    conv_forward(x, w, y, pads=0, strides=1, dilations=1, alpha=2.0, beta=0.5, workspace=_ws(alloc))
    tmp, nbytes = alloc.allocated[0]
    assert nbytes == 3 * 64 * 4 and tmp in alloc.freed
    run = libs.log("miopenConvolutionForwardImmediate")[0]
    assert run["y"] == str(tmp)  # immediate mode takes no alpha/beta: it writes a temporary
    blend = libs.log("miopenOpTensor")[0]
    assert (blend["tensorOp"], blend["alpha1"], blend["A"], blend["alpha2"], blend["beta"], blend["C"]) == \
        ("0", "2", str(tmp), "0", "0.5", str(Y))
    calls = libs.calls()
    assert calls.index("miopenConvolutionForwardImmediate") < calls.index("miopenOpTensor")


def test_3d_unit_scaling_runs_directly(libs: Libs) -> None:
    from miopen.ops.conv import conv_forward

    _solutions(libs, "miopenConvolutionForward", [(1.0, 0, 4, 0)])
    alloc = Allocator()
    conv_forward(_t(X, (1, 2, 4, 4, 4)), _t(W, (3, 2, 1, 1, 1)), _t(Y, (1, 3, 4, 4, 4)), pads=0, strides=1,
                 dilations=1, workspace=_ws(alloc))
    assert libs.log("miopenConvolutionForwardImmediate")[0]["y"] == str(Y)
    assert "miopenOpTensor" not in libs.calls() and not alloc.allocated


# ===================================================================== bad inputs: nothing reaches MIOpen


class _NullPtr:
    """A PyTorch-like tensor whose data_ptr() is 0."""

    shape = (1, 4, 8, 8)
    dtype = "float32"

    def data_ptr(self) -> int:
        return 0

    def stride(self) -> tuple[int, ...]:
        return (256, 64, 8, 1)


_BAD_CONV = [
    ("y dims", dict(y=((1, 8, 7, 7), "float32")), "ShapeError", "y must have dims \\(1, 8, 8, 8\\)"),
    ("w channels", dict(w=((8, 3, 3, 3), "float32")), "ShapeError", "w's dim 1 must be x's channels"),
    ("groups", dict(groups=3), "ShapeError", "divisible by groups"),
    ("dtype", dict(w=((8, 4, 3, 3), "float16")), "ShapeError", "share one dtype.*w=miopenHalf"),
    ("rank", dict(y=((1, 8, 8, 8, 1), "float32")), "ShapeError", "same rank"),
    ("ndim", dict(x=((4, 8, 8), "float32")), "ShapeError", "x must be 4-D"),
    ("pads", dict(pads=(1, 1, 1)), "ShapeError", "pads needs 2 values"),
    ("dilations", dict(dilations=(0, 1)), "ShapeError", "dilations must be >= 1"),
    ("alpha type", dict(alpha=True), "TypeError", "alpha must be a real number"),
    ("transpose type", dict(transpose=1), "TypeError", "transpose must be a bool"),
    ("not a tensor", dict(x="x"), "TypeError", "x must be a miopen Tensor"),
    ("null pointer", dict(x=_NullPtr()), "ValueError", "null device address"),
    ("planner", dict(planner="immediate"), "TypeError", "planner must be a ConvPlanner"),
]


def test_null_tensor_is_refused() -> None:
    from miopen.tensor import Tensor

    with pytest.raises(ValueError, match="a null device address for a tensor of dims"):
        Tensor.make(0, (1, 4, 8, 8), "float32")


@pytest.mark.parametrize(("case", "change", "exc", "match"), _BAD_CONV, ids=[c[0] for c in _BAD_CONV])
def test_bad_conv_inputs_raise_before_any_call(libs: Libs, case: str, change: dict[str, Any], exc: str,
                                               match: str) -> None:
    import miopen.errors as errors
    from miopen.ops.conv import conv_forward

    kw: dict[str, Any] = {**_fwd(), "workspace": _ws()}
    tensors: dict[str, Any] = {"x": _t(X, (1, 4, 8, 8)), "w": _t(W, (8, 4, 3, 3)), "y": _t(Y, (1, 8, 8, 8))}
    ptrs = {"x": X, "w": W, "y": Y}
    for k, v in change.items():
        if k in tensors and isinstance(v, tuple):
            tensors[k] = _t(v[2] if len(v) > 2 else ptrs[k], v[0], v[1])
        elif k in tensors:
            tensors[k] = v
        else:
            kw[k] = v
    before = libs.calls()
    with pytest.raises(getattr(errors, exc, None) or {"TypeError": TypeError, "ValueError": ValueError}[exc],
                       match=match):
        conv_forward(tensors["x"], tensors["w"], tensors["y"], **kw)
    assert libs.calls() == before


def test_backward_bias(libs: Libs) -> None:
    import miopen.errors as errors
    from miopen.ops.conv import conv_backward_bias

    dy, db = _t(Y, (2, 8, 5, 5)), _t(W, (1, 8, 1, 1))
    conv_backward_bias(dy, db)
    call = libs.log("miopenConvolutionBackwardBias")[0]
    assert (call["dy"], call["db"], call["alpha"], call["beta"]) == (str(Y), str(W), "1", "0")
    before = libs.calls()
    with pytest.raises(errors.ShapeError, match="db must have dims \\(1, 8, 1, 1\\)"):
        conv_backward_bias(dy, _t(W, (8,)))
    with pytest.raises(errors.ScalingRuleError, match="alpha=1 and beta=0"):
        conv_backward_bias(_t(Y, (2, 8, 5, 5, 5)), _t(W, (1, 8, 1, 1, 1)), beta=1.0)
    assert libs.calls() == before


# ===================================================================== fusion


def _cba(**kw: Any) -> Any:
    from miopen.ops.fusion import FusionPlan

    return FusionPlan.conv_bias_activation((1, 4, 8, 8), (8, 4, 3, 3), "float32", pads=1, strides=1, dilations=1,
                                           **kw)


def test_fusion_conv_bias_activation_compiles_once_executes_many(libs: Libs) -> None:
    from miopen import api

    plan = _cba()
    assert plan.ops == ("conv", "bias", "activation") and plan.output_dims == (1, 8, 8, 8)
    calls = libs.calls()
    assert calls.index("miopenCreateFusionPlan") < calls.index("miopenCreateOpConvForward") < \
        calls.index("miopenCreateOpBiasForward") < calls.index("miopenCreateOpActivationForward")
    assert libs.log("miopenCreateFusionPlan")[0]["fuseDirection"] == str(int(api.FusionDirection.miopenVerticalFusion))
    assert libs.log("miopenCreateOpActivationForward")[0]["mode"] == str(int(api.ActivationMode.miopenActivationRELU))
    assert any(e["dimsA"] == "[1,8,1,1]" for e in libs.log("miopenSetTensorDescriptor"))  # the bias descriptor
    plan.compile()
    plan.compile()  # once only
    x, y, w, b = _t(X, (1, 4, 8, 8)), _t(Y, (1, 8, 8, 8)), _t(W, (8, 4, 3, 3)), _t(0x4000_0000, (1, 8, 1, 1))
    for i in range(3):
        plan.execute(x, y, w=w, bias=b, activ_alpha=0.5 * i)
    calls = libs.calls()
    assert calls.count("miopenCompileFusionPlan") == 1 and plan.compile_count == 1
    assert calls.count("miopenCreateOperatorArgs") == 1
    assert calls.count("miopenExecuteFusionPlan") == 3
    assert [e["w"] for e in libs.log("miopenSetOpArgsConvForward")] == [str(W)] * 3
    assert libs.log("miopenSetOpArgsBiasForward")[0]["bias"] == str(0x4000_0000)
    assert [e["activAlpha"] for e in libs.log("miopenSetOpArgsActivForward")] == ["0", "0.5", "1"]
    run = libs.log("miopenExecuteFusionPlan")[0]
    assert (run["input"], run["output"]) == (str(X), str(Y))
    assert calls.index("miopenCompileFusionPlan") < calls.index("miopenExecuteFusionPlan")
    plan.close()
    plan.close()
    calls = libs.calls()
    assert calls.count("miopenDestroyFusionPlan") == 1 and calls.count("miopenDestroyOperatorArgs") == 1
    with pytest.raises(ValueError, match="closed"):
        plan.execute(x, y, w=w, bias=b)


def test_fusion_unsupported_combination_becomes_fusion_error(libs: Libs) -> None:
    import miopen.errors as errors

    plan = _cba(activation=None)
    libs.set_status("miopenCompileFusionPlan", 8, once=True)  # miopenStatusUnsupportedOp
    with pytest.raises(errors.FusionError) as e:
        plan.compile()
    msg = str(e.value)
    assert "conv(w=(8, 4, 3, 3)" in msg and "bias(1, 8, 1, 1)" in msg and "x=(1, 4, 8, 8)" in msg
    assert "miopenStatusUnsupportedOp" in msg
    assert isinstance(e.value.__cause__, errors.MIOpenError) and e.value.__cause__.status == 8
    assert not plan.compiled and "miopenCreateOperatorArgs" not in libs.calls()
    libs.set_status("miopenCompileFusionPlan", 3, once=True)  # BadParm
    with pytest.raises(errors.FusionError, match="miopenStatusBadParm"):
        plan.compile()
    plan.close()


def test_fusion_execute_before_compile_and_bad_arguments(libs: Libs) -> None:
    import miopen.errors as errors

    plan = _cba()
    x, y, w, b = _t(X, (1, 4, 8, 8)), _t(Y, (1, 8, 8, 8)), _t(W, (8, 4, 3, 3)), _t(0x4000_0000, (1, 8, 1, 1))
    before = libs.calls()
    with pytest.raises(errors.FusionError, match="compile\\(\\) the plan before executing"):
        plan.execute(x, y, w=w, bias=b)
    assert libs.calls() == before
    plan.compile()
    before = libs.calls()
    with pytest.raises(ValueError, match="bias missing"):
        plan.execute(x, y, w=w)
    with pytest.raises(ValueError, match="bn_scale given but the plan has no op"):
        plan.execute(x, y, w=w, bias=b, bn_scale=b)
    with pytest.raises(errors.ShapeError, match="y must be \\(1, 8, 8, 8\\)"):
        plan.execute(x, _t(Y, (1, 8, 6, 6)), w=w, bias=b)
    with pytest.raises(errors.ShapeError, match="w must be \\(8, 4, 3, 3\\)"):
        plan.execute(x, y, w=_t(W, (8, 4, 1, 1)), bias=b)
    with pytest.raises(errors.ShapeError, match="x's strides"):
        plan.execute(_t(X, (1, 4, 8, 8), strides=(256, 1, 32, 4)), y, w=w, bias=b)
    with pytest.raises(errors.FusionError, match="ops cannot be added"):
        plan.add_activation(1)
    assert libs.calls() == before
    plan.close()


def test_fusion_op_order_is_checked_before_any_call(libs: Libs) -> None:
    import miopen.errors as errors
    from miopen.ops.fusion import FusionPlan

    plan = FusionPlan((1, 4, 8, 8), "float32")
    before = libs.calls()
    with pytest.raises(errors.FusionError, match="bias must directly follow a convolution"):
        plan.add_bias()
    plan.add_activation(3)
    n = len(libs.calls())
    with pytest.raises(errors.FusionError, match="nothing can follow the activation"):
        plan.add_batch_norm_inference()
    assert len(libs.calls()) == n and before != libs.calls()
    plan.close()
    bn = FusionPlan((1, 4, 8, 8), "float32").add_batch_norm_inference()
    n = len(libs.calls())
    with pytest.raises(errors.FusionError, match="the convolution must be the first op"):
        bn.add_conv((8, 4, 3, 3), pads=1, strides=1, dilations=1)
    with pytest.raises(errors.FusionError, match="already has a batch_norm_inference op"):
        bn.add_batch_norm_inference()
    assert len(libs.calls()) == n
    bn.close()
    with pytest.raises(errors.ShapeError, match="x_dims must be 4-D or 5-D"):
        FusionPlan((4, 8, 8), "float32")


def test_fusion_batch_norm_activation(libs: Libs) -> None:
    import miopen.errors as errors
    from miopen import api
    from miopen.ops.fusion import FusionPlan

    with FusionPlan.batch_norm_activation((2, 16, 7, 7), "float16") as plan:
        bn = libs.log("miopenCreateOpBatchNormInference")[0]
        assert bn["bn_mode"] == str(int(api.BatchNormMode.miopenBNSpatial))
        # the parameter descriptor: (1, C, 1, 1), float for a half input
        assert any(e["dimsA"] == "[1,16,1,1]" and e["dataType"] == "1" for e in libs.log("miopenSetTensorDescriptor"))
        plan.compile()
        x, y = _t(X, (2, 16, 7, 7), "float16"), _t(Y, (2, 16, 7, 7), "float16")
        params = {n: _t(0x5000_0000 + 0x1000 * i, (1, 16, 1, 1)) for i, n in
                  enumerate(("bn_scale", "bn_bias", "bn_mean", "bn_variance"))}
        plan.execute(x, y, **params, epsilon=1e-3)
        args = libs.log("miopenSetOpArgsBatchNormInference")[0]
        assert (args["bnScale"], args["estimatedVariance"]) == (str(0x5000_0000), str(0x5000_3000))
        assert float(args["epsilon"]) == pytest.approx(1e-3)
        before = libs.calls()
        with pytest.raises(errors.ShapeError, match="bn_mean must be \\(1, 16, 1, 1\\) miopenFloat"):
            plan.execute(x, y, **{**params, "bn_mean": _t(0x6000_0000, (1, 16, 1, 1), "float16")})
        with pytest.raises(ValueError, match="epsilon must be > 0"):
            plan.execute(x, y, **params, epsilon=0.0)
        assert libs.calls() == before
    assert libs.calls().count("miopenDestroyFusionPlan") == 1


# ===================================================================== tensor ops


def test_transform_nchw_to_nhwc_passes_the_strides(libs: Libs) -> None:
    from miopen.ops.tensor_ops import to_channels_first, to_channels_last

    x = _t(X, (2, 3, 4, 5))
    y = to_channels_last(x, Y)
    assert y.strides == (60, 1, 15, 3) and y.dims == x.dims and y.ptr == Y
    descs = [(e["dimsA"], e["stridesA"]) for e in libs.log("miopenSetTensorDescriptor")]
    assert ("[2,3,4,5]", "[60,20,5,1]") in descs and ("[2,3,4,5]", "[60,1,15,3]") in descs
    call = libs.log("miopenTransformTensor")[0]
    assert (call["x"], call["y"], call["alpha"], call["beta"]) == (str(X), str(Y), "1", "0")
    back = to_channels_first(y, 0x9000_0000)
    assert back.strides == (60, 20, 5, 1)
    assert libs.log("miopenTransformTensor")[1]["y"] == str(0x9000_0000)
    z = to_channels_last(_t(X, (1, 2, 3, 4, 5)), Y)
    assert z.strides == (120, 1, 40, 10, 2)


def test_transform_tensor_checks(libs: Libs) -> None:
    import miopen.errors as errors
    from miopen.ops.tensor_ops import transform_tensor

    before = libs.calls()
    with pytest.raises(errors.ShapeError, match="same logical dims"):
        transform_tensor(_t(X, (2, 3, 4, 5)), _t(Y, (2, 5, 4, 3)))
    with pytest.raises(errors.ShapeError, match="share one dtype"):
        transform_tensor(_t(X, (2, 3, 4, 5)), _t(Y, (2, 3, 4, 5), "float16"))
    with pytest.raises(errors.ShapeError, match="got miopenInt8"):
        transform_tensor(_t(X, (2, 3, 4, 5), "int8"), _t(Y, (2, 3, 4, 5), "int8"))
    assert libs.calls() == before
    transform_tensor(_t(X, (2, 3)), _t(Y, (2, 3), strides=(1, 2)), alpha=2.0, beta=0.25)
    call = libs.log("miopenTransformTensor")[0]
    assert (call["alpha"], call["beta"]) == ("2", "0.25")
    libs.set_out("miopenCreateTensorDescriptor/tensorDesc", 0x7B0000)  # half descriptors of their own
    transform_tensor(_t(X, (2, 3), "float16"), _t(Y, (2, 3), "float16", strides=(1, 2)), alpha=0.5, beta=-3.0)
    call = libs.log("miopenTransformTensor")[1]
    assert (call["alpha"], call["beta"]) == ("0.5", "-3")  # halves, as MIOpen reads them for a half y


def test_op_tensor_broadcasting_and_scalars(libs: Libs) -> None:
    import miopen.errors as errors
    from miopen import api
    from miopen.ops.tensor_ops import op_tensor

    a, c = _t(X, (2, 8, 4, 4)), _t(Y, (2, 8, 4, 4))
    op_tensor("mul", a, _t(W, (1, 8, 1, 1)), c, 2.0, 3.0, 0.5)
    call = libs.log("miopenOpTensor")[0]
    assert call["tensorOp"] == str(int(api.TensorOp.miopenTensorOpMul))
    assert (call["alpha1"], call["alpha2"], call["beta"], call["A"], call["B"], call["C"]) == \
        ("2", "3", "0.5", str(X), str(W), str(Y))
    op_tensor(api.TensorOp.miopenTensorOpMax, a, a, c)
    before = libs.calls()
    with pytest.raises(errors.ShapeError, match="each of b's dims must be 1 or equal to c's.*dim 1"):
        op_tensor("add", a, _t(W, (1, 4, 1, 1)), c)
    with pytest.raises(errors.ShapeError, match="a and c must have the same dims"):
        op_tensor("add", a, a, _t(Y, (2, 8, 4, 5)))
    with pytest.raises(errors.ShapeError, match="b must have the rank of c"):
        op_tensor("add", a, _t(W, (8, 1, 1)), c)
    with pytest.raises(ValueError, match=r"op=.sub. is not a miopenTensorOp_t; .* or a name \(add, mul, min, max\)"):
        op_tensor("sub", a, a, c)
    with pytest.raises(errors.ShapeError, match="share one dtype"):
        op_tensor("add", a, _t(W, (1, 8, 1, 1), "float16"), c)
    with pytest.raises(errors.ShapeError, match="must have 1, 2, 3, 4, 5 dims"):
        op_tensor("add", _t(X, (1,) * 6), _t(W, (1,) * 6), _t(Y, (1,) * 6))
    with pytest.raises(ValueError, match="beta must not be NaN"):  # a layout seen before: the scalars still checked
        op_tensor("add", a, a, c, 1.0, 1.0, float("nan"))
    with pytest.raises(TypeError, match="alpha1 must be a real number; got bool"):
        op_tensor("add", a, a, c, True)
    assert libs.calls() == before


def test_set_and_scale_pass_the_value_in_the_element_type(libs: Libs) -> None:
    """The wrappers read y's data type (miopenGetTensorDescriptor) and encode the value in it; the stub keeps
    the type each descriptor was set with and decodes the value as MIOpen does."""
    import miopen.errors as errors
    from miopen.ops.tensor_ops import scale_tensor, set_tensor

    def y(dtype: str) -> Any:  # each dtype's descriptor at its own address, as a real library gives them
        libs.set_out("miopenCreateTensorDescriptor/tensorDesc", 0x7A0000 + 0x100 * len(dtype) + ord(dtype[-1]))
        return _t(Y, (4, 4), dtype)

    set_tensor(y("float32"), 1.5)
    assert libs.log("miopenSetTensor")[0]["alpha"] == "1.5"  # float tensors: a float
    set_tensor(y("float16"), 1.0)
    assert libs.log("miopenSetTensor")[1]["alpha"] == "1"  # read as a half: 1.0 (a float 1.0 would read 0)
    set_tensor(y("int32"), 7)
    assert libs.log("miopenSetTensor")[2]["alpha"] == "7"
    set_tensor(y("bfloat16"), -0.5)
    assert libs.log("miopenSetTensor")[3]["alpha"] == "-0.5"
    scale_tensor(y("float16"), -2.0)  # the cached half descriptor: the type the stub kept for it
    assert libs.log("miopenScaleTensor")[0]["alpha"] == "-2"
    calls = libs.calls()
    assert calls[calls.index("miopenScaleTensor") - 1] == "miopenGetTensorDescriptor"  # the type, read first
    before = libs.calls()
    with pytest.raises(ValueError, match="must be an integer"):
        set_tensor(y("int32"), 0.5)
    with pytest.raises(ValueError, match="does not fit in a float16"):
        set_tensor(y("float16"), 1e6)
    with pytest.raises(errors.ShapeError, match="does not scale miopenBFloat16"):
        scale_tensor(y("bfloat16"), 2.0)
    # only the read-only type query ran: nothing was written
    assert [c for c in libs.calls()[len(before):] if c != "miopenGetTensorDescriptor"] == []


# ===================================================================== reductions


def test_reduce_queries_sizes_first(libs: Libs) -> None:
    from miopen import api
    from miopen.ops.reduce import reduce_tensor

    libs.set_out("miopenGetReductionWorkspaceSize/sizeInBytes", 4096)
    libs.set_out("miopenGetReductionIndicesSize/sizeInBytes", 32)
    alloc = Allocator()
    idx = _t(0x8000_0000, (2, 1, 4, 1), "int32")
    reduce_tensor(_t(X, (2, 3, 4, 5)), _t(Y, (2, 1, 4, 1)), "max", indices=idx,
                  nan_propagation=api.NanPropagation.MIOPEN_PROPAGATE_NAN, workspace=_ws(alloc))
    calls = libs.calls()
    seq = [calls.index(f) for f in ("miopenCreateReduceTensorDescriptor", "miopenSetReduceTensorDescriptor",
                                    "miopenGetReductionWorkspaceSize", "miopenGetReductionIndicesSize",
                                    "miopenReduceTensor", "miopenDestroyReduceTensorDescriptor")]
    assert seq == sorted(seq)
    desc = libs.log("miopenSetReduceTensorDescriptor")[0]
    assert (desc["reduceTensorOp"], desc["reduceTensorCompType"], desc["reduceTensorNanOpt"],
            desc["reduceTensorIndices"], desc["reduceTensorIndicesType"]) == ("3", "1", "1", "1", "0")
    run = libs.log("miopenReduceTensor")[0]
    assert (run["workspaceSizeInBytes"], run["workspace"]) == ("4096", str(alloc.allocated[0][0]))
    assert (run["indices"], run["indicesSizeInBytes"]) == (str(0x8000_0000), "32")
    assert (run["A"], run["C"], run["alpha"], run["beta"]) == (str(X), str(Y), "1", "0")


def test_reduce_without_indices_and_size_errors(libs: Libs) -> None:
    import miopen.errors as errors
    from miopen.ops.reduce import reduce_tensor

    libs.set_out("miopenGetReductionWorkspaceSize/sizeInBytes", 0)
    libs.set_out("miopenGetReductionIndicesSize/sizeInBytes", 0)
    a, c = _t(X, (2, 3, 4, 5)), _t(Y, (1, 3, 1, 1))
    reduce_tensor(a, c, "sum", alpha=0.5, beta=1.0, workspace=_ws())
    run = libs.log("miopenReduceTensor")[0]
    assert (run["indices"], run["indicesSizeInBytes"], run["workspace"], run["workspaceSizeInBytes"]) == \
        ("0", "0", "0", "0")
    assert (run["alpha"], run["beta"]) == ("0.5", "1")
    assert libs.log("miopenSetReduceTensorDescriptor")[0]["reduceTensorIndices"] == "0"
    before = libs.calls()
    with pytest.raises(errors.ShapeError, match="indices holds 4 bytes.*12 bytes"):
        reduce_tensor(a, c, "min", indices=_t(0x8000_0000, (1,), "int32"))
    with pytest.raises(ValueError, match="indices exist only for min, max and amax"):
        reduce_tensor(a, c, "sum", indices=_t(0x8000_0000, (3,), "int32"))
    with pytest.raises(errors.ShapeError, match="each of c's dims must be 1 .* or equal to a's.*dim 1"):
        reduce_tensor(a, _t(Y, (1, 2, 1, 1)), "sum")
    with pytest.raises(errors.ShapeError, match="no dim is reduced"):
        reduce_tensor(a, _t(Y, (2, 3, 4, 5)), "sum")
    with pytest.raises(errors.ShapeError, match="c must have the rank of a"):
        reduce_tensor(a, _t(Y, (1, 3)), "sum")
    import miopen

    with pytest.raises(ValueError, match="only 32-bit indices" if "miopenInt64" in miopen.DataType.__members__
                       else "none of miopenInt64 .* is in this MIOpen release"):
        reduce_tensor(a, c, "max", indices=_t(0x8000_0000, (3,), "int64"), indices_type=1)
    with pytest.raises(ValueError, match="op=.median. is not a miopenReduceTensorOp_t"):
        reduce_tensor(a, c, "median")
    assert libs.calls() == before
    # MIOpen asks for more than the caller's buffer holds: a clear error, and no reduction runs
    libs.set_out("miopenGetReductionIndicesSize/sizeInBytes", 64)
    with pytest.raises(errors.ShapeError, match="MIOpen needs 64 bytes"):
        reduce_tensor(a, c, "max", indices=_t(0x8000_0000, (3,), "int32"))
    assert libs.calls().count("miopenReduceTensor") == 1


def test_transposed_convolution_output_padding(libs: Libs) -> None:
    """Output padding reaches miopenSetTransposeConvNdOutputPadding and grows the expected output."""
    import miopen.errors as errors
    from miopen.descriptors import clear_descriptor_caches
    from miopen.ops.conv import conv_forward, conv_output_dims

    clear_descriptor_caches()
    assert conv_output_dims((1, 8, 4, 4), (8, 4, 3, 3), 1, 2, 1, transpose=True) == (1, 4, 7, 7)
    assert conv_output_dims((1, 8, 4, 4), (8, 4, 3, 3), 1, 2, 1, transpose=True, output_pads=(1, 1)) == (1, 4, 8, 8)
    with pytest.raises(errors.ShapeError, match="output pad must be smaller than its stride"):
        conv_output_dims((1, 8, 4, 4), (8, 4, 3, 3), 1, 2, 1, transpose=True, output_pads=(2, 0))
    with pytest.raises(errors.ShapeError, match="output pad must be smaller than its stride"):  # MIOpen's rule
        conv_output_dims((1, 8, 4, 4), (8, 4, 3, 3), 1, 1, 2, transpose=True, output_pads=(1, 0))
    # negative output padding shrinks the output; MIOpen accepts it (tests/real), so do we
    assert conv_output_dims((1, 8, 4, 4), (8, 4, 3, 3), 1, 2, 1, transpose=True, output_pads=(-1, 0)) == (1, 4, 6, 7)
    with pytest.raises(errors.ShapeError, match="output_pads apply to transposed convolutions only"):
        conv_output_dims((1, 8, 4, 4), (4, 8, 3, 3), 1, 2, 1, output_pads=(1, 1))
    libs.reset()
    conv_forward(_t(X, (1, 8, 4, 4)), _t(W, (8, 4, 3, 3)), _t(Y, (1, 4, 8, 8)), pads=1, strides=2, dilations=1,
                 transpose=True, output_pads=(1, 1), workspace=_ws())
    assert libs.log("miopenSetTransposeConvNdOutputPadding")[0]["adjA"] == "[1,1]"
    before = libs.calls()
    with pytest.raises(errors.ShapeError):  # y sized without the output padding
        conv_forward(_t(X, (1, 8, 4, 4)), _t(W, (8, 4, 3, 3)), _t(Y, (1, 4, 7, 7)), pads=1, strides=2,
                     dilations=1, transpose=True, output_pads=(1, 1), workspace=_ws())
    assert libs.calls() == before


@pytest.mark.parametrize("direction", ["forward", "backward_data", "backward_weights"])
def test_fast_path_honours_every_change_between_calls(libs: Libs, direction: str) -> None:
    """The conv fast path remembers the plan, its cache's generation, the descriptors and the typed call of a shape;
    everything that can change between calls still decides as on the full path: the plan cache cleared, a plan
    replaced in it, the planner given another cache, the planner's, the process's and the workspace's caps, the
    workspace's buffer freed, a descriptor closed, the descriptor caches cleared, the pooled handles closed (all, or
    the thread's by the caller), another stream's scratch, another thread. Each step runs once with the fast
    path and once with it forgotten before every call: the same convolution calls, plans and cache statistics."""
    import dataclasses

    import threading

    from miopen import algo, descriptors, handles, workspace
    from miopen.ops import conv

    fn = {"forward": "miopenConvolutionForward", "backward_data": "miopenConvolutionBackwardData",
          "backward_weights": "miopenConvolutionBackwardWeights"}[direction]
    _solutions(libs, fn, [(1.0, 4096, 22, 1), (2.0, 0, 11, 0)])
    xt, wt, yt = _t(X, (1, 4, 8, 8)), _t(W, (8, 4, 3, 3)), _t(Y, (1, 8, 8, 8))

    def scenario(forget: bool) -> list[object]:
        descriptors.clear_descriptor_caches()
        pl = algo.ConvPlanner(cache=algo.AlgoCache())
        ws = _ws(Allocator())
        op = {"forward": lambda: conv.conv_forward(xt, wt, yt, **_fwd(), planner=pl, workspace=ws),
              "backward_data": lambda: conv.conv_backward_data(yt, wt, xt, **_fwd(), planner=pl, workspace=ws),
              "backward_weights": lambda: conv.conv_backward_weights(yt, xt, wt, **_fwd(), planner=pl,
                                                                     workspace=ws)}[direction]

        def replace() -> None:
            (plan,) = pl.cache._plans.values()
            pl.cache.put(dataclasses.replace(plan, solution_id=11, workspace_bytes=0))

        steps: list[tuple[str, Callable[[], object]]] = [
            ("first", lambda: None), ("again", lambda: None), ("cache cleared", pl.cache.clear),
            ("plan replaced", replace), ("another cache", lambda: setattr(pl, "cache", algo.AlgoCache())),
            ("benchmark", lambda: setattr(pl, "benchmark", True)),  # (deterministic needs MIOpen 2.18)
            ("benchmark off", lambda: setattr(pl, "benchmark", False)),
            ("planner cap", lambda: setattr(pl, "workspace_limit_bytes", 0)),
            ("planner cap lifted", lambda: setattr(pl, "workspace_limit_bytes", None)),
            ("process cap", lambda: workspace.set_workspace_limit(1024)),
            ("process cap lifted", lambda: workspace.set_workspace_limit(None)),
            ("workspace cap", lambda: setattr(ws, "max_bytes", 0)),
            ("workspace cap lifted", lambda: setattr(ws, "max_bytes", None)),
            ("workspace freed", ws.reset),
            ("x descriptor closed", lambda: descriptors.tensor_descriptor("float32", (1, 4, 8, 8)).close()),
            ("caches cleared", descriptors.clear_descriptor_caches),
            ("pooled handles closed", handles.handle_pool().close),
            ("pooled handle closed", lambda: handles.inline_miopen_handle().close()),
            ("scratch of another stream", lambda: None),
            ("another thread", lambda: None),
        ]
        seen: list[object] = []
        for name, change in steps:
            change()
            for _ in range(2):  # the second call on the fast path (unless forgotten)
                if forget:
                    conv._FAST.clear()
                start = len(libs.log())
                if name == "another thread":  # no handle nor scratch of its own yet: made as on the full path
                    out: list[Any] = []
                    t = threading.Thread(target=lambda: out.append(op()))
                    t.start()
                    t.join()
                    plan = out[0]
                elif name == "scratch of another stream":  # no workspace given: the stream's scratch
                    plan = {"forward": lambda: conv.conv_forward(xt, wt, yt, **_fwd(), planner=pl, stream=0x700),
                            "backward_data": lambda: conv.conv_backward_data(yt, wt, xt, **_fwd(), planner=pl,
                                                                             stream=0x700),
                            "backward_weights": lambda: conv.conv_backward_weights(yt, xt, wt, **_fwd(), planner=pl,
                                                                                   stream=0x700)}[direction]()
                else:
                    plan = op()
                calls = [(e[""], {k: v for k, v in e.items() if k in (
                    "handle", "solution_id", "workSpace", "workSpaceSize", "x", "w", "y", "dx", "dy", "dw")})
                         for e in libs.log()[start:] if "Convolution" in e[""]]
                seen.append((name, plan.solution_id, plan.workspace_bytes, plan.fallback, calls, pl.cache.hits,
                             pl.cache.misses, ws.allocations))
        return seen

    fast, full = scenario(False), scenario(True)
    for a, b in zip(fast, full):
        assert a == b
    assert len(fast) == len(full)


def test_the_last_fast_call_is_forgotten_with_the_memo(libs: Libs) -> None:
    """The fast path's last-call entry (the same argument objects again skip the type checks and the memo's lookup)
    is dropped whenever the memo changes: cleared, the descriptor caches cleared, a new shape remembered; the same
    values as other objects (a bool pad, another default planner) take the checks again."""
    from miopen import algo, descriptors
    from miopen.ops import conv

    _solutions(libs, "miopenConvolutionForward", [(1.0, 0, 11, 0)])
    x, w, y = _t(X, (1, 4, 8, 8)), _t(W, (8, 4, 3, 3)), _t(Y, (1, 8, 8, 8))
    pads = (1, 1)

    def call(**kw: Any) -> Any:
        return conv.conv_forward(x, w, y, **_fwd(pads=kw.pop("pads", pads), **kw))

    plan = call()
    assert conv._LAST[0] is None  # nothing took the fast path yet
    assert call() is plan and conv._LAST[0] is not None
    for forget in (conv._FAST.clear, descriptors.clear_descriptor_caches,
                   lambda: conv.conv_forward(_t(X, (2, 4, 8, 8)), w, _t(Y, (2, 8, 8, 8)), **_fwd())):
        call(), call()
        assert conv._LAST[0] is not None
        forget()
        assert conv._LAST[0] is None
    call(), call()
    runs = libs.calls().count("miopenConvolutionForwardImmediate")
    with pytest.raises(TypeError):
        call(pads=(True, True))  # equal to (1, 1), but a bool: the full path's checks refuse it
    assert libs.calls().count("miopenConvolutionForwardImmediate") == runs
    conv.set_default_planner(algo.ConvPlanner(benchmark=True))  # another default planner: planned again
    searches = libs.calls().count("miopenConvolutionForwardGetSolution")
    assert call().key.benchmark
    assert libs.calls().count("miopenConvolutionForwardGetSolution") == searches + 1
