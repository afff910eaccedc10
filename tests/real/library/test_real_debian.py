"""The generated bindings against the real Debian-built MIOpen 3.x releases (see tests/real_debian.py).

Same worker design as tests/real/library/test_real_miopen.py (nothing real in this process), with the workers on the Debian
root's own loader and Python and the stand-in GPU (tests/fixtures/standin_gpu) as the HIP runtime. Per release:
- every function of the bound release's typed API is called (`checks_debian.sweep`, forked batches: a death
  costs one child); the outcome of each is the coverage table of docs/real-miopen.md, kept current here;
- the focused checks (`checks_debian.CHECKS`) compare answers with MIOpen's formulas and pin what the stand-in
  device gets (solution lists, states sizes);
- the 2.17.0 checks (tests/real/checks_*.py) whose expectations still hold run too.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ... import real_debian
from ...helpers import REPO
from ...real import checks_debian, common, coverage  # noqa: F401  (coverage imports the 2.17.0 checks: COVERS)
from ...real.client import Died, Result, Worker, WorkerError

LIBS = real_debian.libraries()
IDS = [lib.expected_release or lib.upstream for lib in LIBS]

#: what each release answers in the focused checks that return values (the stand-in gfx90a device: 104 CUs)
EXPECTED: dict[str, dict[str, Any]] = {
    "3.4.0": {
        "version_and_errors": {"version": "3.4.0"},
        # per direction a GEMM solver (algorithm 0; forward: 91, its workspace 7225344 bytes = the im2col buffer
        # of one image, 64*3*3 x 56*56 floats) and a naive direct one (algorithm 1: 85, 86, 87)
        "conv_solutions": {"fwd": [(91, 0, 7225344), (85, 1, 0)], "bwd": [(97, 0), (86, 1)],
                           "wrw": [(102, 0), (87, 1)]},
        "rnn_sizes": {"params_bytes": 59392},
        "dropout_sizes": {"states": 786432, "reserve": 512},
        "reduce_sizes": {"workspace": 4096, "indices": 0},
    },
    "3.5.1": {
        "version_and_errors": {"version": "3.5.1"},
        # 3.5.1 adds solution 84 (algorithm 3: Winograd) in every direction, listed first
        "conv_solutions": {"fwd": [(84, 3, 0), (91, 0, 7225344), (85, 1, 0)], "bwd": [(84, 3), (97, 0), (86, 1)],
                           "wrw": [(84, 3), (102, 0), (87, 1)]},
        "rnn_sizes": {"params_bytes": 59392},
        "dropout_sizes": {"states": 655360, "reserve": 512},
        "reduce_sizes": {"workspace": 4096, "indices": 0},
    },
}
#: the 2.17.0 checks whose expectations are 2.17.0's own (status codes, descriptor rules and solver lists that
#: changed by 3.x; not re-derived for 3.x): the others must hold on every 3.x release
SPECIFIC_TO_2_17 = {
    "checks_conv:attributes", "checks_conv:output_dims_nd", "checks_conv:solution_errors",
    "checks_conv:solutions_consistent", "checks_errors:status_mapping", "checks_layers:pooling_rank_errors",
    "checks_misc:ctc", "checks_misc:dropout", "checks_misc:fusion_plans", "checks_misc:handle_basics",
    "checks_misc:reduction", "checks_misc:version_and_error_strings", "checks_rnn:sizes", "checks_rnn:weight_layout",
    "checks_runtime:conv_output_dims_vs_library", "checks_runtime:deterministic_on_2_17", "checks_runtime:features",
    "checks_runtime:handle_pool", "checks_runtime:version_policies", "checks_tensor:bad_data_type_raw",
    "checks_tensor:bad_lengths_and_strides", "checks_tensor:four_d_round_trip", "checks_tensor:four_d_strided",
    "checks_tensor:nd_round_trip", "checks_tensor:zero_dims_and_fresh",
}


@pytest.fixture(scope="session")
def debian_env(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the stand-in GPU's folder, the assembled package's folder), built once."""
    real_debian.require()
    base = tmp_path_factory.mktemp("real_debian")
    return real_debian.build_standin(LIBS[0].root, base / "standin"), real_debian.assemble_package(base / "pkg")


@pytest.fixture(scope="module", params=LIBS or [None], ids=IDS or ["no-root"])
def deb(request: pytest.FixtureRequest, debian_env: tuple[Path, Path]) -> Iterator[tuple[real_debian.Library, Worker]]:
    lib: real_debian.Library = request.param
    standin, pkg = debian_env
    try:
        w = Worker(lib.path, standin / lib.hip_major / lib.hip_soname,
                   python=real_debian.interpreter(lib.root, standin / lib.hip_major),
                   extra_env={"PYTHONPATH": str(pkg), "MIOGEN_REAL_BIND_ANYWAY": "1"})
    except RuntimeError as exc:
        pytest.fail(str(exc))
    try:
        yield lib, w
    finally:
        w.close()
        w.cleanup()


def _run(w: Worker, name: str, *args: Any) -> Any:
    try:
        result = w.call(name, *args)
    except WorkerError as exc:
        pytest.fail(str(exc), pytrace=False)
    if isinstance(result, Died):
        pytest.fail(f"{name}: the worker {result.describe()}\n{result.stderr_tail}", pytrace=False)
    return result.value


def _release(deb: tuple[real_debian.Library, Worker]) -> str:
    return str(deb[1].info["version"])


def test_binds_the_release(deb: tuple[real_debian.Library, Worker]) -> None:
    """The library reports the MIOpen release its Debian version ships; it is bound to its own committed release,
    or (until that is committed) to the nearest one, the refusal recorded."""
    from miopen._generated._support import RELEASES

    lib, w = deb
    if lib.expected_release:
        assert w.info["version"] == lib.expected_release
    version = str(w.info["version"])
    if version in RELEASES:
        assert (w.info["bound"], w.info["refused"]) == (version, None)
    else:
        assert str(w.info["bound"]).rsplit(".", 1)[0] <= version.rsplit(".", 1)[0]
    assert w.info["python"] >= "3.11"


@pytest.mark.parametrize("name", sorted(checks_debian.CHECKS))
def test_focused(deb: tuple[real_debian.Library, Worker], name: str) -> None:
    value = _run(deb[1], f"checks_debian:{name}")
    want = EXPECTED.get(_release(deb), {}).get(name)
    if want is not None:
        assert value == want
    result = deb[1].results[f"checks_debian:{name}"]
    assert isinstance(result, Result)
    seen = {fn for fn, caller in result.calls if caller.startswith("miopen._generated")}
    assert set(checks_debian.CHECKS[name]) <= seen


def test_data_types_reach_c(deb: tuple[real_debian.Library, Worker]) -> None:
    """Every data type the bound release declares reaches C as its own value and is sized by its name's size."""
    sizes = _run(deb[1], "checks_debian:data_types_reach_c")
    for value, (name, size) in sizes.items():
        if name in checks_debian.ITEMSIZE:
            assert size == checks_debian.ITEMSIZE[name], (value, name)


@pytest.mark.parametrize("name", sorted(set(common.COVERS) - SPECIFIC_TO_2_17))
def test_2_17_check_holds(deb: tuple[real_debian.Library, Worker], name: str) -> None:
    _run(deb[1], name)


def sweep(worker: Worker) -> dict[str, str]:
    """Every function's outcome, in a fresh worker of its own (what ran before must not change an outcome); a
    death is recorded and the rest go on in a new fork."""
    w = Worker(worker.library, worker.hip, python=worker.python, extra_env=worker.extra_env)
    try:
        return _sweep(w)
    finally:
        w.close()
        w.cleanup()


def _sweep(w: Worker) -> dict[str, str]:
    todo = sorted(_run(w, "checks_debian:functions"))
    record = w.trace.with_name("sweep.txt")
    record.write_text("")
    out: dict[str, str] = {}
    while todo:
        result = w.call("checks_debian:sweep", todo, str(record), fork=True, timeout=240)
        for line in record.read_text().splitlines():
            name, outcome = line.split("\t", 1)
            out[name] = outcome
        if isinstance(result, Died):
            # the function it died in: the first one not yet recorded
            case = next(name for name in todo if name not in out)
            assert result.in_function is not None, f"{case}: the worker {result.describe()} outside MIOpen"
            out[case] = f"died ({result.signal_name}) in {result.in_function}"
            todo = todo[todo.index(case) + 1:]
            continue
        assert isinstance(result, Result)
        break
    return out


_SWEEPS: dict[str, dict[str, str]] = {}


def test_every_function_called(deb: tuple[real_debian.Library, Worker]) -> None:
    """Each function of the bound release is called through the typed API with valid arguments: none is refused by
    our own checks, and each outcome is MIOpen's (a status, success, or a missing export)."""
    outcomes = sweep(deb[1])
    _SWEEPS[_release(deb)] = outcomes
    assert [f for f, o in outcomes.items() if o.startswith(("refused by the typed API", "not reached"))] == []


def markdown(release: str, bound: str, outcomes: dict[str, str]) -> str:
    ok = sum(1 for o in outcomes.values() if o == "miopenStatusSuccess")
    lines = [f"MIOpen {release} (bound to the bindings of {bound}): {len(outcomes)} functions called, {ok} succeed.",
             "", "| function | outcome with the stand-in GPU |", "|---|---|"]
    lines += [f"| `{f}` | {o} |" for f, o in sorted(outcomes.items())]
    return "\n".join(lines) + "\n"


def test_docs_coverage_table_is_current(deb: tuple[real_debian.Library, Worker]) -> None:
    """docs/real-miopen.md carries each release's sweep between its markers (MIOGEN_UPDATE_GOLDEN=1 rewrites)."""
    release = _release(deb)
    outcomes = _SWEEPS.get(release) or sweep(deb[1])
    doc = REPO / "docs" / "real-miopen.md"
    text = doc.read_text()
    start, end = f"<!-- debian {release} coverage: tests/real/library/test_real_debian.py -->\n", f"<!-- end of {release} -->"
    table = markdown(release, str(deb[1].info["bound"]), outcomes)
    if start not in text:
        if os.environ.get("MIOGEN_UPDATE_GOLDEN") == "1":
            doc.write_text(text.rstrip("\n") + f"\n\n### MIOpen {release}\n\n{start}{table}{end}\n")
            return
        pytest.fail(f"docs/real-miopen.md has no table for {release}; run with MIOGEN_UPDATE_GOLDEN=1")
    head, rest = text.split(start)
    _, tail = rest.split(end)
    want = head + start + table + end + tail
    if os.environ.get("MIOGEN_UPDATE_GOLDEN") == "1":
        doc.write_text(want)
        return
    assert text == want, "docs/real-miopen.md: the table is stale; run with MIOGEN_UPDATE_GOLDEN=1"


def test_setup_script() -> None:
    """scripts/real_miopen_debian.sh parses, answers --help, refuses unknown options."""
    script = REPO / "scripts" / "real_miopen_debian.sh"
    subprocess.run(["bash", "-n", str(script)], check=True)
    helped = subprocess.run(["bash", str(script), "--help"], capture_output=True, text=True, check=True)
    assert "--cache DIR" in helped.stdout and "--offline" in helped.stdout
    bad = subprocess.run(["bash", str(script), "--bogus"], capture_output=True, text=True)
    assert bad.returncode != 0 and "unknown option: --bogus" in bad.stderr


# ---------------------------------------------------------------------------- MIOpen's own kernel builds

#: the kernel each layer op launches (the same on both releases: MIOpen's OpenCL-C kernels, MIOpenNeuron.cl,
#: MIOpenPooling.cl, MIOpenSoftmax.cl, MIOpenBatchNormFwd*.cl)
LAYER_KERNELS = {"activation": "MIOpenActiveFwdLite", "pooling": "mloPoolingG", "softmax": "SoftmaxForward",
                 "batchnorm inference": "MIOpenBatchNormFwdInferSpatialEst",
                 "batchnorm training": "MIOpenBatchNormFwdTrainSpatial"}
NAIVE = {"fwd": (85, "naive_conv_ab_nonpacked_fwd_nchw_float_double_float"),
         "bwd": (86, "naive_conv_ab_nonpacked_bwd_nchw_float_double_float"),
         "wrw": (87, "naive_conv_ab_nonpacked_wrw_nchw_float_double_float")}
#: per release: the form of its HIP code objects (3.4.0 runs clang++ and loads the offload bundle it writes;
#: 3.5.1 builds through hipRTC and loads the AMDGPU ELF file), and whether Find works with the GEMM and assembly
#: solvers off (both: it finds the naive solver 85, timing it, and runs it). With them on, 3.5.1's Find also
#: tries an assembly implicit-GEMM solver whose .s source Debian's build does not ship ("Failed to load kernel
#: source: igemm_fwd_gtcx2_...s"): miopenStatusUnknownError for the whole Find
KERNEL_EXPECTED: dict[str, dict[str, Any]] = {
    "3.4.0": {"hip object": "amdgpu-bundled", "find ok": True},
    "3.5.1": {"hip object": "amdgpu", "find ok": True},
}


@pytest.fixture(scope="module", params=[False, True], ids=["gemm-on", "gemm-asm-off"])
def kern(request: pytest.FixtureRequest, deb: tuple[real_debian.Library, Worker],
         debian_env: tuple[Path, Path]) -> Iterator[tuple[str, Worker, Path]]:
    """A worker inside the Debian root (MIOpen 3.4.0 starts its compilers by absolute path), with MIOpen's GEMM
    solvers on (their rocBLAS aborts without the trimmed Tensile kernels) or off with the assembly solvers
    (MIOPEN_DEBUG_CONV_GEMM=0, MIOPEN_DEBUG_GCN_ASM_KERNELS=0: what Find needs to get past them, see
    KERNEL_EXPECTED); the stand-in logs loads and launches to the returned file."""
    lib, _ = deb
    base = Path(os.environ.get("MIOGEN_REAL_MIOPEN_DEBIAN") or real_debian.cache_dir() / "current")
    if not real_debian.has_compilers(base) or os.geteuid() != 0:
        why = (f"{base} has no kernel compilers (rebuild it: make real-miopen-debian)" if os.geteuid() == 0
               else "the worker inside the root needs root (mount namespace, overlay, chroot)")
        if real_debian.REQUIRED:
            pytest.fail(f"MIOGEN_REQUIRE_REAL_MIOPEN_DEBIAN=1 but {why}")
        pytest.skip(why)
    standin, pkg = debian_env
    log = standin / f"launches-{lib.hip_major}-{request.param}.log"
    env = {"PYTHONPATH": str(pkg), "MIOGEN_REAL_BIND_ANYWAY": "1", "STANDIN_HIP_LOG": str(log)}
    if request.param:
        env["MIOPEN_DEBUG_CONV_GEMM"] = "0"
        env["MIOPEN_DEBUG_GCN_ASM_KERNELS"] = "0"
    w = Worker(lib.path, standin / lib.hip_major / lib.hip_soname,
               python=real_debian.chroot_interpreter(lib.root, standin / lib.hip_major), extra_env=env)
    try:
        yield str(w.info["version"]), w, log
    finally:
        w.close()
        w.cleanup()


def _built(entry: dict[str, Any], kind: str) -> None:
    assert entry["status"] == "miopenStatusSuccess", entry
    assert entry["code objects"] == [kind] and entry["code bytes"] > 1000, entry


def test_kernels_layers(kern: tuple[str, Worker, Path]) -> None:
    """Activation, pooling, softmax and batch norm: MIOpen compiles each OpenCL-C kernel for gfx90a (an AMDGPU
    ELF code object, loaded into the stand-in), launches it by name, status Success, and keeps it in its kernel
    cache (a .ukdb database)."""
    release, w, _ = kern
    got = _run(w, "checks_debian_kernels:layers")
    for op, kernel in LAYER_KERNELS.items():
        _built(got[op], "amdgpu")
        assert got[op]["launched"] == [kernel], (op, got[op])
    assert [f for f in got["kernel cache"] if f.endswith(".ukdb")], got["kernel cache"]


def test_kernels_conv_immediate(kern: tuple[str, Worker, Path]) -> None:
    """GetSolution + CompileSolution + Immediate: every listed solution compiles; the naive solvers' HIP kernel
    (naive_conv.cpp) is built for real and each direction's launch is its own kernel."""
    release, w, _ = kern
    got = _run(w, "checks_debian_kernels:conv_immediate")
    kind = KERNEL_EXPECTED[release]["hip object"]
    assert all(v["status"] == "miopenStatusSuccess" for k, v in got.items() if k.endswith("compile")), got
    _built(got[f"fwd {NAIVE['fwd'][0]} compile"], kind)  # the first build; bwd and wrw reuse the code object
    for direction, (sid, kernel) in NAIVE.items():
        run = got[f"{direction} {sid} run"]
        assert (run["status"], run["launched"]) == ("miopenStatusSuccess", [kernel]), (direction, run)
    runs = {k.split()[1] for k in got if k.endswith(" run")}
    assert runs == {str(sid) for sid, _ in NAIVE.values()}  # the GEMM solutions run only in test_kernels_gemm


def test_kernels_gemm(kern: tuple[str, Worker, Path]) -> None:
    """Running a GEMM solution: rocBLAS, whose Tensile kernels the set-up trims (2.9 GB), cannot initialise and
    aborts the process inside the MIOpen call (pinned: SIGABRT inside miopenConvolutionForwardImmediate)."""
    release, w, _ = kern
    result = w.call("checks_debian_kernels:gemm_forward", fork=True)
    if w.extra_env.get("MIOPEN_DEBUG_CONV_GEMM") == "0":
        # the GEMM solvers off: none is listed, only the direct (naive) one, algorithm 1
        assert isinstance(result, Result) and result.value == [1], result
        return
    assert isinstance(result, Died), result
    assert result.in_function == "miopenConvolutionForwardImmediate", result.describe()


def test_kernels_find2(kern: tuple[str, Worker, Path]) -> None:
    """Find 2.0 (miopenFindSolutions, then miopenRunSolution of the first). With the GEMM solvers on, Find's
    benchmark reaches rocBLAS and the process dies inside miopenFindSolutions (3.4.0) or Find fails with a
    status first (3.5.1: its missing assembly kernel source); with them off the outcome is KERNEL_EXPECTED's."""
    release, w, _ = kern
    gemm_off = w.extra_env.get("MIOPEN_DEBUG_CONV_GEMM") == "0"
    result = w.call("checks_debian_kernels:conv_find2", fork=True, timeout=240)
    if not gemm_off:
        if isinstance(result, Died):
            assert result.in_function == "miopenFindSolutions", result.describe()
        else:
            assert isinstance(result, Result) and result.value["find"]["status"] != "miopenStatusSuccess"
        return
    assert isinstance(result, Result), result
    got = result.value
    kind = KERNEL_EXPECTED[release]["hip object"]
    if KERNEL_EXPECTED[release]["find ok"]:
        _built(got["find"], kind)
        assert set(got["find"]["launched"]) == {NAIVE["fwd"][1]}  # Find times the solver by launching it
        assert got["solutions"] == [(NAIVE["fwd"][0], 0)]
        assert got["run first"]["status"] == "miopenStatusSuccess"
        assert got["run first"]["launched"] == [NAIVE["fwd"][1]]
    else:
        assert got["find"]["status"] == "miopenStatusUnknownError" and got["find"]["code objects"] == [kind]
        assert got["find"]["launched"] == [] and got["solutions"] == []


def test_kernels_runtime_ops(kern: tuple[str, Worker, Path]) -> None:
    """The runtime's ops (miopen.ops) with the GEMM solvers off: activation, pooling, softmax build and launch
    their kernels; ConvPlanner in each mode plans the naive solver (85) and conv_forward launches it, except
    where Find fails (KERNEL_EXPECTED): there conv_forward raises MIOpen's status and nothing is cached."""
    release, w, _ = kern
    if w.extra_env.get("MIOPEN_DEBUG_CONV_GEMM") != "0":
        # ConvPlanner('immediate') takes MIOpen's first solution, the GEMM one: test_kernels_gemm's death
        died = w.call("checks_debian_kernels:runtime_ops", fork=True, timeout=240)
        assert isinstance(died, Died) and died.in_function == "miopenConvolutionForwardImmediate", died
        return
    got = _run(w, "checks_debian_kernels:runtime_ops")
    for op in ("activation", "pooling", "softmax"):
        _built(got[op], "amdgpu")
        assert got[op]["launched"] == [LAYER_KERNELS[op]]
    kernel = NAIVE["fwd"][1]
    assert got["conv immediate"]["status"] == "miopenStatusSuccess" and got["conv immediate"]["launched"] == [kernel]
    assert got["conv immediate plan"] == [(85, 1, 0, None)]
    for mode in ("find", "find2"):
        if KERNEL_EXPECTED[release]["find ok"]:
            assert got[f"conv {mode}"]["status"] == "miopenStatusSuccess", (mode, got[f"conv {mode}"])
            assert got[f"conv {mode}"]["launched"][-1] == kernel
            assert len(got[f"conv {mode} plan"]) == 1
        else:
            assert got[f"conv {mode}"]["status"] == "miopenStatusUnknownError"
            assert got[f"conv {mode} plan"] == []


# ---------------------------------------------------------------------------- the runtime

#: has_feature on each release (checks_debian_runtime.features also derives each from the committed header and
#: the library's exports): both have every feature but solver_names, whose miopenGetSolverName neither header
#: declares (3.5.2's is the first committed spec with it)
FEATURES_EXPECTED = {release: {name: name != "solver_names" for name in (
    "get_version", "immediate", "find2", "find2_preallocated", "deterministic_attr", "find_mode_api",
    "tensor_desc_v2", "fusion", "batchnorm_v2", "seq_rnn", "solver_names")} for release in ("3.4.0", "3.5.1")}


@pytest.mark.parametrize("name", ["version_policies", "handle_pool", "miopen_state", "caffe2_wrappers"])
def test_runtime(deb: tuple[real_debian.Library, Worker], name: str) -> None:
    value = _run(deb[1], f"checks_debian_runtime:{name}")
    if name == "version_policies":
        assert value == {"compatible": "ok", "strict": "ok", "off": "ok", "version": _release(deb)}
    elif name == "handle_pool":
        assert value == {"handles": 2}
    elif name == "caffe2_wrappers":
        assert value["lstm params bytes"] == 59392  # the same LSTM as checks_debian.rnn_sizes


def test_runtime_features(deb: tuple[real_debian.Library, Worker]) -> None:
    release = _release(deb)
    got = _run(deb[1], "checks_debian_runtime:features", str(REPO / "specs" / "miopen" / f"{release}.yaml"))
    assert got == FEATURES_EXPECTED[release]
