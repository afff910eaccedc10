"""Activation, batch norm, pooling, softmax, LRN and dropout ops through the stub libMIOpen.

Each op is checked for the calls MIOpen needs, in order, with the right arguments (descriptors
for the right dims, scaling factors typed for the dtype, persistent buffers carried from forward
to backward), and every bad input must raise before any MIOpen call.
"""

from __future__ import annotations

import functools
import gc
import struct
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ..conftest import Libs

HANDLE = 0x5A000
HANDLE_SETUP = {"miopenGetVersion", "miopenCreate", "miopenSetStream"}


def _script_version(libs: Libs) -> None:
    import miopen
    from miopen.version import Version

    major, minor, patch = Version.parse(miopen.MIOPEN_VERSION)
    libs.set_out("miopenGetVersion/major", major)
    libs.set_out("miopenGetVersion/minor", minor)
    libs.set_out("miopenGetVersion/patch", patch)


@pytest.fixture(autouse=True)
def _fresh(libs: Libs) -> Iterator[None]:
    """No handle, no cached descriptors, an empty log: a test sees every call its ops make."""
    from miopen import descriptors, handles, version

    gc.collect()  # objects an earlier test left behind are destroyed now, not during this test
    version.reset_version_cache()
    version.set_version_policy("compatible")
    handles.handle_pool().close()
    descriptors.clear_descriptor_caches()
    libs.miopen.miogen_stub_reset()
    _script_version(libs)
    libs.set_out("miopenCreate/handle", HANDLE)
    yield
    handles.handle_pool().close()
    descriptors.clear_descriptor_caches()


class Rec:
    """The calls made since it was created (handle set-up left out)."""

    def __init__(self, libs: Libs) -> None:
        self.libs = libs
        self.start = len(libs.log())

    def entries(self, fn: str | None = None) -> list[dict[str, str]]:
        return [e for e in self.libs.log()[self.start:] if e[""] not in HANDLE_SETUP and (fn is None or e[""] == fn)]

    def calls(self) -> list[str]:
        return [e[""] for e in self.entries()]

    def one(self, fn: str) -> dict[str, str]:
        got = self.entries(fn)
        assert len(got) == 1, f"{fn} called {len(got)} times: {self.calls()}"
        return got[0]


def g(v: float) -> str:
    """How the stub logs a C double (or float widened to double)."""
    return "%.17g" % v


def f32(v: float) -> str:
    """How the stub logs a host scaling factor stored as float."""
    return g(struct.unpack("<f", struct.pack("<f", v))[0])


def T(ptr: int, dims: tuple[int, ...], dtype: str = "float32", strides: tuple[int, ...] | None = None) -> Any:
    from miopen.tensor import Tensor

    return Tensor.make(ptr, dims, dtype, strides)


def desc_at(libs: Libs, addr: int, dtype: str, dims: tuple[int, ...], strides: tuple[int, ...] | None = None) -> str:
    """Put the descriptor of (dtype, dims, strides) in the cache at a known address; returns it as logged."""
    from miopen import descriptors

    libs.set_out("miopenCreateTensorDescriptor/tensorDesc", addr)
    d = descriptors.tensor_descriptor(dtype, dims, strides)
    assert d.address == addr
    return str(addr)


def nothing_called(libs: Libs) -> None:
    assert libs.calls() == [], f"MIOpen was called before the error: {libs.calls()}"


def raises_first(libs: Libs, exc: type[BaseException], match: str, call: Callable[[], object]) -> None:
    """`call` raises `exc` (message matching) with no MIOpen call at all (not even a handle)."""
    before = len(libs.log())
    with pytest.raises(exc, match=match):
        call()
    assert libs.calls()[before:] == [], f"MIOpen was called before the error: {libs.calls()[before:]}"


# ====================================================================== activation

X, Y, DY, DX = 0x1000, 0x2000, 0x3000, 0x4000
DIMS = (2, 3, 4, 5)
GAPPED = (120, 40, 10, 2)  # same dims, strided: a second descriptor


def _params_for(mode: Any) -> tuple[float, float, float]:
    name = mode.name.removeprefix("miopenActivation")
    if name == "CLAMP":
        return -1.5, 2.5, 0.0
    if name == "CLIPPEDRELU":
        return 6.0, 0.0, 0.0
    return 0.5, 0.25, 2.0


@pytest.mark.parametrize("mode_name", ["PASTHRU", "LOGISTIC", "TANH", "RELU", "SOFTRELU", "ABS", "POWER",
                                       "CLIPPEDRELU", "LEAKYRELU", "ELU", "CLAMP"])
def test_activation_every_mode_forward_and_backward(libs: Libs, mode_name: str) -> None:
    from miopen import api
    from miopen.ops import activation

    members = {m.name.removeprefix("miopenActivation"): m for m in api.ActivationMode}
    assert set(members) >= {"PASTHRU", "LOGISTIC", "TANH", "RELU", "SOFTRELU", "ABS", "POWER", "CLIPPEDRELU",
                            "LEAKYRELU", "ELU"}
    if mode_name not in members:  # the bound release predates it: refused by name, before any call
        n = len(libs.calls())
        with pytest.raises(ValueError, match=f"'{mode_name.lower()}' is not a miopenActivationMode_t"):
            activation.activation_forward(T(X, DIMS), T(Y, DIMS), mode_name.lower())
        assert len(libs.calls()) == n
        return
    mode = members[mode_name]
    a, b, c = _params_for(mode)
    packed = desc_at(libs, 0x71000, "float32", DIMS)
    gapped = desc_at(libs, 0x72000, "float32", DIMS, GAPPED)
    libs.set_out("miopenCreateActivationDescriptor/activDesc", 0x73000)
    rec = Rec(libs)
    activation.activation_forward(T(X, DIMS), T(Y, DIMS, strides=GAPPED), mode, a, b, c)
    # the activation descriptor is made once per (mode, alpha, beta, gamma) and kept for the next calls
    assert rec.calls() == ["miopenCreateActivationDescriptor", "miopenSetActivationDescriptor",
                           "miopenActivationForward"]
    s = rec.one("miopenSetActivationDescriptor")
    assert (s["activDesc"], s["mode"], s["activAlpha"], s["activBeta"], s["activGamma"]) == (
        str(0x73000), str(int(mode)), g(a), g(b), g(c))
    fwd = rec.one("miopenActivationForward")
    assert (fwd["handle"], fwd["activDesc"], fwd["xDesc"], fwd["x"], fwd["yDesc"], fwd["y"]) == (
        str(HANDLE), str(0x73000), packed, str(X), gapped, str(Y))
    assert (fwd["alpha"], fwd["beta"]) == ("1", "0")

    rec = Rec(libs)  # the same parameters (the mode by name this time): the same descriptor, no set-up
    activation.activation_backward(T(Y, DIMS, strides=GAPPED), T(DY, DIMS), T(X, DIMS),
                                   T(DX, DIMS, strides=GAPPED), mode.name, a, b, c)
    assert rec.calls() == ["miopenActivationBackward"]
    bwd = rec.one("miopenActivationBackward")
    assert (bwd["yDesc"], bwd["y"], bwd["dyDesc"], bwd["dy"], bwd["xDesc"], bwd["x"], bwd["dxDesc"], bwd["dx"]) == (
        gapped, str(Y), packed, str(DY), packed, str(X), gapped, str(DX))
    assert (bwd["alpha"], bwd["beta"], bwd["activDesc"]) == ("1", "0", str(0x73000))


def test_activation_mode_names_and_per_mode_defaults(libs: Libs) -> None:
    from miopen import api
    from miopen.ops import activation

    assert activation.activation_mode("relu") is api.ActivationMode.miopenActivationRELU
    assert activation.activation_mode("leaky_relu") is api.ActivationMode.miopenActivationLEAKYRELU
    assert activation.activation_mode(9) is api.ActivationMode.miopenActivationELU
    rec = Rec(libs)
    activation.activation_forward(T(X, DIMS), T(Y, DIMS), "tanh")  # beta * tanh(alpha * x): both default to 1
    activation.activation_forward(T(X, DIMS), T(Y, DIMS), "leakyrelu")
    activation.activation_forward(T(X, DIMS), T(Y, DIMS), "power")
    got = [(e["activAlpha"], e["activBeta"], e["activGamma"]) for e in rec.entries("miopenSetActivationDescriptor")]
    assert got == [("1", "1", "0"), (g(0.01), "0", "0"), ("0", "1", "1")]


def test_activation_scaling_factors_are_float_and_only_one_zero(libs: Libs) -> None:
    """MIOpen's activation reads alpha/beta as float for every dtype and implements only alpha=1, beta=0."""
    import miopen.errors as errors
    from miopen.ops import activation

    rec = Rec(libs)
    activation.activation_forward(T(X, DIMS), T(Y, DIMS), "relu")
    activation.activation_forward(T(X, DIMS, "float16"), T(Y, DIMS, "float16"), "relu")
    activation.activation_forward(T(X, DIMS, "float64"), T(Y, DIMS, "float64"), "relu")
    got = [(e["alpha"], e["beta"]) for e in rec.entries("miopenActivationForward")]
    assert got == [("1", "0")] * 3  # a float 1 and 0 even for double tensors (the stub reads a float)
    dtypes = [e["dataType"] for e in rec.entries("miopenSetTensorDescriptor")]
    assert dtypes == ["1", "0", "6"]
    rec = Rec(libs)
    with pytest.raises(errors.ScalingRuleError, match="only scale=1 and shift=0"):
        activation.activation_forward(T(X, DIMS), T(Y, DIMS), "relu", scale=0.1, shift=0.3)
    assert rec.calls() == []


@pytest.mark.parametrize(
    ("case", "exc", "match"),
    [
        ("dims", "ShapeError", "same dims"),
        ("dtype", "ShapeError", "share one dtype"),
        ("mode_int", ValueError, "mode=42 is not a miopenActivationMode_t"),
        ("mode_str", ValueError, "'swish' is not a miopenActivationMode_t"),
        ("not_tensor", TypeError, "activation_forward: x must be a miopen Tensor"),
        ("bool_alpha", TypeError, "alpha must be a number"),
        ("nan_scale", ValueError, "scale must be finite"),
        ("clipped_no_alpha", ValueError, "CLIPPEDRELU needs alpha"),
        ("clamp_order", ValueError, "alpha \\(lower bound\\) <= beta"),
        ("bwd_dims", "ShapeError", "same dims"),
        ("bwd_dtype", "ShapeError", "dx=miopenHalf"),
    ],
)
def test_activation_bad_inputs(libs: Libs, case: str, exc: Any, match: str) -> None:
    import miopen
    from miopen import errors
    from miopen.ops import activation as act

    if exc == "ShapeError":
        exc = errors.ShapeError
    if case == "clamp_order" and "miopenActivationCLAMP" not in miopen.ActivationMode.__members__:
        match = "'clamp' is not a miopenActivationMode_t"  # the bound release predates CLAMP
    x, y = T(X, DIMS), T(Y, DIMS)
    calls: dict[str, Callable[[], object]] = {
        "dims": lambda: act.activation_forward(x, T(Y, (2, 3, 4, 6)), "relu"),
        "dtype": lambda: act.activation_forward(x, T(Y, DIMS, "float16"), "relu"),
        "mode_int": lambda: act.activation_forward(x, y, 42),
        "mode_str": lambda: act.activation_forward(x, y, "swish"),
        "not_tensor": lambda: act.activation_forward([1.0, 2.0], y, "relu"),
        "bool_alpha": lambda: act.activation_forward(x, y, "elu", True),  # type: ignore[arg-type]
        "nan_scale": lambda: act.activation_forward(x, y, "relu", scale=float("nan")),
        "clipped_no_alpha": lambda: act.activation_forward(x, y, "clippedrelu"),
        "clamp_order": lambda: act.activation_forward(x, y, "clamp", 2.0, 1.0),
        "bwd_dims": lambda: act.activation_backward(y, T(DY, DIMS), x, T(DX, (2, 3, 4, 1)), "relu"),
        "bwd_dtype": lambda: act.activation_backward(y, T(DY, DIMS), x, T(DX, DIMS, "float16"), "relu"),
    }
    raises_first(libs, exc, match, calls[case])


def test_activation_descriptors_are_cached_per_parameters(libs: Libs) -> None:
    """One descriptor per (mode, alpha, beta, gamma), set once; other parameters get their own; clearing the
    descriptor caches makes them again."""
    from miopen import descriptors
    from miopen.ops import activation

    rec = Rec(libs)
    for _ in range(3):
        activation.activation_forward(T(X, DIMS), T(Y, DIMS), "relu")
    activation.activation_forward(T(X, DIMS), T(Y, DIMS), "leakyrelu", 0.2)
    activation.activation_forward(T(X, DIMS), T(Y, DIMS), "leaky_relu", 0.2)  # another spelling: the same
    activation.activation_forward(T(X, DIMS), T(Y, DIMS), "leakyrelu", 0.3)
    assert [e["activAlpha"] for e in rec.entries("miopenSetActivationDescriptor")] == ["0", g(0.2), g(0.3)]
    assert rec.calls().count("miopenActivationForward") == 6
    assert "miopenDestroyActivationDescriptor" not in rec.calls()
    descriptors.clear_descriptor_caches()
    rec = Rec(libs)
    activation.activation_forward(T(X, DIMS), T(Y, DIMS), "relu")
    assert rec.calls() == ["miopenCreateActivationDescriptor", "miopenSetActivationDescriptor",
                           "miopenCreateTensorDescriptor", "miopenSetTensorDescriptor", "miopenActivationForward"]
    # a bad value is still refused before any call, also after the same mode was cached
    with pytest.raises(TypeError, match="alpha must be a number"):
        activation.activation_forward(T(X, DIMS), T(Y, DIMS), "leakyrelu", True)  # type: ignore[arg-type]


def test_tensor_descriptor_cache_keeps_its_checks(libs: Libs) -> None:
    """A layout seen before skips the stride canonicalisation, but a spelling that never passed the checks
    (bools, lists, a dtype name) still goes through them."""
    from miopen import api, descriptors

    d = descriptors.tensor_descriptor(api.DataType.miopenFloat, (2, 3, 4, 5))
    assert descriptors.tensor_descriptor(api.DataType.miopenFloat, (2, 3, 4, 5)) is d
    assert descriptors.tensor_descriptor("float32", [2, 3, 4, 5], [60, 20, 5, 1]) is d
    assert descriptors.tensor_descriptor(api.DataType.miopenFloat, (2, 3, 4, 5), (60, 20, 5, 1)) is d
    assert descriptors.tensor_descriptor(api.DataType.miopenFloat, (2, 3, 4, 5), (60, 1, 5, 1)) is not d
    with pytest.raises(TypeError, match="expected an int, got bool"):
        descriptors.tensor_descriptor(api.DataType.miopenFloat, (2, True, 4, 5))
    d.close()  # closed by someone: not handed out again
    assert descriptors.tensor_descriptor(api.DataType.miopenFloat, (2, 3, 4, 5)) is not d


# ====================================================================== softmax


@pytest.mark.parametrize(("algorithm", "mode", "algo_value", "mode_value"),
                         [("fast", "instance", 0, 0), ("accurate", "channel", 1, 1), ("MIOPEN_SOFTMAX_LOG", 0, 2, 0)])
def test_softmax_v2_forward_and_backward(libs: Libs, algorithm: str, mode: Any, algo_value: int,
                                         mode_value: int) -> None:
    from miopen.ops import softmax

    d = desc_at(libs, 0x81000, "float32", DIMS)
    rec = Rec(libs)
    softmax.softmax_forward(T(X, DIMS), T(Y, DIMS), algorithm=algorithm, mode=mode, scale=0.5, shift=0.25)
    softmax.softmax_backward(T(Y, DIMS), T(DY, DIMS), T(DX, DIMS), algorithm=algorithm, mode=mode)
    assert rec.calls() == ["miopenSoftmaxForward_V2", "miopenSoftmaxBackward_V2"]
    fwd = rec.one("miopenSoftmaxForward_V2")
    assert (fwd["handle"], fwd["xDesc"], fwd["x"], fwd["yDesc"], fwd["y"]) == (str(HANDLE), d, str(X), d, str(Y))
    assert (fwd["algorithm"], fwd["mode"], fwd["alpha"], fwd["beta"]) == (str(algo_value), str(mode_value), "0.5",
                                                                          "0.25")
    bwd = rec.one("miopenSoftmaxBackward_V2")
    assert (bwd["yDesc"], bwd["y"], bwd["dyDesc"], bwd["dy"], bwd["dxDesc"], bwd["dx"]) == (
        d, str(Y), d, str(DY), d, str(DX))
    assert (bwd["algorithm"], bwd["mode"], bwd["alpha"], bwd["beta"]) == (str(algo_value), str(mode_value), "1",
                                                                          "0")


def test_log_softmax_and_2d_inputs(libs: Libs) -> None:
    from miopen.ops import softmax

    d4 = desc_at(libs, 0x82000, "float64", (8, 10, 1, 1))
    rec = Rec(libs)
    softmax.log_softmax_forward(T(X, (8, 10), "float64"), T(Y, (8, 10), "float64"), scale=0.1)  # softmax blends
    softmax.log_softmax_backward(T(Y, (8, 10), "float64"), T(DY, (8, 10), "float64"), T(DX, (8, 10), "float64"))
    assert "miopenCreateTensorDescriptor" not in rec.calls()  # (N, C) is described as the cached (N, C, 1, 1)
    fwd, bwd = rec.one("miopenSoftmaxForward_V2"), rec.one("miopenSoftmaxBackward_V2")
    assert (fwd["xDesc"], fwd["yDesc"], fwd["algorithm"], fwd["mode"]) == (d4, d4, "2", "1")
    assert fwd["alpha"] == f32(0.1)  # MIOpen reads the scaling factors as float
    assert (bwd["dxDesc"], bwd["algorithm"]) == (d4, "2")


@pytest.mark.parametrize(
    ("case", "match"),
    [("5d", "must be 2-D"), ("1d", "must be 2-D"), ("dims", "same dims"), ("dtype", "share one dtype"),
     ("algorithm", "'exact' is not a miopenSoftmaxAlgorithm_t"), ("mode", "mode=7 is not"),
     ("bwd_dims", "same dims")],
)
def test_softmax_bad_inputs(libs: Libs, case: str, match: str) -> None:
    from miopen.ops import softmax as sm

    x, y = T(X, DIMS), T(Y, DIMS)
    calls: dict[str, Callable[[], object]] = {
        "5d": lambda: sm.softmax_forward(T(X, (1, 2, 3, 4, 5)), T(Y, (1, 2, 3, 4, 5))),
        "1d": lambda: sm.softmax_forward(T(X, (7,)), T(Y, (7,))),
        "dims": lambda: sm.softmax_forward(x, T(Y, (2, 3, 4, 4))),
        "dtype": lambda: sm.softmax_forward(x, T(Y, DIMS, "bfloat16")),
        "algorithm": lambda: sm.softmax_forward(x, y, algorithm="exact"),
        "mode": lambda: sm.softmax_forward(x, y, mode=7),
        "bwd_dims": lambda: sm.softmax_backward(y, T(DY, (2, 3, 4, 4)), T(DX, DIMS)),
    }
    raises_first(libs, ValueError, match, calls[case])  # ShapeError is a ValueError


# ====================================================================== batch norm

W, B, RM, RV, SM, SV, DW, DB = (0x10000 * k for k in range(1, 9))


def test_bn_param_shapes() -> None:
    from miopen.ops.batchnorm import bn_param_shape

    assert bn_param_shape((2, 3, 4, 5), "spatial") == (1, 3, 1, 1)
    assert bn_param_shape((2, 3, 4, 5, 6), "spatial") == (1, 3, 1, 1, 1)
    assert bn_param_shape((2, 3, 4, 5), "per_activation") == (1, 3, 4, 5)
    assert bn_param_shape((2, 3, 4, 5, 6), 0) == (1, 3, 4, 5, 6)
    assert bn_param_shape((8, 16), "spatial") == (1, 16, 1, 1)


def test_batchnorm_training_spatial(libs: Libs) -> None:
    from miopen.ops import batchnorm as bn

    xd = desc_at(libs, 0x91000, "float32", DIMS)
    pd = desc_at(libs, 0x92000, "float32", (1, 3, 1, 1))
    rec = Rec(libs)
    bn.batch_norm_forward_training(
        T(X, DIMS), T(Y, DIMS), T(W, (3,)), T(B, (1, 3, 1, 1)), "spatial", exp_avg_factor=0.25, epsilon=1e-3,
        running_mean=T(RM, (3,)), running_var=T(RV, (3,)), save_mean=T(SM, (3, 1, 1)), save_inv_var=T(SV, (3,)))
    assert rec.calls() == ["miopenBatchNormalizationForwardTraining"]
    e = rec.one("miopenBatchNormalizationForwardTraining")
    assert (e["handle"], e["bn_mode"], e["xDesc"], e["x"], e["yDesc"], e["y"]) == (
        str(HANDLE), "1", xd, str(X), xd, str(Y))
    assert (e["bnScaleBiasMeanVarDesc"], e["bnScale"], e["bnBias"]) == (pd, str(W), str(B))
    assert (e["expAvgFactor"], e["epsilon"]) == (g(0.25), g(1e-3))
    assert (e["resultRunningMean"], e["resultRunningVariance"], e["resultSaveMean"], e["resultSaveInvVariance"]) == (
        str(RM), str(RV), str(SM), str(SV))
    assert (e["alpha"], e["beta"]) == ("1", "0")

    rec = Rec(libs)
    bn.batch_norm_forward_training(T(X, DIMS), T(Y, DIMS), T(W, (3,)), T(B, (3,)))  # no optional outputs
    e = rec.one("miopenBatchNormalizationForwardTraining")
    assert (e["resultRunningMean"], e["resultRunningVariance"], e["resultSaveMean"], e["resultSaveInvVariance"]) == (
        "0", "0", "0", "0")
    assert (e["expAvgFactor"], e["epsilon"], e["bnScaleBiasMeanVarDesc"]) == (g(0.1), g(1e-5), pd)


def test_batchnorm_per_activation_5d_and_mixed_precision(libs: Libs) -> None:
    from miopen.ops import batchnorm as bn

    pa = desc_at(libs, 0x93000, "float32", (1, 3, 4, 5))
    rec = Rec(libs)
    bn.batch_norm_forward_training(T(X, DIMS), T(Y, DIMS), T(W, (1, 3, 4, 5)), T(B, (3, 4, 5)), "per_activation")
    e = rec.one("miopenBatchNormalizationForwardTraining")
    assert (e["bn_mode"], e["bnScaleBiasMeanVarDesc"]) == ("0", pa)

    d5 = (2, 3, 4, 5, 6)
    sp5 = desc_at(libs, 0x94000, "float32", (1, 3, 1, 1, 1))
    half = desc_at(libs, 0x95000, "float16", d5)
    rec = Rec(libs)
    bn.batch_norm_forward_inference(T(X, d5, "float16"), T(Y, d5, "float16"), T(W, (3,)), T(B, (3,)),
                                    T(RM, (3,)), T(RV, (3,)), epsilon=2e-5)
    e = rec.one("miopenBatchNormalizationForwardInference")
    assert (e["xDesc"], e["yDesc"], e["bnScaleBiasMeanVarDesc"]) == (half, half, sp5)  # half data, float params
    assert (e["estimatedMean"], e["estimatedVariance"], e["epsilon"], e["alpha"]) == (str(RM), str(RV), g(2e-5),
                                                                                      "1")


def test_batchnorm_inference_and_backward(libs: Libs) -> None:
    from miopen.ops import batchnorm as bn

    xd = desc_at(libs, 0x96000, "float64", DIMS)
    pd = desc_at(libs, 0x97000, "float64", (1, 3, 1, 1))
    rec = Rec(libs)
    bn.batch_norm_forward_inference(T(X, DIMS, "float64"), T(Y, DIMS, "float64"), T(W, (3,), "float64"),
                                    T(B, (3,), "float64"), None, None)
    e = rec.one("miopenBatchNormalizationForwardInference")
    assert (e["estimatedMean"], e["estimatedVariance"], e["bnScaleBiasMeanVarDesc"]) == ("0", "0", pd)
    assert (e["alpha"], e["beta"]) == ("1", "0")  # float scalars for double data too

    rec = Rec(libs)
    bn.batch_norm_backward(T(X, DIMS, "float64"), T(DY, DIMS, "float64"), T(DX, DIMS, "float64"),
                           T(W, (3,), "float64"), T(DW, (3,), "float64"), T(DB, (3,), "float64"), epsilon=1e-4,
                           saved_mean=T(SM, (3,), "float64"), saved_inv_var=T(SV, (3,), "float64"))
    assert rec.calls() == ["miopenBatchNormalizationBackward"]
    e = rec.one("miopenBatchNormalizationBackward")
    assert (e["xDesc"], e["x"], e["dyDesc"], e["dy"], e["dxDesc"], e["dx"]) == (xd, str(X), xd, str(DY), xd, str(DX))
    assert (e["bnScaleBiasDiffDesc"], e["bnScale"], e["resultBnScaleDiff"], e["resultBnBiasDiff"]) == (
        pd, str(W), str(DW), str(DB))
    assert (e["savedMean"], e["savedInvVariance"], e["epsilon"], e["bn_mode"]) == (str(SM), str(SV), g(1e-4), "1")
    assert (e["alphaDataDiff"], e["betaDataDiff"], e["alphaParamDiff"], e["betaParamDiff"]) == ("1", "0", "1", "0")

    rec = Rec(libs)
    bn.batch_norm_backward(T(X, DIMS), T(DY, DIMS), T(DX, DIMS), T(W, (3,)), T(DW, (3,)), T(DB, (3,)))
    e = rec.one("miopenBatchNormalizationBackward")
    assert (e["savedMean"], e["savedInvVariance"]) == ("0", "0")
    import miopen.errors as errors

    rec = Rec(libs)
    with pytest.raises(errors.ScalingRuleError, match="only scale=1 and shift=0"):
        bn.batch_norm_backward(T(X, DIMS), T(DY, DIMS), T(DX, DIMS), T(W, (3,)), T(DW, (3,)), T(DB, (3,)),
                               param_scale=0.5)
    assert rec.calls() == []


@pytest.mark.parametrize(
    ("case", "exc", "match"),
    [
        ("weight_shape", "ShapeError", "weight must have the spatial parameter shape \\(1, 3, 1, 1\\)"),
        ("per_act_given_c", "ShapeError", "bias must have the per-activation parameter shape \\(1, 3, 4, 5\\)"),
        ("running_shape", "ShapeError", "running_var must have"),
        ("param_dtypes", "ShapeError", "share one dtype"),
        ("param_vs_x", "ShapeError", "must be miopenFloat for x of dtype miopenFloat; got miopenDouble"),
        ("half_double", "ShapeError", "miopenFloat or miopenHalf for x of dtype miopenHalf"),
        ("strided_param", "ShapeError", "weight must be contiguous"),
        ("x_rank", "ShapeError", "x must be 2-D to 5-D"),
        ("xy_dims", "ShapeError", "same dims"),
        ("xy_dtype", "ShapeError", "share one dtype"),
        ("half_pair", ValueError, "running_mean and running_var go together"),
        ("save_pair", ValueError, "save_inv_var and save_mean go together"),
        ("factor", ValueError, "exp_avg_factor must be <= 1.0"),
        ("epsilon", ValueError, "epsilon must be > 0.0"),
        ("mode", ValueError, "'batch' is not a miopenBatchNormMode_t"),
        ("inf_pair", ValueError, "running_mean and running_var go together"),
        ("inf_shape", "ShapeError", "running_mean must have"),
        ("bwd_saved_pair", ValueError, "saved_mean and saved_inv_var go together"),
        ("bwd_dweight", "ShapeError", "dweight must have"),
        ("bwd_dims", "ShapeError", "same dims"),
    ],
)
def test_batchnorm_bad_inputs(libs: Libs, case: str, exc: Any, match: str) -> None:
    from miopen import errors
    from miopen.ops import batchnorm as bn

    if exc == "ShapeError":
        exc = errors.ShapeError
    x, y, w, b = T(X, DIMS), T(Y, DIMS), T(W, (3,)), T(B, (3,))
    train = bn.batch_norm_forward_training
    calls: dict[str, Callable[[], object]] = {
        "weight_shape": lambda: train(x, y, T(W, (4,)), b),
        "per_act_given_c": lambda: train(x, y, T(W, (1, 3, 4, 5)), b, "per_activation"),
        "running_shape": lambda: train(x, y, w, b, running_mean=T(RM, (3,)), running_var=T(RV, (3, 2))),
        "param_dtypes": lambda: train(x, y, w, T(B, (3,), "float16")),
        "param_vs_x": lambda: train(x, y, T(W, (3,), "float64"), T(B, (3,), "float64")),
        "half_double": lambda: train(T(X, DIMS, "float16"), T(Y, DIMS, "float16"), T(W, (3,), "float64"),
                                     T(B, (3,), "float64")),
        "strided_param": lambda: train(x, y, T(W, (3,), strides=(2,)), b),
        "x_rank": lambda: train(T(X, (6,)), T(Y, (6,)), w, b),
        "xy_dims": lambda: train(x, T(Y, (2, 3, 4, 4)), w, b),
        "xy_dtype": lambda: train(x, T(Y, DIMS, "float16"), w, b),
        "half_pair": lambda: train(x, y, w, b, running_mean=T(RM, (3,))),
        "save_pair": lambda: train(x, y, w, b, save_inv_var=T(SV, (3,))),
        "factor": lambda: train(x, y, w, b, exp_avg_factor=1.5),
        "epsilon": lambda: train(x, y, w, b, epsilon=0.0),
        "mode": lambda: train(x, y, w, b, "batch"),
        "inf_pair": lambda: bn.batch_norm_forward_inference(x, y, w, b, T(RM, (3,)), None),
        "inf_shape": lambda: bn.batch_norm_forward_inference(x, y, w, b, T(RM, (1, 3, 4, 5)), T(RV, (3,))),
        "bwd_saved_pair": lambda: bn.batch_norm_backward(x, T(DY, DIMS), T(DX, DIMS), w, T(DW, (3,)), T(DB, (3,)),
                                                         saved_mean=T(SM, (3,))),
        "bwd_dweight": lambda: bn.batch_norm_backward(x, T(DY, DIMS), T(DX, DIMS), w, T(DW, (5,)), T(DB, (3,))),
        "bwd_dims": lambda: bn.batch_norm_backward(x, T(DY, DIMS), T(DX, (2, 3, 4, 4)), w, T(DW, (3,)),
                                                   T(DB, (3,))),
    }
    raises_first(libs, exc, match, calls[case])


# ====================================================================== pooling

XP, YP = (2, 3, 8, 8), (2, 3, 4, 4)


def _script_pool_out(libs: Libs, dims: tuple[int, ...], ws: int = 4096) -> None:
    for k, v in enumerate(dims):
        libs.set_out(f"miopenGetPoolingNdForwardOutputDim/tensorDimArr[{k}]", v)
    libs.set_out("miopenPoolingGetWorkSpaceSizeV2/workSpaceSize", ws)
    libs.set_out("miopenCreatePoolingDescriptor/poolDesc", 0xA0000)


def test_max_pooling_keeps_its_index_workspace_for_backward(libs: Libs) -> None:
    from miopen import workspace
    from miopen.ops import pooling

    xd = desc_at(libs, 0xA1000, "float32", XP)
    yd = desc_at(libs, 0xA2000, "float32", YP)
    _script_pool_out(libs, YP, 4096)
    rec = Rec(libs)
    state = pooling.pooling_forward(T(X, XP), T(Y, YP), "max", 2)
    assert rec.calls() == ["miopenCreatePoolingDescriptor", "miopenSetNdPoolingDescriptor",
                           "miopenGetPoolingNdForwardOutputDim", "miopenPoolingGetWorkSpaceSizeV2",
                           "miopenPoolingForward"]
    s = rec.one("miopenSetNdPoolingDescriptor")
    assert (s["poolDesc"], s["mode"], s["nbDims"], s["windowDimA"], s["padA"], s["stridesA"]) == (
        str(0xA0000), "0", "2", "[2,2]", "[0,0]", "[2,2]")
    o = rec.one("miopenGetPoolingNdForwardOutputDim")
    assert (o["poolDesc"], o["tensorDesc"], o["dims"]) == (str(0xA0000), xd, "4")
    q = rec.one("miopenPoolingGetWorkSpaceSizeV2")
    assert (q["poolDesc"], q["yDesc"]) == (str(0xA0000), yd)
    assert state.workspace is not None and state.workspace.nbytes == 4096
    ws_ptr = state.workspace.ptr
    assert ws_ptr and ws_ptr != workspace.scratch(0).ptr
    f = rec.one("miopenPoolingForward")
    assert (f["handle"], f["poolDesc"], f["xDesc"], f["x"], f["yDesc"], f["y"]) == (
        str(HANDLE), str(0xA0000), xd, str(X), yd, str(Y))
    assert (f["do_backward"], f["workSpace"], f["workSpaceSize"], f["alpha"], f["beta"]) == (
        "1", str(ws_ptr), "4096", "1", "0")

    rec = Rec(libs)
    pooling.pooling_backward(T(Y, YP), T(DY, YP), T(X, XP), T(DX, XP), state)
    assert rec.calls() == ["miopenPoolingBackward"]
    b = rec.one("miopenPoolingBackward")
    assert (b["poolDesc"], b["workSpace"]) == (str(0xA0000), str(ws_ptr))  # the same descriptor and index buffer
    assert (b["yDesc"], b["y"], b["dyDesc"], b["dy"], b["xDesc"], b["x"], b["dxDesc"], b["dx"]) == (
        yd, str(Y), yd, str(DY), xd, str(X), xd, str(DX))
    assert (b["alpha"], b["beta"]) == ("1", "0")

    # the next step reuses the state's buffer, descriptor and MIOpen's sizes for its layout: nothing allocated,
    # nothing asked again (y's dims are still checked against them)
    rec = Rec(libs)
    again = pooling.pooling_forward(T(X, XP), T(Y, YP), "max", (2, 2), state=state)
    assert again is state and state.workspace.ptr == ws_ptr
    assert rec.calls() == ["miopenPoolingForward"]
    from miopen.errors import ShapeError

    with pytest.raises(ShapeError, match=r"4, 7"):  # every check stays
        pooling.pooling_forward(T(X, XP), T(Y, (2, 3, 4, 7)), "max", 2, state=state)
    # descriptors forgotten (as on a library change): asked again; a bigger size (scripted) makes a new buffer
    from miopen import descriptors

    descriptors.clear_descriptor_caches()
    libs.set_out("miopenPoolingGetWorkSpaceSizeV2/workSpaceSize", 8192)
    rec = Rec(libs)
    pooling.pooling_forward(T(X, XP), T(Y, YP), "max", 2, state=state)
    assert "miopenGetPoolingNdForwardOutputDim" in rec.calls() and "miopenPoolingGetWorkSpaceSizeV2" in rec.calls()
    assert state.workspace.nbytes == 8192
    assert state.workspace.ptr != ws_ptr
    assert libs.log("miopenPoolingForward")[-1]["workSpace"] == str(state.workspace.ptr)
    # made without state=, the state holds the shared descriptor of its parameters: closing it destroys nothing;
    # the descriptor goes once the cache has forgotten it (above) and its last holder is gone
    rec = Rec(libs)
    state.close()
    assert rec.calls() == [] and state.closed
    del state, again
    gc.collect()
    assert rec.calls() == ["miopenDestroyPoolingDescriptor"]


def test_pooling_state_reuse_follows_the_strides(libs: Libs) -> None:
    """The state remembers the tensor descriptors of its last forward; other strides get their own."""
    from miopen import descriptors
    from miopen.ops import pooling

    _script_pool_out(libs, YP)
    state = pooling.pooling_forward(T(X, XP), T(Y, YP), "max", 2)
    first = libs.log("miopenPoolingForward")[-1]["xDesc"]
    pooling.pooling_forward(T(X, XP), T(Y, YP), "max", 2, state=state)
    assert libs.log("miopenPoolingForward")[-1]["xDesc"] == first
    libs.set_out("miopenCreateTensorDescriptor/tensorDesc", 0x7B000)
    gapped = (2 * 3 * 8 * 16, 8 * 16, 16, 2)
    pooling.pooling_forward(T(X, XP, strides=gapped), T(Y, YP), "max", 2, state=state)
    assert libs.log("miopenPoolingForward")[-1]["xDesc"] == str(0x7B000)
    descriptors.clear_descriptor_caches()
    libs.set_out("miopenCreateTensorDescriptor/tensorDesc", 0x7C000)
    pooling.pooling_forward(T(X, XP, strides=gapped), T(Y, YP), "max", 2, state=state)
    assert libs.log("miopenPoolingForward")[-1]["xDesc"] == str(0x7C000)
    state.close()


def test_average_pooling_3d_has_no_workspace(libs: Libs) -> None:
    from miopen.ops import pooling

    x5, y5 = (1, 2, 6, 6, 6), (1, 2, 3, 2, 2)
    _script_pool_out(libs, y5)
    rec = Rec(libs)
    state = pooling.pooling_forward(T(X, x5), T(Y, y5), "average", (2, 3, 3), pads=(0, 1, 1), strides=(2, 3, 3))
    assert "miopenPoolingGetWorkSpaceSizeV2" not in rec.calls()
    s = rec.one("miopenSetNdPoolingDescriptor")
    assert (s["mode"], s["nbDims"], s["windowDimA"], s["padA"], s["stridesA"]) == ("1", "3", "[2,3,3]", "[0,1,1]",
                                                                                   "[2,3,3]")
    assert rec.one("miopenGetPoolingNdForwardOutputDim")["dims"] == "5"
    f = rec.one("miopenPoolingForward")
    assert (f["workSpace"], f["workSpaceSize"]) == ("0", "0") and state.workspace is None
    pooling.pooling_backward(T(Y, y5), T(DY, y5), T(X, x5), T(DX, x5), state)
    assert rec.one("miopenPoolingBackward")["workSpace"] == "0"


def test_pooling_inference_skips_the_workspace(libs: Libs) -> None:
    from miopen.ops import pooling

    _script_pool_out(libs, YP)
    rec = Rec(libs)
    state = pooling.pooling_forward(T(X, XP), T(Y, YP), "max", 2, do_backward=False)
    assert "miopenPoolingGetWorkSpaceSizeV2" not in rec.calls()
    f = rec.one("miopenPoolingForward")
    assert (f["do_backward"], f["workSpace"]) == ("0", "0")
    raises_first(libs, ValueError, "forward ran with do_backward=False",
                 lambda: pooling.pooling_backward(T(Y, YP), T(DY, YP), T(X, XP), T(DX, XP), state))


def test_pooling_wrong_output_dims_are_caught_before_the_forward(libs: Libs) -> None:
    from miopen import errors
    from miopen.ops import pooling

    desc_at(libs, 0xA1000, "float32", XP)
    desc_at(libs, 0xA2000, "float32", (2, 3, 5, 5))
    _script_pool_out(libs, YP)
    rec = Rec(libs)
    with pytest.raises(errors.ShapeError, match=r"y must have dims \(2, 3, 4, 4\).*got \(2, 3, 5, 5\)"):
        pooling.pooling_forward(T(X, XP), T(Y, (2, 3, 5, 5)), "max", 2)
    assert rec.calls() == ["miopenCreatePoolingDescriptor", "miopenSetNdPoolingDescriptor",
                           "miopenGetPoolingNdForwardOutputDim"]  # the descriptor stays cached for its parameters
    rec = Rec(libs)
    with pytest.raises(errors.ShapeError, match=r"y must have dims \(2, 3, 4, 4\)"):  # the check stays
        pooling.pooling_forward(T(X, XP), T(Y, (2, 3, 5, 5)), "max", 2)
    assert rec.calls() == []  # nothing asked again: the cached descriptor and the output dims for this x


@pytest.mark.parametrize(
    ("case", "exc", "match"),
    [
        ("rank", "ShapeError", "x must be 4-D"),
        ("window_len", "ShapeError", "window needs 2 values"),
        ("pads", ValueError, r"pads\[0\] must be >= 0"),
        ("strides", ValueError, "strides must be >= 1"),
        ("nc", "ShapeError", "y must have x's rank, N and C"),
        ("dtype", "ShapeError", "share one dtype"),
        ("mode", ValueError, "'min' is not a miopenPoolingMode_t"),
        ("window_type", TypeError, "window must be an int or a sequence"),
        ("bwd_no_state", ValueError, "state is required"),
        ("bwd_not_state", TypeError, "state must be the PoolingState"),
        ("bwd_other_shape", "ShapeError", "x must have the forward input's dims \\(2, 3, 8, 8\\)"),
        ("bwd_other_y", "ShapeError", "dy must have the forward output's dims"),
        ("bwd_dtype", "ShapeError", "the forward ran on miopenFloat"),
        ("bwd_closed", ValueError, "state is closed"),
        ("fwd_state_mismatch", "ShapeError", "state comes from another pooling"),
    ],
)
def test_pooling_bad_inputs(libs: Libs, case: str, exc: Any, match: str) -> None:
    from miopen import errors
    from miopen.ops import pooling as pl

    if exc == "ShapeError":
        exc = errors.ShapeError
    _script_pool_out(libs, YP)
    state = pl.pooling_forward(T(X, XP), T(Y, YP), "max", 2)
    closed = pl.pooling_forward(T(X, XP), T(Y, YP), "max", 2)
    closed.close()
    x, y, dy, dx = T(X, XP), T(Y, YP), T(DY, YP), T(DX, XP)
    calls: dict[str, Callable[[], object]] = {
        "rank": lambda: pl.pooling_forward(T(X, (3, 8, 8)), T(Y, (3, 4, 4)), "max", 2),
        "window_len": lambda: pl.pooling_forward(x, y, "max", (2, 2, 2)),
        "pads": lambda: pl.pooling_forward(x, y, "max", 2, pads=(-1, 0)),
        "strides": lambda: pl.pooling_forward(x, y, "max", 2, strides=0),
        "nc": lambda: pl.pooling_forward(x, T(Y, (2, 4, 4, 4)), "max", 2),
        "dtype": lambda: pl.pooling_forward(x, T(Y, YP, "float16"), "max", 2),
        "mode": lambda: pl.pooling_forward(x, y, "min", 2),
        "window_type": lambda: pl.pooling_forward(x, y, "max", 2.0),  # type: ignore[arg-type]
        "bwd_no_state": lambda: pl.pooling_backward(y, dy, x, dx, None),
        "bwd_not_state": lambda: pl.pooling_backward(y, dy, x, dx, object()),  # type: ignore[arg-type]
        "bwd_other_shape": lambda: pl.pooling_backward(y, dy, T(X, (2, 3, 9, 9)), T(DX, (2, 3, 9, 9)), state),
        "bwd_other_y": lambda: pl.pooling_backward(y, T(DY, (2, 3, 5, 5)), x, dx, state),
        "bwd_dtype": lambda: pl.pooling_backward(T(Y, YP, "float16"), T(DY, YP, "float16"), T(X, XP, "float16"),
                                                 T(DX, XP, "float16"), state),
        "bwd_closed": lambda: pl.pooling_backward(y, dy, x, dx, closed),
        "fwd_state_mismatch": lambda: pl.pooling_forward(x, y, "average", 2, state=state),
    }
    raises_first(libs, exc, match, calls[case])


# ====================================================================== LRN


def test_lrn_forward_keeps_its_workspace_for_backward(libs: Libs) -> None:
    from miopen.ops import lrn

    d = desc_at(libs, 0xB1000, "float32", DIMS)
    libs.set_out("miopenLRNGetWorkSpaceSize/workSpaceSize", 2048)
    libs.set_out("miopenCreateLRNDescriptor/lrnDesc", 0xB0000)
    rec = Rec(libs)
    state = lrn.lrn_forward(T(X, DIMS), T(Y, DIMS), "cross_channel", 5, 1e-4, 0.75, 2.0)
    assert rec.calls() == ["miopenCreateLRNDescriptor", "miopenSetLRNDescriptor", "miopenLRNGetWorkSpaceSize",
                           "miopenLRNForward"]
    s = rec.one("miopenSetLRNDescriptor")
    assert (s["lrnDesc"], s["mode"], s["lrnN"], s["lrnAlpha"], s["lrnBeta"], s["lrnK"]) == (
        str(0xB0000), "1", "5", g(1e-4), "0.75", "2")
    assert rec.one("miopenLRNGetWorkSpaceSize")["yDesc"] == d
    assert state.workspace is not None and state.workspace.nbytes == 2048
    ws = state.workspace.ptr
    f = rec.one("miopenLRNForward")
    assert (f["lrnDesc"], f["xDesc"], f["x"], f["yDesc"], f["y"], f["do_backward"], f["workSpace"]) == (
        str(0xB0000), d, str(X), d, str(Y), "1", str(ws))
    rec = Rec(libs)
    lrn.lrn_backward(T(Y, DIMS), T(DY, DIMS), T(X, DIMS), T(DX, DIMS), state)
    b = rec.one("miopenLRNBackward")
    assert rec.calls() == ["miopenLRNBackward"]
    assert (b["lrnDesc"], b["workSpace"], b["y"], b["dy"], b["x"], b["dx"], b["alpha"], b["beta"]) == (
        str(0xB0000), str(ws), str(Y), str(DY), str(X), str(DX), "1", "0")

    rec = Rec(libs)
    assert lrn.lrn_forward(T(X, DIMS), T(Y, DIMS), "cross_channel", 5, 1e-4, 0.75, 2.0, state=state) is state
    assert rec.calls() == ["miopenLRNGetWorkSpaceSize", "miopenLRNForward"] and state.workspace.ptr == ws
    state.close()
    raises_first(libs, ValueError, "state is closed",
                 lambda: lrn.lrn_backward(T(Y, DIMS), T(DY, DIMS), T(X, DIMS), T(DX, DIMS), state))


def test_lrn_without_backward_has_no_workspace(libs: Libs) -> None:
    from miopen.ops import lrn

    rec = Rec(libs)
    state = lrn.lrn_forward(T(X, DIMS), T(Y, DIMS), "within_channel", 3, do_backward=False)
    assert "miopenLRNGetWorkSpaceSize" not in rec.calls()
    f = rec.one("miopenLRNForward")
    assert (f["do_backward"], f["workSpace"]) == ("0", "0")
    assert rec.one("miopenSetLRNDescriptor")["mode"] == "0"
    raises_first(libs, ValueError, "do_backward=False",
                 lambda: lrn.lrn_backward(T(Y, DIMS), T(DY, DIMS), T(X, DIMS), T(DX, DIMS), state))


@pytest.mark.parametrize(
    ("case", "exc", "match"),
    [
        ("rank", "ShapeError", "x must be 4-D"),
        ("dims", "ShapeError", "same dims"),
        ("dtype", "ShapeError", "share one dtype"),
        ("n", ValueError, "n \\(the window size\\) must be a positive int"),
        ("mode", ValueError, "'across' is not a miopenLRNMode_t"),
        ("bwd_no_state", ValueError, "state is required"),
        ("bwd_other_shape", "ShapeError", "dx must have the forward's dims"),
        ("bwd_dtype", "ShapeError", "share one dtype"),
        ("fwd_state_mismatch", "ShapeError", "state comes from another LRN"),
    ],
)
def test_lrn_bad_inputs(libs: Libs, case: str, exc: Any, match: str) -> None:
    from miopen import errors
    from miopen.ops import lrn

    if exc == "ShapeError":
        exc = errors.ShapeError
    libs.set_out("miopenLRNGetWorkSpaceSize/workSpaceSize", 256)
    state = lrn.lrn_forward(T(X, DIMS), T(Y, DIMS))
    x, y, dy, dx = T(X, DIMS), T(Y, DIMS), T(DY, DIMS), T(DX, DIMS)
    calls: dict[str, Callable[[], object]] = {
        "rank": lambda: lrn.lrn_forward(T(X, (2, 3, 4)), T(Y, (2, 3, 4))),
        "dims": lambda: lrn.lrn_forward(x, T(Y, (2, 3, 4, 4))),
        "dtype": lambda: lrn.lrn_forward(x, T(Y, DIMS, "float16")),
        "n": lambda: lrn.lrn_forward(x, y, n=0),
        "mode": lambda: lrn.lrn_forward(x, y, "across"),
        "bwd_no_state": lambda: lrn.lrn_backward(y, dy, x, dx, None),
        "bwd_other_shape": lambda: lrn.lrn_backward(y, dy, x, T(DX, (2, 3, 4, 6)), state),
        "bwd_dtype": lambda: lrn.lrn_backward(y, dy, x, T(DX, DIMS, "float16"), state),
        "fwd_state_mismatch": lambda: lrn.lrn_forward(x, y, n=3, state=state),
    }
    raises_first(libs, exc, match, calls[case])


# ====================================================================== dropout


def test_dropout_states_reserve_and_close(libs: Libs) -> None:
    from miopen.ops.dropout import Dropout

    libs.set_out("miopenDropoutGetStatesSize/stateSizeInBytes", 1024)
    libs.set_out("miopenDropoutGetReserveSpaceSize/reserveSpaceSizeInBytes", 512)
    libs.set_out("miopenCreateDropoutDescriptor/dropoutDesc", 0xC0000)
    rec = Rec(libs)
    drop = Dropout(0.25, seed=7, state_evo=True)
    assert rec.calls() == ["miopenCreateDropoutDescriptor", "miopenDropoutGetStatesSize", "miopenSetDropoutDescriptor"]
    assert rec.one("miopenDropoutGetStatesSize")["handle"] == str(HANDLE)
    assert drop.states is not None and drop.states.nbytes == 1024
    s = rec.one("miopenSetDropoutDescriptor")
    assert (s["dropoutDesc"], s["handle"], s["dropout"], s["states"], s["stateSizeInBytes"]) == (
        str(0xC0000), str(HANDLE), "0.25", str(drop.states.ptr), "1024")
    assert (s["seed"], s["use_mask"], s["state_evo"], s["rng_mode"]) == ("7", "0", "1", "0")

    xd = desc_at(libs, 0xC1000, "float32", DIMS)
    rec = Rec(libs)
    reserve = drop.forward(T(X, DIMS), T(Y, DIMS))
    assert rec.calls() == ["miopenDropoutGetReserveSpaceSize", "miopenDropoutForward"]
    assert rec.one("miopenDropoutGetReserveSpaceSize")["xDesc"] == xd
    assert reserve.nbytes == 512 and reserve.buffer.nbytes == 512
    rptr = reserve.buffer.ptr
    assert rptr and rptr != drop.states.ptr
    f = rec.one("miopenDropoutForward")
    assert (f["dropoutDesc"], f["noise_shape"], f["xDesc"], f["x"], f["yDesc"], f["y"]) == (
        str(0xC0000), xd, xd, str(X), xd, str(Y))
    assert (f["reserveSpace"], f["reserveSpaceSizeInBytes"]) == (str(rptr), "512")

    rec = Rec(libs)
    drop.backward(T(DY, DIMS), T(DX, DIMS), reserve)
    assert rec.calls() == ["miopenDropoutBackward"]
    b = rec.one("miopenDropoutBackward")
    assert (b["dropoutDesc"], b["noise_shape"], b["dy"], b["dx"], b["reserveSpace"], b["reserveSpaceSizeInBytes"]) == (
        str(0xC0000), xd, str(DY), str(DX), str(rptr), "512")

    rec = Rec(libs)
    assert drop.forward(T(X, DIMS), T(Y, DIMS), reserve=reserve) is reserve and reserve.buffer.ptr == rptr
    assert rec.one("miopenDropoutForward")["reserveSpace"] == str(rptr)

    rec = Rec(libs)
    drop.close()
    drop.close()
    assert rec.calls() == ["miopenDestroyDropoutDescriptor"] and drop.closed
    raises_first(libs, ValueError, "Dropout.forward: this Dropout is closed",
                 lambda: drop.forward(T(X, DIMS), T(Y, DIMS)))
    raises_first(libs, ValueError, "Dropout.backward: this Dropout is closed",
                 lambda: drop.backward(T(DY, DIMS), T(DX, DIMS), reserve))


def test_dropout_use_mask_needs_a_reserve(libs: Libs) -> None:
    from miopen.ops.dropout import Dropout

    libs.set_out("miopenDropoutGetStatesSize/stateSizeInBytes", 64)
    libs.set_out("miopenDropoutGetReserveSpaceSize/reserveSpaceSizeInBytes", 32)
    with Dropout(0.5, use_mask=True) as drop:
        assert libs.log("miopenSetDropoutDescriptor")[-1]["use_mask"] == "1"
        raises_first(libs, ValueError, "use_mask=True: pass the reserve",
                     lambda: drop.forward(T(X, DIMS), T(Y, DIMS)))
    assert drop.closed


@pytest.mark.parametrize(
    ("case", "exc", "match"),
    [
        ("rate", ValueError, "rate must be < 1.0"),
        ("negative_rate", ValueError, "rate must be >= 0.0"),
        ("seed", ValueError, "seed must be an int"),
        ("use_mask", TypeError, "use_mask must be a bool"),
        ("rng", ValueError, "rng_mode=5 is not"),
    ],
)
def test_dropout_bad_settings(libs: Libs, case: str, exc: type[BaseException], match: str) -> None:
    from miopen.ops.dropout import Dropout

    kwargs: dict[str, Any] = {"rate": {"rate": 1.0}, "negative_rate": {"rate": -0.1}, "seed": {"seed": -1},
                              "use_mask": {"use_mask": 1}, "rng": {"rng_mode": 5}}[case]
    raises_first(libs, exc, match, lambda: Dropout(**kwargs))


@pytest.mark.parametrize(
    ("case", "exc", "match"),
    [
        ("dims", "ShapeError", "same dims"),
        ("dtype", "ShapeError", "share one dtype"),
        ("rank", "ShapeError", "x must be 1-D to 5-D"),
        ("no_reserve", ValueError, "reserve is required"),
        ("other_owner", ValueError, "reserve comes from another Dropout"),
        ("reserve_shape", "ShapeError", "reserve was made for miopenFloat dims \\(2, 3, 4, 5\\)"),
        ("closed_reserve", ValueError, "reserve is closed"),
        ("not_reserve", TypeError, "reserve must be the DropoutReserve"),
    ],
)
def test_dropout_bad_inputs(libs: Libs, case: str, exc: Any, match: str) -> None:
    from miopen import errors
    from miopen.ops.dropout import Dropout

    if exc == "ShapeError":
        exc = errors.ShapeError
    libs.set_out("miopenDropoutGetStatesSize/stateSizeInBytes", 64)
    libs.set_out("miopenDropoutGetReserveSpaceSize/reserveSpaceSizeInBytes", 32)
    drop, other = Dropout(0.5), Dropout(0.5)
    reserve = drop.forward(T(X, DIMS), T(Y, DIMS))
    foreign = other.forward(T(X, DIMS), T(Y, DIMS))
    gone = drop.forward(T(X, DIMS), T(Y, DIMS))
    gone.close()
    dy, dx = T(DY, DIMS), T(DX, DIMS)
    calls: dict[str, Callable[[], object]] = {
        "dims": lambda: drop.forward(T(X, DIMS), T(Y, (2, 3, 4, 4))),
        "dtype": lambda: drop.forward(T(X, DIMS), T(Y, DIMS, "float16")),
        "rank": lambda: drop.forward(T(X, (1, 2, 3, 4, 5, 6)), T(Y, (1, 2, 3, 4, 5, 6))),
        "no_reserve": lambda: drop.backward(dy, dx, None),
        "other_owner": lambda: drop.backward(dy, dx, foreign),
        "reserve_shape": lambda: drop.backward(T(DY, (2, 3, 4, 6)), T(DX, (2, 3, 4, 6)), reserve),
        "closed_reserve": lambda: drop.backward(dy, dx, gone),
        "not_reserve": lambda: drop.backward(dy, dx, 0x1234),  # type: ignore[arg-type]
    }
    raises_first(libs, exc, match, calls[case])


# ====================================================================== no scratch for workspace-free ops


def test_workspace_free_ops_allocate_nothing(libs: Libs, monkeypatch: pytest.MonkeyPatch) -> None:
    from miopen import hip, workspace
    from miopen.ops import activation, batchnorm, pooling, softmax

    class Counting:
        def __init__(self) -> None:
            self.allocated: list[int] = []

        def allocate(self, nbytes: int, stream: int | None) -> int:
            self.allocated.append(nbytes)
            return 0xD0000 + 0x1000 * len(self.allocated)

        def free(self, ptr: int, stream: int | None) -> None:
            pass

    counting = Counting()
    monkeypatch.setattr(hip, "get_allocator", lambda: counting)
    monkeypatch.setattr(workspace._scratch, "table", {}, raising=False)  # fresh scratch uses the counter
    activation.activation_forward(T(X, DIMS), T(Y, DIMS), "relu")
    activation.activation_backward(T(Y, DIMS), T(DY, DIMS), T(X, DIMS), T(DX, DIMS), "elu")
    softmax.softmax_forward(T(X, DIMS), T(Y, DIMS))
    softmax.log_softmax_backward(T(Y, DIMS), T(DY, DIMS), T(DX, DIMS))
    batchnorm.batch_norm_forward_training(T(X, DIMS), T(Y, DIMS), T(W, (3,)), T(B, (3,)))
    batchnorm.batch_norm_forward_inference(T(X, DIMS), T(Y, DIMS), T(W, (3,)), T(B, (3,)), T(RM, (3,)), T(RV, (3,)))
    batchnorm.batch_norm_backward(T(X, DIMS), T(DY, DIMS), T(DX, DIMS), T(W, (3,)), T(DW, (3,)), T(DB, (3,)))
    assert counting.allocated == []
    assert workspace.scratch(0).allocations == 0
    # the counter does see persistent buffers
    _script_pool_out(libs, YP, 96)
    state = pooling.pooling_forward(T(X, XP), T(Y, YP), "max", 2)
    assert counting.allocated == [96] and state.workspace is not None and state.workspace.ptr == 0xD1000


class _Torchish:
    """What the ops read of a PyTorch tensor; counts how often its address is asked for."""

    def __init__(self, ptr: object, shape: tuple[int, ...], stride: tuple[int, ...], dtype: object = "torch.float32",
                 is_cuda: bool | None = None) -> None:
        self.ptr, self.shape, self._stride, self.dtype = ptr, shape, stride, dtype
        if is_cuda is not None:
            self.is_cuda = is_cuda

    def data_ptr(self) -> object:
        return self.ptr

    def stride(self) -> tuple[int, ...]:
        return self._stride


def test_pytorch_like_tensors_seen_before_skip_only_the_repeated_checks(libs: Libs) -> None:
    """A shape/stride/dtype seen before is not checked again; the address, the device and anything
    unhashable always are; the result equals the full path's."""
    from miopen import tensor as tensor_mod
    from miopen.tensor import as_tensor

    tensor_mod._TORCH_META.clear()
    first = as_tensor(_Torchish(0x1000, (2, 3, 4, 5), (60, 20, 5, 1)))
    assert len(tensor_mod._TORCH_META) == 1
    again = as_tensor(_Torchish(0x2000, (2, 3, 4, 5), (60, 20, 5, 1)))
    assert again == type(first)(0x2000, first.dims, first.strides, first.dtype)
    assert (again.dims, again.strides, again.dtype.name) == ((2, 3, 4, 5), (60, 20, 5, 1), "miopenFloat")
    for bad, exc, match in [
        (_Torchish(0, (2, 3, 4, 5), (60, 20, 5, 1)), ValueError, "null device address"),
        (_Torchish(2**64, (2, 3, 4, 5), (60, 20, 5, 1)), ValueError, r"an address in \[0, 2\*\*64\)"),
        (_Torchish(True, (2, 3, 4, 5), (60, 20, 5, 1)), TypeError, "an int address"),
        (_Torchish(0x1000, (2, 3, 4, 5), (60, 20, 5, 1), is_cuda=False), ValueError, "host \\(CPU\\) tensor"),
        (_Torchish(0x1000, [2, 3, 4, 5], (60, 20, 5, 1)), None, None),  # unhashable shape: the full path
        (_Torchish(0x1000, (2, 3, 4, 0), (60, 20, 5, 1)), Exception, "every dim must be >= 1"),
    ]:
        if exc is None:
            assert as_tensor(bad) == first
            continue
        with pytest.raises(exc, match=match):
            as_tensor(bad, "x")
    tensor_mod._TORCH_META.clear()
    for k in range(tensor_mod._TORCH_META_MAX + 5):
        as_tensor(_Torchish(0x1000, (k + 1,), (1,)))
        assert len(tensor_mod._TORCH_META) <= tensor_mod._TORCH_META_MAX


class _Buffer:
    def __init__(self, int_ptr: object) -> None:
        self.int_ptr = int_ptr


class _CLish:
    """What the ops read of a pyopencl Array: base_data.int_ptr, offset, shape, byte strides, numpy dtype."""

    def __init__(self, ptr: object, shape: object, strides: object, dtype: object = "float32", offset: int = 0) -> None:
        import numpy as np

        self.base_data, self.offset, self.shape, self.strides = _Buffer(ptr), offset, shape, strides
        self.dtype = np.dtype(dtype) if isinstance(dtype, str) else dtype


def _outcome(fn: Callable[[], Any]) -> object:
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - compared by type and message
        return type(exc), str(exc)


def test_pyopencl_like_arrays_seen_before_skip_only_the_repeated_checks(libs: Libs) -> None:
    """An Array type, shape, strides and dtype seen before are not checked again; the buffer's address and the
    offset always are; the result (or the error) equals the full path's, for every array."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from miopen import tensor as tensor_mod
    from miopen.tensor import as_tensor

    tensor_mod._CL_META.clear()
    as_tensor(_CLish(0x1000, (2, 3), (12, 4)))
    assert len(tensor_mod._CL_META) == 1 and _CLish in tensor_mod._CL_TYPES
    again = as_tensor(_CLish(0x2000, (2, 3), (12, 4)))
    assert (again.ptr, again.dims, again.strides, again.dtype.name) == (0x2000, (2, 3), (3, 1), "miopenFloat")
    arr = _CLish(0x3000, (2, 3), (12, 4))
    assert as_tensor(arr).ptr == 0x3000
    arr.base_data = _Buffer(0x4000)  # the same Array on another buffer: the address is read on every call
    assert as_tensor(arr).ptr == 0x4000 and as_tensor(_CLish(0x3000, (2, 3), (12, 4))).ptr == 0x3000
    arr.offset = 8
    with pytest.raises(ValueError, match="byte offset 8"):
        as_tensor(arr)

    dims = st.lists(st.integers(-1, 4), min_size=1, max_size=3).map(tuple)
    ptrs = st.one_of(st.sampled_from([0, 1, 2**64 - 1, 2**64, -1, True, None, "0x10"]), st.integers(1, 2**16))

    @settings(max_examples=150, deadline=None, derandomize=True)
    @given(ptr=ptrs, shape=dims, strides=dims, offset=st.sampled_from([0, 0, 4]),
           dtype=st.sampled_from(["float32", "float16", "int8", "complex64"]))
    def same_as_full_path(ptr: object, shape: tuple[int, ...], strides: tuple[int, ...], offset: int,
                          dtype: str) -> None:
        byte_strides = tuple(s * 4 for s in strides)
        tensor_mod._CL_META.clear()
        tensor_mod._CL_TYPES.clear()
        full = _outcome(lambda: as_tensor(_CLish(ptr, shape, byte_strides, dtype, offset), "x"))
        for _ in range(2):  # the second time from the remembered checks, when the first was accepted
            assert _outcome(lambda: as_tensor(_CLish(ptr, shape, byte_strides, dtype, offset), "x")) == full

    same_as_full_path()
    tensor_mod._CL_META.clear()
    for k in range(tensor_mod._CL_META_MAX + 5):
        as_tensor(_CLish(0x1000, (k + 1,), (4,)))
        assert len(tensor_mod._CL_META) <= tensor_mod._CL_META_MAX


# ====================================================================== repeated-shape fast paths


def _fast_path_ops(libs: Libs) -> dict[str, Callable[..., Any]]:
    """Every op with a repeated-shape fast path, as f(x, y, **kw) on DIMS-shaped (or conv-shaped) tensors."""
    from miopen.ops import activation, batchnorm, conv, pooling, softmax, tensor_ops

    _script_pool_out(libs, (2, 3, 2, 2))
    sols = "miopenConvolutionForward"
    libs.set_out(f"{sols}GetSolutionCount/solutionCount", 1)
    libs.set_out(f"{sols}GetSolution/solutionCount", 1)
    libs.set_out(f"{sols}GetSolution/solutions[0].time", 1.0)
    libs.set_out(f"{sols}GetSolution/solutions[0].workspace_size", 0)
    libs.set_out(f"{sols}GetSolution/solutions[0].solution_id", 11)
    for d in ("BackwardData", "BackwardWeights"):
        libs.set_out(f"miopenConvolution{d}GetSolutionCount/solutionCount", 1)
        libs.set_out(f"miopenConvolution{d}GetSolution/solutionCount", 1)
        libs.set_out(f"miopenConvolution{d}GetSolution/solutions[0].workspace_size", 0)
        libs.set_out(f"miopenConvolution{d}GetSolution/solutions[0].solution_id", 12)
    p = {k: T(0x8000 + i * 0x100, (3,)) for i, k in enumerate(("w", "b", "m", "v"))}
    states: dict[tuple[int, int], Any] = {}

    def pool(x: Any, y: Any, **kw: Any) -> Any:
        from miopen import hip

        key = (hip.current_device(), kw.pop("_state_from", 0))
        if key not in states:
            states[key] = pooling.pooling_forward(T(X, DIMS), T(Y, (2, 3, 2, 2)), "max", 2)
        return pooling.pooling_forward(x, y, kw.pop("mode", "max"), 2, state=states[key], **kw)

    def pool_backward(x: Any, y: Any, **kw: Any) -> Any:
        from miopen import hip

        key = (hip.current_device(), 0)
        if key not in states:
            states[key] = pooling.pooling_forward(T(X, DIMS), T(Y, (2, 3, 2, 2)), "max", 2)
        return pooling.pooling_backward(y, T(0xB000, (2, 3, 2, 2)), x, T(0xC000, DIMS), states[key], **kw)

    def pool_stateless(x: Any, y: Any, **kw: Any) -> Any:
        st = pooling.pooling_forward(x, y, kw.pop("mode", "max"), 2, do_backward=kw.pop("do_backward", False), **kw)
        return (st.mode, st.window, st.pads, st.strides, st.x_dims, st.y_dims, st.dtype, st.device, st.do_backward,
                st.workspace is None, st.closed, st.desc._ptr, st._owns_desc)

    w = T(0x9000, (4, 3, 3, 3))
    return {
        "op_tensor": lambda x, y, **kw: tensor_ops.op_tensor(
            kw.pop("mode", "add"), x, T(0xA000, (1, 3, 1, 1)), y, kw.pop("scale", 1.0), 1.0, kw.pop("shift", 0.0),
            **kw),
        "pooling_forward_stateless": pool_stateless,
        "activation_forward": lambda x, y, **kw: activation.activation_forward(x, y, kw.pop("mode", "relu"), **kw),
        "activation_backward": lambda x, y, **kw: activation.activation_backward(
            T(0xA000, DIMS), T(0xB000, DIMS), x, y, kw.pop("mode", "relu"), **kw),
        "softmax_forward": lambda x, y, **kw: softmax.softmax_forward(x, y, **kw),
        "softmax_backward": lambda x, y, **kw: softmax.softmax_backward(x, T(0xB000, DIMS), y, **kw),
        "log_softmax_backward": lambda x, y, **kw: softmax.log_softmax_backward(x, T(0xB000, DIMS), y, **kw),
        "batch_norm_forward_training": lambda x, y, **kw: batchnorm.batch_norm_forward_training(
            x, y, p["w"], p["b"], kw.pop("mode", "spatial"), running_mean=p["m"], running_var=p["v"], **kw),
        "batch_norm_backward": lambda x, y, **kw: batchnorm.batch_norm_backward(
            x, T(0xB000, DIMS), y, p["w"], T(0x8800, (3,)), T(0x8900, (3,)), kw.pop("mode", "spatial"), **kw),
        "log_softmax_forward": lambda x, y, **kw: softmax.log_softmax_forward(x, y, **kw),
        "batch_norm_forward_inference": lambda x, y, **kw: batchnorm.batch_norm_forward_inference(
            x, y, p["w"], p["b"], p["m"], p["v"], kw.pop("mode", "spatial"), **kw),
        "pooling_forward": pool,
        "pooling_backward": pool_backward,
        "conv_forward": lambda x, y, **kw: conv.conv_forward(x, w, y, pads=kw.pop("pads", (1, 1)), strides=1,
                                                             dilations=1, **kw),
        "conv_backward_data": lambda x, y, **kw: conv.conv_backward_data(y, w, x, pads=kw.pop("pads", (1, 1)), strides=1,
                                                                         dilations=1, **kw),
        "conv_backward_weights": lambda x, y, **kw: conv.conv_backward_weights(
            y, x, T(0x9000, (4, 3, 3, 3)), pads=kw.pop("pads", (1, 1)), strides=1, dilations=1, **kw),
    }


def _y_dims(op: str) -> tuple[int, ...]:
    return {"pooling_forward": (2, 3, 2, 2), "pooling_backward": (2, 3, 2, 2),
            "pooling_forward_stateless": (2, 3, 2, 2)}.get(op, (2, 4, 4, 5) if op.startswith("conv") else DIMS)


def _forget_fast_paths() -> None:
    from miopen.ops import activation, batchnorm, conv, pooling, softmax, tensor_ops

    for memo in (activation._FORWARD, activation._BACKWARD, softmax._FORWARD, softmax._BACKWARD,
                 batchnorm._INFERENCE, batchnorm._TRAINING, batchnorm._BACKWARD, pooling._BACKWARD,
                 pooling._STATELESS, tensor_ops._OP_TENSOR):
        memo._clear()  # its entries and its last hit
    conv._FAST.clear()
    for obj in gc.get_objects():
        if isinstance(obj, pooling.PoolingState):
            obj._fast = None


def _logged(libs: Libs, call: Callable[[], Any]) -> tuple[object, list[dict[str, str]]]:
    start = len(libs.log())
    out = _outcome(call)
    return (out if isinstance(out, tuple) else id(out)), libs.log()[start:]


@pytest.mark.parametrize("op", ["activation_forward", "activation_backward", "softmax_forward", "softmax_backward",
                                "log_softmax_forward", "log_softmax_backward", "batch_norm_forward_inference",
                                "batch_norm_forward_training", "batch_norm_backward", "pooling_forward",
                                "pooling_backward", "pooling_forward_stateless", "op_tensor",
                                "conv_forward", "conv_backward_data", "conv_backward_weights"])
def test_fast_paths_answer_as_the_full_path(libs: Libs, op: str) -> None:
    """The class: an op with a repeated-shape fast path answers a call on a shape seen before exactly as its full
    path does (the same MIOpen calls with the same arguments, or the same error), whatever changes between the
    calls: addresses (read on every call), PyTorch-like tensors (on the host too), scalars of other types (bools,
    numpy scalars), modes spelled otherwise or members of another enum, a stream or a handle given, pyopencl-like
    Arrays (new ones of a seen layout, one whose buffer was swapped, at an offset, on a null buffer)."""
    import numpy as np

    from miopen import api, handles
    from miopen.tensor import Tensor

    fn = _fast_path_ops(libs)[op]
    yd = _y_dims(op)
    from miopen.layout import packed_strides

    other_enum = next(m for m in api.DataType if int(m) == 1)  # an IntEnum member equal to 1 (a valid mode value)

    def cl(ptr: int, dims: tuple[int, ...], offset: int = 0) -> _CLish:
        return _CLish(ptr, dims, tuple(4 * v for v in packed_strides(dims)), offset=offset)

    cl_x = cl(0x5000, DIMS)

    def swapped(arr: _CLish, ptr: int) -> _CLish:
        arr.base_data = _Buffer(ptr)  # the same Array object on another buffer
        return arr

    variants: list[tuple[str, Callable[[], Any]]] = [
        ("pyopencl-like", lambda: fn(swapped(cl_x, 0x5000), cl(0x6000, yd))),
        ("pyopencl-like, buffer swapped", lambda: fn(swapped(cl_x, 0x7000), cl(0x6000, yd))),
        ("pyopencl-like at an offset", lambda: fn(cl(0x5000, DIMS, offset=16), cl(0x6000, yd))),
        ("pyopencl-like null buffer", lambda: fn(cl(0, DIMS), cl(0x6000, yd))),
        ("again", lambda: fn(T(X, DIMS), T(Y, yd))),
        ("other addresses", lambda: fn(T(0x5000, DIMS), T(0x6000, yd))),
        ("torch-like", lambda: fn(_Torchish(0x5000, DIMS, packed_strides(DIMS)),
                                  _Torchish(0x6000, yd, packed_strides(yd)))),
        ("torch-like on the host", lambda: fn(_Torchish(0x5000, DIMS, packed_strides(DIMS), is_cuda=False),
                                              T(Y, yd))),
        ("torch-like null", lambda: fn(_Torchish(0, DIMS, packed_strides(DIMS)), T(Y, yd))),
        ("stream", lambda: fn(T(X, DIMS), T(Y, yd), stream=0x700)),
        ("bad stream", lambda: fn(T(X, DIMS), T(Y, yd), stream=True)),
        ("handle", lambda: fn(T(X, DIMS), T(Y, yd), handle=handles.inline_miopen_handle())),
    ]
    if not op.startswith("conv"):
        variants += [
            ("int scale", lambda: fn(T(X, DIMS), T(Y, yd), scale=1, shift=0)),
            ("bool scale", lambda: fn(T(X, DIMS), T(Y, yd), scale=True)),
            ("numpy scale", lambda: fn(T(X, DIMS), T(Y, yd), scale=np.float32(1.0))),
            ("scaled", lambda: fn(T(X, DIMS), T(Y, yd), scale=2.0)),
        ]
    else:
        variants += [
            ("int alpha", lambda: fn(T(X, DIMS), T(Y, yd), alpha=1, beta=0)),
            ("bool alpha", lambda: fn(T(X, DIMS), T(Y, yd), alpha=True)),
            ("numpy alpha", lambda: fn(T(X, DIMS), T(Y, yd), alpha=np.float32(1.0))),
            ("bool pads", lambda: fn(T(X, DIMS), T(Y, yd), pads=(True, True))),
            ("list pads", lambda: fn(T(X, DIMS), T(Y, yd), pads=[1, 1])),
            ("planner", lambda: fn(T(X, DIMS), T(Y, yd), planner=object())),
        ]
    if op == "op_tensor":
        variants += [
            ("op member", lambda: fn(T(X, DIMS), T(Y, yd), mode=api.TensorOp.miopenTensorOpMul)),
            ("op of another enum", lambda: fn(T(X, DIMS), T(Y, yd), mode=other_enum)),
            ("unhashable op", lambda: fn(T(X, DIMS), T(Y, yd), mode=["add"])),
            ("NaN alpha", lambda: fn(T(X, DIMS), T(Y, yd), scale=float("nan"))),
            ("null address",
             lambda: fn(T(X, DIMS), Tensor(0, DIMS, packed_strides(DIMS), api.DataType.miopenFloat))),
            ("device", lambda: fn(T(X, DIMS), T(Y, yd), device=0)),
        ]
    if op == "pooling_forward_stateless":
        variants.append(("average", lambda: fn(T(X, DIMS), T(Y, yd), mode="average", do_backward=True)))
    if op.startswith(("activation", "batch_norm", "pooling_forward")):
        variants += [
            ("mode member", lambda: fn(T(X, DIMS), T(Y, yd), mode={
                "activation": api.ActivationMode.miopenActivationRELU,
                "batch": api.BatchNormMode.miopenBNSpatial,
                "pooling": api.PoolingMode.miopenPoolingMax}[op.split("_")[0]])),
            ("mode of another enum", lambda: fn(T(X, DIMS), T(Y, yd), mode=other_enum)),
            ("unhashable mode", lambda: fn(T(X, DIMS), T(Y, yd), mode=["relu"])),
        ]
    if "softmax" in op and not op.startswith("log"):
        variants.append(("algorithm member", lambda: fn(T(X, DIMS), T(Y, yd),
                                                        algorithm=api.SoftmaxAlgorithm.MIOPEN_SOFTMAX_ACCURATE)))
    if op == "pooling_forward":
        variants.append(("another state's shape", lambda: fn(T(X, (2, 3, 6, 6)), T(Y, yd))))
    fn(T(X, DIMS), T(Y, yd))  # planned, descriptors made: every later call may take the fast path
    for name, call in variants:
        _outcome(call)  # its own shape seen once (when valid)
        fn(T(X, DIMS), T(Y, yd))
        fast = _logged(libs, call)
        _forget_fast_paths()
        handles.inline_miopen_handle()  # bound to the null stream again, as before the first
        full = _logged(libs, call)
        assert fast == full, f"{op}, {name}: the fast path answered {fast}, the full path {full}"


def test_fast_paths_never_use_a_closed_descriptor(libs: Libs) -> None:
    """A descriptor a fast path holds that was closed meanwhile (by the caller, or with its library) is not used:
    the call makes the descriptor again, as the full path does."""
    from miopen import descriptors
    from miopen.ops import activation, batchnorm, softmax

    p = [T(0x8000 + i * 0x100, (3,)) for i in range(4)]
    for call in (lambda: activation.activation_forward(T(X, DIMS), T(Y, DIMS), "relu"),
                 lambda: softmax.softmax_forward(T(X, DIMS), T(Y, DIMS)),
                 lambda: batchnorm.batch_norm_forward_inference(T(X, DIMS), T(Y, DIMS), *p)):
        call()
        descriptors.tensor_descriptor("float32", DIMS).close()
        rec = Rec(libs)
        call()
        assert rec.calls()[:2] == ["miopenCreateTensorDescriptor", "miopenSetTensorDescriptor"], rec.calls()
        assert not descriptors.tensor_descriptor("float32", DIMS).closed


def test_a_fast_path_key_that_cannot_be_compared_takes_the_full_path(libs: Libs) -> None:
    """A shape memo tries its last hit first by comparing keys: an argument whose == raises (or that cannot be
    hashed) is the full path's to check, and it gets the full path's error, after a hit and before one."""
    from miopen import descriptors
    from miopen.ops import activation

    class Odd:
        def __eq__(self, other: object) -> bool:
            raise RuntimeError("compared")

    activation.activation_forward(T(X, DIMS), T(Y, DIMS), "relu")
    activation.activation_forward(T(X, DIMS), T(Y, DIMS), "relu")  # a hit: the memo's last one
    for _ in range(2):
        with pytest.raises(TypeError, match="mode"):
            activation.activation_forward(T(X, DIMS), T(Y, DIMS), Odd())  # type: ignore[arg-type]
    descriptors.clear_descriptor_caches()  # the last hit is forgotten with the caches: the full path runs again
    rec = Rec(libs)
    activation.activation_forward(T(X, DIMS), T(Y, DIMS), "relu")
    assert "miopenCreateTensorDescriptor" in rec.calls(), rec.calls()


def test_ops_follow_the_current_device_however_it_was_set(libs: Libs) -> None:
    """The class: every op call asks HIP for the current device, on its fast path too: a device made current
    through miopen.hip, through hipSetDevice called directly (as PyTorch does), or by a device guard gets that
    device's pooled handle on the very next call."""
    from miopen import handles, hip

    ops = _fast_path_ops(libs)
    libs.set_out("miopenCreate/handle", 0x5A000)
    handles.inline_miopen_handle()
    hip.set_device(1)
    libs.set_out("miopenCreate/handle", 0x5B000)
    handles.inline_miopen_handle()
    hip.set_device(0)
    handle_of = {0: str(0x5A000), 1: str(0x5B000)}
    setters: dict[str, Callable[[int], object]] = {"miopen.hip": hip.set_device,
                                                   "hipSetDevice": lambda d: libs.hip.hipSetDevice(d)}
    try:
        for op, fn in ops.items():
            yd = _y_dims(op)
            for how, set_device in setters.items():
                for dev in (0, 1, 0, 1):
                    set_device(dev)
                    assert hip.current_device() == dev
                    for _ in range(2):  # the second call on the fast path
                        rec = Rec(libs)
                        fn(T(X, DIMS), T(Y, yd))
                        used = {e["handle"] for e in rec.entries() if "handle" in e}
                        assert used == {handle_of[dev]}, f"{op} after {how}({dev}): handles {used}"
            hip.set_device(0)
            with hip.device_guard(1):
                rec = Rec(libs)
                fn(T(X, DIMS), T(Y, yd))
                assert {e["handle"] for e in rec.entries() if "handle" in e} == {handle_of[1]}
            rec = Rec(libs)
            fn(T(X, DIMS), T(Y, yd))
            assert {e["handle"] for e in rec.entries() if "handle" in e} == {handle_of[0]}
    finally:
        hip.set_device(0)


def test_pooling_without_a_state_gets_a_state_of_its_own_on_the_fast_path(libs: Libs) -> None:
    """A pooling without a state on a shape seen before returns a new state each call (closing one leaves the next
    usable; it serves as `state=` later); with an index workspace each call still gets its own."""
    from miopen import hip
    from miopen.ops import pooling

    _script_pool_out(libs, (2, 3, 2, 2))
    x, y = T(X, DIMS), T(Y, (2, 3, 2, 2))
    first = pooling.pooling_forward(x, y, "max", 2, do_backward=False)
    states = [pooling.pooling_forward(x, y, "max", 2, do_backward=False) for _ in range(3)]
    assert len(pooling._STATELESS) == 1 and len({id(s) for s in [first, *states]}) == 4
    first.close()
    assert not states[0].closed and not states[0].desc.closed and states[0].workspace is None
    hip.set_device(1)
    try:
        assert pooling.pooling_forward(x, y, "max", 2, do_backward=False).device == 1
    finally:
        hip.set_device(0)
    rec = Rec(libs)
    assert pooling.pooling_forward(x, y, "max", 2, do_backward=False, state=states[0]) is states[0]
    assert rec.calls() == ["miopenPoolingForward"], rec.calls()
    a, b = pooling.pooling_forward(x, y, "max", 2), pooling.pooling_forward(x, y, "max", 2)
    assert a.workspace is not None and b.workspace is not None and a.workspace.ptr != b.workspace.ptr


def test_pooling_backward_fast_path_reads_the_state_on_every_call(libs: Libs) -> None:
    """What a state says can change between calls (a forward without do_backward, close()): the repeated-shape
    path of pooling_backward reads it each time, as the full path does."""
    from miopen.ops import pooling

    _script_pool_out(libs, (2, 3, 2, 2))
    x, y, dy, dx = T(X, DIMS), T(Y, (2, 3, 2, 2)), T(DY, (2, 3, 2, 2)), T(DX, DIMS)
    state = pooling.pooling_forward(x, y, "max", 2)
    for _ in range(2):
        pooling.pooling_backward(y, dy, x, dx, state)
    pooling.pooling_forward(x, y, "max", 2, state=state, do_backward=False)
    raises_first(libs, ValueError, "do_backward=False", lambda: pooling.pooling_backward(y, dy, x, dx, state))
    pooling.pooling_forward(x, y, "max", 2, state=state)
    pooling.pooling_backward(y, dy, x, dx, state)
    state.close()
    raises_first(libs, ValueError, "state is closed", lambda: pooling.pooling_backward(y, dy, x, dx, state))


class _CAIish:
    """What the ops read of a CuPy/Numba array: __cuda_array_interface__ (shape, strides in bytes, typestr, data)."""

    def __init__(self, iface: object) -> None:
        self.iface = iface

    @property
    def __cuda_array_interface__(self) -> object:
        return self.iface


def test_cuda_array_interface_seen_before_skips_only_the_repeated_checks(libs: Libs) -> None:
    """The class: an interface (type, shape, strides, typestr) seen before is not checked again; the address and
    everything that cannot be the same (lists, a bool in the shape, other types of address, a PyTorch-like
    instance) always are: every object gives what the full path gives (the Tensor, or the error), and an op on it
    takes the op's fast path."""
    from miopen import tensor as tensor_mod
    from miopen.ops import activation
    from miopen.tensor import as_tensor, layout_of

    def cai(ptr: object = 0x1000, shape: object = (2, 3, 4, 5), strides: object = None, typestr: object = "<f4",
            data: object = None) -> _CAIish:
        return _CAIish({"shape": shape, "strides": strides, "typestr": typestr, "version": 3,
                        "data": (ptr, False) if data is None else data})

    class WithDataPtr(_CAIish):
        pass

    torchish_instance = cai(0x2000)
    torchish_instance.data_ptr = lambda: 0x2000  # type: ignore[attr-defined]
    torchish_instance.stride = lambda: (60, 20, 5, 1)  # type: ignore[attr-defined]
    torchish_instance.shape = (2, 3, 4, 5)  # type: ignore[attr-defined]
    objects = [
        cai(), cai(0x3000), cai(strides=(240, 80, 20, 4)), cai(strides=(480, 80, 20, 4)), cai(typestr="<f2"),
        cai(0), cai(True), cai(2**64), cai(-1), cai(1.5), cai(data=[0x1000, False]), cai(data=(0x1000,)),
        cai(shape=(1, 3, 4, 5)), cai(shape=(True, 3, 4, 5)), cai(shape=[2, 3, 4, 5]), cai(strides=[240, 80, 20, 4]), cai(typestr=b"<f4"),
        cai(shape=(2, 3, 4, 0)), cai(strides=(6, 80, 20, 4)), torchish_instance, _CAIish(None),
    ]

    def full(obj: object) -> object:
        tensor_mod._CAI_META.clear()
        tensor_mod._CAI_TYPES.clear()
        return _outcome(lambda: as_tensor(obj, "x"))

    for obj in objects:
        want = full(obj)
        for warm in objects:  # every other interface seen first
            _outcome(lambda: as_tensor(warm, "x"))
        assert _outcome(lambda: as_tensor(obj, "x")) == want, obj.iface
    first = as_tensor(cai(), "x")
    assert tensor_mod._CAI_TYPES == {_CAIish}
    parts = layout_of(cai(0x4000))
    assert parts == (0x4000, (first.dims, first.strides, first.dtype))
    rec = Rec(libs)
    for _ in range(2):
        activation.activation_forward(cai(0x4000), cai(0x5000), "relu")
    assert [e["x"] for e in rec.entries("miopenActivationForward")] == [str(0x4000)] * 2
    assert len(activation._FORWARD) >= 1
    for k in range(tensor_mod._CAI_META_MAX + 5):
        as_tensor(cai(shape=(k + 1,)))
        assert len(tensor_mod._CAI_META) <= tensor_mod._CAI_META_MAX


_BN_ARGS = ("x", "y", "weight", "bias", "running_mean", "running_var")
_BN_CHANGES = ("new buffer", "short buffer", "release", "offset", "narrower shape", "other dtype", "other strides",
               "None", "Tensor", "new array")


def _bn_change(args: dict[str, Any], name: str, change: str, fresh: Callable[[], int]) -> None:
    import numpy as np

    from miopen.tensor import Tensor

    from .standins import ClArray, ClBuffer

    a, dims = args[name], ((1, 4, 8, 8) if name in ("x", "y") else (4,))
    if change == "None":
        if name.startswith("running"):
            args[name] = None
    elif change == "Tensor":
        args[name] = Tensor.make(fresh(), dims, "float32")
    elif change == "new array" or not isinstance(a, ClArray):
        args[name] = ClArray(fresh(), dims)
    elif change == "new buffer":
        a.base_data = ClBuffer(fresh(), a.base_data.size)
    elif change == "short buffer":
        a.base_data = ClBuffer(fresh(), a.base_data.size - 4)
    elif change == "release":
        a.base_data.release()
    elif change == "offset":
        a.offset = 4
    elif change == "narrower shape":  # the strides object kept
        a.shape = (2,) if len(a.shape) == 1 else (1, 2, 8, 8)
    elif change == "other dtype":
        a.dtype = np.dtype("float16")
    elif change == "other strides":
        a.strides = tuple(2 * s for s in a.strides)


def test_batch_norm_inference_repeated_calls_equal_the_full_checks(libs: Libs) -> None:
    """Each change to one argument of batch_norm_forward_inference between calls (a buffer swapped, released or too
    short, an offset, another shape, dtype or strides, None for the statistics, a Tensor, a new array), another mode
    or epsilon, a closed cached descriptor, the caches cleared, each twice: every call (its fast paths: the very objects of its last call, the layouts of earlier calls)
    passes MIOpen what the full checks pass (the memos forgotten) for the same arguments, or raises their error."""
    from miopen._generated._pointers import watch_releases
    from miopen.descriptors import clear_descriptor_caches, tensor_descriptor
    from miopen.ops import batchnorm

    from .standins import ClArray, ClBuffer

    watch_releases(ClBuffer)
    fn = "miopenBatchNormalizationForwardInference"

    def outcome(args: dict[str, Any]) -> object:
        n = len(libs.log())
        try:
            batchnorm.batch_norm_forward_inference(**args)
        except Exception as exc:  # noqa: BLE001 - compared by type and message
            return type(exc), str(exc)
        return [e for e in libs.log()[n:] if e[""] == fn]

    def full(args: dict[str, Any]) -> object:
        memo = batchnorm._INFERENCE
        saved = dict(memo._items), memo._last, batchnorm._LAST_INFERENCE[0]
        memo._clear()
        batchnorm._LAST_INFERENCE[0] = None
        try:
            return outcome(args)
        finally:  # the fast paths' state as the call before left it
            memo._items.clear()
            memo._items.update(saved[0])
            memo._last, batchnorm._LAST_INFERENCE[0] = saved[1], saved[2]

    events: list[Any] = ["close a descriptor", "clear caches", "per-activation mode", "another epsilon",
                         *[(name, change) for name in _BN_ARGS for change in _BN_CHANGES]]
    addresses = iter(range(0x100000, 0x10000000, 0x1000))
    fresh = functools.partial(next, addresses)
    for event in events:
        libs.reset()
        args: dict[str, Any] = {name: ClArray(fresh(), (1, 4, 8, 8) if name in ("x", "y") else (4,))
                                for name in _BN_ARGS}
        for step in ["again", "again", "again", event, "again", event, "again"]:  # the third call on: the fast paths
            if step == "clear caches":  # (as a library change does): the descriptors made next are others
                clear_descriptor_caches()
                libs.set_out("miopenCreateTensorDescriptor/tensorDesc", fresh())
            elif step == "close a descriptor":
                tensor_descriptor("float32", (1, 4, 8, 8)).close()
            elif step == "per-activation mode":
                args["mode"] = "per_activation"
            elif step == "another epsilon":
                args["epsilon"] = 1e-3
            elif step != "again":
                _bn_change(args, *step, fresh)
            got, want = outcome(args), full(args)
            assert got == want, (event, step)


def test_shape_memo_after_a_closed_descriptor_finds_the_entry_made_again(libs: Libs) -> None:
    """The entry of a memo's last hit whose descriptor is closed is not an answer; the entry the full path puts for
    the same key is found on the next call (the last hit does not hide it)."""
    from miopen.descriptors import cache_generation, tensor_descriptor
    from miopen.ops._common import ShapeMemo

    memo: ShapeMemo[str] = ShapeMemo()
    old = tensor_descriptor("float32", (3, 5, 7))
    memo.put("k", cache_generation(), (old,), "old")
    assert memo.get("k") == "old"
    old.close()
    assert memo.get("k") is None
    new = tensor_descriptor("float32", (3, 5, 7))
    assert new is not old and new._ptr is not None
    memo.put("k", cache_generation(), (new,), "new")
    assert memo.get("k") == "new" and memo.get("k") == "new"
