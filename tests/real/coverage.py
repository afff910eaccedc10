"""The coverage table: every function of specs/miopen/2.17.0.yaml -> how the real-library tests exercise it.

- "checked": called through the typed API (`miopen.<snake_case>`) in the real-library worker by the checks
  named, and its answers compared with values computed in Python (`CHECKED`, from the checks' registrations;
  `test_real_miopen` verifies against the worker's trace that each claimed function was really called);
- "kernel": it compiles or launches a kernel, which needs a GPU. It is called through the typed API in a
  throwaway worker with valid arguments and what MIOpen does is pinned down (`KERNEL_OUTCOMES` in
  test_real_miopen), but there is no result to check. `NOT_CHECKED` gives the reason per function.

`table()` is the machine-readable table (function -> "checked: ..." or "kernel: ..."); `markdown()` renders it.
"""

from __future__ import annotations

from pathlib import Path

from . import (checks_conv, checks_errors, checks_kernel, checks_layers, checks_misc, checks_rnn, checks_runtime,
               checks_tensor)
from .common import COVERS, ISOLATED

MODULES = (checks_tensor, checks_conv, checks_layers, checks_rnn, checks_misc, checks_errors, checks_runtime,
           checks_kernel)
SPEC = Path(__file__).resolve().parents[2] / "specs" / "miopen" / "2.17.0.yaml"

_NO_GPU = "needs a GPU: the HIPNOGPU library cannot build the kernel"
#: function -> why its results are not checked (all of them are called, see ISOLATED)
NOT_CHECKED: dict[str, str] = {
    **{f: f"element-wise tensor kernel; {_NO_GPU} (UnknownError)" for f in (
        "miopenOpTensor", "miopenSetTensor", "miopenScaleTensor", "miopenTransformTensor")},
    **{f: f"compiles the chosen solver's kernels; {_NO_GPU} (UnknownError)" for f in (
        "miopenConvolutionForwardCompileSolution", "miopenConvolutionBackwardDataCompileSolution",
        "miopenConvolutionBackwardWeightsCompileSolution")},
    **{f: f"runs a convolution; {_NO_GPU} (UnknownError)" for f in (
        "miopenConvolutionForwardImmediate", "miopenConvolutionBackwardDataImmediate",
        "miopenConvolutionBackwardWeightsImmediate", "miopenConvolutionForward", "miopenConvolutionBackwardData",
        "miopenConvolutionBackwardWeights", "miopenConvolutionForwardBias", "miopenConvolutionBackwardBias")},
    **{f: "benchmarks every applicable solver: MIOpen's failed compiler call escapes as std::terminate and "
          "aborts the process (SIGABRT inside the call)" for f in (
        "miopenFindConvolutionForwardAlgorithm", "miopenFindConvolutionBackwardDataAlgorithm",
        "miopenFindConvolutionBackwardWeightsAlgorithm")},
    **{f: f"runs a layer kernel; {_NO_GPU} (UnknownError)" for f in (
        "miopenPoolingForward", "miopenPoolingBackward", "miopenLRNForward", "miopenLRNBackward",
        "miopenActivationForward", "miopenActivationBackward", "miopenSoftmaxForward", "miopenSoftmaxBackward",
        "miopenSoftmaxForward_V2", "miopenSoftmaxBackward_V2", "miopenBatchNormalizationForwardTraining",
        "miopenBatchNormalizationForwardInference", "miopenBatchNormalizationBackward")},
    "miopenCompileFusionPlan": f"compiles the fused kernel; {_NO_GPU} (UnknownError)",
    "miopenExecuteFusionPlan": "runs the fused kernel; with no compiled plan MIOpen refuses it (BadParm)",
    **{f: f"runs the RNN kernels; {_NO_GPU} (UnknownError)" for f in (
        "miopenRNNForwardTraining", "miopenRNNForwardInference", "miopenRNNBackwardData",
        "miopenRNNBackwardWeights")},
    "miopenSetRNNLayerParam": "copies a matrix into the packed weights on the device (a plain copy: the no-GPU "
                              "handle's copy is a no-op, so it returns success but moves nothing to check)",
    "miopenSetRNNLayerBias": f"copies a bias vector with a kernel; {_NO_GPU} (UnknownError)",
    "miopenCTCLoss": f"runs the CTC kernels; {_NO_GPU} (UnknownError)",
    "miopenSetDropoutDescriptor": f"seeds the PRNG states with a kernel; {_NO_GPU} (UnknownError)",
    "miopenDropoutForward": f"runs the dropout kernel; {_NO_GPU} (UnknownError)",
    "miopenDropoutBackward": f"runs the dropout kernel; {_NO_GPU} (UnknownError)",
    "miopenReduceTensor": f"runs the reduction kernel; {_NO_GPU} (UnknownError)",
}


def spec_functions() -> list[str]:
    """The function names of the 2.17.0 spec (read with the project's own loader)."""
    from miogen.spec.spec_io import load

    return [f.name for f in load(SPEC).functions]


def checked() -> dict[str, list[str]]:
    """function -> the checks that call it and check its answers."""
    out: dict[str, list[str]] = {}
    for name, functions in COVERS.items():
        for f in functions:
            out.setdefault(f, []).append(name)
    return out


def called_in_isolation() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for name, functions in ISOLATED.items():
        for f in functions:
            out.setdefault(f, []).append(name)
    return out


def table() -> dict[str, str]:
    """Every 2.17.0 function -> "checked: <checks>" or "kernel: <reason>; called by <checks>"."""
    ok, iso = checked(), called_in_isolation()
    out = {}
    for f in spec_functions():
        if f in ok:
            out[f] = "checked: " + ", ".join(sorted(ok[f]))
        elif f in NOT_CHECKED:
            out[f] = f"kernel: {NOT_CHECKED[f]}; called by " + ", ".join(sorted(iso.get(f, ["(nothing)"])))
        else:
            out[f] = "NOT COVERED"
    return out


def markdown() -> str:
    rows = table()
    lines = ["| function | how the real-library tests exercise it |", "|---|---|"]
    lines += [f"| `{f}` | {how} |" for f, how in rows.items()]
    n_checked = sum(1 for v in rows.values() if v.startswith("checked"))
    return (f"{n_checked} of {len(rows)} functions checked against independent expectations; "
            f"{len(rows) - n_checked} kernel functions called for their status only.\n\n" + "\n".join(lines) + "\n")
