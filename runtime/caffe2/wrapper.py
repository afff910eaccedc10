"""Caffe2's `miopen_wrapper.h` by its own names, over `miopen.handles` and `miopen.state`.

* `MIOPENWrapper(device, stream)` stands for the wrapper around a `HIPContext`: its inline
  handle is the calling thread's pooled handle bound to the context's stream, and
  `with_miopen_state(state_idx, fn)` runs `fn(state)` on one of the 4 lock-guarded states of
  the device, forked from and joined back to that stream.
* `PerGPUMIOPENStates`, `SyncedMIOPENState`, `MIOPENWorkspace` are the runtime's classes
  (`miopen_states()[device][state_idx]`, `.mutex`, `.state`, `.reset()`); `fn` receives a
  `MIOPENState`: the runtime's state seen through Caffe2's accessors (`miopen_handle()`,
  `workspace()`, `stream()`).

Differences from Caffe2: the state's block is joined back to the caller's stream even when `fn`
raises; states and handles can be closed explicitly (`miopen_states().reset()`), never at exit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from .. import backend as _backend
from .. import hip
from .. import state as _state
from .._generated import api
from ..handles import inline_miopen_handle
from ..workspace import MIOpenWorkspace

__all__ = ["MIOPENWrapper", "MIOPENState", "MIOPENWorkspace", "SyncedMIOPENState", "PerGPUMIOPENStates",
           "miopen_states"]

R = TypeVar("R")

MIOPENWorkspace = MIOpenWorkspace
SyncedMIOPENState = _state.SyncedMIOpenState
PerGPUMIOPENStates = _state.PerGPUMIOpenStates


def miopen_states() -> PerGPUMIOPENStates:
    """The process's states, indexed [device][state_idx] (shared with `miopen.with_miopen_state`)."""
    return _state.miopen_states()


class MIOPENState:
    """A runtime `MIOpenState` through Caffe2's accessors; `.state` is the runtime object."""

    __slots__ = ("state",)

    def __init__(self, state: _state.MIOpenState) -> None:
        if not isinstance(state, _state.MIOpenState):
            raise TypeError(f"MIOPENState: state must be a miopen.state.MIOpenState; got {type(state).__name__}")
        self.state = state

    def miopen_handle(self) -> api.Handle:
        """The state's handle, bound to its private stream."""
        return self.state.handle

    def workspace(self) -> MIOPENWorkspace:
        """The state's grow-only scratch (`.get(nbytes)` -> device pointer)."""
        return self.state.workspace

    def stream(self) -> _backend.StreamLike:
        """The state's private stream (work queued on it is ordered before the caller's later work)."""
        return self.state.stream

    @property
    def device(self) -> int:
        return self.state.device

    def execute(self, stream: object, f: Callable[[MIOPENState], R]) -> R:
        """Fork from `stream`, run `f(self)`, join back (Caffe2's `MIOPENState::execute`)."""
        with self.state.execute(stream):
            return f(self)

    def __repr__(self) -> str:
        return f"<MIOPENState device={self.state.device}{' closed' if self.state.closed else ''}>"


def _device_arg(device: object, fn: str) -> int:
    if device is None:
        return _backend.current().current_device()
    if isinstance(device, bool) or not isinstance(device, int) or device < 0:
        raise ValueError(f"{fn}: device must be None (the current device) or an int >= 0; got {device!r}")
    return device


class MIOPENWrapper:
    """Caffe2's `MIOPENWrapper` for the context (`device`, `stream`): `device` None is the current
    device when the wrapper is made; `stream` is anything `miopen.hip.as_stream_handle` accepts
    (None: the null stream)."""

    def __init__(self, device: int | None = None, stream: object = None) -> None:
        self.device = _device_arg(device, "MIOPENWrapper")
        _backend.current().as_stream_handle(stream, "MIOPENWrapper")  # reject a bad stream now, not at the first call
        self.stream = stream

    def inline_miopen_handle(self) -> api.Handle:
        """The calling thread's handle for the device, bound to the context's stream."""
        return inline_miopen_handle(self.stream, self.device)

    miopen_handle = inline_miopen_handle

    def with_miopen_state(self, state_idx: int, fn: Callable[[MIOPENState], R]) -> R:
        """Run `fn(state)` holding state `state_idx` (0..3) of the device: the lock is held for the
        whole call and the state's stream is forked from and joined back to the context's stream.
        Returns what `fn` returns. Other threads wait for the state; a nested call for the same state
        from `fn` raises RuntimeError (Caffe2's std::mutex would deadlock): use another state_idx."""
        if not callable(fn):
            raise TypeError(f"MIOPENWrapper.with_miopen_state: fn must be callable; got {type(fn).__name__}")
        with _state.with_miopen_state(state_idx, self.stream, self.device) as st:
            return fn(MIOPENState(st))

    @staticmethod
    def miopen_states() -> PerGPUMIOPENStates:
        """The process's states, indexed [device][state_idx]."""
        return miopen_states()

    def __repr__(self) -> str:
        return f"<MIOPENWrapper device={self.device} stream={_backend.current().as_stream_handle(self.stream)}>"
