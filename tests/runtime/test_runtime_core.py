"""Runtime core through the stub libraries: versions, handles, states, workspaces, descriptors, planner."""

from __future__ import annotations

import contextlib
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from miogen.spec.releases import Version

from ..conftest import Libs


@pytest.fixture(autouse=True)
def _fresh(libs: Libs) -> None:
    from miopen import algo, descriptors, handles, version

    version.reset_version_cache()
    version.set_version_policy("compatible")
    handles.handle_pool().close()
    descriptors.descriptor_cache().clear()
    algo.algo_cache().clear()
    libs.reset()  # what the clean-up above logged is not part of the test


def _set_version(libs: Libs, v: str) -> None:
    major, minor, patch = Version.parse(v)
    libs.set_out("miopenGetVersion/major", major)
    libs.set_out("miopenGetVersion/minor", minor)
    libs.set_out("miopenGetVersion/patch", patch)


@contextlib.contextmanager
def _reloaded(libs: Libs, version: str | None) -> Iterator[None]:
    """The stub unloaded, made to report `version` (None: its own release) and left for the test to load;
    afterwards it is loaded again reporting its own release."""
    import miopen

    miopen.unload_library()
    libs.reset()
    if version is not None:
        _set_version(libs, version)
    try:
        yield
    finally:
        miopen.unload_library()
        libs.reset()
        miopen.load_library(libs.miopen)


def _vt(v: str) -> Version:
    return Version.parse(v)


def _v(t: tuple[int, int, int]) -> str:
    return str(Version(*t))


# ------------------------------------------------------------------ versions: selecting the release


def _selection_cases() -> list[tuple[str, str, str, str | None]]:
    """(library version, policy, outcome ok/warn/error, release bound) derived from the committed releases."""
    from miopen._generated._support import RELEASES

    cases: list[tuple[str, str, str, str | None]] = []
    for r in RELEASES:
        t = _vt(r)
        cases += [(r, "compatible", "ok", r), (r, "strict", "ok", r)]
        if _v((t[0], t[1], t[2] + 1)) not in RELEASES:
            cases += [(_v((t[0], t[1], t[2] + 1)), "compatible", "warn", r), (_v((t[0], t[1], t[2] + 1)), "strict", "warn", r)]
    for older, newer in zip(RELEASES, RELEASES[1:]):
        between = (_vt(older)[0], _vt(older)[1] + 1, 0)
        if between < _vt(newer) and between[:2] != _vt(newer)[:2]:
            cases += [(_v(between), "compatible", "warn", older), (_v(between), "strict", "error", None),
                      (_v(between), "off", "ok", older)]
    newest, oldest = _vt(RELEASES[-1]), _vt(RELEASES[0])
    beyond = _v((newest[0] + 1, 0, 0))
    cases += [(beyond, "compatible", "warn", RELEASES[-1]), (beyond, "strict", "error", None),
              (beyond, "off", "ok", RELEASES[-1])]
    before = _v((oldest[0], oldest[1] - 1, 0)) if oldest[1] else _v((oldest[0] - 1, 99, 0))
    cases += [(before, "compatible", "error", None), (before, "strict", "error", None), (before, "off", "ok", RELEASES[0])]
    return cases


@pytest.mark.parametrize(("runtime", "policy", "outcome", "bound"), _selection_cases())
def test_release_selection_rules(runtime: str, policy: str, outcome: str, bound: str | None) -> None:
    from miopen._generated import _support as s

    if outcome == "error":
        with pytest.raises(s.MIOpenVersionError) as e:
            s.select_release(_vt(runtime), policy, "libX.so")
        msg = str(e.value)
        assert f"libX.so is MIOpen {runtime}" in msg and ", ".join(s.RELEASES) in msg
        return
    release, notes = s.select_release(_vt(runtime), policy, "libX.so")
    assert release == bound
    assert bool(notes) == (outcome == "warn")
    if outcome == "warn" and _vt(runtime)[:2] != _vt(release)[:2]:  # a release the bindings do not have
        assert "make upgrade HEADER=" in notes[0] and f"bound to the bindings of {release}" in notes[0]


def test_library_without_version_function_is_refused() -> None:
    from miopen._generated import _support as s

    with pytest.raises(s.MIOpenVersionError, match="has no miopenGetVersion") as e:
        s.select_release(None, "compatible", "libold.so")
    assert ", ".join(s.RELEASES) in str(e.value)
    assert s.select_release(None, "off")[0] == s.RELEASES[-1]


def test_loading_binds_the_reported_release(libs: Libs) -> None:
    """The stub reports a patch release beside its own: same bindings, a warning; the values reaching C are its."""
    import miopen
    from miopen import errors, version

    own = miopen.bound_release()
    t = _vt(own)
    with _reloaded(libs, _v((t[0], t[1], t[2] + 7))):
        with pytest.warns(errors.MIOpenVersionWarning, match="another patch release"):
            miopen.load_library(libs.miopen)
        assert miopen.bound_release() == own and miopen.MIOPEN_VERSION == own
        assert version.runtime_version() == (t[0], t[1], t[2] + 7)
        assert version.compiled_version() == t
        assert version.check_miopen_versions("strict") == (t[0], t[1], t[2] + 7)


def test_unparsable_version_binds_nothing(libs: Libs, monkeypatch: pytest.MonkeyPatch) -> None:
    import miopen
    from miopen import errors

    monkeypatch.setenv("MIOPEN_LIBRARY", libs.miopen._name)  # type: ignore[attr-defined]
    with _reloaded(libs, "0.0.0"):
        with pytest.raises(errors.MIOpenVersionError, match=r"unparsable version \(0\.0\.0") as e:
            miopen.load_library(libs.miopen)
        assert "libMIOpen_stub" in str(e.value)
        with pytest.raises(errors.MIOpenVersionError):
            miopen.create()  # still nothing bound: every path runs the check
    assert "miopenCreate" not in libs.calls()


def test_exports_that_contradict_the_version(libs: Libs) -> None:
    """A stub of one release reporting another: it exports another release's functions, or lacks its own."""
    import miopen
    from miopen import errors

    own = miopen.bound_release()
    newest, oldest = miopen.RELEASES[-1], miopen.RELEASES[0]
    # a release of the newest minor claims the oldest release (it exports far more); any other claims the
    # newest (it lacks much); another patch of its own minor is no contradiction (tests/runtime/test_releases.py)
    claimed, expected = ((oldest, "introduced after") if _vt(own)[:2] == _vt(newest)[:2]
                         else (newest, "it lacks"))
    with _reloaded(libs, claimed):
        with pytest.raises(errors.MIOpenVersionError, match=expected) as e:
            miopen.load_library(libs.miopen)
        assert f"reports MIOpen {claimed}" in str(e.value) and "Nothing was bound" in str(e.value)


def test_create_runs_the_version_check(libs: Libs, monkeypatch: pytest.MonkeyPatch) -> None:
    import miopen
    from miopen import errors

    monkeypatch.setenv("MIOPEN_LIBRARY", libs.miopen._name)  # type: ignore[attr-defined]
    oldest = _vt(miopen.RELEASES[0])
    with _reloaded(libs, _v((oldest[0] - 1, 0, 0))):
        with pytest.raises(errors.MIOpenVersionError, match="older than every supported release"):
            miopen.create()
        assert miopen.DataType.miopenFloat.name == "miopenFloat"  # a name needs no release (the newest's serves)
        with pytest.raises(errors.MIOpenVersionError):
            miopen.create_tensor_descriptor()  # a call does
    assert "miopenCreate" not in libs.calls()


def test_two_libraries_are_not_mixed(libs: Libs, tmp_path: pytest.TempPathFactory) -> None:
    import ctypes
    import shutil

    import miopen
    from miopen import errors

    copy = shutil.copy(libs.miopen._name, str(tmp_path / "libMIOpen_copy.so"))  # type: ignore[attr-defined]
    other = ctypes.CDLL(copy)
    with pytest.raises(errors.MIOpenVersionError, match="another MIOpen library is loaded .*unload_library"):
        miopen.load_library(other)
    assert miopen.load_library(libs.miopen) is libs.miopen  # the same one again is fine
    with _reloaded(libs, None):
        miopen.load_library(other)  # after unload_library(): rebinds
        assert miopen.bound_release() in miopen.RELEASES


def test_skip_switch_is_parsed_strictly(libs: Libs, monkeypatch: pytest.MonkeyPatch) -> None:
    import miopen
    from miopen import version

    oldest = _vt(miopen.RELEASES[0])
    with _reloaded(libs, _v((oldest[0] - 1, 0, 0))):
        monkeypatch.setenv(version.SKIP_ENV, "maybe")
        with pytest.raises(ValueError, match="MIOPEN_SKIP_VERSION_CHECK='maybe': expected 1/true/yes or 0/false/no"):
            miopen.load_library(libs.miopen)
        monkeypatch.setenv(version.SKIP_ENV, "YES")
        miopen.load_library(libs.miopen)  # refusals off: binds the oldest release
        assert miopen.bound_release() == miopen.RELEASES[0]


def test_version_check_is_cached_and_validated(libs: Libs) -> None:
    from miopen import version

    version.reset_version_cache()
    version.check_miopen_versions()
    version.check_miopen_versions()
    with pytest.raises(ValueError, match="policy must be"):
        version.check_miopen_versions("lenient")  # type: ignore[arg-type]


def test_first_handle_runs_the_check_lazily(libs: Libs, monkeypatch: pytest.MonkeyPatch) -> None:
    import miopen
    from miopen import errors, handles, version

    monkeypatch.setenv("MIOPEN_LIBRARY", libs.miopen._name)  # type: ignore[attr-defined]
    oldest = _vt(miopen.RELEASES[0])
    with _reloaded(libs, _v((oldest[0] - 1, 0, 0))):
        with pytest.raises(errors.MIOpenVersionError):
            handles.inline_miopen_handle()
        assert "miopenCreate" not in libs.calls()
        version.set_version_policy("off")
        try:
            handles.inline_miopen_handle()
        finally:
            version.set_version_policy("compatible")
        assert "miopenCreate" in libs.calls()


def test_has_feature(libs: Libs) -> None:
    import miopen
    from miopen import version

    bound = set(miopen.raw.PROTOTYPES)
    for name, (symbols, minimum) in version.FEATURES.items():
        expected = all(s in bound for s in symbols) and version.compiled_version() >= minimum
        assert version.has_feature(name) == expected, name
    with pytest.raises(ValueError, match="unknown feature 'warp_drive'"):
        version.has_feature("warp_drive")


def test_hip_only_since_follows_the_loaded_release(monkeypatch: pytest.MonkeyPatch) -> None:
    """No library needed: a function HIP-only from a release on (dropout, 3.3.0) counts as HIP-only for that
    release and later ones, never before (2.17.0's OpenCL dropout computes) nor for a library without a version;
    the 3.x beta ops always."""
    from miopen import _hiponly

    for version, want in (((2, 17, 0), False), ((3, 2, 0), False), ((3, 3, 0), True), ((3, 5, 2), True), (None, False)):
        monkeypatch.setattr(_hiponly._s, "runtime_version", lambda v=version: v)
        assert _hiponly._hip_only("miopenDropoutForward") is want, version
        assert _hiponly._hip_only("miopenLayerNormForward") is True
        assert _hiponly._hip_only("miopenActivationForward") is False


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
    import miopen
    from miopen import algo, version, workspace

    if not version.has_feature("find2"):  # releases before Find 2.0: a clear refusal, before any call
        h, x, w, y, (conv, params) = _problem()
        with pytest.raises(miopen.MissingSymbolError, match=r"ConvPlanner\('find2'\) needs the 'find2' feature"):
            algo.ConvPlanner("find2").plan(h, "forward", x, w, y, conv, params)  # type: ignore[arg-type]
        return
    libs.set_out("miopenFindSolutions/numSolutions", 1)
    libs.set_out("miopenGetSolutionWorkspaceSize/workspaceSize", 0)
    h, x, w, y, (conv, params) = _problem()
    planner = algo.ConvPlanner("find2", cache=algo.AlgoCache(), cache_dir=tmp_path)
    plan = planner.plan(h, "forward", x, w, y, conv, params, workspace=workspace.MIOpenWorkspace(0))  # type: ignore[arg-type]
    assert plan.mode == "find2" and plan.solution is not None
    # running it: each tensor argument points at a descriptor variable holding x, w or y (typed records)
    planner.run(plan, h, x, 0xA000, w, 0xB000, y, 0xC000, conv, None)  # type: ignore[arg-type]
    ran = libs.log("miopenRunSolution")[0]
    ids = miopen.TensorArgumentId
    assert ran["nInputs"] == "3" and ran["tensors"] == "[" + ",".join(
        f"({int(i)};{d.address};{p})" for i, d, p in [(ids.miopenTensorConvolutionX, x, 0xA000),  # type: ignore[attr-defined]
                                                      (ids.miopenTensorConvolutionW, w, 0xB000),  # type: ignore[attr-defined]
                                                      (ids.miopenTensorConvolutionY, y, 0xC000)]) + "]"  # type: ignore[attr-defined]
    saved = list(tmp_path.rglob("*.bin"))
    assert len(saved) == 1 and saved[0].parent.parent.name == miopen.MIOPEN_VERSION
    assert "miopenSaveSolution" in libs.calls()
    fresh = algo.ConvPlanner("find2", cache=algo.AlgoCache(), cache_dir=tmp_path)
    loaded = fresh.plan(h, "forward", x, w, y, conv, params)  # type: ignore[arg-type]
    assert loaded.mode == "find2" and libs.calls().count("miopenFindSolutions") == 1  # loaded, not searched
    libs.set_status("miopenLoadSolution", 10, once=True)  # VersionMismatch: the blob is stale
    stale = algo.ConvPlanner("find2", cache=algo.AlgoCache(), cache_dir=tmp_path)
    stale.plan(h, "forward", x, w, y, conv, params)  # type: ignore[arg-type]
    assert libs.calls().count("miopenFindSolutions") == 2  # searched again after dropping it
    assert len(list(tmp_path.rglob("*.bin"))) == 1  # and saved anew


def test_auto_mode_is_find2_where_the_release_has_it_else_legacy_find(libs: Libs) -> None:
    """ConvPlanner("auto") runs Find 2.0 on a release with it and the legacy Find on an older one: the calls made,
    the plan's mode and the cache key's mode say which (a plan made one way is not reused by the other)."""
    from miopen import algo, version

    libs.set_out("miopenFindSolutions/numSolutions", 1)
    libs.set_out("miopenGetSolutionWorkspaceSize/workspaceSize", 0)
    libs.set_out("miopenConvolutionForwardGetWorkSpaceSize/workSpaceSize", 0)
    libs.set_out("miopenFindConvolutionForwardAlgorithm/returnedAlgoCount", 1)
    libs.set_out("miopenFindConvolutionForwardAlgorithm/perfResults[0].fwd_algo", 1)
    h, x, w, y, (conv, params) = _problem()
    planner = algo.ConvPlanner("auto", cache=algo.AlgoCache())
    want = "find2" if version.has_feature("find2") else "find"
    assert planner.search == want and planner.mode == "auto"
    plan = planner.plan(h, "forward", x, w, y, conv, params, ptrs=(1, 2, 3))  # type: ignore[arg-type]
    calls = libs.calls()
    assert plan.mode == want and plan.key.mode == want
    assert ("miopenFindSolutions" in calls) == (want == "find2")
    assert ("miopenFindConvolutionForwardAlgorithm" in calls) == (want == "find")
    with pytest.raises(ValueError, match="ConvPlanner: mode must be 'immediate', 'find', 'find2' or 'auto'"):
        algo.ConvPlanner("fastest")  # type: ignore[arg-type]


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
