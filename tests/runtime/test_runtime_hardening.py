"""Runtime hardening: strict environment switches, a Find 2.0 cache that never fails a plan,
validated workspace sizes, and fresh pools, locks and caches in a forked child."""

from __future__ import annotations

import os
import sys
import threading
import time
import warnings
from pathlib import Path

import pytest

from ..conftest import Libs
from .test_runtime_core import _problem

# ------------------------------------------------------------------ environment switches


@pytest.mark.parametrize(("value", "expected"), [
    ("1", True), ("true", True), ("TRUE", True), ("Yes", True), ("0", False), ("false", False), ("No", False),
    ("", None), (None, None),
])
def test_env_flag_accepts_the_six_words(value: str | None, expected: bool | None) -> None:
    from miopen.envflags import env_flag

    env = {} if value is None else {"X_FLAG": value}
    for default in (False, True):
        assert env_flag("X_FLAG", default, env) is (default if expected is None else expected)


@pytest.mark.parametrize("value", ["2", "on", "off", "ture", " 1", "1 ", "y", "enable", "x" * 1000])
def test_env_flag_refuses_anything_else_naming_it(value: str) -> None:
    from miopen.envflags import EnvFlagError, env_flag

    with pytest.raises(EnvFlagError, match=r"^\$X_FLAG=") as e:
        env_flag("X_FLAG", False, {"X_FLAG": value})
    assert isinstance(e.value, ValueError) and len(str(e.value)) < 200


# ------------------------------------------------------------------ the Find 2.0 cache


@pytest.fixture()
def fresh(libs: Libs) -> Libs:
    from miopen import algo, descriptors, handles, version

    version.reset_version_cache()
    handles.handle_pool().close()
    descriptors.descriptor_cache().clear()
    algo.algo_cache().clear()
    libs.reset()
    libs.set_out("miopenFindSolutions/numSolutions", 1)
    libs.set_out("miopenGetSolutionWorkspaceSize/workspaceSize", 0)
    return libs


def _plan(cache_dir: object, cache: object = None) -> object:
    """A Find 2.0 plan through the planner's disk cache (the stub's release must have Find 2.0)."""
    import miopen
    from miopen import algo, workspace

    if not miopen.has_feature("find2"):
        pytest.skip(f"the stub's release {miopen.MIOPEN_VERSION} has no Find 2.0, whose solutions this cache keeps")

    h, x, w, y, (conv, params) = _problem()
    planner = algo.ConvPlanner("find2", cache=cache if cache is not None else algo.AlgoCache(), cache_dir=cache_dir)  # type: ignore[arg-type]
    return planner.plan(h, "forward", x, w, y, conv, params, workspace=workspace.MIOpenWorkspace(0))  # type: ignore[arg-type]


def test_unwritable_cache_dir_warns_once_and_plans_go_on(fresh: Libs, tmp_path: Path) -> None:
    from miopen import algo

    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache directory should be")
    cache = algo.AlgoCache()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = _plan(blocker, cache)
        cache.clear()
        second = _plan(blocker, cache)
    assert first.mode == "find2" and second.mode == "find2"  # type: ignore[attr-defined]
    ours = [w for w in caught if issubclass(w.category, algo.AlgoCacheWarning)]
    assert len(ours) == 1 and "not using it for the rest of this process" in str(ours[0].message)
    assert cache.disabled(blocker) and blocker.read_text().startswith("a file")


@pytest.mark.parametrize("damage", ["garbage", "huge", "wrong key", "directory"])
def test_damaged_cache_files_are_dropped_not_fatal(fresh: Libs, tmp_path: Path, damage: str) -> None:
    from miopen import algo

    _plan(tmp_path)  # writes one solution
    (blob,) = tmp_path.rglob("*.bin")
    searches = fresh.calls().count("miopenFindSolutions")
    if damage == "garbage":
        blob.write_bytes(b"\0garbage")
        fresh.set_status("miopenLoadSolution", 3, once=True)  # MIOpen refuses it (BadParm)
    elif damage == "huge":
        with blob.open("r+b") as fh:
            fh.truncate(algo.MAX_BLOB_BYTES + 1)  # sparse: no real disk use
    elif damage == "wrong key":
        blob.with_suffix(".key").write_text("ConvKey(something else)\n")
    else:
        blob.unlink()
        blob.mkdir()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plan = _plan(tmp_path)
    assert plan.mode == "find2"  # type: ignore[attr-defined]
    assert fresh.calls().count("miopenFindSolutions") == searches + 1  # searched again
    if damage != "directory":
        assert len([w for w in caught if issubclass(w.category, algo.AlgoCacheWarning)]) == 1
        assert blob.is_file() and blob.stat().st_size < 1024  # replaced by the fresh solution


def test_hostile_arch_string_stays_inside_the_cache_dir(fresh: Libs, tmp_path: Path) -> None:
    from miopen import algo

    key = algo.ConvKey("forward", 1, ((1,), (1,)), ((1,), (1,)), ((1,), (1,)), algo.ConvParams((0,), (1,), (1,)),
                       False, 0, "../../../etc", "../3.5.2")
    d = algo.AlgoCache._dir(tmp_path, key)
    assert d.resolve().is_relative_to(tmp_path.resolve()) and ".." not in d.relative_to(tmp_path).parts


# ------------------------------------------------------------------ workspace sizes


@pytest.mark.parametrize("bad", [-1, 1 << 63, True, 1.5, "16", None])
def test_workspace_sizes_are_validated(libs: Libs, bad: object) -> None:
    from miopen import algo, workspace

    ws = workspace.MIOpenWorkspace(0)
    with pytest.raises(ValueError, match="nbytes must be an int in"):
        ws.get(bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="nbytes must be an int in"):
        workspace.PersistentBuffer(bad, 0, "test")  # type: ignore[arg-type]
    if bad is not None:
        with pytest.raises(ValueError, match="max_bytes must be None or an int"):
            workspace.MIOpenWorkspace(0, max_bytes=bad)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="nbytes must be None or an int"):
            workspace.set_workspace_limit(bad)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="workspace_limit_bytes must be None or an int"):
            algo.ConvPlanner(workspace_limit_bytes=bad)  # type: ignore[arg-type]
    assert workspace.workspace_limit() is None
    with pytest.raises(TypeError, match="cache_dir must be a path"):
        algo.ConvPlanner(cache_dir=42)  # type: ignore[arg-type]


# ------------------------------------------------------------------ fork


def _wait(pid: int, timeout: float = 30.0) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.02)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    pytest.fail("the forked child hung (a lock held at fork time?)")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_forked_child_gets_fresh_pools_locks_and_caches(fresh: Libs) -> None:
    """Another thread holds every pool/cache lock while the process forks; the child must neither
    deadlock nor reuse the parent's handles, states, scratch or cached plans."""
    from miopen import algo, descriptors, handles, hip, state, workspace

    parent_handle = handles.inline_miopen_handle()
    parent_state_handle = None
    with state.with_miopen_state(0) as st:
        parent_state_handle = st.handle.address
        st.workspace.get(256)
    parent_scratch = workspace.scratch(0)
    parent_scratch.get(128)
    descriptors.tensor_descriptor("float32", [2, 3])
    _plan(None, algo.algo_cache())
    assert len(algo.algo_cache()) == 1

    synced = state.miopen_states().synced(0, 0)
    locks = [handles.handle_pool()._lock, state.miopen_states()._lock, synced.lock, parent_scratch._lock,
             descriptors.descriptor_cache()._lock, algo.algo_cache()._lock]
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        for lock in locks:
            lock.acquire()
        held.set()
        release.wait()
        for lock in reversed(locks):
            lock.release()

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report through the exit code, never return into pytest
        code = 1
        try:
            os.close(read)
            problems = []
            if len(algo.algo_cache()) or len(descriptors.descriptor_cache()):
                problems.append("caches not empty")
            if not parent_handle.closed:
                problems.append("the parent's pooled handle is still usable")
            try:  # the parent had loaded HIP: the first call says so instead of hanging in the real runtime
                handles.inline_miopen_handle()
                problems.append("no HipForkError")
            except hip.HipForkError as exc:
                if "forked" not in str(exc) or "spawn" not in str(exc):
                    problems.append(f"unclear: {exc}")
            hip.set_hip_library(fresh.hip)  # the stub survives fork: named again, it is used
            h = handles.inline_miopen_handle()
            if h is parent_handle:
                problems.append("pooled handle reused")
            with state.with_miopen_state(0) as st2:
                if st2.handle.closed:
                    problems.append("state handle closed")
            if workspace.scratch(0) is parent_scratch or parent_scratch.ptr is not None:
                problems.append("scratch reused")
            parent_scratch.get(64)  # its lock was held by the holder thread: must not block
            descriptors.tensor_descriptor("float32", [2, 3])
            _plan(None, algo.algo_cache())
            os.write(write, ("|".join(problems) or "ok").encode())
            code = 0
        except BaseException as exc:  # noqa: BLE001 - report anything
            os.write(write, f"{type(exc).__name__}: {exc}".encode())
        finally:
            os._exit(code)
    os.close(write)
    try:
        status = _wait(pid)
        report = os.read(read, 4096).decode()
    finally:
        os.close(read)
        release.set()
        holder.join()
    assert status == 0 and report == "ok", report
    # the parent is untouched
    assert not parent_handle.closed and handles.inline_miopen_handle() is parent_handle
    with state.with_miopen_state(0) as st:
        assert st.handle.address == parent_state_handle
    assert parent_scratch.ptr is not None and len(algo.algo_cache()) == 1
    sys.stdout.flush()


def test_tensor_addresses_must_fit_64_bits(libs: Libs) -> None:
    """ctypes passes an int of 2**64 or more as a NULL void* without a word: refused before."""
    import ctypes

    from miopen.tensor import Tensor

    probe = ctypes.pythonapi.PyLong_FromVoidPtr
    probe.restype, probe.argtypes = ctypes.py_object, [ctypes.c_void_p]
    assert probe(1 << 64) == 0  # the silent truncation this guards against
    with pytest.raises(ValueError, match="does not fit a 64-bit address"):
        Tensor.make(1 << 64, [1], "float32")
    assert Tensor.make((1 << 64) - 1, [1], "float32").ptr == (1 << 64) - 1
