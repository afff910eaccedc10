"""The in-flight guard: a handle is destroyed only once no call of the typed API is using it."""

from __future__ import annotations

import ctypes
import os
import sys
import threading
import time
from collections.abc import Sequence

from . import _state

TYPE_CHECKING = False  # typing stays unimported at run time (import cost); type checkers read the block below
if TYPE_CHECKING:
    from typing import Any

# --------------------------------------------------------------------------- calls in flight

#: guards every change of a handle object's pointer and of its owner's list of children
_close_lock = threading.RLock()
_MAX_WAIT_SLEEP = 1e-3


def _after_fork_in_child() -> None:
    """A forked child gets fresh locks (one another thread held at fork time would stay locked)."""
    global _close_lock
    _close_lock = threading.RLock()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _wrapper_module(name: object) -> bool:
    """A typed-API module of one release (`<package>.vX_Y_Z.api`), whose functions are the wrappers."""
    return isinstance(name, str) and name.startswith(_state.PACKAGE + ".v") and name.endswith(".api")


def _holds(frame: Any, objects: Sequence[object]) -> bool:
    """Does the frame's local namespace reference one of `objects` (directly, in a list or tuple
    argument, or in the handle array `in_array` made)?"""
    for value in frame.f_locals.values():
        if any(value is o for o in objects):
            return True
        if type(value) in (list, tuple) or isinstance(value, ctypes.Array):
            items = getattr(value, "_miogen_handles", value)
            if any(item is o for item in items for o in objects):
                return True
    return False


def calls_in_flight(objects: Sequence[object], skip: Any = None) -> tuple[int, bool]:
    """(threads with a typed-API call running through one of `objects`, whether the current thread
    is one of them). A wrapper's frame references its arguments from before it reads a handle's
    pointer until after the C call returns, so a call that read the pointer before it was marked
    closed is found here until it has returned; a call that starts later sees the object closed.
    `skip`: a frame to ignore (the destroy wrapper that is closing the object itself)."""
    me = threading.get_ident()
    others, mine = 0, False
    frames = sys._current_frames()
    frame: Any = None
    try:
        for tid, frame in frames.items():
            while frame is not None:
                if frame is not skip and _wrapper_module(frame.f_globals.get("__name__")) and _holds(frame, objects):
                    if tid == me:
                        mine = True
                    else:
                        others += 1
                    break
                frame = frame.f_back
    finally:  # this very frame is among them: a reference kept here would keep it, and every caller, alive
        frames.clear()
        frame = skip = None
    return others, mine


def wait_idle(objects: Sequence[object], skip: Any = None) -> None:
    """Block until no other thread has a call through `objects` in flight (they were marked closed
    first, so no new call can start); polling with short sleeps, so the calls never pay for the
    guard. A call through them in flight in this very thread (a callback of that call closing it)
    cannot be waited for: RuntimeError, and the caller destroys nothing."""
    delay = 0.0
    while True:
        others, mine = calls_in_flight(objects, skip)
        if mine:
            names = ", ".join(sorted({type(o).__name__ for o in objects}))
            raise RuntimeError(f"closing a {names} while a call through it is in progress on this thread "
                               f"(from a callback or a signal handler?); it is marked closed but not destroyed")
        if not others:
            return
        time.sleep(delay)
        delay = min(delay * 2 or 1e-5, _MAX_WAIT_SLEEP)
