"""Caffe2's MIOpen states: up to 4 lock-guarded states per GPU, each with its own handle, private
stream, two events and workspace, forking from and joining back to the caller's stream.

`with with_miopen_state(0, stream) as st:` records `before` on the caller's stream, makes the
state's stream wait on it, yields the state (queue work on `st.stream` with `st.handle` and
`st.workspace`), then records `after` on the state's stream and makes the caller's stream wait.
The lock is held for the whole block: two threads must not interleave event records on one state.

Re-entering a state the calling thread already holds (nested ``with with_miopen_state(0):``, also
through `miopen.caffe2`) is a RuntimeError naming the device and state index, never a deadlock: the
inner block would fork the state's stream again while the outer block's work is queued on it and share
its workspace (a grow would free memory the outer block's kernels still use), so it is not made
re-entrant. Use another state_idx for a nested block. Other threads wait for the holder as before.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager

from . import backend as _backend
from . import hip
from ._generated import _support as _gs
from ._generated import api
from .handles import disown
from .version import check_miopen_versions, version_policy
from .workspace import MIOpenWorkspace

MAX_STATES_PER_GPU = 4


class MIOpenState:
    """A handle bound to a private stream, `before`/`after` events and a workspace, on one device."""

    def __init__(self, device: int, allocator: hip.Allocator | None = None) -> None:
        self.device = device
        check_miopen_versions(version_policy())
        self.backend = b = _backend.current()
        with b.device_guard(device):
            self.stream: _backend.StreamLike = b.new_stream(device)
            self.handle = api.create_with_stream(self.stream.handle)
            self.before = b.new_event(device)
            self.after = b.new_event(device)
        self.workspace = MIOpenWorkspace(device, allocator)
        self.closed = False

    @contextmanager
    def execute(self, caller_stream: object = None) -> Iterator[MIOpenState]:
        """Fork from `caller_stream` onto the private stream, run the block, join back."""
        if self.closed:
            raise ValueError(f"this MIOpenState (device {self.device}) is closed")
        b = self.backend
        caller = b.as_stream_handle(caller_stream)
        with b.device_guard(self.device):
            b.fork(caller, self.stream, self.before)
            try:
                yield self
            finally:  # join even when the block raised: queued work must stay ordered before the caller's
                b.join(self.stream, caller, self.after)

    def close(self) -> None:
        """Destroy the handle, stream, events and workspace now (explicit only)."""
        if self.closed:
            return
        self.closed = True
        self.workspace.close()
        self.handle.close()
        self.before.close()
        self.after.close()
        self.stream.close()


class StateLock:
    """The lock of one state: other threads wait for it; the holding thread acquiring it again gets a
    RuntimeError (naming the device and state index) instead of a deadlock."""

    __slots__ = ("_lock", "_owner", "device", "state_idx")

    def __init__(self, device: int, state_idx: int | None = None) -> None:
        self._lock = threading.Lock()
        self._owner: int | None = None
        self.device = device
        self.state_idx = state_idx

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        if self._owner == threading.get_ident():
            which = "a state" if self.state_idx is None else f"state {self.state_idx}"
            raise RuntimeError(f"{which} of device {self.device} is already held by this thread (a nested "
                               f"with_miopen_state, or reset() inside one): states are not re-entrant and this "
                               f"would wait for itself; use another state_idx for the inner block")
        if not self._lock.acquire(blocking, timeout):
            return False
        self._owner = threading.get_ident()
        return True

    def release(self) -> None:
        if self._owner != threading.get_ident():
            raise RuntimeError(f"state lock of device {self.device}: released by a thread that does not hold it")
        self._owner = None
        self._lock.release()

    def locked(self) -> bool:
        return self._lock.locked()

    def held_by_me(self) -> bool:
        """Whether the calling thread holds the lock."""
        return self._owner == threading.get_ident()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


class SyncedMIOpenState:
    """A lock plus a lazily created state (`mutex` is Caffe2's name for `lock`); the lock refuses
    re-entry from its holder (`StateLock`)."""

    def __init__(self, device: int, state_idx: int | None = None) -> None:
        self.device = device
        self.state_idx = state_idx
        self.lock = StateLock(device, state_idx)
        self.state: MIOpenState | None = None

    @property
    def mutex(self) -> StateLock:
        return self.lock

    def get(self) -> MIOpenState:
        """The state (create it if needed, or if its handle was retired with its library); call with `lock` held."""
        old = self.state
        if old is not None and not old.closed and not old.handle.closed:
            return old
        self.state = fresh = MIOpenState(self.device)
        if old is not None:
            old.close()  # its stream, events and workspace (the retired handle is never destroyed)
        return fresh

    def reset(self, state: MIOpenState | None = None) -> None:
        """Replace the held state, closing the old one (Caffe2's `state.reset(...)`): with no
        argument the next use creates a fresh state. Takes the lock: from inside a block that holds
        this state it raises RuntimeError."""
        if state is not None and (not isinstance(state, MIOpenState) or state.device != self.device):
            raise ValueError(f"SyncedMIOpenState.reset: state must be an MIOpenState of device {self.device} or "
                             f"None; got {state!r}")
        with self.lock:
            old, self.state = self.state, state
        if old is not None and old is not state:
            old.close()


class DeviceStates:
    """The states of one device, indexed by state_idx (`states[device][state_idx]`)."""

    def __init__(self, states: PerGPUMIOpenStates, device: int) -> None:
        self._states = states
        self.device = device

    def __getitem__(self, state_idx: int) -> SyncedMIOpenState:
        return self._states.synced(self.device, state_idx)

    def __len__(self) -> int:
        return self._states.max_states

    def __iter__(self) -> Iterator[SyncedMIOpenState]:
        return (self[i] for i in range(len(self)))


class PerGPUMIOpenStates:
    """States indexed [device][state_idx]; created on demand, never destroyed at interpreter exit."""

    def __init__(self, max_states: int = MAX_STATES_PER_GPU) -> None:
        if isinstance(max_states, bool) or not isinstance(max_states, int) or max_states < 1:
            raise ValueError(f"PerGPUMIOpenStates: max_states must be a positive int; got {max_states!r}")
        self.max_states = max_states
        self._lock = threading.Lock()
        self._states: dict[tuple[int, int], SyncedMIOpenState] = {}
        _STATES.add(self)

    def _after_fork(self) -> None:
        """In a forked child: a fresh lock and no states. The parent's handles, streams, events and
        workspaces are forgotten, never destroyed or reused (their locks may be held by threads that
        do not exist here)."""
        self._lock = threading.Lock()
        for synced in self._states.values():
            st = synced.state
            if st is not None:
                st.closed = True
                disown(st.handle)
                for obj in (st.stream, st.before, st.after):
                    disown(obj)
                st.workspace._lock = threading.Lock()
                st.workspace._ptr, st.workspace._nbytes = None, 0
        self._states = {}

    def synced(self, device: int, state_idx: int) -> SyncedMIOpenState:
        if isinstance(device, bool) or not isinstance(device, int) or device < 0:
            raise ValueError(f"Invalid device {device!r}: expected an int >= 0")
        if isinstance(state_idx, bool) or not isinstance(state_idx, int) or not 0 <= state_idx < self.max_states:
            raise ValueError(f"Invalid state_idx {state_idx!r}: expected an int in [0, {self.max_states})")
        with self._lock:
            key = (device, state_idx)
            if key not in self._states:
                self._states[key] = SyncedMIOpenState(device, state_idx)
            return self._states[key]

    def __getitem__(self, device: int) -> DeviceStates:
        """Caffe2's `miopen_states()[device][state_idx]`."""
        if isinstance(device, bool) or not isinstance(device, int) or device < 0:
            raise ValueError(f"Invalid device {device!r}: expected an int >= 0")
        return DeviceStates(self, device)

    def reset(self, device: int | None = None) -> None:
        """Close the states of `device` (default: every device); the next use creates fresh ones."""
        with self._lock:
            synced = [s for (dev, _), s in self._states.items() if device is None or dev == device]
        for s in synced:
            s.reset()

    def _forget_retired(self) -> None:
        """Drop the states whose handle was retired with its library (those not held by a block right now;
        a held one is replaced at its next use)."""
        with self._lock:
            synced = list(self._states.values())
        for s in synced:
            if s.lock.acquire(blocking=False):
                try:
                    old = s.state
                    if old is not None and old.handle.closed:
                        s.state = None
                        old.close()
                finally:
                    s.lock.release()

    def close(self) -> None:
        with self._lock:
            states, self._states = list(self._states.values()), {}
        for synced in states:
            with synced.lock:
                if synced.state is not None:
                    synced.state.close()


_STATES: weakref.WeakSet[PerGPUMIOpenStates] = weakref.WeakSet()
_states = PerGPUMIOpenStates()


def _after_fork_in_child() -> None:
    for states in list(_STATES):
        states._after_fork()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _library_changed() -> None:
    for states in list(_STATES):
        states._forget_retired()


_gs._on_reset.append(_library_changed)


def miopen_states() -> PerGPUMIOpenStates:
    return _states


@contextmanager
def with_miopen_state(state_idx: int = 0, stream: object = None, device: int | None = None) -> Iterator[MIOpenState]:
    """Hold state `state_idx` of `device` (default: current) for the block, forked from `stream`.

    Other threads wait for the block to end; the same thread entering the same state again inside
    it gets a RuntimeError (states are not re-entrant: see the module docstring)."""
    dev = _backend.current().current_device() if device is None else device
    synced = _states.synced(dev, state_idx)
    with synced.lock:
        state = synced.get()
        with state.execute(stream) as st:
            yield st
