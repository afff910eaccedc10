"""Reliability (issue 29, the runtime side): shared descriptors cannot be changed, device buffers are checked
against the extent their descriptor implies, a forked child never hangs, pools do not grow with dead contexts,
paths are bytes. Against the stub libraries; the kernels' side is in tests/real/kernels/test_real_miopen_ocl.py and
tests/real/kernels/test_strided_views.py."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..conftest import Libs


# ------------------------------------------------------------------ frozen descriptors


def _c_name(fn: object) -> str:
    return (getattr(fn, "__doc__", "") or "").split("(", 1)[0].strip()


def _setters_of(base: type) -> list[tuple[str, object]]:
    """Every typed-API function that sets what its first argument, a `base` descriptor, describes."""
    import re

    from miopen._generated import api

    out = []
    for name in sorted(dir(api)):
        fn = getattr(api, name)
        if not inspect.isfunction(fn) or not re.match(r"miopen(Set|Init)[^a-z]", _c_name(fn)):
            continue
        params = list(inspect.signature(fn).parameters.values())
        if params and str(params[0].annotation).split(" |")[0] == base.__name__:
            out.append((name, fn))
    return out


def _frozen_objects() -> list[object]:
    """One object of each kind the runtime caches and shares."""
    from miopen import descriptors as d

    return [d.tensor_descriptor("float32", [2, 3, 4, 5]), d.convolution_descriptor([1, 1], [1, 1], [1, 1]),
            d.cached_activation_descriptor(d.api.ActivationMode(3), 0.0, 0.0, 0.0),
            d.cached_pooling_descriptor(d.api.PoolingMode(0), (2, 2), (0, 0), (2, 2))]


def test_every_setter_refuses_every_shared_descriptor(libs: Libs) -> None:
    """For each cached descriptor kind, every Set/Init function of the typed API whose first argument is that kind
    refuses it (ValueError naming the function and parameter) before any library call; readers still take it."""
    from miopen import descriptors

    objs = _frozen_objects()
    assert {type(o) for o in objs} == set(descriptors.FROZEN_KINDS)
    tried = 0
    for obj in objs:
        base = type(obj).__mro__[1]
        setters = _setters_of(base)
        assert setters, f"no setter of {base.__name__} found"
        for name, fn in setters:
            first = next(iter(inspect.signature(fn).parameters))  # type: ignore[arg-type]
            nargs = len(inspect.signature(fn).parameters) - 1  # type: ignore[arg-type]
            libs.reset()
            with pytest.raises(ValueError, match=rf"^{_c_name(fn)}: {first} is a shared descriptor"):
                fn(obj, *[None] * nargs)  # type: ignore[operator]
            assert libs.calls() == [], f"{name} reached the library"
            tried += 1
        assert not obj.closed  # type: ignore[attr-defined]
    assert tried >= 8
    from miopen._generated import api

    assert isinstance(api.get_tensor_descriptor_size(objs[0]), int)  # type: ignore[arg-type]  # a reader takes it
    with api.create_tensor_descriptor() as own:  # a descriptor of one's own is still set freely
        api.set_tensor_descriptor(own, api.DataType.miopenFloat, [2, 3], [3, 1])


def test_tensor_desc_of_a_tensor_cannot_be_rewritten(libs: Libs) -> None:
    """The issue's example: set_tensor_descriptor(t.desc, ...) would rewrite every later tensor of that shape."""
    import miopen
    from miopen.tensor import Tensor

    t = Tensor.make(0x1000, (1, 1, 8, 8), "float32")
    with pytest.raises(ValueError, match="tensor_desc is a shared descriptor"):
        miopen.set_tensor_descriptor(t.desc, miopen.DataType.miopenFloat, [1, 1, 4, 4], [16, 16, 4, 1])
    assert Tensor.make(0x1000, (1, 1, 8, 8), "float32").desc is t.desc


# ------------------------------------------------------------------ buffer extents


class _Mem:
    """A stand-in for a pyopencl memory object: `int_ptr`, `size`, `release()`."""

    def __init__(self, size: int, ptr: int = 0x10000) -> None:
        self.int_ptr, self.size = ptr, size

    def release(self) -> None:
        self.int_ptr = self.int_ptr  # like pyopencl: the stale address stays


class _Array:
    """A stand-in for a pyopencl Array (base_data, offset, shape, strides in bytes, dtype)."""

    def __init__(self, base: _Mem, shape: tuple[int, ...], strides: tuple[int, ...]) -> None:
        import numpy as np

        self.base_data, self.offset, self.shape, self.dtype = base, 0, shape, np.dtype(np.float32)
        self.strides = tuple(4 * s for s in strides)


def _span(dims: tuple[int, ...], strides: tuple[int, ...]) -> int:
    return 4 * (1 + sum((d - 1) * s for d, s in zip(dims, strides, strict=True)))


from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_layouts = st.integers(1, 4).flatmap(lambda n: st.tuples(st.lists(st.integers(1, 6), min_size=n, max_size=n),
                                                         st.lists(st.integers(0, 40), min_size=n, max_size=n)))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_layouts)
def test_a_buffer_shorter_than_its_extent_is_refused(runtime_libs: Libs, layout: tuple[list[int], list[int]]) -> None:
    """Whatever the dims and strides: a buffer one byte short of the extent they span is refused naming the bytes
    needed and given, by Tensor.make and for an Array's buffer; the exact extent is accepted."""
    import miopen
    from miopen.tensor import Tensor, as_tensor, extent

    miopen.load_library(runtime_libs.miopen)
    dims, strides = tuple(layout[0]), tuple(layout[1])
    need = _span(dims, strides)
    t = Tensor.make(_Mem(need), dims, "float32", strides)
    assert extent(t.dims, t.strides, t.dtype) == need
    with pytest.raises(ValueError, match=rf"^Tensor: ptr holds {need - 1} bytes, but its descriptor spans {need} "):
        Tensor.make(_Mem(need - 1), dims, "float32", strides)
    assert as_tensor(_Array(_Mem(need), dims, strides), "x").dims == dims
    with pytest.raises(ValueError, match=rf"^x: its buffer \(base_data\) holds {need - 1} bytes.* spans {need} "):
        as_tensor(_Array(_Mem(need - 1), dims, strides), "x")


def test_a_released_buffer_is_refused(libs: Libs) -> None:
    """A buffer released through its class's release() (watched), or whose int_ptr is 0 or raises, is refused; an
    Array seen before (the ops' fast path) is refused once its buffer is released; the issue's 16-byte buffer for a
    1x1x64x64 float tensor too, and by an op."""
    from miopen._generated._pointers import watch_releases
    from miopen.ops import activation
    from miopen.tensor import Tensor

    watch_releases(_Mem)
    m = _Mem(64)
    Tensor.make(m, (1, 1, 4, 4), "float32")
    m.release()
    with pytest.raises(ValueError, match="^Tensor: ptr is a released OpenCL buffer"):
        Tensor.make(m, (1, 1, 4, 4), "float32")
    with pytest.raises(ValueError, match="^Tensor: ptr is a released buffer"):
        Tensor.make(_Mem(64, ptr=0), (1, 1, 4, 4), "float32")
    with pytest.raises(ValueError, match="^Tensor: ptr holds 16 bytes, but its descriptor spans 16384 bytes"):
        Tensor.make(_Mem(16), (1, 1, 64, 64), "float32")
    x, y = _Array(_Mem(64, 0x20000), (1, 1, 4, 4), (16, 16, 4, 1)), _Array(_Mem(64, 0x30000), (1, 1, 4, 4), (16, 16, 4, 1))
    for _ in range(2):
        activation.activation_forward(x, y, "relu")
    y.base_data.release()
    libs.reset()
    with pytest.raises(ValueError, match="^activation_forward: y: its buffer .* released"):
        activation.activation_forward(x, y, "relu")
    assert libs.calls() == []
    y.base_data = _Mem(32, 0x40000)  # another buffer, too short: checked again
    with pytest.raises(ValueError, match="^activation_forward: y: its buffer .* holds 32 bytes"):
        activation.activation_forward(x, y, "relu")


# ------------------------------------------------------------------ pools per dead context


@pytest.fixture()
def opencl_stub(libs: Libs) -> Iterator[Any]:
    """The stub library driven as an OpenCL build (real pyopencl queues on the first device; the stub never touches
    them); skips without pyopencl or a device (fails under MIOGEN_REQUIRE_REAL_MIOPEN_OCL=1)."""
    from miopen import backend, handles

    from .. import real_miopen

    try:
        import pyopencl as cl

        devices = [d for p in cl.get_platforms() for d in p.get_devices()]
    except Exception as exc:  # noqa: BLE001 - no pyopencl, ICD loader or platform
        devices, why = [], str(exc)
    else:
        why = "no OpenCL device"
    if not devices:
        if real_miopen.OPENCL.required:
            pytest.fail(f"MIOGEN_REQUIRE_REAL_MIOPEN_OCL=1 but {why}")
        pytest.skip(why)
    handles.handle_pool().close()
    backend.set_backend("OpenCL")
    try:
        yield cl
    finally:
        handles.handle_pool().close()
        backend.set_backend(None)


def _count(libs: Libs, fn: str) -> int:
    return int(libs.miopen.miogen_stub_calls(fn.encode()))


@pytest.mark.parametrize("threads", [1, 3])
def test_dropped_contexts_leave_the_pool_they_found_each_handle_destroyed_once(opencl_stub: Any, libs: Libs,
                                                                                threads: int) -> None:
    """Issue 29: 120 dropped OpenCL contexts left 120 handles in the pool. Now, whatever the threads, a context
    nobody holds has its handles destroyed at the next new context (and by `collect`): the pool never holds more
    than the live contexts' handles plus one per thread, and returns to its size before; every handle is destroyed
    exactly once (miopenDestroy counted by the stub), none twice when the pool is closed; the backend's queue memo
    and the threads' scratch let the dead contexts go too."""
    import gc
    import threading

    from miopen import backend, handles, workspace
    from miopen.ops import activation
    from miopen.tensor import Tensor

    cl = opencl_stub
    pool = handles.handle_pool()
    b = backend.opencl()
    dev = b.devices()[0]
    libs.reset()
    x, y = Tensor.make(0x1000, (1, 1, 4, 4), "float32"), Tensor.make(0x2000, (1, 1, 4, 4), "float32")
    activation.activation_forward(x, y, "relu")  # the default queue's context: kept for good
    created0, evicted0, baseline = pool.created, pool.evicted, pool.size
    earlier = {k for t in workspace._TABLES for k in t}  # the scratch of the tests before this one in the process
    sizes: list[int] = []

    def work() -> None:
        for _ in range(130 // threads):
            q = cl.CommandQueue(cl.Context([dev]), dev)
            activation.activation_forward(x, y, "relu", stream=q)
            workspace.scratch(0, q)
            assert len(workspace._scratch.table) <= workspace.SCRATCH_MAX
            sizes.append(pool.size)
            del q

    ts = [threading.Thread(target=work) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    gc.collect()  # the threads' windows handed back (their evicted handles destroyed then)
    pool.collect()  # the contexts dropped last
    assert not pool._retiring
    created = _count(libs, "miopenCreateWithStream") - 1
    assert created == pool.created - created0 >= 130 - threads  # a dead context's address may come back: new key
    assert max(sizes) <= baseline + 2 * threads  # each thread: its live context, and the one it just dropped
    assert pool.size == baseline
    assert set(b._known) <= {int(q.int_ptr) for q in b._queues.values()}
    assert not any(k[1] for t in workspace._TABLES for k in t if k not in earlier)  # none of a dropped queue, any thread
    # the stub hands out one address: the calls are counted
    assert _count(libs, "miopenDestroy") == pool.evicted - evicted0 == created
    pool.close()
    assert _count(libs, "miopenDestroy") == created + baseline  # the rest once each, the evicted ones not again


def test_each_thread_and_each_context_gets_its_own_handle(opencl_stub: Any, libs: Libs) -> None:
    """Threads sharing contexts: each (thread, context) has its own handle, never another thread's or another
    context's, while all are alive at once; a context a thread still holds is never released by another's
    collection."""
    import threading

    from miopen import backend, handles

    cl = opencl_stub
    pool = handles.handle_pool()
    dev = backend.opencl().devices()[0]
    queues = [cl.CommandQueue(cl.Context([dev]), dev) for _ in range(3)]
    evicted0 = pool.evicted
    seen: dict[tuple[int, int], set[int]] = {}
    errors: list[BaseException] = []
    start, done = threading.Barrier(4), threading.Barrier(4)

    def work(i: int) -> None:
        try:
            start.wait()
            for _ in range(20):
                for c, q in enumerate(queues):
                    h = handles.inline_miopen_handle(q)
                    assert not h.closed
                    seen.setdefault((i, c), set()).add(id(h))
                pool.collect()  # the contexts are alive: nothing goes
            done.wait()  # every thread alive at once: no handle handed back and reused yet
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)
            start.abort()
            done.abort()

    ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors
    assert all(len(s) == 1 for s in seen.values())  # one handle per (thread, context), every call
    assert len({next(iter(s)) for s in seen.values()}) == 12
    assert pool.size == 12 and pool.evicted == evicted0


# ------------------------------------------------------------------ paths are bytes


def _bytes_env(**extra: bytes) -> dict[bytes, bytes]:
    import os

    env = {k: v for k, v in os.environb.items() if k not in (b"MIOPEN_LIBRARY", b"ROCM_PATH")}
    env.update({k.encode(): v for k, v in extra.items()})
    env[b"PYTHONIOENCODING"] = b"utf-8:strict"  # a terminal that takes UTF-8 only: a raw \xff byte would fail
    return env


@pytest.fixture()
def odd_root(runtime_libs: Libs, tmp_path: Path) -> bytes:
    """The stub library copied to <tmp>/lib\\xff/lib/libMIOpen.so (a folder name that is not UTF-8); its root."""
    import os
    import shutil

    root = os.fsencode(tmp_path) + b"/lib\xff"
    os.makedirs(root + b"/lib")
    shutil.copy(runtime_libs.miopen._name, root + b"/lib/libMIOpen.so")
    return root


_LOAD = r'''
import os, sys, pathlib, miopen
from miopen._generated import _support
how, path = sys.argv[1], os.fsencode(sys.argv[2]) if len(sys.argv) > 2 else None
arg = {"bytes": path, "str": os.fsdecode(path) if path else None, "path": pathlib.Path(os.fsdecode(path)) if path
       else None, "search": None}[how]
try:
    miopen.load_library(arg)
except OSError as exc:
    print("error:", exc)
else:
    print("loaded", os.fsencode(_support.library_path()) == path if path else os.fsencode(_support.library_path()).hex())
'''


@pytest.mark.parametrize("how", ["bytes", "str", "path"])
def test_a_library_under_a_non_utf8_folder_loads_from_any_path_form(odd_root: bytes, how: str) -> None:
    """Issue 29 item 14: load_library(bytes, str or Path of a folder named b'lib\\xff') loads it, and library_path()
    gives those very bytes back; one that is missing there is an error showing the byte as \\xff."""
    import subprocess
    import sys

    lib = odd_root + b"/lib/libMIOpen.so"
    r = subprocess.run([sys.executable, "-c", _LOAD, how, lib], capture_output=True, env=_bytes_env(), timeout=120)
    assert r.stdout.decode() == "loaded True\n", r.stdout + r.stderr
    r = subprocess.run([sys.executable, "-c", _LOAD, how, odd_root + b"/none.so"], capture_output=True,
                       env=_bytes_env(), timeout=120)
    out = r.stdout.decode("ascii")
    assert out.startswith("error: cannot load MIOpen from ") and "lib\\xff/none.so: no such file" in out, out


@pytest.mark.parametrize("var", ["MIOPEN_LIBRARY", "ROCM_PATH"])
def test_the_environment_and_python_m_miopen_take_any_bytes(odd_root: bytes, var: str) -> None:
    """$MIOPEN_LIBRARY or $ROCM_PATH naming a non-UTF-8 folder: the search loads the library; `python -m miopen`
    prints the path with \\xff (ASCII, on a UTF-8-only stdout) and its --json gives back the exact bytes."""
    import json
    import os
    import subprocess
    import sys

    lib = odd_root + b"/lib/libMIOpen.so"
    value = lib if var == "MIOPEN_LIBRARY" else odd_root
    env = _bytes_env(**{var: value})
    r = subprocess.run([sys.executable, "-c", _LOAD, "search"], capture_output=True, env=env, timeout=120)
    assert r.stdout.startswith(b"loaded ") and b"Traceback" not in r.stderr, r.stdout + r.stderr
    assert bytes.fromhex(r.stdout[len(b"loaded "):].decode()) == lib
    r = subprocess.run([sys.executable, "-m", "miopen"], capture_output=True, env=env, timeout=120)
    text = r.stdout.decode("ascii")  # nothing but ASCII: the \xff escaped
    assert r.returncode == 0 and b"Traceback" not in r.stderr, r.stderr
    assert "Library: " + lib.decode("utf-8", "backslashreplace") + "\n" in text
    assert f"${var}='" + value.decode("utf-8", "backslashreplace") + "'" in text
    r = subprocess.run([sys.executable, "-m", "miopen", "--json"], capture_output=True, env=env, timeout=120)
    info = json.loads(r.stdout)
    assert os.fsencode(info["library"]["path"]) == lib and os.fsencode(info["environment"][var]) == value
    r = subprocess.run([sys.executable, "-m", "miopen", "--library", odd_root + b"/none.so"], capture_output=True,
                       env=env, timeout=120)
    assert r.returncode == 1 and b"Traceback" not in r.stderr and b"lib\\xff/none.so" in r.stdout, r.stdout


# ------------------------------------------------------------------ fork on HIP


def test_a_forked_child_of_a_hip_process_gets_hip_fork_error_at_every_first_call(libs: Libs) -> None:
    """Issue 29 item 4, the HIP backend: after fork, every way into HIP the parent had opened (an op's handle, the
    current device, a stream the parent created, a state) raises HipForkError naming fork and what to do, never
    reaching HIP (which would hang); the pools, states and scratch are fresh; naming a library (set_hip_library)
    makes the child use it. The parent is untouched."""
    import os
    import time

    from miopen import handles, hip, state
    from miopen.ops import activation
    from miopen.tensor import Tensor

    x = Tensor.make(0x1000, (1, 1, 4, 4), "float32")
    activation.activation_forward(x, x, "relu")
    stream = hip.Stream.create()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child reports through the pipe, never returns into pytest
        code = 1
        try:
            os.close(read)
            seen = []
            for what, call in [("op", lambda: activation.activation_forward(x, x, "relu")),
                               ("device", hip.current_device), ("stream", stream.synchronize),
                               ("state", lambda: state.with_miopen_state(0).__enter__()),
                               ("handle", handles.inline_miopen_handle)]:
                try:
                    call()
                    seen.append(f"{what}: no error")
                except hip.HipForkError as exc:
                    seen.append(what if "fork" in str(exc) and "spawn" in str(exc) else f"{what}: {exc}")
                except Exception as exc:  # noqa: BLE001 - reported
                    seen.append(f"{what}: {type(exc).__name__}: {exc}")
            seen.append(f"pool {handles.handle_pool().size}")
            hip.set_hip_library(libs.hip)  # the stub works after fork: named, it is used
            activation.activation_forward(x, x, "relu")
            seen.append("named: ok")
            os.write(write, " | ".join(seen).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    deadline = time.monotonic() + 60
    while not os.waitpid(pid, os.WNOHANG)[0]:
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail("the forked child hung")
        time.sleep(0.02)
    report = os.read(read, 4096).decode()
    os.close(read)
    assert report == "op | device | stream | state | handle | pool 0 | named: ok", report
    stream.synchronize()  # the parent's HIP goes on
    activation.activation_forward(x, x, "relu")
    stream.close()


# ------------------------------------------------------------------ extents of the other sources


class _CAI:
    """A __cuda_array_interface__ exporter of float32 with `shape` and element `strides` (None: packed)."""

    def __init__(self, shape: tuple[int, ...], strides: tuple[int, ...] | None) -> None:
        self.__cuda_array_interface__ = {"shape": shape, "typestr": "<f4", "data": (0x10000, False), "version": 3,
                                         "strides": None if strides is None else tuple(4 * s for s in strides)}


class _DLPack:
    """A DLPack exporter (kDLROCM) of float32 with `shape` and element `strides` (None: packed)."""

    def __init__(self, shape: tuple[int, ...], strides: tuple[int, ...] | None) -> None:
        import ctypes

        from miopen._generated._pointers import _DLDataType, _DLDevice, _DLTensor

        self.shape = (ctypes.c_int64 * len(shape))(*shape)
        self.strides = None if strides is None else (ctypes.c_int64 * len(shape))(*strides)
        self.tensor = _DLTensor(0x20000, _DLDevice(10, 0), len(shape), _DLDataType(2, 32, 1),
                                ctypes.cast(self.shape, ctypes.POINTER(ctypes.c_int64)),
                                None if strides is None else ctypes.cast(self.strides, ctypes.POINTER(ctypes.c_int64)), 0)

    def __dlpack_device__(self) -> tuple[int, int]:
        return 10, 0

    def __dlpack__(self, stream: object = None) -> object:
        import ctypes

        new = ctypes.pythonapi.PyCapsule_New
        new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        return new(ctypes.addressof(self.tensor), b"dltensor", None)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_layouts, st.booleans())
def test_every_exporter_s_extent_bounds_a_tensor_made_on_it(runtime_libs: Libs, layout: tuple[list[int], list[int]],
                                                            packed: bool) -> None:
    """Issue 29 item 1, the other sources: a Tensor made on a __cuda_array_interface__ or DLPack exporter, or on a
    PersistentBuffer, may span at most what the exporter's own layout spans (its shape, strides and item size;
    the buffer's nbytes): the exact extent is accepted at the exporter's address, one element more is refused
    naming the parameter, the bytes needed and the bytes given."""
    import miopen
    from miopen.tensor import Tensor
    from miopen.workspace import PersistentBuffer

    miopen.load_library(runtime_libs.miopen)
    dims, strides = tuple(layout[0]), None if packed else tuple(layout[1])
    have = _span(dims, strides or _packed(dims))
    flat = have // 4
    for exporter, address in [(_CAI(dims, strides), 0x10000), (_DLPack(dims, strides), 0x20000)]:
        assert Tensor.make(exporter, (flat,), "float32").ptr == address
        with pytest.raises(ValueError, match=rf"^Tensor: ptr holds {have} bytes, but its descriptor spans {have + 4} "):
            Tensor.make(exporter, (flat + 1,), "float32")
    from miopen import hip

    hip.set_hip_library(runtime_libs.hip)
    with PersistentBuffer(have, 0, "test") as buf:
        assert Tensor.make(buf, (flat,), "float32").ptr == buf.ptr
        with pytest.raises(ValueError, match=rf"^Tensor: ptr holds {have} bytes, but its descriptor spans {have + 4} "):
            Tensor.make(buf, (1, flat + 1), "float32")


def _packed(dims: tuple[int, ...]) -> tuple[int, ...]:
    out, n = [], 1
    for d in reversed(dims):
        out.append(n)
        n *= d
    return tuple(reversed(out))
