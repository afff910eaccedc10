"""miopen.hip through a stub libamdhip64 (tests/fixtures/stub_hip.c), plus checks against the real
Debian HIP 5.2.3 header and library where they are installed (CI installs them)."""

from __future__ import annotations

import ctypes
import gc
import importlib
import json
import logging
import os
import pickle
import shutil
import subprocess
import sys
import textwrap
import threading
import types
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from miopen import hip

REPO = Path(__file__).resolve().parents[2]
STUB_SOURCE = REPO / "tests" / "fixtures" / "stub_hip.c"
REAL_HIP = Path("/usr/lib/x86_64-linux-gnu/libamdhip64.so.5")
REAL_HEADER = Path("/usr/include/hip/hip_runtime_api.h")


def _require_real(path: Path) -> None:
    """Skip only when `path` is missing and CI did not ask for the real HIP (MIOGEN_REQUIRE_REAL_HIP)."""
    if not path.exists():
        if os.environ.get("MIOGEN_REQUIRE_REAL_HIP"):
            pytest.fail(f"MIOGEN_REQUIRE_REAL_HIP is set but {path} does not exist (install libamdhip64-dev)")
        pytest.skip(f"{path} is not installed (Debian's libamdhip64-dev)")


# ---------------------------------------------------------------------------- the stub


class Stub:
    """A loaded stub libamdhip64 and its control functions."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lib = ctypes.CDLL(str(path))
        lib = self.lib
        lib.stub_hip_fail_next.argtypes = [ctypes.c_char_p, ctypes.c_int]
        lib.stub_hip_fail_next.restype = ctypes.c_int
        lib.stub_hip_calls.argtypes = [ctypes.c_char_p]
        lib.stub_hip_calls.restype = ctypes.c_long
        lib.stub_hip_live_allocations.restype = ctypes.c_long
        lib.stub_hip_live_bytes.restype = ctypes.c_size_t
        lib.stub_hip_set_capacity.argtypes = [ctypes.c_size_t]
        lib.stub_hip_set_device_count.argtypes = [ctypes.c_int]
        lib.stub_hip_set_arch.argtypes = [ctypes.c_int, ctypes.c_char_p]
        lib.stub_hip_set_elapsed_ms.argtypes = [ctypes.c_float]
        lib.stub_hip_last_stream.restype = ctypes.c_void_p
        lib.stub_hip_stream_flags.argtypes = [ctypes.c_void_p]
        lib.stub_hip_stream_flags.restype = ctypes.c_uint
        lib.stub_hip_event_flags.argtypes = [ctypes.c_void_p]
        lib.stub_hip_event_flags.restype = ctypes.c_uint

    def reset(self) -> None:
        self.lib.stub_hip_reset()

    def calls(self, fn: str | None = None) -> int:
        n: int = self.lib.stub_hip_calls(fn.encode() if fn else None)
        assert n >= 0, f"the stub does not know {fn}"
        return n

    def fail_next(self, fn: str, code: int) -> None:
        assert self.lib.stub_hip_fail_next(fn.encode(), code) == 0, fn

    def live_allocations(self) -> int:
        return int(self.lib.stub_hip_live_allocations())

    def live_streams(self) -> int:
        return int(self.lib.stub_hip_live_streams())

    def live_events(self) -> int:
        return int(self.lib.stub_hip_live_events())

    def set_capacity(self, nbytes: int) -> None:
        self.lib.stub_hip_set_capacity(nbytes)

    def set_device_count(self, n: int) -> None:
        self.lib.stub_hip_set_device_count(n)

    def last_stream(self) -> int:
        return int(self.lib.stub_hip_last_stream() or 0)


def _compile(out: Path, *defines: str) -> Path:
    subprocess.run(["gcc", "-shared", "-fPIC", "-O0", "-Wall", "-Wextra", "-Werror", *(f"-D{d}" for d in defines),
                    "-o", str(out), str(STUB_SOURCE)], check=True)
    return out


@dataclass
class StubBuilds:
    full: Path
    minimal: Path  # no hipGetErrorName / hipGetErrorString / hipGetDeviceProperties / hipMemGetInfo
    no_malloc: Path  # not a usable HIP runtime


@pytest.fixture(scope="session")
def stub_builds(tmp_path_factory: pytest.TempPathFactory) -> StubBuilds:
    root = tmp_path_factory.mktemp("stub_hip")
    return StubBuilds(_compile(root / "libamdhip64_stub.so"), _compile(root / "libamdhip64_minimal.so", "STUB_HIP_MINIMAL"),
                      _compile(root / "libamdhip64_no_malloc.so", "STUB_HIP_NO_MALLOC"))


@pytest.fixture(scope="session")
def stub_lib(stub_builds: StubBuilds) -> Stub:
    return Stub(stub_builds.full)


@pytest.fixture()
def stub(stub_lib: Stub) -> Iterator[Stub]:
    """The stub injected as the HIP runtime, reset; the previous library and allocator restored after."""
    gc.collect()  # streams/events left by earlier tests are destroyed now, not in the middle of this one
    previous = hip.loaded_hip_library()
    stub_lib.reset()
    hip.set_hip_library(stub_lib.lib)
    allocator = hip.set_allocator(None)
    yield stub_lib
    gc.collect()
    hip.set_allocator(allocator)
    stub_lib.reset()
    hip.set_hip_library(previous)


@pytest.fixture()
def no_library() -> Iterator[None]:
    """No HIP runtime loaded during the test; the previous one restored after."""
    previous = hip.loaded_hip_library()
    hip.set_hip_library(None)
    yield
    hip.set_hip_library(previous)


def _run_python(code: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True,
                          timeout=120, check=False)


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in (hip.LIBRARY_ENV, "ROCM_PATH")}
    env.update(extra)
    return env


# ---------------------------------------------------------------------------- loading


def test_import_loads_nothing_and_first_use_loads_from_the_environment(stub_builds: StubBuilds) -> None:
    proc = _run_python(
        """
        import json
        import miopen, miopen.errors
        from miopen import hip

        def mapped(name):
            with open("/proc/self/maps") as f:
                return name in f.read()

        before = {"loaded": hip.loaded_hip_library() is not None, "stub": mapped("libamdhip64_stub"),
                  "amdhip": mapped("libamdhip64")}
        count = hip.device_count()
        after = {"loaded": hip.loaded_hip_library() is not None, "stub": mapped("libamdhip64_stub"),
                 "path": hip.hip_library_path()}
        print(json.dumps({"before": before, "count": count, "after": after}))
        """,
        _clean_env(**{hip.LIBRARY_ENV: str(stub_builds.full)}))
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["before"] == {"loaded": False, "stub": False, "amdhip": False}
    assert out["count"] == 2
    assert out["after"] == {"loaded": True, "stub": True, "path": str(stub_builds.full)}


def test_missing_library_lists_everything_searched(no_library: None, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(hip.LIBRARY_ENV, raising=False)
    monkeypatch.setenv("ROCM_PATH", str(tmp_path / "rocm"))
    monkeypatch.setenv("CONDA_PREFIX", str(tmp_path / "conda"))
    monkeypatch.delenv("CMAKE_PREFIX_PATH", raising=False)
    site = tmp_path / "site-packages"
    site.mkdir()
    monkeypatch.setattr(sys, "path", [str(site)])
    # names no system has, so the loader path (where Debian's libamdhip64 may be) finds nothing either
    monkeypatch.setattr(hip.library, "LIBRARY_NAMES", ("libamdhip64_miogen_absent.so", "libamdhip64_miogen_absent.so.6"))
    with pytest.raises(hip.HipLibraryNotFoundError) as e:
        hip.device_count()
    assert isinstance(e.value, OSError)
    msg = str(e.value)
    expected = [
        f"{tmp_path}/rocm/lib/libamdhip64_miogen_absent.so ($ROCM_PATH/lib)",
        f"{tmp_path}/rocm/lib/libamdhip64_miogen_absent.so.6 ($ROCM_PATH/lib)",
        f"{tmp_path}/conda/lib/libamdhip64_miogen_absent.so ($CONDA_PREFIX/lib)",
        f"{tmp_path}/conda/lib/libamdhip64_miogen_absent.so.6 ($CONDA_PREFIX/lib)",
        f"{site}/_rocm_sdk_core*/lib/libamdhip64_miogen_absent.so (wheel _rocm_sdk_core*/lib in {site})",
        f"{site}/_rocm_sdk_core*/lib/libamdhip64_miogen_absent.so.6 (wheel _rocm_sdk_core*/lib in {site})",
        "/opt/rocm/lib/libamdhip64_miogen_absent.so (/opt/rocm/lib)",
        "/opt/rocm/lib/libamdhip64_miogen_absent.so.6 (/opt/rocm/lib)",
        "libamdhip64_miogen_absent.so (loader path)",
        "libamdhip64_miogen_absent.so.6 (loader path)",
    ]
    for item in expected:
        assert item in msg
    assert len(e.value.searched) == len(expected)
    assert "MIOGEN_HIP_LIBRARY" in msg and "ROCM_PATH" in msg
    assert hip.loaded_hip_library() is None


def test_default_names_and_search_order(no_library: None, stub_builds: StubBuilds, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    assert hip.LIBRARY_NAMES == ("libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5")
    rocm_lib = tmp_path / "rocm" / "lib"
    rocm_lib.mkdir(parents=True)
    shutil.copy(stub_builds.full, rocm_lib / "libamdhip64.so.6")
    monkeypatch.setenv("ROCM_PATH", str(tmp_path / "rocm"))
    # an explicit file wins over $ROCM_PATH
    monkeypatch.setenv(hip.LIBRARY_ENV, str(stub_builds.minimal))
    hip.load_hip()
    assert hip.hip_library_path() == str(stub_builds.minimal)
    # a directory in $MIOGEN_HIP_LIBRARY is searched for the library names
    hip.set_hip_library(None)
    monkeypatch.setenv(hip.LIBRARY_ENV, str(rocm_lib))
    hip.load_hip()
    assert hip.hip_library_path() == str(rocm_lib / "libamdhip64.so.6")
    # a broken $MIOGEN_HIP_LIBRARY is an error naming it, never a fall-through to $ROCM_PATH/lib
    hip.set_hip_library(None)
    monkeypatch.setenv(hip.LIBRARY_ENV, str(tmp_path / "missing.so"))
    with pytest.raises(hip.HipLibraryNotFoundError, match=r"\$MIOGEN_HIP_LIBRARY is set to .*missing\.so.*no such file"):
        hip.device_count()
    assert hip.loaded_hip_library() is None
    # without it, $ROCM_PATH/lib
    monkeypatch.delenv(hip.LIBRARY_ENV)
    assert hip.device_count() == 2
    assert hip.hip_library_path() == str(rocm_lib / "libamdhip64.so.6")


def test_injection_by_path_and_rejection_of_a_library_without_hip(stub: Stub, stub_builds: StubBuilds) -> None:
    hip.set_hip_library(str(stub_builds.full))
    assert hip.hip_library_path() == str(stub_builds.full)
    assert hip.device_count() == 2 and stub.calls("hipGetDeviceCount") == 1  # the same library instance
    current = hip.loaded_hip_library()
    with pytest.raises(hip.HipLibraryNotFoundError, match="does not export hipMalloc"):
        hip.set_hip_library(stub_builds.no_malloc)
    assert hip.loaded_hip_library() is current  # the previous library stays in use
    with pytest.raises(hip.HipLibraryNotFoundError, match="cannot load the HIP runtime from /no/such/libamdhip64.so"):
        hip.set_hip_library("/no/such/libamdhip64.so")
    with pytest.raises(TypeError, match="set_hip_library: lib must be"):
        hip.set_hip_library(42)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- devices


def test_device_count(stub: Stub) -> None:
    assert hip.device_count() == 2
    stub.set_device_count(3)
    assert hip.device_count() == 3
    stub.set_device_count(0)  # the stub answers hipErrorNoDevice, as the real library does without a GPU
    assert hip.device_count() == 0
    assert not hip.is_available()
    stub.fail_next("hipGetDeviceCount", 3)
    with pytest.raises(hip.HipError) as e:
        hip.device_count()
    assert e.value.name == "hipErrorNotInitialized" and e.value.function == "hipGetDeviceCount"


def test_device_guard_restores_the_previous_device(stub: Stub) -> None:
    assert hip.current_device() == 0
    with hip.device_guard(1):
        assert hip.current_device() == 1
        with hip.device_guard(0):
            assert hip.current_device() == 0
        assert hip.current_device() == 1
    assert hip.current_device() == 0
    assert stub.calls("hipSetDevice") == 4
    with pytest.raises(KeyError):
        with hip.device_guard(1):
            raise KeyError("inside")
    assert hip.current_device() == 0
    before = stub.calls("hipSetDevice")
    with hip.device_guard(0):  # already current: no hipSetDevice
        pass
    with hip.device_guard(None):
        pass
    assert stub.calls("hipSetDevice") == before
    with pytest.raises(hip.HipError) as e:
        with hip.device_guard(5):
            pytest.fail("entered a guard for a device that does not exist")
    assert (e.value.code, e.value.name, e.value.function) == (101, "hipErrorInvalidDevice", "hipSetDevice")
    assert hip.current_device() == 0
    hip.set_device(1)
    assert hip.current_device() == 1
    hip.synchronize()
    assert stub.calls("hipDeviceSynchronize") == 1


def test_current_device_asks_hip_only_with_several_devices(stub: Stub) -> None:
    """Every call asks hipGetDevice while there are several devices (one may be set behind our back); a library
    of one device is asked once, and its current device is 0 from then on."""
    before = stub.calls("hipGetDevice")
    hip.set_device(1)
    assert [hip.current_device() for _ in range(3)] == [1, 1, 1]
    assert stub.calls("hipGetDevice") - before == 3
    hip.set_device(0)
    stub.set_device_count(1)
    hip.set_hip_library(stub.lib)  # a fresh binding: it counts its devices when first asked
    assert hip.current_device() == 0
    before = stub.calls("hipGetDevice")
    assert [hip.current_device() for _ in range(3)] == [0, 0, 0]
    assert stub.calls("hipGetDevice") == before


def test_device_arch_and_name(stub: Stub, stub_builds: StubBuilds) -> None:
    assert hip.device_arch(0) == "gfx90a"
    assert hip.device_arch(0, full=True) == "gfx90a:sramecc+:xnack-"
    assert hip.device_arch(1) == "gfx942"
    assert hip.device_name(1) == "Stub HIP device 1"
    calls = stub.calls("hipGetDeviceProperties")
    assert calls == 2
    assert hip.device_arch(0) == "gfx90a" and stub.calls("hipGetDeviceProperties") == calls  # cached
    with hip.device_guard(1):
        assert hip.device_arch() == "gfx942"
    with pytest.raises(hip.HipError, match="hipGetDeviceProperties failed: hipErrorInvalidDevice"):
        hip.device_arch(7)
    stub.lib.stub_hip_set_arch(0, b"not-an-arch")  # a layout this module does not know: None, not garbage
    hip.set_hip_library(stub.lib)  # a fresh binding has an empty cache
    assert hip.device_arch(0) is None and hip.device_name(0) is None
    hip.set_hip_library(stub_builds.minimal)  # no hipGetDeviceProperties at all
    assert hip.device_arch(0) is None


def test_mem_get_info(stub: Stub, stub_builds: StubBuilds) -> None:
    stub.set_capacity(4096)
    ptr = hip.malloc(1000)
    assert hip.mem_get_info() == (3096, 4096)
    hip.free(ptr)
    hip.set_hip_library(stub_builds.minimal)
    with pytest.raises(hip.HipError) as e:
        hip.mem_get_info()
    assert e.value.name == "hipErrorNotSupported" and "does not export it" in str(e.value)


# ---------------------------------------------------------------------------- streams and events


def test_stream_lifecycle(stub: Stub) -> None:
    s = hip.Stream.create()
    assert s.handle != 0 and s.owned and stub.live_streams() == 1
    assert stub.lib.stub_hip_stream_flags(s.handle) == hip.StreamFlags.NON_BLOCKING == s.flags
    assert s.query() is True
    s.synchronize()
    assert stub.last_stream() == s.handle
    s.close()
    s.close()
    assert stub.calls("hipStreamDestroy") == 1 and stub.live_streams() == 0 and s.closed
    ev = hip.Event.create()
    before = stub.calls()
    uses: list[Callable[[], object]] = [
        lambda: s.handle, s.synchronize, s.query, lambda: hip.as_stream_handle(s),
        lambda: hip.memset_async(0, 0, 0, s), lambda: ev.record(s), lambda: s.wait_event(ev)]
    for use in uses:
        with pytest.raises(ValueError, match="closed"):
            use()
    assert stub.calls() == before  # none reached HIP
    assert "closed" in repr(s)
    ev.close()

    with hip.Stream.create(hip.StreamFlags.DEFAULT) as blocking:
        assert stub.lib.stub_hip_stream_flags(blocking.handle) == 0
    assert blocking.closed and stub.calls("hipStreamDestroy") == 2

    dropped = hip.Stream.create()
    ref = weakref.ref(dropped)
    del dropped
    gc.collect()
    assert ref() is None and stub.calls("hipStreamDestroy") == 3 and stub.live_streams() == 0


def test_borrowed_streams_are_never_destroyed(stub: Stub) -> None:
    owner = hip.Stream.create()
    borrowed = hip.Stream.from_handle(owner.handle)
    assert not borrowed.owned and borrowed.handle == owner.handle
    borrowed.synchronize()
    borrowed.close()
    del borrowed
    gc.collect()
    assert stub.calls("hipStreamDestroy") == 0 and stub.live_streams() == 1
    null = hip.Stream.from_handle(None)
    assert null.handle == 0 and hip.default_stream().handle == 0 and hip.as_stream_handle(null) is None
    null.synchronize()
    assert stub.last_stream() == 0
    owner.close()
    assert stub.calls("hipStreamDestroy") == 1
    with pytest.raises(TypeError, match="Stream.create"):
        hip.Stream()


def test_event_lifecycle_and_timing(stub: Stub) -> None:
    s = hip.Stream.create()
    e = hip.Event.create()
    assert stub.lib.stub_hip_event_flags(e.handle) == hip.EventFlags.DISABLE_TIMING
    e.record(s)
    assert stub.last_stream() == s.handle
    assert e.query() is True
    e.synchronize()
    s.wait_event(e)
    assert stub.calls("hipStreamWaitEvent") == 1
    before = stub.calls()
    with pytest.raises(ValueError, match="timing disabled"):
        e.elapsed_ms(e)
    start, end = hip.Event.create(hip.EventFlags.DEFAULT), hip.Event.create(hip.EventFlags.DEFAULT)
    with pytest.raises(ValueError, match="never recorded"):
        start.elapsed_ms(end)
    assert stub.calls() == before + 2  # the two creates only
    start.record()
    assert stub.last_stream() == 0  # None: the null stream
    end.record(s)
    stub.lib.stub_hip_set_elapsed_ms(ctypes.c_float(2.5))
    assert start.elapsed_ms(end) == 2.5
    e.close()
    e.close()
    assert stub.calls("hipEventDestroy") == 1
    before = stub.calls()
    for use in (lambda: e.record(s), e.synchronize, e.query, lambda: s.wait_event(e), lambda: start.elapsed_ms(e),
                lambda: e.handle):
        with pytest.raises(ValueError, match="closed"):
            use()
    with pytest.raises(TypeError, match="event must be an Event"):
        s.wait_event(s.handle)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not an Event"):
        hip.as_stream_handle(start)
    assert stub.calls() == before
    with hip.Event.create() as scoped:
        scoped.record(s)
    assert stub.calls("hipEventDestroy") == 2
    borrowed = hip.Event.from_handle(start.handle)
    borrowed.close()
    assert stub.calls("hipEventDestroy") == 2
    for ev in (start, end, s):
        ev.close()
    assert stub.live_events() == 0 and stub.live_streams() == 0


def test_recorded_on_a_foreign_stream(stub: Stub) -> None:
    class TorchStream:
        cuda_stream = 0x7000

    e = hip.Event.create()
    e.record(TorchStream())
    assert stub.last_stream() == 0x7000
    hip.Stream.from_handle(0x7100).wait_event(e)
    assert stub.last_stream() == 0x7100
    e.close()


def test_queries_return_false_while_not_ready(stub: Stub) -> None:
    s, e = hip.Stream.create(), hip.Event.create()
    stub.fail_next("hipStreamQuery", hip.HIP_ERROR_NOT_READY)
    assert s.query() is False
    assert s.query() is True
    stub.fail_next("hipEventQuery", hip.HIP_ERROR_NOT_READY)
    assert e.query() is False
    assert e.query() is True
    stub.fail_next("hipEventQuery", 700)
    with pytest.raises(hip.HipError) as err:
        e.query()
    assert (err.value.name, err.value.function) == ("hipErrorIllegalAddress", "hipEventQuery")
    stub.fail_next("hipStreamSynchronize", hip.HIP_ERROR_NOT_READY)  # elsewhere it is an exception
    with pytest.raises(hip.HipNotReady):
        s.synchronize()
    s.close()
    e.close()


# ---------------------------------------------------------------------------- memory


def test_memcpy_and_memset_move_real_bytes(stub: Stub) -> None:
    dev = hip.malloc(32)
    assert dev and stub.live_allocations() == 1
    hip.memcpy(dev, bytes(range(32)), 32, hip.MemcpyKind.HOST_TO_DEVICE)
    assert stub.lib.stub_hip_last_memcpy_kind() == 1
    assert ctypes.string_at(dev, 32) == bytes(range(32))  # the stub's "device" memory is host memory
    hip.memset(dev + 8, 0xAB, 8)
    out = bytearray(32)
    hip.memcpy(out, dev, 32, hip.MemcpyKind.DEVICE_TO_HOST)
    assert out == bytes(range(8)) + b"\xab" * 8 + bytes(range(16, 32))

    other = hip.malloc(32)
    hip.memcpy(other, dev, 32, hip.MemcpyKind.DEVICE_TO_DEVICE)
    s = hip.Stream.create()
    hip.memset_async(other, 0x11, 4, s)
    assert stub.last_stream() == s.handle
    words = (ctypes.c_uint32 * 8)()
    hip.memcpy_async(words, other, 32, hip.MemcpyKind.DEVICE_TO_HOST, s)
    s.synchronize()
    assert words[0] == 0x11111111 and bytes(words)[4:] == bytes(out)[4:]
    partial = bytearray(b"\xff" * 8)
    hip.memcpy(partial, memoryview(bytes(range(100, 132))), 4, hip.MemcpyKind.HOST_TO_HOST)
    assert partial == bytes([100, 101, 102, 103]) + b"\xff" * 4
    hip.memcpy(0, 0, 0)  # zero bytes: NULL pointers are fine
    hip.free(dev)
    hip.free(other)
    hip.free(0)
    assert stub.live_allocations() == 0 and hip.malloc(0) == 0
    s.close()


def test_out_of_memory_is_a_memory_error(stub: Stub) -> None:
    stub.set_capacity(1024)
    keep = hip.malloc(512)
    with pytest.raises(hip.HipOutOfMemoryError) as e:
        hip.malloc(1024)
    err = e.value
    assert isinstance(err, MemoryError) and isinstance(err, hip.HipError) and isinstance(err, RuntimeError)
    assert (err.code, err.name, err.function) == (2, "hipErrorOutOfMemory", "hipMalloc")
    assert str(err) == "hipMalloc failed: hipErrorOutOfMemory (2): stub: out of device memory"
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is hip.HipOutOfMemoryError and (again.code, again.name, again.function) == (2, err.name, "hipMalloc")
    assert stub.live_allocations() == 1
    hip.free(keep)
    assert stub.live_allocations() == 0


@pytest.mark.parametrize(
    ("fn", "code", "name", "call"),
    [
        ("hipSetDevice", 101, "hipErrorInvalidDevice", lambda: hip.set_device(1)),
        ("hipDeviceSynchronize", 700, "hipErrorIllegalAddress", hip.synchronize),
        ("hipMemcpy", 21, "hipErrorInvalidMemcpyDirection", lambda: hip.memcpy(bytearray(4), b"abcd", 4)),
        ("hipMemsetAsync", 2, "hipErrorOutOfMemory", lambda: hip.memset_async(0, 0, 0)),
        ("hipFree", 1, "hipErrorInvalidValue", lambda: hip.free(0)),
        ("hipStreamCreateWithFlags", 400, "hipErrorInvalidHandle", hip.Stream.create),
        ("hipGetDevice", 4321, "hipErrorUnknown", hip.current_device),
    ],
)
def test_injected_errors_name_the_code_and_the_function(stub: Stub, fn: str, code: int, name: str,
                                                        call: Callable[[], object]) -> None:
    stub.fail_next(fn, code)
    with pytest.raises(hip.HipError) as e:
        call()
    err = e.value
    assert (err.code, err.name, err.function) == (code, name, fn)
    assert str(err).startswith(f"{fn} failed: {name} ({code})")
    assert type(err) is (hip.HipOutOfMemoryError if code == 2 else hip.HipError)
    assert stub.calls(fn) == 1


def test_error_names_without_hipGetErrorName_come_from_the_local_table(stub: Stub, stub_builds: StubBuilds) -> None:
    minimal = Stub(stub_builds.minimal)
    minimal.reset()
    hip.set_hip_library(minimal.lib)
    for code, name in [(600, "hipErrorNotReady"), (100, "hipErrorNoDevice"), (2, "hipErrorOutOfMemory"),
                       (4321, "hipErrorUnknown")]:
        minimal.fail_next("hipDeviceSynchronize", code)
        with pytest.raises(hip.HipError) as e:
            hip.synchronize()
        assert (e.value.name, str(e.value)) == (name, f"hipDeviceSynchronize failed: {name} ({code})")
    assert hip.error_name(101) == "hipErrorInvalidDevice"
    # the values the issue names, as Debian's HIP 5.2.3 header defines them
    assert [hip.ERROR_NAMES[c] for c in (0, 1, 2, 100, 101, 600)] == [
        "hipSuccess", "hipErrorInvalidValue", "hipErrorOutOfMemory", "hipErrorNoDevice", "hipErrorInvalidDevice",
        "hipErrorNotReady"]


def test_error_name_prefers_the_library_and_never_loads_one(stub: Stub) -> None:
    stub.reset()
    assert hip.error_name(700) == "hipErrorIllegalAddress" and stub.calls("hipGetErrorName") == 1
    assert hip.error_name(3) == "hipErrorNotInitialized"
    assert hip.error_name(35) == "hipErrorInsufficientDriver"  # the stub says hipErrorUnknown; the table knows
    hip.set_hip_library(None)
    assert hip.error_name(600) == "hipErrorNotReady" and hip.loaded_hip_library() is None


# ---------------------------------------------------------------------------- argument checks


def _bad_calls(s: hip.Stream, e: hip.Event) -> list[tuple[str, Callable[[], object], type[Exception], str]]:
    class NoStream:
        pass

    return [
        ("malloc(-1)", lambda: hip.malloc(-1), ValueError, "malloc: nbytes must be non-negative"),
        ("malloc(1.5)", lambda: hip.malloc(1.5), TypeError, "malloc: nbytes must be an int"),  # type: ignore[arg-type]
        ("malloc(True)", lambda: hip.malloc(True), TypeError, "nbytes must be an int; got bool"),
        ("malloc(2**64)", lambda: hip.malloc(2**64), ValueError, "nbytes must be below"),
        ("free(-8)", lambda: hip.free(-8), ValueError, "free: ptr must be non-negative"),
        ("free('x')", lambda: hip.free("x"), TypeError, "free: ptr must be an int"),  # type: ignore[arg-type]
        ("memcpy nbytes", lambda: hip.memcpy(bytearray(4), b"abcd", -1), ValueError, "memcpy: nbytes"),
        ("memcpy kind", lambda: hip.memcpy(bytearray(4), b"abcd", 4, 9), ValueError, "memcpy: kind must be"),
        ("memcpy kind type", lambda: hip.memcpy(bytearray(4), b"abcd", 4, "H2D"), TypeError,  # type: ignore[arg-type]
         "memcpy: kind must be a MemcpyKind"),
        ("memcpy dst small", lambda: hip.memcpy(bytearray(2), b"abcd", 4), ValueError, "exceeds the 2-byte dst"),
        ("memcpy src small", lambda: hip.memcpy(bytearray(8), b"abcd", 8), ValueError, "exceeds the 4-byte src"),
        ("memcpy dst read-only", lambda: hip.memcpy(b"abcd", bytearray(4), 4), TypeError, "dst is a read-only"),
        ("memcpy dst NULL", lambda: hip.memcpy(0, b"abcd", 4), ValueError, "dst is NULL"),
        ("memcpy dst object", lambda: hip.memcpy(object(), b"abcd", 4), TypeError, "memcpy: dst must be a pointer"),
        ("memcpy host kind", lambda: hip.memcpy(bytearray(4), 0x1000, 4, hip.MemcpyKind.HOST_TO_DEVICE),
         ValueError, "dst is a host buffer but kind is HOST_TO_DEVICE"),
        ("memcpy strided", lambda: hip.memcpy(memoryview(bytearray(8))[::2], b"ab", 2), ValueError, "C-contiguous"),
        ("memcpy_async read-only", lambda: hip.memcpy_async(0x1000, b"abcd", 4, hip.MemcpyKind.HOST_TO_DEVICE),
         TypeError, "asynchronous copy needs a writable buffer"),
        ("memcpy_async stream", lambda: hip.memcpy_async(0x1000, 0x2000, 4, stream=1.5), TypeError,
         "memcpy_async: stream must be"),
        ("memset value", lambda: hip.memset(0x1000, 256, 4), ValueError, "memset: value must be below 256"),
        ("memset negative value", lambda: hip.memset(0x1000, -1, 4), ValueError, "memset: value must be non-negative"),
        ("memset bytearray", lambda: hip.memset(bytearray(4), 0, 4), TypeError, "memset: ptr must be a device pointer"),
        ("memset_async NULL", lambda: hip.memset_async(0, 0, 4, s), ValueError, "ptr is NULL but nbytes is 4"),
        ("set_device(-1)", lambda: hip.set_device(-1), ValueError, "set_device: device must be non-negative"),
        ("set_device('0')", lambda: hip.set_device("0"), TypeError, "set_device: device must be an int"),  # type: ignore[arg-type]
        ("device_guard", lambda: hip.device_guard("1").__enter__(), TypeError,  # type: ignore[arg-type]
         "device_guard: device must be an int"),
        ("device_arch", lambda: hip.device_arch(-2), ValueError, "device_arch: device must be non-negative"),
        ("Stream flags", lambda: hip.Stream.create(0x8), ValueError, "bits StreamFlags does not define"),
        ("Stream flags type", lambda: hip.Stream.create(None), TypeError, "Stream.create: flags must be an int"),  # type: ignore[arg-type]
        ("Stream.from_handle", lambda: hip.Stream.from_handle(-5), ValueError, "handle must be non-negative"),
        ("Event flags", lambda: hip.Event.create(0x10), ValueError, "bits EventFlags does not define"),
        ("Event.from_handle", lambda: hip.Event.from_handle(0), ValueError, "non-null"),
        ("record(3.5)", lambda: e.record(3.5), TypeError, "Event.record: stream must be"),
        ("record(-1)", lambda: e.record(-1), ValueError, "stream handle must be in"),
        ("record(object)", lambda: e.record(NoStream()), TypeError, "got NoStream"),
        ("elapsed_ms", lambda: e.elapsed_ms(s), TypeError, "end must be an Event"),  # type: ignore[arg-type]
        ("wait_event flags", lambda: s.wait_event(e, -1), ValueError, "wait_event: flags must be non-negative"),
        ("as_stream_handle(True)", lambda: hip.as_stream_handle(True), TypeError, "got bool"),
        ("set_allocator", lambda: hip.set_allocator(object()), TypeError,  # type: ignore[arg-type]
         r"must have allocate\(nbytes, stream\) and free\(ptr, stream\)"),
        ("callbacks", lambda: hip.miopen_allocator_callbacks(42), TypeError, "allocator must have"),  # type: ignore[arg-type]
        ("error_name", lambda: hip.error_name("x"), TypeError, "error_name: code must be an int"),  # type: ignore[arg-type]
        ("HipMallocAllocator", lambda: hip.HipMallocAllocator().allocate(-3), ValueError, "nbytes must be non-negative"),
    ]


def test_bad_arguments_are_rejected_before_any_hip_call(stub: Stub) -> None:
    s, e = hip.Stream.create(), hip.Event.create()
    cases = _bad_calls(s, e)
    for label, call, exc, match in cases:
        before = stub.calls()
        with pytest.raises(exc, match=match):
            call()
        assert stub.calls() == before, f"{label} reached HIP"
    assert len(cases) >= 40
    s.close()
    e.close()


def test_as_stream_handle_accepts_the_usual_stream_objects(stub: Stub) -> None:
    class Torch:
        cuda_stream = 0x100

    class CuPy:
        ptr = 0x200

    class Handle:
        handle = 0x300

    class Protocol:
        def __cuda_stream__(self) -> tuple[int, int]:
            return (0, 0x400)

    class HipPython:
        def as_c_void_p(self) -> ctypes.c_void_p:
            return ctypes.c_void_p(0x500)

    s = hip.Stream.create()
    assert hip.as_stream_handle(None) is None and hip.as_stream_handle(0) is None
    assert [hip.as_stream_handle(x) for x in (7, Torch(), CuPy(), Handle(), Protocol(), HipPython(),
                                               ctypes.c_void_p(0x600))] == [7, 0x100, 0x200, 0x300, 0x400, 0x500, 0x600]
    assert hip.as_stream_handle(s) == s.handle
    s.close()


# ---------------------------------------------------------------------------- allocators


def test_hip_malloc_allocator_and_the_default(stub: Stub) -> None:
    default = hip.get_allocator()
    assert isinstance(default, hip.HipMallocAllocator) and isinstance(default, hip.Allocator)
    assert hip.get_allocator() is default
    ptr = default.allocate(256, None)
    assert stub.live_allocations() == 1 and stub.calls("hipMalloc") == 1
    default.free(ptr, None)
    assert stub.live_allocations() == 0 and stub.calls("hipFree") == 1
    stub.set_capacity(100)
    with pytest.raises(MemoryError):
        default.allocate(101, None)


def test_set_allocator_is_process_wide_and_thread_safe(stub: Stub) -> None:
    class Custom:
        def allocate(self, nbytes: int, stream: int | None) -> int:
            return 0x1000

        def free(self, ptr: int, stream: int | None) -> None:
            pass

    custom = Custom()
    previous = hip.set_allocator(custom)
    assert isinstance(previous, hip.HipMallocAllocator)
    assert hip.get_allocator() is custom
    assert hip.set_allocator(None) is custom
    assert isinstance(hip.get_allocator(), hip.HipMallocAllocator)
    with hip.use_allocator(custom):
        assert hip.get_allocator() is custom
    assert isinstance(hip.get_allocator(), hip.HipMallocAllocator)

    seen: list[object] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(8)

    def work(i: int) -> None:
        try:
            barrier.wait()
            for _ in range(200):
                hip.set_allocator(custom if i % 2 else None)
                seen.append(hip.get_allocator())
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert all(a is custom or isinstance(a, hip.HipMallocAllocator) for a in seen) and len(seen) == 1600


def test_callable_allocator(stub: Stub) -> None:
    calls: list[tuple[object, ...]] = []

    def alloc_fn(nbytes: int) -> int:
        calls.append(("alloc", nbytes))
        return hip.malloc(nbytes)

    def free_fn(ptr: int) -> None:
        calls.append(("free", ptr))
        hip.free(ptr)

    emptied: list[int] = []
    a = hip.CallableAllocator(alloc_fn, free_fn, lambda: emptied.append(1))
    assert isinstance(a, hip.CachingAllocator)
    ptr = a.allocate(64, 0x99)
    a.free(ptr, 0x99)
    a.empty_cache()
    assert calls == [("alloc", 64), ("free", ptr)] and emptied == [1] and stub.live_allocations() == 0

    class MemoryPointer:  # CuPy style: memory lives as long as this object
        def __init__(self, nbytes: int) -> None:
            self.ptr = hip.malloc(nbytes)

        def __del__(self) -> None:
            hip.free(self.ptr)

    cupy_like = hip.CallableAllocator(MemoryPointer, None)
    ptr = cupy_like.allocate(32, None)
    gc.collect()
    assert stub.live_allocations() == 1 and cupy_like.live == 1  # kept alive by the allocator
    cupy_like.free(ptr, None)
    gc.collect()
    assert stub.live_allocations() == 0 and cupy_like.live == 0

    streams: list[object] = []

    def alloc_with_stream(nbytes: int, stream: int | None) -> int:
        streams.append(stream)
        return 0x4000

    with_stream = hip.CallableAllocator(alloc_with_stream, lambda p, st: streams.append(("free", p, st)),
                                        pass_stream=True)
    assert with_stream.allocate(8, 0x77) == 0x4000
    with_stream.free(0x4000, 0x77)
    assert streams == [0x77, ("free", 0x4000, 0x77)]

    class OutOfMemoryError(RuntimeError):  # what torch raises: not a MemoryError
        pass

    def oom(nbytes: int) -> int:
        raise OutOfMemoryError("HIP out of memory. Tried to allocate 1 GiB")

    with pytest.raises(hip.HipOutOfMemoryError, match="Tried to allocate 1 GiB") as e:
        hip.CallableAllocator(oom, None).allocate(1 << 30)
    assert isinstance(e.value, MemoryError)
    with pytest.raises(TypeError, match="carries no address"):
        hip.CallableAllocator(lambda n: "nope", None).allocate(8)
    with pytest.raises(ZeroDivisionError):  # other errors pass through unchanged
        hip.CallableAllocator(lambda n: 1 // 0, None).allocate(8)
    with pytest.raises(TypeError, match="free_fn must be callable"):
        hip.CallableAllocator(alloc_fn, 3)  # type: ignore[arg-type]


def test_torch_allocator(stub: Stub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError
    with pytest.raises(ImportError, match="TorchAllocator needs PyTorch"):
        hip.TorchAllocator()

    log: list[tuple[object, ...]] = []

    class OutOfMemoryError(RuntimeError):
        pass

    def caching_allocator_alloc(size: int, device: int | None = None, stream: object = None) -> int:
        log.append(("alloc", size, device, stream))
        if size > 1000:
            raise OutOfMemoryError("HIP out of memory")
        return 0xA000

    cuda = types.SimpleNamespace(
        caching_allocator_alloc=caching_allocator_alloc,
        caching_allocator_delete=lambda ptr: log.append(("delete", ptr)),
        empty_cache=lambda: log.append(("empty",)),
    )
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=cuda))
    a = hip.TorchAllocator(device=1)
    assert isinstance(a, hip.CachingAllocator)
    assert a.allocate(64, 0x55) == 0xA000
    a.free(0xA000, 0x55)
    a.empty_cache()
    with pytest.raises(hip.HipOutOfMemoryError) as e:
        a.allocate(4096, None)
    assert isinstance(e.value.__cause__, OutOfMemoryError)
    assert log == [("alloc", 64, 1, 0x55), ("delete", 0xA000), ("empty",), ("alloc", 4096, 1, None)]
    assert stub.calls() == 0  # torch's allocator, not hipMalloc


def test_miopen_allocator_callbacks(stub: Stub, caplog: pytest.LogCaptureFixture) -> None:
    from miopen._generated import raw  # the prototypes miopen.set_allocator wraps the callbacks in

    alloc_cb, free_cb = hip.miopen_allocator_callbacks(hip.HipMallocAllocator())
    c_alloc = raw.miopenAllocatorFunction(alloc_cb)
    c_free = raw.miopenDeallocatorFunction(free_cb)
    ptr = c_alloc(0xC0FFEE, 64)  # through C: the context is ignored
    assert isinstance(ptr, int) and ptr and stub.live_allocations() == 1
    c_free(0xC0FFEE, ptr)
    assert stub.live_allocations() == 0 and stub.calls("hipFree") == 1
    c_free(None, None)  # NULL: nothing to free
    assert stub.calls("hipFree") == 1

    stub.set_capacity(16)
    with caplog.at_level(logging.WARNING, logger="miopen.hip"):
        assert c_alloc(None, 64) is None  # NULL: MIOpen reports an allocation failure
    assert "allocating 64 bytes" in caplog.text and "HipOutOfMemoryError" in caplog.text

    class Broken:
        def allocate(self, nbytes: int, stream: int | None) -> int:
            return "0x10"  # type: ignore[return-value]

        def free(self, ptr: int, stream: int | None) -> None:
            raise RuntimeError("free exploded")

    caplog.clear()
    b_alloc, b_free = hip.miopen_allocator_callbacks(Broken())
    with caplog.at_level(logging.WARNING, logger="miopen.hip"):
        assert b_alloc(None, 8) == 0
        b_free(None, 0x10)  # does not raise into MIOpen
    assert "not an address" in caplog.text and "free exploded" in caplog.text

    seen: list[int | None] = []

    class Recorder:
        def allocate(self, nbytes: int, stream: int | None) -> int:
            seen.append(stream)
            return 0x10

        def free(self, ptr: int, stream: int | None) -> None:
            seen.append(stream)

    r_alloc, r_free = hip.miopen_allocator_callbacks(Recorder(), stream=0x33)
    assert r_alloc(None, 1) == 0x10
    r_free(None, 0x10)
    assert seen == [0x33, 0x33]


def test_exception_hierarchy() -> None:
    assert issubclass(hip.HipOutOfMemoryError, hip.HipError) and issubclass(hip.HipOutOfMemoryError, MemoryError)
    assert issubclass(hip.HipNotReady, hip.HipError) and not issubclass(hip.HipError, MemoryError)
    assert issubclass(hip.HipError, RuntimeError) and issubclass(hip.HipLibraryNotFoundError, OSError)
    err = hip.HipError(101, "hipSetDevice")
    assert (err.name, str(err)) == ("hipErrorInvalidDevice", "hipSetDevice failed: hipErrorInvalidDevice (101)")
    lost = pickle.loads(pickle.dumps(hip.HipLibraryNotFoundError("gone", ("a", "b"))))
    assert lost.searched == ("a", "b") and str(lost) == "gone"
    errors = importlib.import_module("miopen.errors")  # the runtime's module (miopen.errors is the generated one)
    assert errors.HipError is hip.HipError and errors.HipOutOfMemoryError is hip.HipOutOfMemoryError


# ---------------------------------------------------------------------------- the real HIP


def test_prototypes_match_the_real_header(tmp_path: Path) -> None:
    """Each bound prototype against Debian's HIP 5.2.3 header, by ABI category, plus enum values and
    the hipDeviceProp_t offset device_arch reads."""
    _require_real(REAL_HEADER)
    names = list(hip._PROTOTYPES)
    prints = "\n".join(f'    sig<decltype(&{n})>::show("{n}");' for n in names)  # unevaluated: no linking
    errors = "\n".join(f'    std::printf("E %s %d\\n", "{n}", (int){n});' for n in sorted(set(hip.ERROR_NAMES.values())))
    source = tmp_path / "protos.cpp"
    source.write_text(textwrap.dedent("""\
        #include <cstddef>
        #include <cstdio>
        #include <type_traits>
        #include <hip/hip_runtime_api.h>

        template <class T> const char* base() {
            using U = std::remove_cv_t<T>;
            if constexpr (std::is_pointer_v<U>) return "ptr";
            else if constexpr (std::is_void_v<U>) return "void";
            else if constexpr (std::is_enum_v<U>) return sizeof(U) == 4 ? "enum32" : "enum?";
            else if constexpr (std::is_same_v<U, int>) return "int";
            else if constexpr (std::is_same_v<U, unsigned>) return "uint";
            else if constexpr (std::is_same_v<U, std::size_t>) return "size_t";
            else if constexpr (std::is_same_v<U, float>) return "float";
            else if constexpr (std::is_same_v<U, char>) return "char";
            else if constexpr (std::is_class_v<U>) return "struct";
            else return "other";
        }
        template <class T> void cat() {
            if constexpr (std::is_pointer_v<T>) std::printf(" ptr:%s", base<std::remove_pointer_t<T>>());
            else std::printf(" %s", base<T>());
        }
        template <class F> struct sig;
        template <class R, class... A> struct sig<R (*)(A...)> {
            static void show(const char* name) {
                std::printf("F %s", name);
                cat<R>();
                (cat<A>(), ...);
                std::printf("\\n");
            }
        };
        int main() {
        @PRINTS@
        @ERRORS@
            std::printf("K %d %d %d %d %d\\n", hipMemcpyHostToHost, hipMemcpyHostToDevice, hipMemcpyDeviceToHost,
                        hipMemcpyDeviceToDevice, hipMemcpyDefault);
            std::printf("S %d %d\\n", hipStreamDefault, hipStreamNonBlocking);
            std::printf("V %u %u %u %u %u %u\\n", hipEventDefault, hipEventBlockingSync, hipEventDisableTiming,
                        hipEventInterprocess, hipEventReleaseToDevice, hipEventReleaseToSystem);
            std::printf("P %zu %zu %zu\\n", offsetof(hipDeviceProp_t, name), offsetof(hipDeviceProp_t, gcnArchName),
                        sizeof(hipDeviceProp_t));
        }
        """).replace("@PRINTS@", prints).replace("@ERRORS@", errors))
    exe = tmp_path / "protos"
    subprocess.run(["g++", "-std=c++17", "-D__HIP_PLATFORM_AMD__", "-D__HIP_DISABLE_CPP_FUNCTIONS__", "-o", str(exe), str(source)], check=True)
    lines = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.splitlines()

    def expected(t: object) -> set[str]:
        simple: dict[object, set[str]] = {
            ctypes.c_int: {"int", "enum32"}, ctypes.c_uint: {"uint"}, ctypes.c_size_t: {"size_t"},
            ctypes.c_char_p: {"ptr:char"}, ctypes.POINTER(ctypes.c_int): {"ptr:int"},
            ctypes.POINTER(ctypes.c_void_p): {"ptr:ptr"}, ctypes.POINTER(ctypes.c_float): {"ptr:float"},
            ctypes.POINTER(ctypes.c_size_t): {"ptr:size_t"},
            ctypes.c_void_p: {"ptr:void", "ptr:struct"},  # void*, hipStream_t, hipEvent_t, hipDeviceProp_t*
        }
        return simple[t]

    protos = {line.split()[1]: line.split()[2:] for line in lines if line.startswith("F ")}
    assert set(protos) == set(names)
    for name, (restype, argtypes) in hip._PROTOTYPES.items():
        got = protos[name]
        assert len(got) == 1 + len(argtypes), f"{name}: {got}"
        for position, (want, have) in enumerate(zip((restype, *argtypes), got)):
            assert have in expected(want), f"{name} {'result' if position == 0 else f'argument {position}'}: " \
                                           f"header {have}, bound {want}"
    header_codes = {line.split()[1]: int(line.split()[2]) for line in lines if line.startswith("E ")}
    assert header_codes == {name: code for code, name in hip.ERROR_NAMES.items()}
    by_tag = {line[0]: [int(x) for x in line.split()[1:]] for line in lines if line[0] in "KSVP"}
    assert by_tag["K"] == [int(k) for k in hip.MemcpyKind]
    assert by_tag["S"] == [int(f) for f in hip.StreamFlags.__members__.values()]  # iteration skips 0
    assert by_tag["V"] == [int(f) for f in hip.EventFlags.__members__.values()]
    name_at, arch_at, size = by_tag["P"]
    assert (name_at, arch_at) == (hip._PROPS_NAME_OFFSET, hip._PROPS_ARCH_OFFSET) and size <= hip._PROPS_BUFFER_BYTES


def test_the_real_library_loads_and_does_not_crash_without_a_gpu() -> None:
    """Debian's libamdhip64 5.2.3, in a child process so that a crash is a failure, not the end of the run."""
    _require_real(REAL_HIP)
    proc = _run_python(
        f"""
        import ctypes
        import json
        from miopen import hip

        out = {{}}
        hip.set_hip_library({str(REAL_HIP)!r})
        raw = hip.loaded_hip_library()
        count = ctypes.c_int(-1)
        out["raw_count_status"] = raw.hipGetDeviceCount(ctypes.byref(count))
        out["raw_count"] = count.value
        out["count"] = hip.device_count()
        out["available"] = hip.is_available()
        out["names"] = {{str(c): hip.error_name(c) for c in hip.ERROR_NAMES}}
        def attempt(label, fn):
            try:
                out[label] = {{"ok": repr(fn())}}
            except hip.HipError as e:
                out[label] = {{"type": type(e).__name__, "code": e.code, "name": e.name, "function": e.function}}
        attempt("current_device", hip.current_device)
        attempt("malloc", lambda: hip.free(hip.malloc(16)))
        attempt("stream", lambda: hip.Stream.create().close())
        hip.set_hip_library(None)
        hip.load_hip()  # found by the search this time
        out["searched_path"] = hip.hip_library_path()
        out["searched_count"] = hip.device_count()
        print(json.dumps(out))
        """,
        _clean_env())
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    print(json.dumps(out, indent=1))  # shown with -s: what the real library did
    # the real library's names agree with the local table, code by code
    assert out["names"] == {str(c): n for c, n in hip.ERROR_NAMES.items()}
    assert "libamdhip64" in out["searched_path"]
    if out["raw_count_status"] == hip.HIP_ERROR_NO_DEVICE:
        # no GPU: hipGetDeviceCount says hipErrorNoDevice (count 0); device_count() turns that into 0
        assert out["raw_count"] == 0 and out["count"] == 0 and out["searched_count"] == 0 and not out["available"]
        for label in ("current_device", "malloc"):
            assert out[label]["type"] == "HipError" and out[label]["code"] in (100, 101), out
        assert out["current_device"]["function"] == "hipGetDevice" and out["malloc"]["function"] == "hipMalloc"
    else:
        assert out["raw_count_status"] == 0 and out["count"] == out["raw_count"] > 0 and out["available"]
        assert out["malloc"] == {"ok": "None"} and out["stream"] == {"ok": "None"}
