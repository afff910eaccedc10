"""RNN and GEMM convolutions on real kernels: MIOpen 2.17.0's OpenCL build with MIOpenGEMM
(../shared/real-miopen-ocl-gemm) on PoCL, through the typed API and the runtime, in worker processes
(tests/real/gemm). Without the library, pyopencl or an OpenCL device the tests skip, or fail under
MIOGEN_REQUIRE_REAL_MIOPEN_OCL_GEMM=1 (.ci/run sets it). Kernel binaries are cached per machine
(`real_miopen.OPENCL_GEMM.cache_dir()/kernels`), so only a machine's first run compiles them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ... import real_miopen
from ...real.client import Worker, run_check, shared_worker
from ...real.ocl.plan import FIND_ENV

LIB = real_miopen.OPENCL_GEMM


@pytest.fixture(scope="module")
def gemm() -> Iterator[Worker]:
    yield from shared_worker(LIB, FIND_ENV)


def run(w: Worker, name: str) -> Any:
    return run_check(w, name)


def test_rnn_typed_api(gemm: Worker) -> None:
    """Every sampled RNN case (tests/real/gemm/checks_rnn.py `cases()`) computes right through the typed API in all
    four calls (the check asserts each against the float64 reference and its finite-difference gradients);
    backward weights OVERWRITES dw (it does not add into it); and GRU's backward weights changes the workspace it
    reads, so a second call on the same workspace gets the new-memory gate's input matrix and bias wrong."""
    from ...real.gemm import checks_rnn

    got = run(gemm, "gemm.checks_rnn:typed_api")
    assert sorted(got) == sorted(c.label() for c in checks_rnn.cases())
    for label, r in got.items():
        assert {"inference y", "training y", "dx", "dhx", "dw"} <= set(r["errors"]), label
        assert r["dw"] == ["overwrites"], (label, r)
        if label.startswith("GRU"):
            assert r["second call wrong"] and all(", 2)" in n for n in r["second call wrong"]), (label, r)
        else:
            assert r["second call wrong"] == [], (label, r)


def test_rnn_runtime_op(gemm: Worker) -> None:
    """miopen.ops.rnn.RNN on pyopencl arrays computes right in all four calls (LSTM bidirectional 2 layers, GRU skip
    without bias, TANH bidirectional), its dw read back per part through get_layer_param/get_layer_bias."""
    from ...real.gemm import checks_rnn

    got = run(gemm, "gemm.checks_rnn:runtime_op")
    assert sorted(got) == sorted(c.label() for c in checks_rnn.RUNTIME_CASES)
    for label, errs in got.items():
        assert {"inference y", "training y", "dx", "dhx", "dw"} <= set(errs), label


#: the GEMM solver ids 2.17.0 lists for these cases (GemmFwd1x1_0_1 88, GemmFwd1x1_0_2 90, GemmFwdRest 91; GemmBwd1x1
#: stride 2 95, stride 1 96, GemmBwdRest 97; GemmWrw1x1_stride1 101, GemmWrwUniversal 102)
GEMM_IDS = {"fwd": {88, 90, 91}, "bwd": {95, 96, 97}, "wrw": {101, 102}}


def test_gemm_convolutions(gemm: Worker) -> None:
    """Forward, backward data and backward weights through Find + the legacy calls and through Immediate with every
    listed solution are right (asserted in the check against numpy); Find lists the GEMM algorithm in every
    direction, every case runs a GEMM solution by Immediate, and strided backward weights has GEMM alone (the plain
    OpenCL build has no solver for it)."""
    got = run(gemm, "gemm.checks_conv:find_and_immediate")
    assert len(got) == 4
    for tag, res in got.items():
        for d in ("fwd", "bwd", "wrw"):
            assert any(a.endswith("GEMM") for a in res[d]["find"]), (tag, d, res[d])
            gemm_ids = {int(i) for i, (algo, _) in res[d]["immediate"].items() if algo.endswith("GEMM")}
            assert gemm_ids and gemm_ids <= GEMM_IDS[d], (tag, d, res[d])
        if "s2" in tag:
            assert res["wrw"]["find"] == ["miopenConvolutionBwdWeightsAlgoGEMM"], (tag, res["wrw"])


def test_planner_modes_on_gemm_convolutions(gemm: Worker) -> None:
    """The runtime's planner modes through miopen.ops.conv on the GEMM cases, every result right against numpy
    (asserted in the check): immediate plans the GEMM solutions where nothing caps the workspace, find and auto
    plan with the legacy Find (2.17.0 has no Find 2.0), find2 is refused naming the missing feature, and a zero
    workspace cap falls back to a zero-workspace solution (saying so) or refuses with WorkspaceLimitError."""
    got = run(gemm, "gemm.checks_conv:planner_modes")
    assert "'find2' feature" in got.pop("find2")
    assert set(got) == {"immediate", "find", "auto", "immediate, no workspace"}
    for tag, res in got["immediate"].items():
        assert all(m == "immediate" and f is None for m, _, f in res.values()), (tag, res)
        assert res["fwd"][1] in GEMM_IDS["fwd"] and res["wrw"][1] in GEMM_IDS["wrw"], (tag, res)
    for mode in ("find", "auto"):
        assert all(r[0] == "find" for res in got[mode].values() for r in res.values()), got[mode]
    for tag, res in got["immediate, no workspace"].items():
        for d, r in res.items():
            assert r[0] == "refused" or (r[0] == "immediate" and (r[2] is None or "zero-workspace" in r[2])), (tag, d)
            if r[0] == "refused":
                assert r[1] == "WorkspaceLimitError", (tag, d, r)
