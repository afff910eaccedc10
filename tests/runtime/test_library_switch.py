"""Library switches: after `unload_library()` + `load_library(other)` nothing made under the first library reaches
the second (typed calls refuse it like a closed object; the runtime's pools and caches drop it; nothing is
destroyed). An explicitly named library ($MIOPEN_LIBRARY, $MIOGEN_HIP_LIBRARY) that does not load is an error
naming the variable, the path and why, never a fall-through to another candidate."""

from __future__ import annotations

import ctypes
import gc
import inspect
import re
import shutil
import struct
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ..conftest import Libs, _configure_stub

NOTE = "(made under a library that has since been unloaded)"


@pytest.fixture()
def second(libs: Libs, tmp_path: Path) -> Iterator[Callable[[], ctypes.CDLL]]:
    """Switches from the session's stub to a copy of it at another path (another library of the same release,
    so the same handle classes: only the library generation tells their objects apart)."""
    import miopen

    copy = ctypes.CDLL(shutil.copy(libs.miopen._name, tmp_path / "libMIOpen_second.so"))  # type: ignore[attr-defined]
    _configure_stub(copy)

    def switch() -> ctypes.CDLL:
        miopen.unload_library()
        miopen.load_library(copy)
        copy.miogen_stub_reset()
        return copy

    try:
        yield switch
    finally:
        miopen.unload_library()
        libs.reset()
        miopen.load_library(libs.miopen)


def _calls(lib: ctypes.CDLL) -> list[str]:
    return [line.split("\t")[0] for line in (lib.miogen_stub_log() or b"").decode().splitlines()]


def _objects() -> list[Any]:
    """One object of every handle class the bound release can make: every create function without parameters,
    then those made from others (a fusion plan and an operator it owns, a Find 2.0 problem, a loaded solution)."""
    import miopen
    from miopen._generated._support import HandleBase

    made: dict[type, Any] = {}
    for name in miopen.api.__all__:
        fn = getattr(miopen, name)
        if inspect.isfunction(fn) and name.startswith("create") and not inspect.signature(fn).parameters:
            obj = fn()
            assert isinstance(obj, HandleBase)
            made[type(obj)] = obj
    tensor = made[miopen.TensorDescriptor]
    miopen.set_4d_tensor_descriptor(tensor, miopen.DataType.miopenFloat, 1, 4, 8, 8)
    plan = miopen.create_fusion_plan(miopen.FusionDirection.miopenVerticalFusion, tensor)
    made[type(plan)] = plan
    op = miopen.create_op_activation_forward(plan, miopen.ActivationMode.miopenActivationRELU)
    made[type(op)] = op  # owned by the plan: freed with it
    if hasattr(miopen, "create_conv_problem"):
        problem = miopen.create_conv_problem(made[miopen.ConvolutionDescriptor],
                                             miopen.ProblemDirection.miopenProblemDirectionForward)
        made[type(problem)] = problem
    if hasattr(miopen, "load_solution"):
        solution = miopen.load_solution(b"blob")
        made[type(solution)] = solution
    return list(made.values())


def _refusal(obj: Any) -> BaseException:
    """What a typed call taking `obj` as its first argument raises (any other argument None: the first is
    checked first); for a class no function takes first, what the wrappers' handle conversion raises."""
    import miopen
    from miopen._generated import _support

    cls = type(obj).__name__
    for name in sorted(miopen.api.__all__):
        fn = getattr(miopen, name)
        if not inspect.isfunction(fn) or name.startswith("destroy"):
            continue
        params = list(inspect.signature(fn).parameters.values())
        if params and params[0].annotation in (cls, f"{cls} | None"):
            with pytest.raises(Exception) as e:
                fn(obj, *[None] * (len(params) - 1))
            return e.value
    with pytest.raises(Exception) as e:
        _support.handle_arg(obj, type(obj), "arg", "fn", False)
    return e.value


def test_every_kind_of_object_is_refused_like_a_closed_one(libs: Libs, second: Callable[[], ctypes.CDLL]) -> None:
    import miopen

    old = _objects()
    assert {type(o).__name__ for o in old} >= {"Handle", "TensorDescriptor", "ConvolutionDescriptor",
                                              "FusionPlanDescriptor", "FusionOpDescriptor"}
    libs.reset()
    lib2 = second()
    for obj in old:
        assert obj.closed, obj
        closed = type(obj).from_address(0x1000)  # a closed object of this library, for comparison
        closed.close()
        refused, expected = _refusal(obj), _refusal(closed)
        assert type(refused) is type(expected) is ValueError, (obj, refused)
        assert str(refused) == f"{expected} {NOTE}", obj
        with pytest.raises(ValueError, match=re.escape(f"is closed {NOTE}")):
            obj.address  # noqa: B018
        obj.close()  # idempotent: nothing to destroy
    # destroy functions refuse them too, and nothing is destroyed, in either library, by any path
    with pytest.raises(ValueError, match=re.escape(f"is a closed TensorDescriptor {NOTE}")):
        miopen.destroy_tensor_descriptor(next(o for o in old if type(o) is miopen.TensorDescriptor))
    del old, obj, closed
    gc.collect()
    assert _calls(lib2) == [] and libs.calls() == []


def test_objects_made_after_the_switch_work(libs: Libs, second: Callable[[], ctypes.CDLL]) -> None:
    import miopen

    before = miopen.create_tensor_descriptor()
    lib2 = second()
    after = miopen.create_tensor_descriptor()
    miopen.set_4d_tensor_descriptor(after, miopen.DataType.miopenFloat, 1, 2, 3, 4)
    after.close()
    assert _calls(lib2) == ["miopenCreateTensorDescriptor", "miopenSet4dTensorDescriptor",
                            "miopenDestroyTensorDescriptor"]
    assert before.closed and "miopenDestroyTensorDescriptor" not in libs.calls()


def test_the_runtime_drops_what_it_kept(libs: Libs, second: Callable[[], ctypes.CDLL]) -> None:
    """The handle pool, the states, every descriptor cache and every planner cache forget the first library's
    objects; what they hand out next is made by the second library."""
    import miopen
    from miopen import algo, descriptors, handles, state, workspace

    pooled = handles.inline_miopen_handle(stream=0x100)
    with state.with_miopen_state(0) as st:
        state_handle = st.handle
    tensor = descriptors.tensor_descriptor("float32", [1, 4, 8, 8])
    w = descriptors.tensor_descriptor("float32", [8, 4, 3, 3])
    y = descriptors.tensor_descriptor("float32", [1, 8, 8, 8])
    conv = descriptors.convolution_descriptor([1, 1], [1, 1], [1, 1])
    act = descriptors.cached_activation_descriptor(miopen.ActivationMode.miopenActivationRELU, 0.0, 0.0, 0.0)
    own = descriptors.DescriptorCache()
    own_desc = own.get("float32", [2, 2])
    libs.set_out("miopenConvolutionForwardGetSolutionCount/solutionCount", 1)
    libs.set_out("miopenConvolutionForwardGetSolution/solutionCount", 1)
    libs.set_out("miopenConvolutionForwardGetSolution/solutions[0].solution_id", 11)
    planners = [algo.ConvPlanner("immediate"), algo.ConvPlanner("immediate", cache=algo.AlgoCache())]
    planners[0].cache.clear()  # the process's shared cache: an earlier test on this worker may have planned in it
    for planner in planners:
        planner.plan(pooled, "forward", tensor, w, y, conv, algo.ConvParams((1, 1), (1, 1), (1, 1)),
                     workspace=workspace.MIOpenWorkspace(0))
        assert len(planner.cache) == 1
    kept = [pooled, state_handle, tensor, w, y, conv, act, own_desc]

    lib2 = second()
    assert all(o.closed for o in kept)
    assert all(len(p.cache) == 0 for p in planners) and len(own) == 0
    assert handles.handle_pool().size == 0
    pooled2 = handles.inline_miopen_handle(stream=0x100)
    assert pooled2 is not pooled and not pooled2.closed and handles.handle_pool().size == 1
    with state.with_miopen_state(0) as st2:
        assert st2.handle is not state_handle and not st2.handle.closed
    assert descriptors.tensor_descriptor("float32", [1, 4, 8, 8]) is not tensor
    assert descriptors.convolution_descriptor([1, 1], [1, 1], [1, 1]) is not conv
    assert descriptors.cached_activation_descriptor(miopen.ActivationMode.miopenActivationRELU, 0.0, 0.0, 0.0) \
        is not act
    assert own.get("float32", [2, 2]) is not own_desc
    calls = _calls(lib2)
    assert {"miopenCreate", "miopenSetStream", "miopenCreateWithStream", "miopenCreateTensorDescriptor",
            "miopenCreateConvolutionDescriptor", "miopenCreateActivationDescriptor"} <= set(calls)
    assert not any(c.startswith("miopenDestroy") for c in calls + libs.calls())


# ------------------------------------------------------------------ an explicitly named library that does not load


def _host_machine() -> int:
    with open(sys.executable, "rb") as f:
        head = f.read(20)
    return int(struct.unpack("<H" if head[5] == 1 else ">H", head[18:20])[0])


def _elf(bits: int, machine: int, e_type: int = 3) -> bytes:
    """A minimal little-endian ELF header (64 bytes) of `bits`, `machine` and `e_type`."""
    ident = b"\x7fELF" + bytes([1 if bits == 32 else 2, 1, 1, 0]) + bytes(8)
    return ident + struct.pack("<HHI", e_type, machine, 1) + bytes(64 - 24)


def _bad_libraries(root: Path) -> list[tuple[str, Path, str]]:
    """(case, path, the reason our message gives) for every kind of file that does not load."""
    foreign64 = 62 if _host_machine() != 62 else 183
    foreign32 = 3 if _host_machine() != 3 else 40
    names = {62: "x86-64", 183: "AArch64", 3: r"x86 \(i386\)", 40: "ARM"}
    (root / "text.so").write_text("INPUT(libMIOpen.so.1)\n")
    (root / "arch64.so").write_bytes(_elf(64, foreign64))
    (root / "arch32.so").write_bytes(_elf(32, foreign32))
    (root / "object.o").write_bytes(_elf(64 if sys.maxsize > 2**32 else 32, _host_machine(), e_type=1))
    (root / "truncated.so").write_bytes(b"\x7fELF\x02")
    (root / "adir").mkdir()
    return [
        ("missing", root / "missing" / "libMIOpen.so.1", "no such file"),
        ("text", root / "text.so", r"not a shared library \(not an ELF file\)"),
        ("truncated", root / "truncated.so", r"not a shared library \(a truncated ELF header\)"),
        ("64-bit other arch", root / "arch64.so",
         rf"built for another architecture: {names[foreign64]} \(64-bit, little-endian\), but this Python runs on "
         rf"[^;]+-endian\)"),
        ("32-bit other arch", root / "arch32.so",
         rf"built for another architecture: {names[foreign32]} \(32-bit, little-endian\), but this Python runs on "
         rf"[^;]+-endian\)"),
        ("object file", root / "object.o", r"not a shared library \(an ELF relocatable object \(\.o\)\)"),
        ("directory", root / "adir", "a directory, not a shared library"),
    ]


def test_a_bad_miopen_library_variable_is_an_error_never_a_fall_through(
        libs: Libs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import miopen
    from miopen._generated import _state, _support

    rocm = tmp_path / "rocm"
    (rocm / "lib").mkdir(parents=True)
    (rocm / "lib" / "libMIOpen.so.1").symlink_to(libs.miopen._name)  # type: ignore[attr-defined]
    monkeypatch.setenv("ROCM_PATH", str(rocm))  # a loadable library the search would find
    miopen.unload_library()
    try:
        for case, path, why in _bad_libraries(tmp_path):
            monkeypatch.setenv("MIOPEN_LIBRARY", str(path))
            with pytest.raises(miopen.LibraryNotFoundError) as e:
                miopen.load_library()
            assert re.fullmatch(rf"\$MIOPEN_LIBRARY is set to '{re.escape(str(path))}', which cannot be loaded: "
                                rf"{why}; fix it, or unset \$MIOPEN_LIBRARY to search .*", str(e.value)), (case, e.value)
            assert _state.lib is None, case
            with pytest.raises(miopen.LibraryNotFoundError, match=rf"cannot load MIOpen from {re.escape(str(path))}: "
                                                                 rf"{why}"):
                miopen.load_library(path)  # passed explicitly: the same reasons
        monkeypatch.delenv("MIOPEN_LIBRARY")
        miopen.load_library()  # unset: the search finds the install root's library
        assert _support.library_path() == str(rocm / "lib" / "libMIOpen.so.1")
    finally:
        miopen.unload_library()
        miopen.load_library(libs.miopen)


def test_a_bad_hip_library_variable_is_an_error_never_a_fall_through(
        libs: Libs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from miopen import hip

    rocm = tmp_path / "rocm"
    (rocm / "lib").mkdir(parents=True)
    (rocm / "lib" / "libamdhip64.so").symlink_to(libs.hip._name)  # type: ignore[attr-defined]
    monkeypatch.setenv("ROCM_PATH", str(rocm))
    hip.set_hip_library(None)
    try:
        for case, path, why in _bad_libraries(tmp_path):
            monkeypatch.setenv(hip.LIBRARY_ENV, str(path))
            with pytest.raises(hip.HipLibraryNotFoundError) as e:
                hip.load_hip()
            msg = str(e.value)
            if case == "directory":  # a directory is searched for the library names, each missing there
                assert msg.startswith(f"$MIOGEN_HIP_LIBRARY is set to '{path}', a directory holding no loadable "
                                      f"HIP runtime: {path}/libamdhip64.so ($MIOGEN_HIP_LIBRARY): no such file"), msg
            else:
                assert re.fullmatch(rf"\$MIOGEN_HIP_LIBRARY is set to '{re.escape(str(path))}', which cannot be "
                                    rf"loaded: {re.escape(str(path))} \(\$MIOGEN_HIP_LIBRARY\): {why}; fix it, or "
                                    rf"unset \$MIOGEN_HIP_LIBRARY to search .*", msg), (case, msg)
            assert hip.loaded_hip_library() is None, case
        monkeypatch.delenv(hip.LIBRARY_ENV)
        hip.load_hip()
        assert hip.hip_library_path() == str(rocm / "lib" / "libamdhip64.so")
    finally:
        hip.set_hip_library(libs.hip)
