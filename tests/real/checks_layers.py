"""Pooling, LRN, activation and batch-norm descriptors: round trips, output dimensions and workspace sizes.

Expectations from MIOpen 2.17.0's src/pooling.cpp (GetForwardOutputDim/GetForwardOutputDimNd, computed in
size_t and then narrowed to int; GetWorkSpaceSize), src/pooling_api.cpp (the legacy size: one byte per output
element), src/lrn_api.cpp (N * stride[0] * sizeof(float), whatever the type), src/activ.cpp and
src/batch_norm.cpp (DeriveBNTensorDescriptor: always float, spatial -> 1xCx1x1).
"""

from __future__ import annotations

import itertools
from typing import Any

import miopen
from miopen._generated.errors import miopenStatus_t

from .common import Bound, DT, check, failing, packed, prod, status_name, tensor

PM: Any = Bound("PoolingMode")
U64 = 1 << 64
UNKNOWN = int(miopenStatus_t.miopenStatusUnknownError)
INDEX_BYTES = {"miopenIndexUint8": 1, "miopenIndexUint16": 2, "miopenIndexUint32": 4, "miopenIndexUint64": 8}


def _int32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v


def pool_out(i: int, k: int, p: int, s: int) -> int:
    """max(1, (in + 2p - k) / s + 1) as MIOpen computes it: in size_t, then ptrdiff_t, then int."""
    q = ((i + 2 * p - k) % U64) // s
    v = (q + 1) % U64
    v = v - U64 if v >= 1 << 63 else v
    return _int32(max(1, v))


@check("miopenCreatePoolingDescriptor", "miopenSet2dPoolingDescriptor", "miopenGet2dPoolingDescriptor",
       "miopenGetNdPoolingDescriptor", "miopenSetPoolingIndexType", "miopenGetPoolingIndexType",
       "miopenSetPoolingWorkSpaceIndexMode", "miopenGetPoolingWorkSpaceIndexMode", "miopenDestroyPoolingDescriptor")
def pooling_2d_round_trip() -> None:
    for mode in PM:
        p = miopen.create_pooling_descriptor()
        miopen.set_2d_pooling_descriptor(p, mode, 3, 2, 1, 0, 2, 1)
        got = miopen.get_2d_pooling_descriptor(p)
        assert (got.mode, got.window_height, got.window_width, got.pad_h, got.pad_w, got.stride_h,
                got.stride_w) == (mode, 3, 2, 1, 0, 2, 1)
        nd = miopen.get_nd_pooling_descriptor(p, 2)
        assert (nd.mode, nd.window_dim_a, nd.pad_a, nd.strides_a) == (mode, [3, 2], [1, 0], [2, 1])
        # defaults of a freshly set descriptor: 8-bit indices, mask workspace for 2-D
        assert miopen.get_pooling_index_type(p) == miopen.IndexType.miopenIndexUint8
        assert miopen.get_pooling_work_space_index_mode(p) == miopen.PoolingWorkspaceIndexMode.miopenPoolingWorkspaceIndexMask
        for it in miopen.IndexType:
            miopen.set_pooling_index_type(p, it)
            assert miopen.get_pooling_index_type(p) == it
        for wm in miopen.PoolingWorkspaceIndexMode:
            miopen.set_pooling_work_space_index_mode(p, wm)
            assert miopen.get_pooling_work_space_index_mode(p) == wm
        miopen.destroy_pooling_descriptor(p)


@check("miopenSetNdPoolingDescriptor", "miopenGetNdPoolingDescriptor", "miopenGetPoolingWorkSpaceIndexMode",
       "miopenGetPoolingIndexType")
def pooling_nd_round_trip() -> None:
    for window, pads, strides in [([2, 2], [0, 0], [2, 2]), ([3, 3, 3], [1, 1, 1], [1, 2, 3]), ([5], [2], [1])]:
        p = miopen.create_pooling_descriptor()
        miopen.set_pooling_index_type(p, miopen.IndexType.miopenIndexUint32)
        miopen.set_nd_pooling_descriptor(p, PM.miopenPoolingAverage, window, pads, strides)
        n = len(window)
        got = miopen.get_nd_pooling_descriptor(p, n)
        assert (got.mode, got.nb_dims, got.window_dim_a, got.pad_a, got.strides_a) == (
            PM.miopenPoolingAverage, n, window, pads, strides)
        for k in range(n):
            # fewer entries asked for: the lists are cut, and nbDims (returned: true) still tells the real count
            part = miopen.get_nd_pooling_descriptor(p, k)
            assert (part.nb_dims, part.window_dim_a, part.pad_a, part.strides_a) == (
                n, window[:k], pads[:k], strides[:k])
        # setting the shape rebuilds the descriptor: index type back to 8 bits; 3-D pooling indexes the image
        assert miopen.get_pooling_index_type(p) == miopen.IndexType.miopenIndexUint8
        want = "miopenPoolingWorkspaceIndexImage" if n == 3 else "miopenPoolingWorkspaceIndexMask"
        assert miopen.get_pooling_work_space_index_mode(p).name == want


@check("miopenGetPoolingForwardOutputDim", "miopenGetPoolingNdForwardOutputDim", "miopenSet2dPoolingDescriptor")
def pooling_output_dims() -> dict[str, object]:
    n = 0
    for (h, w), (kh, kw), (ph, pw), (sh, sw) in itertools.product(
            [(7, 7), (8, 9), (1, 1), (32, 17)], [(2, 2), (3, 1), (5, 5)], [(0, 0), (1, 2)], [(1, 1), (2, 2), (3, 1)]):
        p = miopen.create_pooling_descriptor()
        miopen.set_2d_pooling_descriptor(p, PM.miopenPoolingMax, kh, kw, ph, pw, sh, sw)
        x = tensor([2, 3, h, w])
        want = [2, 3, pool_out(h, kh, ph, sh), pool_out(w, kw, pw, sw)]
        assert miopen.get_pooling_nd_forward_output_dim(p, x, 4) == want, (h, w, kh, kw, ph, pw, sh, sw)
        if kh < h + 2 * ph and kw < w + 2 * pw:  # else the 2-D getter's assert aborts (see pooling_asserts)
            assert list(miopen.get_pooling_forward_output_dim(p, x)) == want, (h, w, kh, kw, ph, pw, sh, sw)
        n += 1
    # 3-D pooling on 5-D tensors
    p = miopen.create_pooling_descriptor()
    miopen.set_nd_pooling_descriptor(p, PM.miopenPoolingMax, [2, 3, 3], [0, 1, 1], [2, 2, 1])
    x = tensor([1, 4, 8, 9, 10])
    assert miopen.get_pooling_nd_forward_output_dim(p, x, 5) == [1, 4, pool_out(8, 2, 0, 2), pool_out(9, 3, 1, 2),
                                                                 pool_out(10, 3, 1, 1)]
    # a window larger than the padded input: the size_t arithmetic wraps; with stride 2 MIOpen answers -1
    p = miopen.create_pooling_descriptor()
    miopen.set_2d_pooling_descriptor(p, PM.miopenPoolingMax, 5, 5, 0, 0, 2, 1)
    got = miopen.get_pooling_nd_forward_output_dim(p, tensor([1, 1, 2, 2]), 4)
    assert got[2:] == [pool_out(2, 5, 0, 2), pool_out(2, 5, 0, 1)] == [-1, 1]
    return {"cases": n, "window 5 over 2x2, stride 2": got}


@check("miopenPoolingGetWorkSpaceSize", "miopenPoolingGetWorkSpaceSizeV2", "miopenSetPoolingIndexType")
def pooling_workspace() -> dict[str, int]:
    out = {}
    for dims in ([2, 3, 4, 5], [1, 1, 1, 1], [2, 8, 3, 4, 5]):
        y = tensor(dims)
        assert miopen.pooling_get_work_space_size(y) == prod(dims)  # one uint8 per output element
        for mode in PM:
            p = miopen.create_pooling_descriptor()
            miopen.set_nd_pooling_descriptor(p, mode, [2] * (len(dims) - 2), [0] * (len(dims) - 2),
                                             [2] * (len(dims) - 2))
            for it in miopen.IndexType:
                miopen.set_pooling_index_type(p, it)
                want = prod(dims) * INDEX_BYTES[it.name] if mode == PM.miopenPoolingMax else 0
                assert miopen.pooling_get_work_space_size_v2(p, y) == want, (dims, mode, it)
    # a channels-last y adds room for transposing x and y (align 1 on HIP: 3 * y bytes)
    n, c, h, w = 2, 3, 4, 5
    y = tensor([n, c, h, w], [h * w * c, 1, w * c, c])
    p = miopen.create_pooling_descriptor()
    miopen.set_2d_pooling_descriptor(p, PM.miopenPoolingMax, 2, 2, 0, 0, 2, 2)
    got = miopen.pooling_get_work_space_size_v2(p, y)
    assert got == n * c * h * w * 1 + 3 * n * c * h * w * 4
    out["nhwc"] = got
    return out


@check("miopenCreateLRNDescriptor", "miopenSetLRNDescriptor", "miopenGetLRNDescriptor", "miopenLRNGetWorkSpaceSize",
       "miopenDestroyLRNDescriptor")
def lrn() -> None:
    for mode in miopen.LRNMode:
        d = miopen.create_lrn_descriptor()
        miopen.set_lrn_descriptor(d, mode, 5, 1e-4, 0.75, 2.0)
        got = miopen.get_lrn_descriptor(d)
        assert (got.mode, got.lrn_n, got.lrn_alpha, got.lrn_beta, got.lrn_k) == (mode, 5, 1e-4, 0.75, 2.0)
        miopen.destroy_lrn_descriptor(d)
    for dims, strides, dt in [([2, 3, 4, 5], None, DT.miopenFloat), ([2, 3, 4, 5], None, DT.miopenHalf),
                              ([3, 2, 2, 2], [16, 4, 2, 1], DT.miopenFloat)]:
        y = tensor(dims, strides, dt)
        s = packed(dims) if strides is None else strides
        assert miopen.lrn_get_work_space_size(y) == dims[0] * s[0] * 4  # sizeof(float), whatever the type


@check("miopenCreateActivationDescriptor", "miopenSetActivationDescriptor", "miopenGetActivationDescriptor",
       "miopenDestroyActivationDescriptor")
def activation() -> int:
    for mode in miopen.ActivationMode:
        d = miopen.create_activation_descriptor()
        miopen.set_activation_descriptor(d, mode, 0.5, -2.25, 1e30)
        got = miopen.get_activation_descriptor(d)
        assert (got.mode, got.activ_alpha, got.activ_beta, got.activ_gamma) == (mode, 0.5, -2.25, 1e30)
        miopen.destroy_activation_descriptor(d)
    return len(miopen.ActivationMode)


@check("miopenDeriveBNTensorDescriptor")
def batchnorm_derive() -> None:
    bn = miopen.BatchNormMode
    for dims, dt in [([8, 16, 5, 7], DT.miopenFloat), ([2, 3, 4, 5, 6], DT.miopenHalf), ([1, 1, 1, 1], DT.miopenFloat)]:
        x = tensor(dims, None, dt)
        for mode in bn:
            d = miopen.create_tensor_descriptor()
            miopen.derive_bn_tensor_descriptor(d, x, mode)
            want = [1, dims[1]] + ([1] * (len(dims) - 2) if mode == bn.miopenBNSpatial else dims[2:])
            got = miopen.get_tensor_descriptor(d)
            # always float (MIOpen: "/* xDesc.GetType() */ miopenFloat"), packed
            assert (got.data_type, got.dims_a, got.strides_a) == (DT.miopenFloat, want, packed(want)), (dims, mode)


@check("miopenPoolingGetWorkSpaceSizeV2")
def pooling_rank_errors() -> dict[str, str]:
    """The v2 workspace size of a y whose rank has no default layout (not 4-D or 5-D)."""
    out = {}
    p = miopen.create_pooling_descriptor()
    miopen.set_nd_pooling_descriptor(p, PM.miopenPoolingMax, [2, 2], [0, 0], [2, 2])
    for dims in ([2, 3, 8], [1, 2, 3, 4, 5, 6]):
        status, text = failing(lambda: miopen.pooling_get_work_space_size_v2(p, tensor(dims)))
        out[f"v2 workspace rank {len(dims)}"] = status_name(status)
        assert status == UNKNOWN and "Invalid labels size" in text
    return out


@check("miopenGetPoolingForwardOutputDim", isolated=True)
def pooling_assert_window() -> None:
    """This build of MIOpen keeps its asserts: the 2-D getter asserts window < input + 2 * pad and aborts the
    process. Expected to die inside miopenGetPoolingForwardOutputDim (our side passes valid arguments)."""
    p = miopen.create_pooling_descriptor()
    miopen.set_2d_pooling_descriptor(p, PM.miopenPoolingMax, 4, 2, 0, 0, 1, 1)
    miopen.get_pooling_forward_output_dim(p, tensor([1, 1, 4, 4]))  # window 4 == input 4: aborts


@check("miopenGetPoolingNdForwardOutputDim", isolated=True)
def pooling_assert_rank() -> None:
    """`dims` must equal the tensor's rank (asserted): 5 for a 4-D tensor aborts inside MIOpen."""
    p = miopen.create_pooling_descriptor()
    miopen.set_2d_pooling_descriptor(p, PM.miopenPoolingMax, 2, 2, 0, 0, 2, 2)
    miopen.get_pooling_nd_forward_output_dim(p, tensor([1, 1, 4, 4]), 5)


@check("miopenGetLRNDescriptor", isolated=True)
def lrn_get_before_set() -> None:
    """A created but never set LRN descriptor has no parameters: GetLRNDescriptor reads parms[0] of an empty
    vector (a null read) inside MIOpen."""
    miopen.get_lrn_descriptor(miopen.create_lrn_descriptor())


@check("miopenGetActivationDescriptor", isolated=True)
def activation_get_before_set() -> None:
    """The same for a never set activation descriptor."""
    miopen.get_activation_descriptor(miopen.create_activation_descriptor())
