"""The library state the support modules share: the loaded library, the bound release, the version policy.

One home, read and written as attributes (`_state.lib`), never copied: loading and unloading
(`_support`), the handle objects (`_handlebase`) and argument conversion all see the same values."""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Callable

TYPE_CHECKING = False  # typing stays unimported at run time (import cost); type checkers read the block below
if TYPE_CHECKING:
    from typing import Any

#: the generated package (`miopen._generated`)
PACKAGE = __name__.rpartition(".")[0]
#: guards loading, binding and unloading
lock = threading.RLock()
lib: ctypes.CDLL | None = None
lib_path: str = ""
#: called after every load and unload (the releases' raw layers and the runtime forget what they cached)
on_reset: list[Callable[[], None]] = []
policy = "compatible"
bound: str | None = None  # the release whose layer is bound
bound_modules: tuple[Any, Any] | None = None  # its (raw, api) modules
runtime: tuple[int, int, int] | None = None  # the loaded library's version
generation = 0  # bumped by unload_library(): objects made under an older library are retired, never destroyed


def _after_fork_in_child() -> None:
    """A forked child gets a fresh lock (one another thread held at fork time would stay locked)."""
    global lock
    lock = threading.RLock()


os.register_at_fork(after_in_child=_after_fork_in_child)
