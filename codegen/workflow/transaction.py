"""All or nothing for `miogen upgrade`: a snapshot of the paths it may change, verify commands run in
their own process group, and the signals that end a run early (SIGINT, SIGTERM, SIGHUP) turned into
an exception, so that every way out of the run rolls back."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType, TracebackType
from typing import IO

from ..base.files import SIGNALS as ABORT_SIGNALS
from ..base.files import Interrupted

#: how long a verify command's process group has to end after SIGTERM before it gets SIGKILL
_GRACE_S = 10.0


class SignalGuard:
    """While active, the first of ABORT_SIGNALS raises Interrupted; once `close()` is called (the
    rollback or the commit has begun) later ones are ignored, so that step runs to its end."""

    def __init__(self) -> None:
        self._previous: dict[int, object] = {}
        self._closed = False
        self._deferring = False
        self._pending: int | None = None

    def __enter__(self) -> SignalGuard:
        if threading.current_thread() is not threading.main_thread():
            return self  # handlers can only be set in the main thread (which the signals reach)
        for s in ABORT_SIGNALS:
            self._previous[s] = signal.signal(s, self._handle)
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        for s, handler in self._previous.items():
            signal.signal(s, handler)  # type: ignore[arg-type]  # what signal.signal returned

    def close(self) -> None:
        self._closed = True

    @contextlib.contextmanager
    def deferred(self) -> Iterator[None]:
        """A signal arriving inside is raised when the block ends (the block is not cut short)."""
        self._deferring = True
        try:
            yield
        finally:
            self._deferring = False
            if self._pending is not None:
                raise Interrupted(self._pending)

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        if self._closed:
            return
        self._closed = True
        if self._deferring:
            self._pending = signum
            return
        raise Interrupted(signum)


def run_in_group(cmd: str, guard: SignalGuard, tee: tuple[IO[bytes], ...] = ()) -> int:
    """Run a shell command in a process group of its own and return its exit status; if this is cut
    short (Interrupted, ...), the whole group is ended first: SIGTERM, then SIGKILL after a grace.
    The command is started with `guard`'s signals deferred, so that a started one is always ended.
    With `tee`, its output (stdout and stderr) is copied to each of those files as it comes."""
    proc: subprocess.Popen[bytes] | None = None
    try:
        with guard.deferred():
            proc = subprocess.Popen(cmd, shell=True, start_new_session=True,
                                    stdout=subprocess.PIPE if tee else None, stderr=subprocess.STDOUT if tee else None)
        if proc.stdout is not None:
            fd = proc.stdout.fileno()
            while chunk := os.read(fd, 65536):
                for f in tee:
                    f.write(chunk)
                    f.flush()
        return proc.wait()
    except BaseException:
        if proc is not None:
            _end_group(proc)
        raise


def _end_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=_GRACE_S)
    except subprocess.TimeoutExpired:
        pass
    try:  # the leader is gone: members that outlived it (or the leader itself, past the grace) end now
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


class Snapshot:
    """Copies of files and directories (in a `miogen-upgrade-*` temp dir), to put back exactly as they
    were (absent ones removed again). `discard()` removes the copies."""

    def __init__(self, paths: list[Path]) -> None:
        self._dir = Path(tempfile.mkdtemp(prefix="miogen-upgrade-"))
        self._saved: list[tuple[Path, Path | None]] = []
        try:
            for i, path in enumerate(paths):
                if not path.exists():
                    self._saved.append((path, None))
                    continue
                copy = self._dir / str(i)
                if path.is_dir():
                    shutil.copytree(path, copy, symlinks=True)
                else:
                    shutil.copy2(path, copy)
                self._saved.append((path, copy))
        except BaseException:
            self.discard()
            raise

    def restore(self) -> None:
        for path, copy in self._saved:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            elif path.exists() or path.is_symlink():
                path.unlink()
            if copy is not None:
                if copy.is_dir():
                    shutil.copytree(copy, path, symlinks=True)
                else:
                    shutil.copy2(copy, path)

    def discard(self) -> None:
        shutil.rmtree(self._dir, ignore_errors=True)
