"""Runtime core through the stub libraries: versions, handles, states, workspaces, descriptors, planner."""

from __future__ import annotations

import threading
import warnings
from pathlib import Path

import pytest

from .conftest import Libs


@pytest.fixture(autouse=True)
def _fresh(libs: Libs) -> None:
    from miopen import algo, descriptors, handles, version

    version.reset_version_cache()
    handles.set_version_policy("compatible")
    handles.handle_pool().close()
    descriptors.descriptor_cache().clear()
    algo.algo_cache().clear()
    libs.reset()  # what the clean-up above logged is not part of the test


def _set_version(libs: Libs, v: str) -> None:
    major, minor, patch = (int(x) for x in v.split("."))
    libs.set_out("miopenGetVersion/major", major)
    libs.set_out("miopenGetVersion/minor", minor)
    libs.set_out("miopenGetVersion/patch", patch)


# ------------------------------------------------------------------ versions


@pytest.mark.parametrize(
    ("runtime", "policy", "outcome"),
    [
        ("3.5.2", "compatible", "ok"), ("3.5.2", "strict", "ok"), ("3.6.0", "compatible", "warn"),
        ("3.6.0", "strict", "error"), ("3.5.1", "compatible", "warn"), ("3.4.9", "compatible", "error"),
        ("3.4.9", "strict", "error"),
        ("2.20.0", "compatible", "error"), ("4.0.0", "compatible", "error"), ("4.0.0", "off", "ok"),
        ("3.5.3", "compatible", "warn"), ("3.5.3", "strict", "warn"),
    ],
)
def test_version_policy_matrix(libs: Libs, runtime: str, policy: str, outcome: str) -> None:
    from miopen import errors, version

    _set_version(libs, runtime)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        if outcome == "error":
            with pytest.raises(errors.MIOpenVersionError) as e:
                version.check_miopen_versions(policy)  # type: ignore[arg-type]
            msg = str(e.value)
            assert f"runtime {runtime}" in msg or f"the runtime {runtime}" in msg
            assert "3.5.2" in msg and "libMIOpen_stub.so" in msg and "make upgrade" in msg
        else:
            version.check_miopen_versions(policy)  # type: ignore[arg-type]
    warned = [x for x in w if issubclass(x.category, errors.MIOpenVersionWarning)]
    assert bool(warned) == (outcome == "warn")


def test_version_check_is_cached_and_skippable(libs: Libs, monkeypatch: pytest.MonkeyPatch) -> None:
    from miopen import errors, version

    _set_version(libs, "3.5.2")
    version.check_miopen_versions()
    version.check_miopen_versions()
    assert libs.calls().count("miopenGetVersion") == 1
    _set_version(libs, "1.0.0")
    version.check_miopen_versions()  # cached: no new query
    with pytest.raises(errors.MIOpenVersionError):
        version.check_miopen_versions(force=True)
    monkeypatch.setenv(version.SKIP_ENV, "1")
    assert version.check_miopen_versions(force=True) is None
    with pytest.raises(ValueError, match="policy must be"):
        version.check_miopen_versions("lenient")  # type: ignore[arg-type]


def test_library_without_get_version(libs: Libs) -> None:
    import ctypes

    import miopen
    from miopen import errors, version

    miopen.load_library(ctypes.CDLL(None))  # exports no miopen* symbol, like MIOpen < 2.3
    try:
        assert version.runtime_version() is None
        with pytest.raises(errors.MIOpenVersionError, match="no miopenGetVersion, so it is older than MIOpen 2.3"):
            version.check_miopen_versions(force=True)
        assert not version.has_feature("find2")
    finally:
        miopen.load_library(libs.miopen)


def test_first_handle_runs_the_check_lazily(libs: Libs) -> None:
    from miopen import errors, handles

    _set_version(libs, "2.20.0")
    with pytest.raises(errors.MIOpenVersionError):
        handles.inline_miopen_handle()
    assert "miopenCreate" not in libs.calls()
    handles.set_version_policy("off")
    handles.inline_miopen_handle()
    assert "miopenCreate" in libs.calls()


def test_has_feature(libs: Libs) -> None:
    from miopen import version

    assert version.has_feature("find2") and version.has_feature("immediate") and version.has_feature("fusion")
    _set_version(libs, "2.18.0")
    assert not version.has_feature("find2")  # symbols present, release too old
    with pytest.raises(ValueError, match="unknown feature 'warp_drive'"):
        version.has_feature("warp_drive")


# ------------------------------------------------------------------ handles and states


def test_inline_handle_per_thread_and_stream_rebinding(libs: Libs) -> None:
    from miopen import handles

    h1 = handles.inline_miopen_handle(stream=0x100)
    h2 = handles.inline_miopen_handle(stream=0x100)
    assert h1 is h2
    assert libs.calls().count("miopenSetStream") == 1  # bound once, not on every call
    handles.inline_miopen_handle(stream=0x200)
    assert libs.calls().count("miopenSetStream") == 2
    assert [e["streamID"] for e in libs.log("miopenSetStream")] == [str(0x100), str(0x200)]

    class TorchStream:
        cuda_stream = 0x300

    handles.inline_miopen_handle(stream=TorchStream())
    assert libs.log("miopenSetStream")[-1]["streamID"] == str(0x300)


def test_eight_threads_get_their_own_handles(libs: Libs) -> None:
    from miopen import handles

    pool = handles.handle_pool()
    before = pool.created
    seen: dict[int, set[int]] = {}
    errors: list[BaseException] = []
    start, done = threading.Barrier(8), threading.Barrier(8)

    def work(i: int) -> None:
        try:
            start.wait()
            mine = set()
            for _ in range(200):
                mine.add(id(handles.inline_miopen_handle(stream=0x1000 + i)))
            seen[i] = mine
            done.wait()  # all threads alive at once: no handle can be handed back and reused yet
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert all(len(s) == 1 for s in seen.values())  # one handle per thread, every call
    addresses = {next(iter(s)) for s in seen.values()}
    assert len(addresses) == 8 and pool.created - before == 8
    assert libs.calls().count("miopenCreate") == 8
    # each handle was bound to its own thread's stream exactly once
    assert sorted(e["streamID"] for e in libs.log("miopenSetStream")) == sorted(str(0x1000 + i) for i in range(8))
    # the threads ended: their handles went back to the pool and are reused, not re-created
    import gc

    gc.collect()
    t = threading.Thread(target=lambda: handles.inline_miopen_handle(stream=1))
    t.start()
    t.join()
    assert pool.created - before == 8


def test_states_fork_and_join(libs: Libs) -> None:
    from miopen import state

    with state.with_miopen_state(0, stream=0x700) as st:
        assert st.handle is not None and st.workspace.device == st.device
    with state.with_miopen_state(0, stream=0x700) as st2:
        assert st2 is st  # the same lazily created state
    assert libs.calls().count("miopenCreateWithStream") == 1
    with pytest.raises(ValueError, match="Invalid state_idx 4"):
        with state.with_miopen_state(4):
            pass
    st.close()
    assert libs.calls().count("miopenDestroy") == 1


# ------------------------------------------------------------------ workspaces


def test_workspace_grows_only_and_respects_the_cap(libs: Libs) -> None:
    from miopen import errors, workspace

    ws = workspace.MIOpenWorkspace(0)
    p1 = ws.get(1024)
    assert ws.get(512) == p1 and ws.allocations == 1
    ws.get(4096)
    assert ws.allocations == 2 and ws.nbytes == 4096
    workspace.set_workspace_limit(2048)
    try:
        with pytest.raises(errors.WorkspaceLimitError, match="exceeds the cap of 2048"):
            ws.get(8192)
    finally:
        workspace.set_workspace_limit(None)
    ws.reset()
    assert ws.ptr is None


def test_workspace_out_of_memory_retries_then_raises(libs: Libs) -> None:
    from miopen import errors, workspace

    class Flaky:
        def __init__(self, failures: int) -> None:
            self.failures, self.emptied, self.freed = failures, 0, 0

        def allocate(self, nbytes: int, stream: int | None) -> int:
            if self.failures:
                self.failures -= 1
                raise MemoryError("out of memory")
            return 0x9000

        def free(self, ptr: int, stream: int | None) -> None:
            self.freed += 1

        def empty_cache(self) -> None:
            self.emptied += 1

    once = Flaky(1)
    assert workspace.MIOpenWorkspace(0, once).get(100) == 0x9000 and once.emptied == 1
    twice = Flaky(2)
    with pytest.raises(errors.WorkspaceOOM) as e:
        workspace.MIOpenWorkspace(0, twice).get(100)
    assert isinstance(e.value, MemoryError) and "100 bytes" in str(e.value) and twice.emptied == 1


def test_persistent_buffers_are_separate_from_scratch(libs: Libs) -> None:
    from miopen import workspace

    scratch = workspace.scratch(0)
    buf = workspace.PersistentBuffer(256, 0, "RNN reserve")
    assert buf.ptr and buf.ptr != scratch.ptr
    buf.close()
    with pytest.raises(ValueError, match="RNN reserve buffer is closed"):
        buf.ptr


# ------------------------------------------------------------------ descriptors


def test_descriptor_cache_and_nhwc(libs: Libs) -> None:
    from miopen import api, descriptors

    a = descriptors.tensor_descriptor("float32", [2, 3, 4, 5])
    b = descriptors.tensor_descriptor(api.DataType.miopenFloat, (2, 3, 4, 5), (60, 20, 5, 1))
    assert a is b and a.strides == (60, 20, 5, 1)
    assert libs.calls().count("miopenCreateTensorDescriptor") == 1
    nhwc = descriptors.descriptor_from_order_and_dims("NHWC", (2, 4, 5, 3), "float16")
    call = libs.log("miopenSetTensorDescriptor")[-1]
    assert (call["dimsA"], call["stridesA"], call["dataType"]) == ("[2,3,4,5]", "[60,1,15,3]", "0")
    assert nhwc.dims == (2, 3, 4, 5)
    # size-1 dims do not split the cache
    c = descriptors.tensor_descriptor("float32", [2, 1, 4, 5], (20, 999, 5, 1))
    d = descriptors.tensor_descriptor("float32", [2, 1, 4, 5], (20, 20, 5, 1))
    assert c is d


def test_scaling_constants(libs: Libs) -> None:
    import ctypes

    from miopen import descriptors, errors

    assert isinstance(descriptors.k_one("float16"), ctypes.c_float)
    assert isinstance(descriptors.k_zero("float64"), ctypes.c_double) and descriptors.k_zero("float64").value == 0.0
    with pytest.raises(errors.ScalingRuleError, match="alpha=1 and beta=0"):
        descriptors.check_conv_scaling(2, 2.0, 0.0)
    descriptors.check_conv_scaling(3, 2.0, 1.0)


# ------------------------------------------------------------------ the planner


def _problem() -> tuple[object, object, object, object, object]:
    from miopen import algo, descriptors, handles

    x = descriptors.tensor_descriptor("float32", [1, 4, 8, 8])
    w = descriptors.tensor_descriptor("float32", [8, 4, 3, 3])
    y = descriptors.tensor_descriptor("float32", [1, 8, 8, 8])
    conv = descriptors.convolution_descriptor([1, 1], [1, 1], [1, 1])
    params = algo.ConvParams((1, 1), (1, 1), (1, 1))
    return handles.inline_miopen_handle(), x, w, y, (conv, params)


def test_immediate_plan_is_cached(libs: Libs) -> None:
    from miopen import algo, workspace

    libs.set_out("miopenConvolutionForwardGetSolutionCount/solutionCount", 2)
    libs.set_out("miopenConvolutionForwardGetSolution/solutionCount", 2)
    libs.set_out("miopenConvolutionForwardGetSolution/solutions[0].time", 2.0)
    libs.set_out("miopenConvolutionForwardGetSolution/solutions[0].workspace_size", 0)
    libs.set_out("miopenConvolutionForwardGetSolution/solutions[0].solution_id", 11)
    libs.set_out("miopenConvolutionForwardGetSolution/solutions[1].time", 1.0)
    libs.set_out("miopenConvolutionForwardGetSolution/solutions[1].workspace_size", 4096)
    libs.set_out("miopenConvolutionForwardGetSolution/solutions[1].solution_id", 22)
    h, x, w, y, (conv, params) = _problem()
    planner = algo.ConvPlanner("immediate")
    ws = workspace.MIOpenWorkspace(0)
    plan = planner.plan(h, "forward", x, w, y, conv, params, workspace=ws)  # type: ignore[arg-type]
    assert (plan.solution_id, plan.workspace_bytes, plan.fallback) == (22, 4096, None)
    calls = libs.calls()
    assert calls.index("miopenConvolutionForwardGetSolutionCount") < calls.index("miopenConvolutionForwardGetSolution")
    assert libs.log("miopenConvolutionForwardCompileSolution")[0]["solution_id"] == "22"
    again = planner.plan(h, "forward", x, w, y, conv, params, workspace=ws)  # type: ignore[arg-type]
    assert again is plan and libs.calls().count("miopenConvolutionForwardGetSolution") == 1
    planner.run(plan, h, x, 1, w, 2, y, 3, conv, ws)  # type: ignore[arg-type]
    run = libs.log("miopenConvolutionForwardImmediate")[0]
    assert (run["solution_id"], run["workSpaceSize"]) == ("22", "4096") and run["workSpace"] != "0"


def test_cap_forces_the_zero_workspace_fallback(libs: Libs) -> None:
    from miopen import algo, workspace

    libs.set_out("miopenConvolutionForwardGetSolutionCount/solutionCount", 2)
    libs.set_out("miopenConvolutionForwardGetSolution/solutionCount", 2)
    libs.set_out("miopenConvolutionForwardGetSolution/solutions[0].time", 1.0)
    libs.set_out("miopenConvolutionForwardGetSolution/solutions[0].workspace_size", 1 << 30)
    libs.set_out("miopenConvolutionForwardGetSolution/solutions[0].solution_id", 1)
    libs.set_out("miopenConvolutionForwardGetSolution/solutions[1].time", 5.0)
    libs.set_out("miopenConvolutionForwardGetSolution/solutions[1].workspace_size", 0)
    libs.set_out("miopenConvolutionForwardGetSolution/solutions[1].solution_id", 2)
    h, x, w, y, (conv, params) = _problem()
    plan = algo.ConvPlanner("immediate", workspace_limit_bytes=1 << 20).plan(
        h, "forward", x, w, y, conv, params, workspace=workspace.MIOpenWorkspace(0))  # type: ignore[arg-type]
    assert plan.solution_id == 2 and plan.workspace_bytes == 0
    assert plan.fallback is not None and "the cap of 1048576 bytes; fell back to a zero-workspace" in plan.fallback


def test_find_queries_workspace_before_find(libs: Libs) -> None:
    from miopen import algo, workspace

    libs.set_out("miopenConvolutionForwardGetWorkSpaceSize/workSpaceSize", 2048)
    libs.set_out("miopenFindConvolutionForwardAlgorithm/returnedAlgoCount", 1)
    libs.set_out("miopenFindConvolutionForwardAlgorithm/perfResults[0].memory", 1024)
    libs.set_out("miopenFindConvolutionForwardAlgorithm/perfResults[0].fwd_algo", 1)
    h, x, w, y, (conv, params) = _problem()
    ws = workspace.MIOpenWorkspace(0)
    plan = algo.ConvPlanner("find").plan(h, "forward", x, w, y, conv, params, ptrs=(1, 2, 3),
                                         workspace=ws)  # type: ignore[arg-type]
    calls = libs.calls()
    assert calls.index("miopenConvolutionForwardGetWorkSpaceSize") < calls.index("miopenFindConvolutionForwardAlgorithm")
    find = libs.log("miopenFindConvolutionForwardAlgorithm")[0]
    assert find["workSpaceSize"] == "2048" and find["workSpace"] == str(ws.ptr)
    assert (plan.algo, plan.workspace_bytes) == (1, 1024)


def test_find2_persists_and_drops_stale_solutions(libs: Libs, tmp_path: Path) -> None:
    from miopen import algo, workspace

    libs.set_out("miopenFindSolutions/numSolutions", 1)
    libs.set_out("miopenGetSolutionWorkspaceSize/workspaceSize", 0)
    h, x, w, y, (conv, params) = _problem()
    planner = algo.ConvPlanner("find2", cache=algo.AlgoCache(), cache_dir=tmp_path)
    plan = planner.plan(h, "forward", x, w, y, conv, params, workspace=workspace.MIOpenWorkspace(0))  # type: ignore[arg-type]
    assert plan.mode == "find2" and plan.solution is not None
    saved = list(tmp_path.rglob("*.bin"))
    assert len(saved) == 1 and saved[0].parent.parent.name == "3.5.2"
    assert "miopenSaveSolution" in libs.calls()
    fresh = algo.ConvPlanner("find2", cache=algo.AlgoCache(), cache_dir=tmp_path)
    loaded = fresh.plan(h, "forward", x, w, y, conv, params)  # type: ignore[arg-type]
    assert loaded.mode == "find2" and libs.calls().count("miopenFindSolutions") == 1  # loaded, not searched
    libs.set_status("miopenLoadSolution", 10, once=True)  # VersionMismatch: the blob is stale
    stale = algo.ConvPlanner("find2", cache=algo.AlgoCache(), cache_dir=tmp_path)
    stale.plan(h, "forward", x, w, y, conv, params)  # type: ignore[arg-type]
    assert libs.calls().count("miopenFindSolutions") == 2  # searched again after dropping it
    assert len(list(tmp_path.rglob("*.bin"))) == 1  # and saved anew


def test_out_of_memory_falls_back_end_to_end(libs: Libs) -> None:
    """A real HIP out-of-memory (stub libamdhip64 over capacity) ends in the zero-workspace GEMM solution."""
    import ctypes

    from miopen import algo, api, workspace

    libs.hip.stub_hip_set_capacity.argtypes = [ctypes.c_size_t]
    libs.hip.stub_hip_set_capacity(1 << 16)  # 64 KiB of device memory
    try:
        gemm = int(api.ConvAlgorithm.miopenConvolutionAlgoGEMM)
        libs.set_out("miopenConvolutionForwardGetSolutionCount/solutionCount", 2)
        libs.set_out("miopenConvolutionForwardGetSolution/solutionCount", 2)
        for k, (time, ws, sid, alg) in enumerate([(1.0, 1 << 20, 31, 5), (4.0, 0, 32, gemm)]):
            libs.set_out(f"miopenConvolutionForwardGetSolution/solutions[{k}].time", time)
            libs.set_out(f"miopenConvolutionForwardGetSolution/solutions[{k}].workspace_size", ws)
            libs.set_out(f"miopenConvolutionForwardGetSolution/solutions[{k}].solution_id", sid)
            libs.set_out(f"miopenConvolutionForwardGetSolution/solutions[{k}].algorithm", alg)
        h, x, w, y, (conv, params) = _problem()
        cache = algo.AlgoCache()
        planner = algo.ConvPlanner("immediate", cache=cache)
        ws_ = workspace.MIOpenWorkspace(0)
        plan = planner.plan(h, "forward", x, w, y, conv, params, workspace=ws_)  # type: ignore[arg-type]
        assert (plan.solution_id, plan.workspace_bytes) == (32, 0)
        assert plan.fallback is not None and "out of memory for 1048576 bytes" in plan.fallback and "(GEMM)" in plan.fallback
        assert libs.log("miopenConvolutionForwardCompileSolution")[0]["solution_id"] == "32"
        assert (cache.hits, cache.misses) == (0, 1)
        assert planner.plan(h, "forward", x, w, y, conv, params, workspace=ws_) is plan  # type: ignore[arg-type]
        assert (cache.hits, cache.misses) == (1, 1) and libs.calls().count("miopenConvolutionForwardGetSolution") == 1
        planner.run(plan, h, x, 1, w, 2, y, 3, conv, ws_)  # type: ignore[arg-type]
        run = libs.log("miopenConvolutionForwardImmediate")[0]
        assert (run["workSpace"], run["workSpaceSize"], run["solution_id"]) == ("0", "0", "32")
    finally:
        libs.hip.stub_hip_set_capacity(1 << 40)


def test_allocator_handed_to_miopen(libs: Libs) -> None:
    """hip.miopen_allocator_callbacks plugged into miopenSetAllocator: MIOpen's calls reach the allocator."""
    from miopen import api, hip

    class Recording:
        def __init__(self) -> None:
            self.calls: list[tuple[str, int]] = []

        def allocate(self, nbytes: int, stream: int | None) -> int:
            self.calls.append(("allocate", nbytes))
            return 0xA110C

        def free(self, ptr: int, stream: int | None) -> None:
            self.calls.append(("free", ptr))

    rec = Recording()
    handle = api.Handle.from_address(0x4242)
    api.set_allocator(handle, *hip.miopen_allocator_callbacks(rec), None)
    # the stub calls allocate(ctx, 64) then free(ctx, 0x3001) once, as MIOpen would
    assert rec.calls == [("allocate", 64), ("free", 0x3001)]
    assert libs.log("miopenSetAllocator")[0]["allocator.ret"] == str(0xA110C)
