"""The parent's side: start a worker (`worker.py`) on the real library, run checks in it, see it die."""

from __future__ import annotations

import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
#: a check that runs longer than this is killed (the whole real-library suite takes seconds)
DEFAULT_TIMEOUT = 120.0


class WorkerError(Exception):
    """A check raised inside the worker: the worker's type name, message and traceback."""

    def __init__(self, type_name: str, message: str, tb: str) -> None:
        super().__init__(f"{type_name}: {message}\n\n--- in the worker ---\n{tb}")
        self.type_name = type_name
        self.message = message
        self.tb = tb


@dataclass
class Died:
    """The worker process ended while running a check (MIOpen aborted, or a timeout killed it)."""

    returncode: int
    signal_name: str | None
    #: the C function that had been entered and not left when it died (None: it died outside C calls)
    in_function: str | None
    trace_tail: list[str]
    stderr_tail: str
    timed_out: bool = False

    def describe(self) -> str:
        how = self.signal_name or f"exit status {self.returncode}"
        where = f" inside {self.in_function}" if self.in_function else " outside any MIOpen call"
        return f"{'timed out, killed' if self.timed_out else 'died'} ({how}){where}"

    @property
    def last_note(self) -> str | None:
        """The last progress note (`trace.note`) written before the death."""
        return next((line[2:].strip() for line in reversed(self.trace_tail) if line.startswith("# ")), None)


@dataclass
class Result:
    value: Any
    calls: list[tuple[str, str]]
    seconds: float
    #: C function -> the status codes it returned during the check
    statuses: dict[str, list[int]] = field(default_factory=dict)


@dataclass
class Worker:
    """One worker process bound to the real library."""

    library: Path
    hip: Path | None = None
    #: a folder for MIOpen's databases and kernel caches kept across runs (None: the worker's own folder)
    cache: Path | None = None
    #: the interpreter command line (default: this Python); a Debian root's own loader and Python, for instance
    python: tuple[str, ...] = ()
    #: added to the worker's environment (PYTHONPATH entries go before the checkout's; MIOpen reads most of its
    #: variables once per process)
    extra_env: dict[str, str] = field(default_factory=dict)
    proc: subprocess.Popen[bytes] | None = None
    info: dict[str, Any] = field(default_factory=dict)
    #: every check run so far: name -> (Result | WorkerError | Died)
    results: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._dir = Path(tempfile.mkdtemp(prefix="miogen-real-"))
        self.trace = self._dir / "trace.txt"
        self.stderr_path = self._dir / "stderr.txt"
        self.start()

    # ------------------------------------------------------------------ process
    def env(self) -> dict[str, str]:
        # MIOpen's knobs come from here and extra_env alone: none inherited from the test process (the runtime's
        # OpenCL backend puts its Find defaults into os.environ, and a check's outcome must not depend on which
        # tests ran before it in the same process)
        env = {k: v for k, v in os.environ.items() if not k.startswith("MIOPEN_")}
        env.pop("MIOGEN_HIP_LIBRARY", None)
        env.update({
            "MIOGEN_REAL_LIB": str(self.library), "MIOGEN_REAL_TRACE": str(self.trace),
            "MIOGEN_REAL_STDERR": str(self.stderr_path), "TMPDIR": str(self._dir / "tmp"),
            "MIOPEN_LOG_LEVEL": "1", "MIOPEN_ENABLE_LOGGING": "0",
            # MIOpen's user perf-db, find-db and kernel cache (and PoCL's) go to this worker's folder or the
            # cache folder it was given, never $HOME
            "MIOPEN_USER_DB_PATH": str((self.cache or self._dir) / "db"),
            "MIOPEN_CUSTOM_CACHE_DIR": str((self.cache or self._dir) / "cache"),
            "POCL_CACHE_DIR": str((self.cache or self._dir) / "pocl"),
            "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]),
        })
        for var, value in self.extra_env.items():
            env[var] = os.pathsep.join([value, env[var]]) if var == "PYTHONPATH" else value
        if self.hip is not None:
            env["MIOGEN_REAL_HIP"] = str(self.hip)
        return env

    def start(self) -> None:
        self.trace.write_bytes(b"")
        (self._dir / "tmp").mkdir(exist_ok=True)  # MIOpen's compiler runs leave folders here
        with self.stderr_path.open("ab") as err:
            # a session of its own: on a timeout the worker, its forked children and any compiler MIOpen started
            # are killed together (by the worker's process group)
            self.proc = subprocess.Popen([*(self.python or (sys.executable,)), "-m", "tests.real.worker"], cwd=REPO,
                                         env=self.env(),
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                                         start_new_session=True)
        hello = self._read(DEFAULT_TIMEOUT)
        if not isinstance(hello, dict):
            raise RuntimeError(f"the worker did not start: {hello.describe() if isinstance(hello, Died) else hello}")
        if not hello.get("ok"):
            self.close()
            raise RuntimeError(f"the worker could not load {self.library}: {hello.get('error')}\n"
                               f"{hello.get('traceback', '')}")
        self.info = hello

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def close(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            try:
                self._write(proc, ("exit",))
                proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                _kill_group(proc)
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()

    def stderr_text(self) -> str:
        try:
            return self.stderr_path.read_text(errors="replace")
        except OSError:
            return ""

    # ------------------------------------------------------------------ protocol
    @staticmethod
    def _write(proc: subprocess.Popen[bytes], obj: object) -> None:
        assert proc.stdin is not None
        data = pickle.dumps(obj)
        proc.stdin.write(struct.pack("<Q", len(data)) + data)
        proc.stdin.flush()

    def _read_exact(self, n: int, deadline: float) -> bytes | None:
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        buf = b""
        while len(buf) < n:
            left = deadline - _now()
            if left <= 0:
                raise TimeoutError
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, n - len(buf))
            if not chunk:
                return None
            buf += chunk
        return buf

    def _read(self, timeout: float) -> Any:
        deadline = _now() + timeout
        try:
            head = self._read_exact(8, deadline)
            data = None if head is None else self._read_exact(struct.unpack("<Q", head)[0], deadline)
        except TimeoutError:
            assert self.proc is not None
            _kill_group(self.proc)
            return self._died(timed_out=True)
        if data is None:
            return self._died()
        return pickle.loads(data)

    def _died(self, timed_out: bool = False, rc: int | None = None) -> Died:
        """The death of the worker (rc None: wait for it) or, with `rc`, of a forked child of it."""
        if rc is None:
            assert self.proc is not None
            rc = self.proc.wait()
            self.proc = None
        sig = signal.Signals(-rc).name if rc < 0 else None
        lines = self.trace.read_text(errors="replace").splitlines() if self.trace.exists() else []
        open_fn = None
        for line in reversed(lines):
            if line.startswith("< "):
                break
            if line.startswith("> "):
                open_fn = line[2:].strip()
                break
        return Died(rc, sig, open_fn, lines[-6:], self.stderr_text()[-3000:], timed_out)

    # ------------------------------------------------------------------ checks
    def call(self, target: str, *args: Any, timeout: float = DEFAULT_TIMEOUT, fork: bool = False,
             **kwargs: Any) -> Result | Died:
        """Run `tests.real.<module>.<function>(*args, **kwargs)` in the worker ("module:function"); with `fork`,
        in a forked child of it (a death then costs the child only)."""
        if not self.alive:
            self.start()
        modname, _, func = target.partition(":")
        assert self.proc is not None
        self.trace.write_bytes(b"")
        self._write(self.proc, ("fork" if fork else "call", modname, func, args, kwargs))
        reply = self._read(timeout)
        if isinstance(reply, dict) and reply.get("died"):
            reply = self._died(rc=reply["returncode"])
        if isinstance(reply, Died):
            self.results[target] = reply
            return reply
        if not reply["ok"]:
            err = WorkerError(reply["type"], reply["message"], reply["traceback"])
            err.calls = reply["calls"]  # type: ignore[attr-defined]
            err.statuses = reply.get("statuses", {})  # type: ignore[attr-defined]
            self.results[target] = err
            raise err
        result = Result(reply["value"], [tuple(c) for c in reply["calls"]], reply["seconds"], reply.get("statuses", {}))
        self.results[target] = result
        return result

    def run(self, target: str, *args: Any, **kwargs: Any) -> Any:
        """Run a check that must neither fail nor kill the worker; its return value."""
        result = self.call(target, *args, **kwargs)
        if isinstance(result, Died):
            raise AssertionError(f"{target}: the worker {result.describe()}\n{result.stderr_tail}")
        return result.value

    def isolated(self, target: str, *args: Any, timeout: float = DEFAULT_TIMEOUT, **kwargs: Any) -> Result | Died:
        """Run one check in a fresh worker of its own (for calls that may abort the process)."""
        other = Worker(self.library, self.hip, self.cache, self.python, self.extra_env)
        try:
            try:
                result = other.call(target, *args, timeout=timeout, **kwargs)
            except WorkerError:
                self.results[target] = other.results[target]
                raise
            self.results[target] = result
            return result
        finally:
            other.close()
            other.cleanup()

    def cleanup(self) -> None:
        import shutil

        shutil.rmtree(self._dir, ignore_errors=True)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill the worker and everything it started (its own process group, see Worker.start)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def _now() -> float:
    import time

    return time.monotonic()


def shared_worker(lib: Any, extra_env: dict[str, str]) -> Iterator[Worker]:
    """A fixture's body: a Worker on a real library of ../shared (`real_miopen.SharedLibrary`) with its kernel
    cache (`lib.cache_dir()/kernels`) and environment; skipped without a usable library, failed when required."""
    import pytest

    path = lib.library_path()  # skips (or fails when required) without a usable library
    try:
        w = Worker(path, None, cache=lib.cache_dir() / "kernels", extra_env={**extra_env, **dict(lib.env_vars)})
    except RuntimeError as exc:
        if lib.required:
            pytest.fail(str(exc))
        pytest.skip(str(exc))
    try:
        yield w
    finally:
        w.close()
        w.cleanup()


def run_check(w: Worker, name: str, timeout: float = 600) -> Any:
    """The value of the check `name` (module:function under tests/real) run in `w`; a failure or a death fails
    the test with what the worker said."""
    import pytest

    try:
        result = w.call(name, timeout=timeout)
    except WorkerError as exc:
        pytest.fail(str(exc), pytrace=False)
    if isinstance(result, Died):
        pytest.fail(f"{name}: the worker {result.describe()}\n{result.stderr_tail}", pytrace=False)
    return result.value
