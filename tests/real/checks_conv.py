"""Convolution descriptors, output dimensions and the immediate-mode solution/workspace queries.

Expected output sizes are computed here from the formulas of MIOpen 2.17.0's
ConvolutionDescriptor::GetForwardOutputTensorWithLayout (src/convolution.cpp), with C++'s truncating division:
  convolution: out = max(1, (in + 2p - (1 + d(k - 1))) / s + 1), channels = K
  transposed:  out = max(1, s(in - 1) + 1 + d(k - 1) - 2p + adj), channels = C_w * groups
and its channel rules (groups 1: C_x == C_w; groups g: C_x % C_w == 0 and K % (C_x / C_w) == 0;
transposed: C_x == K and K % g == 0, adj < stride). The 2-D getters refuse other ranks with a status-less
throw (miopenStatusUnknownError).
"""

from __future__ import annotations

import itertools
from typing import Any

import miopen
from miopen._generated.errors import miopenStatus_t

from .common import Bound, DT, check, failing, handle, status_name, tensor

CM: Any = Bound("ConvolutionMode")
UNKNOWN = int(miopenStatus_t.miopenStatusUnknownError)
BADPARM = int(miopenStatus_t.miopenStatusBadParm)


def cdiv(a: int, b: int) -> int:
    """C++ integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def expected_out(x: list[int], w: list[int], pads: list[int], strides: list[int], dils: list[int], groups: int = 1,
                 transpose: bool = False, adj: list[int] | None = None) -> list[int] | None:
    """The output lengths, or None when MIOpen refuses the channels (BadParm)."""
    nd = len(pads)
    cx, k, cw = x[1], w[0], w[1]
    adj = adj or [0] * nd
    if transpose:
        if cx != k or (groups > 1 and k % groups) or any(a >= s for a, s in zip(adj, strides)):
            return None
        out_c = cw * groups
        sp = [max(1, s * (i - 1) + 1 + d * (kk - 1) - 2 * p + a)
              for i, kk, p, s, d, a in zip(x[2:], w[2:], pads, strides, dils, adj)]
    else:
        if (groups == 1 and cx != cw) or (groups > 1 and (cx % cw or k % (cx // cw))):
            return None
        out_c = k
        sp = [max(1, cdiv(i - (1 + d * (kk - 1)) + 2 * p, s) + 1)
              for i, kk, p, s, d in zip(x[2:], w[2:], pads, strides, dils)]
    return [x[0], out_c, *sp]


def conv_desc(pads: list[int], strides: list[int], dils: list[int], mode: Any = None,
              groups: int = 1, adj: list[int] | None = None) -> miopen.ConvolutionDescriptor:
    mode = CM.miopenConvolution if mode is None else mode
    c = miopen.create_convolution_descriptor()
    miopen.init_convolution_nd_descriptor(c, pads, strides, dils, mode)
    if groups != 1:
        miopen.set_convolution_group_count(c, groups)
    if adj is not None:
        miopen.set_transpose_conv_nd_output_padding(c, adj)
    return c


@check("miopenCreateConvolutionDescriptor", "miopenInitConvolutionDescriptor", "miopenGetConvolutionDescriptor",
       "miopenGetConvolutionNdDescriptor", "miopenDestroyConvolutionDescriptor")
def descriptor_2d_round_trip() -> None:
    for mode, pads, strides, dils in [(CM.miopenConvolution, (1, 2), (1, 3), (1, 2)),
                                      (CM.miopenTranspose, (0, 0), (2, 2), (1, 1)),
                                      (CM.miopenConvolution, (7, 0), (5, 1), (3, 4))]:
        c = miopen.create_convolution_descriptor()
        miopen.init_convolution_descriptor(c, mode, *pads, *strides, *dils)
        got = miopen.get_convolution_descriptor(c)
        assert (got.c_mode, (got.pad_h, got.pad_w), (got.stride_h, got.stride_w),
                (got.dilation_h, got.dilation_w)) == (mode, pads, strides, dils)
        nd = miopen.get_convolution_nd_descriptor(c, 2)
        assert (nd.spatial_dim, nd.pad_a, nd.stride_a, nd.dilation_a, nd.c_mode) == (2, list(pads), list(strides),
                                                                                      list(dils), mode)
        miopen.destroy_convolution_descriptor(c)
    # the deprecated group/depthwise modes are stored as plain convolutions
    for mode in (CM.miopenGroupConv, CM.miopenDepthwise):
        c = miopen.create_convolution_descriptor()
        miopen.init_convolution_descriptor(c, mode, 0, 0, 1, 1, 1, 1)
        assert miopen.get_convolution_descriptor(c).c_mode == CM.miopenConvolution


@check("miopenInitConvolutionNdDescriptor", "miopenGetConvolutionNdDescriptor", "miopenGetConvolutionDescriptor")
def descriptor_nd_round_trip() -> dict[str, object]:
    for pads, strides, dils in [([3], [2], [1]), ([1, 1], [1, 1], [1, 1]), ([0, 1, 2], [1, 2, 3], [3, 2, 1]),
                                ([1, 0, 1, 0], [1, 1, 2, 2], [1, 1, 1, 1])]:
        c = conv_desc(pads, strides, dils)
        n = len(pads)
        got = miopen.get_convolution_nd_descriptor(c, n)
        assert (got.spatial_dim, got.pad_a, got.stride_a, got.dilation_a) == (n, pads, strides, dils)
        for k in range(n):  # fewer than the spatial dims: a prefix
            part = miopen.get_convolution_nd_descriptor(c, k)
            assert (part.spatial_dim, part.pad_a, part.stride_a) == (n, pads[:k], strides[:k])
        # more than it has: "requestedSpatialDim is larger than actual spatial dimension"
        status, text = failing(lambda: miopen.get_convolution_nd_descriptor(c, n + 1))
        assert status == UNKNOWN and "requestedSpatialDim" in text
        if n != 2:  # the 2-D getter refuses other ranks
            status, text = failing(lambda: miopen.get_convolution_descriptor(c))
            assert status == UNKNOWN and "2-D" in text
    return {"requested > actual": status_name(UNKNOWN)}


@check("miopenInitConvolutionNdDescriptor", "miopenInitConvolutionDescriptor")
def descriptor_bad_parameters() -> dict[str, str]:
    """MIOpen's own checks: padding >= 0, stride >= 1, dilation >= 1 -> miopenStatusBadParm."""
    seen = {}
    for what, args in {"pad -1": ([-1, 0], [1, 1], [1, 1]), "stride 0": ([0, 0], [0, 1], [1, 1]),
                       "dilation 0": ([0, 0], [1, 1], [1, 0]), "stride -2": ([0], [-2], [1])}.items():
        c = miopen.create_convolution_descriptor()
        status, text = failing(lambda: miopen.init_convolution_nd_descriptor(c, *args, CM.miopenConvolution))
        assert status == BADPARM and "MIOPEN expects padding >= 0" in text, what
        seen[what] = status_name(status)
    c = miopen.create_convolution_descriptor()
    try:
        miopen.init_convolution_descriptor(c, CM.miopenConvolution, 0, 0, 0, 1, 1, 1)
    except miopen.MIOpenBadParamError as exc:
        assert isinstance(exc, ValueError) and exc.function == "miopenInitConvolutionDescriptor"
    else:
        raise AssertionError("stride 0 accepted")
    return seen


@check("miopenGetConvolutionForwardOutputDim", "miopenGetConvolutionNdForwardOutputDim",
       "miopenSetConvolutionGroupCount")
def output_dims_2d() -> int:
    n = 0
    xs = [[8, 64, 56, 56], [1, 3, 7, 9], [2, 16, 5, 5], [4, 8, 1, 1]]
    ws = [[128, 64, 3, 3], [6, 3, 1, 5], [16, 16, 5, 5], [32, 8, 3, 3], [16, 4, 3, 3], [16, 2, 1, 1]]
    params = [((1, 1), (1, 1), (1, 1)), ((0, 2), (2, 3), (1, 1)), ((3, 3), (1, 1), (2, 3)), ((0, 0), (4, 4), (1, 1))]
    for x, w, (pads, strides, dils), groups in itertools.product(xs, ws, params, (1, 2, 4, 8)):
        c = conv_desc(list(pads), list(strides), list(dils), groups=groups)
        xd, wd = tensor(x), tensor(w)
        want = expected_out(x, w, list(pads), list(strides), list(dils), groups)
        if want is None:
            status, text = failing(lambda: miopen.get_convolution_forward_output_dim(c, xd, wd))
            assert status == BADPARM and "Channels do not match" in text, (x, w, groups)
            continue
        got = miopen.get_convolution_forward_output_dim(c, xd, wd)
        assert list(got) == want, (x, w, pads, strides, dils, groups)
        nd = miopen.get_convolution_nd_forward_output_dim(c, xd, wd)
        assert (nd.n_dim, nd.output_tensor_dim_a) == (4, want)
        n += 1
    return n


@check("miopenGetConvolutionNdForwardOutputDim", "miopenGetConvolutionForwardOutputDim")
def output_dims_nd() -> int:
    n = 0
    cases = [([2, 4, 9, 10, 11], [8, 4, 3, 2, 1], [1, 0, 2], [1, 2, 3], [1, 1, 2]),
             ([1, 6, 4, 4, 4], [6, 3, 3, 3, 3], [1, 1, 1], [1, 1, 1], [1, 1, 1]),
             ([3, 2, 20, 1, 7], [4, 2, 5, 1, 7], [0, 0, 0], [3, 1, 1], [4, 1, 1])]
    for x, w, pads, strides, dils in cases:
        for groups in (1, 2):
            c = conv_desc(pads, strides, dils, groups=groups)
            want = expected_out(x, w, pads, strides, dils, groups)
            xd, wd = tensor(x), tensor(w)
            if want is None:
                assert failing(lambda: miopen.get_convolution_nd_forward_output_dim(c, xd, wd))[0] == BADPARM
                continue
            got = miopen.get_convolution_nd_forward_output_dim(c, xd, wd)
            assert (got.n_dim, got.output_tensor_dim_a) == (len(x), want), (x, w, groups)
            n += 1
            if len(pads) != 2:
                status, text = failing(lambda: miopen.get_convolution_forward_output_dim(c, xd, wd))
                assert status == UNKNOWN and "2-D" in text
    # 1-D (3-D tensors): 2.17.0 has no default layout for 3 dimensions, so the output tensor cannot be built
    c = conv_desc([1], [2], [1])
    status, text = failing(lambda: miopen.get_convolution_nd_forward_output_dim(c, tensor([2, 4, 9]), tensor([8, 4, 3])))
    assert status == UNKNOWN and "Invalid labels size" in text
    return n


@check("miopenSetTransposeConvOutputPadding", "miopenSetTransposeConvNdOutputPadding",
       "miopenGetConvolutionForwardOutputDim", "miopenGetConvolutionNdForwardOutputDim", "miopenInitConvolutionDescriptor")
def output_dims_transpose() -> int:
    n = 0
    for x, w, pads, strides, dils, adj, groups in [
            ([2, 16, 7, 7], [16, 8, 3, 3], [1, 1], [2, 2], [1, 1], [1, 1], 1),
            ([2, 16, 7, 7], [16, 8, 3, 3], [1, 1], [2, 2], [1, 1], [0, 1], 2),
            ([1, 4, 5, 6], [4, 3, 4, 2], [0, 2], [3, 1], [2, 1], [2, 0], 1),
            ([1, 4, 5, 6], [4, 3, 4, 2], [0, 0], [1, 1], [1, 1], [1, 0], 1),  # adj >= stride: refused
            ([1, 4, 5, 6], [8, 3, 4, 2], [0, 0], [1, 1], [1, 1], [0, 0], 1),  # C_x != K: refused
            ([1, 8, 3, 3, 3], [8, 2, 2, 2, 2], [0, 0, 0], [2, 2, 2], [1, 1, 1], [1, 0, 1], 4)]:
        c = conv_desc(pads, strides, dils, CM.miopenTranspose, groups=groups, adj=adj)
        if len(pads) == 2:  # the 2-D setter too, on a fresh descriptor
            c2 = miopen.create_convolution_descriptor()
            miopen.init_convolution_descriptor(c2, CM.miopenTranspose, *pads, *strides, *dils)
            miopen.set_transpose_conv_output_padding(c2, *adj)
            if groups != 1:
                miopen.set_convolution_group_count(c2, groups)
        want = expected_out(x, w, pads, strides, dils, groups, transpose=True, adj=adj)
        xd, wd = tensor(x), tensor(w)
        if want is None:
            status, text = failing(lambda: miopen.get_convolution_nd_forward_output_dim(c, xd, wd))
            assert status == BADPARM and ("Channels do not match" in text or "output padding" in text), (x, w, adj)
            continue
        got = miopen.get_convolution_nd_forward_output_dim(c, xd, wd)
        assert got.output_tensor_dim_a == want, (x, w, adj)
        if len(pads) == 2:
            assert list(miopen.get_convolution_forward_output_dim(c2, xd, wd)) == want
        n += 1
    # the 2-D setter refuses a 3-D descriptor; the N-d one a rank that differs from the descriptor's
    c3 = conv_desc([0, 0, 0], [2, 2, 2], [1, 1, 1], CM.miopenTranspose)
    status, text = failing(lambda: miopen.set_transpose_conv_output_padding(c3, 1, 1))
    assert status == UNKNOWN and "2-D" in text
    status, text = failing(lambda: miopen.set_transpose_conv_nd_output_padding(c3, [1, 1]))
    assert status == UNKNOWN and "spatialDim not consistent" in text
    return n


@check("miopenGetConvolutionForwardOutputDim")
def output_dims_type_mismatch() -> str:
    c = conv_desc([0, 0], [1, 1], [1, 1])
    status, text = failing(lambda: miopen.get_convolution_forward_output_dim(
        c, tensor([1, 4, 5, 5]), tensor([4, 4, 3, 3], dtype=DT.miopenHalf)))
    assert status == BADPARM and "Types do not match" in text
    return status_name(status)


@check("miopenSetConvolutionAttribute", "miopenGetConvolutionAttribute")
def attributes() -> dict[str, object]:
    """2.17.0 knows one attribute, FP16_ALT_IMPL, with values -1 (default), 0, 1; others are BadParm."""
    c = conv_desc([0, 0], [1, 1], [1, 1])
    fp16 = miopen.ConvolutionAttrib.MIOPEN_CONVOLUTION_ATTRIB_FP16_ALT_IMPL
    default = miopen.get_convolution_attribute(c, fp16)
    assert default == -1
    for v in (0, 1, -1):
        miopen.set_convolution_attribute(c, fp16, v)
        assert miopen.get_convolution_attribute(c, fp16) == v
    for v in (2, -2):
        status, text = failing(lambda: miopen.set_convolution_attribute(c, fp16, v))
        assert status == BADPARM and "invalid value" in text
    out: dict[str, object] = {"default": default}
    # an attribute the bindings know but 2.17.0 does not (DETERMINISTIC came in 2.18): MIOpen says BadParm
    later = [m for m in miopen.ConvolutionAttrib if m != fp16]
    for m in later:
        status, text = failing(lambda: miopen.set_convolution_attribute(c, m, 1))
        assert status == BADPARM and "does not exist" in text
        out[m.name] = status_name(status)
    return out


# ---------------------------------------------------------------------------- solutions and workspaces

PROBLEMS = [  # x, w, pads, strides, dilations, groups
    ([8, 64, 56, 56], [128, 64, 3, 3], [1, 1], [1, 1], [1, 1], 1),
    ([2, 4, 8, 8], [8, 4, 3, 3], [1, 1], [1, 1], [1, 1], 1),
    ([1, 3, 224, 224], [64, 3, 7, 7], [3, 3], [2, 2], [1, 1], 1),
    ([4, 32, 14, 14], [32, 1, 3, 3], [1, 1], [1, 1], [1, 1], 32),  # depthwise
    ([2, 16, 9, 9], [16, 16, 3, 3], [2, 2], [1, 1], [2, 2], 1),  # dilated
    ([2, 8, 6, 6, 6], [16, 8, 3, 3, 3], [1, 1, 1], [1, 1, 1], [1, 1, 1], 1),  # 3-D
    ([16, 256, 7, 7], [512, 256, 1, 1], [0, 0], [1, 1], [1, 1], 1),  # 1x1
]


def sorted_like_miopen(times: list[float]) -> bool:
    """MIOpen's SolutionSortWrapper order: positive times ascending, then negative (coarse) ones by |t|."""
    pos = [t for t in times if t > 0]
    neg = [t for t in times if t < 0]
    return times == sorted(pos) + sorted(neg, key=abs)


def _problem(x, w, pads, strides, dils, groups):  # type: ignore[no-untyped-def]
    c = conv_desc(pads, strides, dils, groups=groups)
    y = expected_out(x, w, pads, strides, dils, groups)
    assert y is not None
    return tensor(x), tensor(w), c, tensor(y)


@check("miopenConvolutionForwardGetSolutionCount", "miopenConvolutionForwardGetSolution",
       "miopenConvolutionForwardGetSolutionWorkspaceSize", "miopenConvolutionForwardGetWorkSpaceSize",
       "miopenConvolutionBackwardDataGetSolutionCount", "miopenConvolutionBackwardDataGetSolution",
       "miopenConvolutionBackwardDataGetSolutionWorkspaceSize", "miopenConvolutionBackwardDataGetWorkSpaceSize",
       "miopenConvolutionBackwardWeightsGetSolutionCount", "miopenConvolutionBackwardWeightsGetSolution",
       "miopenConvolutionBackwardWeightsGetSolutionWorkspaceSize", "miopenConvolutionBackwardWeightsGetWorkSpaceSize")
def solutions_consistent() -> list[dict[str, object]]:
    """For each direction: count >= 1; GetSolution(count) gives count solutions in MIOpen's order; asking for
    fewer gives a prefix; each solution's workspace equals GetSolutionWorkspaceSize of its id; the legacy
    GetWorkSpaceSize covers the largest one."""
    h = handle()
    report = []
    for x, w, pads, strides, dils, groups in PROBLEMS:
        xd, wd, c, yd = _problem(x, w, pads, strides, dils, groups)
        dirs = {
            "fwd": (lambda: miopen.convolution_forward_get_solution_count(h, wd, xd, c, yd),
                    lambda k: miopen.convolution_forward_get_solution(h, wd, xd, c, yd, k),
                    lambda i: miopen.convolution_forward_get_solution_workspace_size(h, wd, xd, c, yd, i),
                    lambda: miopen.convolution_forward_get_work_space_size(h, wd, xd, c, yd)),
            "bwd": (lambda: miopen.convolution_backward_data_get_solution_count(h, yd, wd, c, xd),
                    lambda k: miopen.convolution_backward_data_get_solution(h, yd, wd, c, xd, k),
                    lambda i: miopen.convolution_backward_data_get_solution_workspace_size(h, yd, wd, c, xd, i),
                    lambda: miopen.convolution_backward_data_get_work_space_size(h, yd, wd, c, xd)),
            "wrw": (lambda: miopen.convolution_backward_weights_get_solution_count(h, yd, xd, c, wd),
                    lambda k: miopen.convolution_backward_weights_get_solution(h, yd, xd, c, wd, k),
                    lambda i: miopen.convolution_backward_weights_get_solution_workspace_size(h, yd, xd, c, wd, i),
                    lambda: miopen.convolution_backward_weights_get_work_space_size(h, yd, xd, c, wd)),
        }
        for name, (count, get, ws_of, legacy) in dirs.items():
            n = count()
            assert n >= 1, (name, x, w)
            sols = get(n)
            assert len(sols) == n
            assert sorted_like_miopen([s.time for s in sols]), (name, [s.time for s in sols])
            assert len({s.solution_id for s in sols}) == n
            for k in range(1, n):
                assert [s.solution_id for s in get(k)] == [s.solution_id for s in sols[:k]]
            assert [s.solution_id for s in get(n + 5)] == [s.solution_id for s in sols]
            for s in sols:
                assert ws_of(s.solution_id) == s.workspace_size, (name, s)
                assert isinstance(s.algorithm, miopen.ConvAlgorithm)
            total = legacy()
            assert total >= max(s.workspace_size for s in sols), (name, x, w, total)
            report.append({"dir": name, "x": x, "w": w, "solutions": [(s.solution_id, s.algorithm.name,
                                                                        s.workspace_size) for s in sols],
                           "legacy_ws": total})
    return report


@check("miopenConvolutionForwardGetSolution", "miopenConvolutionBackwardDataGetSolution",
       "miopenConvolutionForwardGetSolutionCount", "miopenConvolutionBackwardDataGetSolutionCount")
def transpose_swaps_directions() -> int:
    """A transposed convolution's forward is the backward-data pass of the plain one (and vice versa): MIOpen
    dispatches the queries that way, so the solution lists must agree."""
    h = handle()
    x, w = [2, 16, 7, 7], [16, 8, 3, 3]
    t = conv_desc([1, 1], [1, 1], [1, 1], CM.miopenTranspose)
    plain = conv_desc([1, 1], [1, 1], [1, 1])
    y = expected_out(x, w, [1, 1], [1, 1], [1, 1], transpose=True)
    assert y == [2, 8, 7, 7]
    xd, wd, yd = tensor(x), tensor(w), tensor(y)
    fwd_t = miopen.convolution_forward_get_solution(h, wd, xd, t, yd, 32)
    bwd_p = miopen.convolution_backward_data_get_solution(h, xd, wd, plain, yd, 32)
    assert [s.solution_id for s in fwd_t] == [s.solution_id for s in bwd_p]
    assert miopen.convolution_forward_get_solution_count(h, wd, xd, t, yd) == len(fwd_t)
    bwd_t = miopen.convolution_backward_data_get_solution(h, yd, wd, t, xd, 32)
    fwd_p = miopen.convolution_forward_get_solution(h, wd, yd, plain, xd, 32)
    assert [s.solution_id for s in bwd_t] == [s.solution_id for s in fwd_p]
    assert miopen.convolution_backward_data_get_solution_count(h, yd, wd, t, xd) == len(bwd_t)
    return len(fwd_t)


@check("miopenConvolutionForwardGetSolutionWorkspaceSize", "miopenConvolutionForwardGetWorkSpaceSize",
       "miopenConvolutionForwardGetSolutionCount", "miopenConvolutionForwardGetSolution")
def solution_errors() -> dict[str, object]:
    h = handle()
    xd, wd, c, yd = _problem(*PROBLEMS[1])
    out: dict[str, object] = {}
    # an id no solver has, and id 0 (invalid): "invalid solution id"
    for sid in (0, 123456):
        status, text = failing(lambda: miopen.convolution_forward_get_solution_workspace_size(h, wd, xd, c, yd, sid))
        assert status == BADPARM and "invalid solution id" in text
        out[f"id {sid}"] = status_name(status)
    # a real solver that does not apply to this problem: pick one that applies to the 1x1 problem only
    one = _problem(*PROBLEMS[6])
    ids_1x1 = {s.solution_id for s in miopen.convolution_forward_get_solution(h, one[1], one[0], one[2], one[3], 64)}
    ids_3x3 = {s.solution_id for s in miopen.convolution_forward_get_solution(h, wd, xd, c, yd, 64)}
    foreign = sorted(ids_1x1 - ids_3x3)
    for sid in foreign[:1]:
        status, text = failing(lambda: miopen.convolution_forward_get_solution_workspace_size(h, wd, xd, c, yd, sid))
        out[f"foreign id {sid}"] = (status_name(status), "not applicable" in text)
    # channels that do not match: the solution queries say BadParm ...
    bad_w = tensor([8, 3, 3, 3])
    status, text = failing(lambda: miopen.convolution_forward_get_solution_count(h, bad_w, xd, c, yd))
    assert status == BADPARM, status_name(status)
    out["count, channels mismatch"] = status_name(status)
    # ... but miopenConvolutionForwardGetWorkSpaceSize drops the error: it ignores try_()'s status and returns
    # miopenStatusSuccess, leaving the output untouched (our wrapper's 0). MIOpen prints the error only.
    mark_status, text = failing(lambda: miopen.convolution_forward_get_work_space_size(h, bad_w, xd, c, yd))
    assert mark_status == 0 and "MIOpen Error" in text
    assert miopen.convolution_forward_get_work_space_size(h, bad_w, xd, c, yd) == 0
    out["legacy workspace, channels mismatch"] = "success, 0 bytes (error only printed)"
    return out


@check("miopenConvolutionForwardGetSolution")
def solution_output_array_sizes() -> list[int]:
    """max_solution_count 0 gives no solutions (a zero-length array reaches MIOpen, which writes none)."""
    h = handle()
    xd, wd, c, yd = _problem(*PROBLEMS[1])
    assert miopen.convolution_forward_get_solution(h, wd, xd, c, yd, 0) == []
    return [s.solution_id for s in miopen.convolution_forward_get_solution(h, wd, xd, c, yd, 3)]




@check("miopenGetConvolutionNdDescriptor")
def nd_getter_negative_request() -> dict[str, object]:
    """requestedSpatialDim < 0: MIOpen copies nothing (std::copy_n of a negative count) and succeeds, answering
    the spatial dims; our API refuses the negative length (ValueError) - 0 gets the same answer."""
    import ctypes

    from .common import addr, raw_fn

    c = conv_desc([1, 2, 3], [1, 1, 1], [1, 1, 1])
    spatial, buf = ctypes.c_int(-1), (ctypes.c_int * 4)()
    mode = ctypes.c_uint(99)
    st = raw_fn("miopenGetConvolutionNdDescriptor")(addr(c), -1, ctypes.byref(spatial), buf, buf, buf,
                                                     ctypes.byref(mode))
    assert (st, spatial.value, list(buf), mode.value) == (0, 3, [0, 0, 0, 0], 0)
    try:
        miopen.get_convolution_nd_descriptor(c, -1)
    except ValueError as exc:
        assert "requested_spatial_dim must not be negative" in str(exc)
    else:
        raise AssertionError("-1 accepted")
    zero = miopen.get_convolution_nd_descriptor(c, 0)
    assert (zero.spatial_dim, zero.pad_a) == (3, [])
    return {"raw -1": status_name(st), "spatial_dim": spatial.value}
