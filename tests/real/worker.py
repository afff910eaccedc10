"""The worker process: `python -m tests.real.worker`, started by `client.Worker`.

It binds `miopen` to the real library (through a tracing CDLL, so every C call the package makes is recorded),
the HIP layer to the library named by the parent (the stub HIP, or none), then runs checks on request:
length-prefixed pickles in on stdin, out on a private copy of stdout. The C library's own stdout and stderr
go to the worker's stderr, which the parent keeps in a file. Before and after each C call a line goes to the
trace file (`> fn` / `< fn status`), flushed by the kernel, so the parent can tell in which C function a
process died.

Environment: MIOGEN_REAL_LIB (the real libMIOpen), MIOGEN_REAL_TRACE (trace file), MIOGEN_REAL_HIP (a HIP
library for `miopen.hip`, optional).
"""

from __future__ import annotations

import ast
import ctypes
import importlib
import importlib.util
import os
import pickle
import struct
import sys
import time
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any

from tests.real import trace
from tests.real.trace import CALLS, STATUSES  # (C function, caller module) for every call since the last request


def _caller_module() -> str:
    """The module that made the C call: the typed API (or _support, for destroy on close), not the raw layer."""
    frame = sys._getframe(2)
    while frame is not None:
        name = str(frame.f_globals.get("__name__", ""))
        if not name.endswith(".raw"):
            return name
        frame = frame.f_back  # type: ignore[assignment]
    return ""


class TracingCDLL(ctypes.CDLL):
    """A CDLL whose functions record each call (name, caller) and write enter/leave lines to the trace file."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        base: Any = self._FuncPtr

        class _Traced(base):  # type: ignore[misc, valid-type]
            _flags_ = base._flags_
            _restype_ = base._restype_

            def __call__(self, *args: Any) -> Any:
                fn = self.__name__
                CALLS.append((fn, _caller_module()))
                trace.enter(fn)
                result = base.__call__(self, *args)
                trace.leave(fn, result)
                if isinstance(result, int):
                    STATUSES.setdefault(fn, set()).add(result)
                return result

        self._FuncPtr = _Traced  # type: ignore[misc]


def _import_rewritten(modname: str) -> ModuleType:
    """Import a checks module with pytest's assertion rewriting (plain import if that is unavailable)."""
    if modname in sys.modules:
        return sys.modules[modname]
    spec = importlib.util.find_spec(modname)
    if spec is None or spec.origin is None:
        raise ImportError(f"no module {modname}")
    source = Path(spec.origin).read_bytes()
    try:
        from _pytest.assertion.rewrite import rewrite_asserts

        tree = ast.parse(source, spec.origin)
        rewrite_asserts(tree, source, spec.origin)
        code = compile(tree, spec.origin, "exec", dont_inherit=True)
    except Exception:  # pragma: no cover - an older or newer pytest: plain asserts still work
        code = compile(source, spec.origin, "exec", dont_inherit=True)
    module = importlib.util.module_from_spec(spec)
    sys.modules[modname] = module
    try:
        exec(code, module.__dict__)
    except BaseException:
        del sys.modules[modname]
        raise
    return module


def _send(out: Any, obj: object) -> None:
    data = pickle.dumps(obj)
    out.write(struct.pack("<Q", len(data)) + data)
    out.flush()


def _recv(inp: Any) -> Any:
    head = inp.read(8)
    if len(head) < 8:
        return None
    (n,) = struct.unpack("<Q", head)
    data = b""
    while len(data) < n:
        chunk = inp.read(n - len(data))
        if not chunk:
            return None
        data += chunk
    return pickle.loads(data)


def _safe(value: object) -> object:
    """The value, or its repr when it does not pickle (results must cross the pipe)."""
    try:
        pickle.dumps(value)
        return value
    except Exception:
        return repr(value)


def _setup() -> dict[str, object]:
    path = os.environ.get("MIOGEN_REAL_TRACE")
    if path:
        trace.FD = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    started = time.perf_counter()
    lib = TracingCDLL(os.environ["MIOGEN_REAL_LIB"])
    import miopen
    from miopen import hip

    refused = None
    try:
        miopen.load_library(lib)
    except miopen.MIOpenVersionError as exc:
        # MIOGEN_REAL_BIND_ANYWAY=1: a library no committed release fits exactly is bound to the nearest one
        # (the version policy off); the refusal goes back to the parent, which decides whether it was expected
        if os.environ.get("MIOGEN_REAL_BIND_ANYWAY") != "1":
            raise
        refused = str(exc)
        os.environ["MIOPEN_SKIP_VERSION_CHECK"] = "1"
        miopen.load_library(lib)
    hip_path = os.environ.get("MIOGEN_REAL_HIP")
    if hip_path:
        hip.set_hip_library(hip_path)
    v = miopen.get_version()
    CALLS.clear()
    STATUSES.clear()
    return {"version": f"{v.major}.{v.minor}.{v.patch}", "load_s": time.perf_counter() - started,
            "compiled": miopen.MIOPEN_VERSION, "pid": os.getpid(), "bound": miopen.bound_release(),
            "refused": refused, "python": sys.version.split()[0]}


def main() -> None:
    import faulthandler

    faulthandler.enable()  # a crash prints the Python stack too: was it inside a C call or on our side?
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)  # C code that prints to stdout must not corrupt the protocol
    sys.stdout = sys.stderr
    inp = os.fdopen(0, "rb", buffering=0)
    try:
        hello: dict[str, object] = {"ok": True, **_setup()}
    except BaseException as exc:
        hello = {"ok": False, "error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
    _send(out, hello)
    if not hello["ok"]:
        return
    while True:
        req = _recv(inp)
        if req is None or req[0] == "exit":
            return
        kind, modname, func, args, kwargs = req
        if kind == "call":
            _send(out, _run(modname, func, args, kwargs))
            continue
        # "fork": run the check in a child, so that MIOpen aborting it costs a fork, not a new worker
        from miopen import hip

        stand_in = hip.loaded_hip_library()  # a stand-in GPU's HIP, which works after fork: named again there
        pid = os.fork()
        if pid == 0:
            try:
                if stand_in is not None:
                    hip.set_hip_library(stand_in)
                _send(out, _run(modname, func, args, kwargs))
            finally:
                os._exit(0)
        _, status = os.waitpid(pid, 0)
        if not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0):
            sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
            _send(out, {"ok": False, "died": True, "signal": sig,
                        "returncode": -sig if sig else os.WEXITSTATUS(status)})


def _run(modname: str, func: str, args: tuple[object, ...], kwargs: dict[str, object]) -> dict[str, object]:
    CALLS.clear()
    STATUSES.clear()
    started = time.perf_counter()
    try:
        fn = getattr(_import_rewritten(f"tests.real.{modname}"), func)
        value = fn(*args, **kwargs)
        reply: dict[str, object] = {"ok": True, "value": _safe(value)}
    except BaseException as exc:  # noqa: BLE001 - everything goes back to the parent
        tb = traceback.TracebackException.from_exception(exc)
        reply = {"ok": False, "type": type(exc).__name__, "message": str(exc), "traceback": "".join(tb.format())}
    reply["calls"] = sorted(set(CALLS))
    reply["statuses"] = {fn: sorted(codes) for fn, codes in STATUSES.items()}
    reply["seconds"] = time.perf_counter() - started
    sys.stderr.flush()
    return reply

if __name__ == "__main__":
    main()
