"""The generated bindings and the runtime against a real libMIOpen 2.17.0 (see tests/real/__init__.py).

Everything that touches the real library runs in worker processes: this session keeps its stub library. One
worker runs the checks (tests/real/checks_*.py); a second one runs the calls that may abort the process
(kernels, Find, MIOpen's own crashes) and is restarted after each death. Without a real library the tests skip,
or fail under MIOGEN_REQUIRE_REAL_MIOPEN=1 (.ci/run sets it).
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ... import real_miopen
from ...helpers import REPO
from ...real import client, common, coverage
from ...real.client import Died, Result, Worker, WorkerError

U = "miopenStatusUnknownError"
#: what MIOpen 2.17.0 (HIPNOGPU, no GPU) does in each isolated check: the statuses it returns, or
#: ("died", signal, C function it died in)
KERNEL_OUTCOMES: dict[str, Any] = {
    "checks_kernel:tensor_ops": {"op_tensor": U, "set_tensor": U, "scale_tensor": U, "transform_tensor": U},
    "checks_kernel:conv_immediate": {k: U for k in ("fwd compile", "fwd immediate", "bwd compile", "bwd immediate",
                                                    "wrw compile", "wrw immediate")},
    "checks_kernel:conv_legacy": {k: U for k in ("forward", "backward data", "backward weights", "forward bias",
                                                 "backward bias")},
    "checks_kernel:find_forward": ("died", "SIGABRT", "miopenFindConvolutionForwardAlgorithm"),
    "checks_kernel:find_backward_data": ("died", "SIGABRT", "miopenFindConvolutionBackwardDataAlgorithm"),
    "checks_kernel:find_backward_weights": ("died", "SIGABRT", "miopenFindConvolutionBackwardWeightsAlgorithm"),
    "checks_kernel:layers": {k: U for k in (
        "pooling forward", "pooling backward", "lrn forward", "lrn backward", "activation forward",
        "activation backward", "softmax forward", "softmax backward", "softmax forward v2", "softmax backward v2")},
    "checks_kernel:batchnorm": {"forward training": U, "forward inference": U, "backward": U},
    "checks_kernel:rnn": {"forward training": U, "forward inference": U, "backward data": U, "backward weights": U,
                          # 2-D matrices move with the handle's plain copy (a no-op without a GPU), vectors with a
                          # kernel
                          "get layer param (copy)": "miopenStatusSuccess",
                          "set layer param (copy)": "miopenStatusSuccess",
                          "get layer bias (copy)": U, "set layer bias (copy)": U},
    "checks_kernel:other": {"ctc loss": U, "dropout forward": U, "dropout backward": U, "reduce": U},
    "checks_misc:dropout_set_descriptor": U,
    "checks_misc:fusion_compile_execute": {"compile": U, "execute": "miopenStatusBadParm"},
    # MIOpen's own asserts and null reads (this build keeps its asserts: CMAKE_CXX_FLAGS_RELEASE=-O1)
    "checks_layers:pooling_assert_window": ("died", "SIGABRT", "miopenGetPoolingForwardOutputDim"),
    "checks_layers:pooling_assert_rank": ("died", "SIGABRT", "miopenGetPoolingNdForwardOutputDim"),
    "checks_layers:lrn_get_before_set": ("died", "SIGSEGV", "miopenGetLRNDescriptor"),
    "checks_layers:activation_get_before_set": ("died", "SIGSEGV", "miopenGetActivationDescriptor"),
    "checks_runtime:ops_without_gpu": {"activation_forward": "MIOpenUnknownError",
                                       "ConvPlanner compile ahead": "MIOpenUnknownError"},
    "checks_runtime:real_hip_without_device": {"device_count": "0",
                                               "inline_miopen_handle": "HipError hipErrorInvalidDevice"},
}


@pytest.fixture(scope="module")
def hip_stub(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("real_hip") / "libamdhip64_stub.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-O0", "-o", str(out), str(REPO / "tests/fixtures/stub_hip.c")],
                   check=True)
    return out


def _worker(hip: Path) -> Iterator[Worker]:
    path = real_miopen.library_path()  # skips (or fails under MIOGEN_REQUIRE_REAL_MIOPEN=1) without one
    try:
        w = Worker(path, hip)
    except RuntimeError as exc:
        if real_miopen.REQUIRED:
            pytest.fail(str(exc))
        pytest.skip(str(exc))
    try:
        yield w
    finally:
        w.close()
        w.cleanup()


@pytest.fixture(scope="module")
def real(hip_stub: Path) -> Iterator[Worker]:
    """The worker for the checks (one process for all of them)."""
    yield from _worker(hip_stub)


@pytest.fixture(scope="module")
def kernel_worker(hip_stub: Path) -> Iterator[Worker]:
    """The worker for calls that may abort the process: each runs in a forked child of it (`fork=True`), which
    shares the handle and objects made once here."""
    for w in _worker(hip_stub):
        _run(w, "checks_errors:warm")
        yield w


def _run(w: Worker, name: str) -> Any:
    try:
        result = w.call(name)
    except WorkerError as exc:
        pytest.fail(str(exc), pytrace=False)
    if isinstance(result, Died):
        pytest.fail(f"{name}: the worker {result.describe()}\n{result.stderr_tail}", pytrace=False)
    return result.value


@pytest.mark.parametrize("name", sorted(common.COVERS))
def test_check(real: Worker, name: str) -> None:
    """Each check (tests/real/checks_*.py) in the real-library worker."""
    _run(real, name)


@pytest.mark.parametrize("name", sorted(common.ISOLATED))
def test_isolated(kernel_worker: Worker, name: str) -> None:
    """Kernel calls and MIOpen's own aborts: our side never crashes first, and MIOpen does what is documented."""
    expected = KERNEL_OUTCOMES[name]
    try:
        result = kernel_worker.call(name, fork=True)
    except WorkerError as exc:
        pytest.fail(str(exc), pytrace=False)
    if isinstance(result, Died):
        # it died inside the MIOpen call (the trace shows the call entered and not left), not in Python
        assert result.in_function is not None, f"{name}: the worker {result.describe()}\n{result.stderr_tail}"
        assert ("died", result.signal_name, result.in_function) == expected, result.stderr_tail
        return
    value = result.value
    if isinstance(value, dict) and "skip" in value:
        if real_miopen.REQUIRED:
            pytest.fail(value["skip"])
        pytest.skip(value["skip"])
    assert value == expected


#: (function, parameter) where MIOpen 2.17.0 itself accepts NULL (our typed API still refuses None: none of these
#: is a use to support)
MIOPEN_ACCEPTS_NULL: dict[str, str] = {
    **{f"{fn}.{p}": "destroying NULL is a no-op (delete nullptr)" for fn, p in (
        ("miopenDestroy", "handle"), ("miopenDestroyTensorDescriptor", "tensorDesc"),
        ("miopenDestroyConvolutionDescriptor", "convDesc"), ("miopenDestroyPoolingDescriptor", "poolDesc"),
        ("miopenDestroyLRNDescriptor", "lrnDesc"), ("miopenDestroyActivationDescriptor", "activDesc"),
        ("miopenDestroyFusionPlan", "fusePlanDesc"), ("miopenDestroyOperatorArgs", "args"),
        ("miopenDestroyRNNDescriptor", "rnnDesc"), ("miopenDestroyCTCLossDescriptor", "ctcLossDesc"),
        ("miopenDestroyDropoutDescriptor", "dropoutDesc"),
        ("miopenDestroyReduceTensorDescriptor", "reduceTensorDesc"))},
    **{f"miopenConvolutionForwardGetWorkSpaceSize.{p}": "not accepted: the function drops every error (it ignores "
       "try_()'s status and returns success), see checks_conv.solution_errors"
       for p in ("handle", "wDesc", "xDesc", "convDesc", "yDesc")},
    "miopenSetRNNDescriptor_V2.dropoutDesc": "stored without a check; the RNN size queries then fail on it",
    "miopenGetDropoutDescriptor.handle": "an unused parameter",
    "miopenRestoreDropoutDescriptor.handle": "an unused parameter",
    "miopenGetReductionIndicesSize.handle": "an unused parameter",
}
#: functions that abort the process on a NULL descriptor: they dereference it outside their try/catch (in the
#: LogCmd* helpers or a bfloat16 test), so the exception escapes `extern "C"`: our None check keeps them safe
MIOPEN_ABORTS_ON_NULL = {
    "miopenFindConvolutionForwardAlgorithm", "miopenConvolutionForward", "miopenConvolutionForwardBias",
    "miopenFindConvolutionBackwardDataAlgorithm", "miopenConvolutionBackwardData", "miopenConvolutionBackwardBias",
    "miopenLRNForward", "miopenLRNBackward", "miopenBatchNormalizationForwardTraining",
    "miopenBatchNormalizationForwardInference", "miopenBatchNormalizationBackward", "miopenActivationForward",
    "miopenActivationBackward", "miopenSoftmaxForward", "miopenSoftmaxBackward", "miopenSoftmaxForward_V2",
    "miopenSoftmaxBackward_V2", "miopenRNNForwardTraining", "miopenRNNBackwardData", "miopenRNNBackwardWeights",
    "miopenCTCLoss", "miopenReduceTensor",
}


def test_null_descriptors_typed_and_raw(real: Worker, kernel_worker: Worker) -> None:
    """Every by-value handle/descriptor parameter of the 2.17.0 API (413): our typed API refuses None before any
    C call; MIOpen, called raw with NULL there, refuses it too (a failing status, or its own abort) except for
    the pairs in MIOPEN_ACCEPTS_NULL."""
    from ...real import checks_errors

    assert _run(real, "checks_errors:null_handles_typed") == len(checks_errors.handle_params())
    by_fn: dict[str, list[tuple[str, str]]] = {}
    for fn, param in checks_errors.handle_params():
        by_fn.setdefault(fn, []).append((fn, param))
    statuses: dict[str, str] = {}
    aborts: dict[str, str] = {}
    # the functions that need no kernel never abort here: one call for all of them; a fork each for the others
    plain = [pair for fn, pairs in by_fn.items() if fn not in coverage.NOT_CHECKED for pair in pairs]
    batches = [plain] + [pairs for fn, pairs in by_fn.items() if fn in coverage.NOT_CHECKED]
    for todo in batches:
        while todo:
            result = kernel_worker.call("checks_errors:null_handles_raw", todo, fork=True)
            if isinstance(result, Died):
                case = result.last_note
                assert case is not None and result.in_function == case.split(".")[0], result.describe()
                aborts[case] = result.signal_name or str(result.returncode)
                todo = [pair for pair in todo if f"{pair[0]}.{pair[1]}" != case]
                continue
            assert isinstance(result, Result)
            statuses.update(result.value)
            break
    assert len(statuses) + len(aborts) == len(checks_errors.handle_params())
    accepted = {case for case, status in statuses.items() if status == "miopenStatusSuccess"}
    assert accepted == set(MIOPEN_ACCEPTS_NULL)
    assert set(aborts.values()) == {"SIGABRT"}
    assert {case.split(".")[0] for case in aborts} == MIOPEN_ABORTS_ON_NULL


def test_set_tensor_descriptor_null_strides_typed(real: Worker) -> None:
    """miopenSetTensorDescriptor takes stridesA = NULL (packed strides): `nullable: true` on stridesA, and the
    common-length check leaves None out."""
    _run(real, "checks_tensor:null_strides_typed")


def test_fusion_plan_get_op_keeps_its_plan(real: Worker) -> None:
    """A fusion plan's op, created or looked up (fusion_plan_get_op), keeps its plan alive (the handle note's owner)."""
    _run(real, "checks_misc:fusion_get_op_keeps_plan")


# ---------------------------------------------------------------------------- the coverage table


def test_coverage_table_covers_the_2_17_spec() -> None:
    """Every one of the 169 functions of specs/miopen/2.17.0.yaml is in the table, checked or kernel-only."""
    functions = coverage.spec_functions()
    assert len(functions) == 169
    table = coverage.table()
    assert list(table) == functions
    assert [f for f, how in table.items() if how == "NOT COVERED"] == []
    checked, isolated = coverage.checked(), coverage.called_in_isolation()
    assert set(checked) <= set(functions) and set(isolated) <= set(functions)
    # the kernel-only ones: a reason each, and each is really called (in isolation)
    kernel_only = set(functions) - set(checked)
    assert kernel_only == set(coverage.NOT_CHECKED)
    assert kernel_only <= set(isolated)
    assert set(KERNEL_OUTCOMES) == set(common.ISOLATED)


def _typed(caller: str) -> bool:
    """A call made by the generated layer (a typed wrapper, or _support destroying a handle on close)."""
    return caller.startswith("miopen._generated")


def test_coverage_claims_match_the_trace(real: Worker, kernel_worker: Worker) -> None:
    """Each function a check claims was really called through the typed API while that check ran."""
    missing = {}
    for name, functions in sorted(common.COVERS.items()):
        result = real.results.get(name)
        if not isinstance(result, Result):
            result = real.call(name)
            assert isinstance(result, Result), name
        seen = {fn for fn, caller in result.calls if _typed(caller)}
        if set(functions) - seen:
            missing[name] = sorted(set(functions) - seen)
    for name, functions in sorted(common.ISOLATED.items()):
        result = kernel_worker.results.get(name)
        if result is None:
            result = kernel_worker.call(name, fork=True)
        if isinstance(result, Died):
            seen = {result.in_function}
        else:
            assert isinstance(result, Result), name
            seen = {fn for fn, caller in result.calls if _typed(caller)}
        if set(functions) - seen:
            missing[name] = sorted(set(functions) - seen)
    assert missing == {}


def test_docs_coverage_table_is_current() -> None:
    """docs/real-miopen.md carries coverage.markdown() between its markers (MIOGEN_UPDATE_GOLDEN=1 rewrites it)."""
    import os

    doc = REPO / "docs" / "real-miopen.md"
    text = doc.read_text()
    start, end = "<!-- coverage table: generated by tests/real/coverage.py -->\n", "<!-- end of coverage table -->"
    head, rest = text.split(start)
    _, tail = rest.split(end)
    want = head + start + coverage.markdown() + end + tail
    if os.environ.get("MIOGEN_UPDATE_GOLDEN") == "1":
        doc.write_text(want)
        return
    assert text == want, "docs/real-miopen.md: the coverage table is stale; run with MIOGEN_UPDATE_GOLDEN=1"


def test_build_script() -> None:
    """scripts/build_real_miopen.sh (make real-miopen) parses, answers --help, and passes shellcheck if present."""
    import shutil

    script = REPO / "scripts" / "build_real_miopen.sh"
    subprocess.run(["bash", "-n", str(script)], check=True)
    helped = subprocess.run(["bash", str(script), "--help"], capture_output=True, text=True, check=True)
    assert "--source URL|DIR" in helped.stdout and "rocm-5.2.3" in helped.stdout
    bad = subprocess.run(["bash", str(script), "--bogus"], capture_output=True, text=True)
    assert bad.returncode != 0 and "unknown option: --bogus" in bad.stderr
    if shutil.which("shellcheck"):
        subprocess.run(["shellcheck", str(script), str(REPO / ".ci" / "run")], check=True)


def test_build_script_ocl() -> None:
    """scripts/build_real_miopen_ocl.sh (make real-miopen-ocl) parses, answers --help naming both releases, refuses
    another release by name; every folder of scripts/real-miopen-ocl-patches is a release it builds, and every patch
    there opens with its own header before the first diff."""
    import shutil

    script = REPO / "scripts" / "build_real_miopen_ocl.sh"
    subprocess.run(["bash", "-n", str(script)], check=True)
    helped = subprocess.run(["bash", str(script), "--help"], capture_output=True, text=True, check=True)
    assert "--release R" in helped.stdout and "2.17.0" in helped.stdout and "3.3.0" in helped.stdout
    bad = subprocess.run(["bash", str(script), "--release", "3.4.0"], capture_output=True, text=True)
    assert bad.returncode != 0 and "--release must be 2.17.0 or 3.3.0; got '3.4.0'" in bad.stderr
    patches = sorted((REPO / "scripts" / "real-miopen-ocl-patches").glob("*/*.diff"))
    assert patches
    for p in patches:
        assert p.parent.name in ("2.17.0", "3.3.0"), p
        header = p.read_text().split("\ndiff ", 1)[0].split("\n--- ", 1)[0]
        assert header.strip() and not header.startswith(("diff ", "--- ")), f"{p}: no header of its own"
    if shutil.which("shellcheck"):
        subprocess.run(["shellcheck", str(script)], check=True)


def test_worker_uses_the_real_library(real: Worker) -> None:
    assert real.info["version"] == "2.17.0"
    assert real.info["pid"] != client.os.getpid()
