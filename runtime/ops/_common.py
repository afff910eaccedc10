"""Shared plumbing of the ops: the handle and workspace an op call uses."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, Generic, TypeVar

from .. import backend as _backend
from .._generated import api
from .._generated._support import HandleBase
from ..descriptors import _generation, on_clear
from ..handles import inline_miopen_handle
from ..workspace import MIOpenWorkspace, PersistentBuffer, scratch


_S = TypeVar("_S", bound="OpState[Any]")
_V = TypeVar("_V")

#: the scalar types an op's fast path puts in its shape key as they are (a bool, a numpy scalar, ... takes the
#: full path, whose checks decide): ints and floats of equal value mean the same to every check of the ops
PLAIN_NUMBERS = frozenset({float, int})
PLAIN_OPTIONAL = frozenset({float, int, type(None)})


def plain_geometry(v: object) -> bool:
    """An exact int, None, or a tuple of exact ints: a window, pad, stride or dilation argument that can key a
    per-shape memo (hashable, and equal only to what means the same); anything else takes the full checks."""
    if type(v) is int or v is None:
        return True
    if type(v) is not tuple:
        return False
    for e in v:
        if type(e) is not int:
            return False
    return True


class ShapeMemo(Generic[_V]):
    """An op's fast path: per shape key (everything its checks read but the addresses, which are read on every
    call), the checked values and descriptors of the first call on it. An entry holds while none of its
    descriptors is closed; emptied with the descriptor caches (and so on a library change); bounded."""

    __slots__ = ("_items", "size")

    def __init__(self, size: int = 256) -> None:
        self._items: dict[Hashable, tuple[tuple[HandleBase, ...], _V]] = {}
        self.size = size
        on_clear(self._items.clear)

    def get(self, key: Hashable) -> _V | None:
        """The value for `key` while its descriptors are open; None otherwise, and for a key that cannot be hashed
        (an unhashable mode or argument: the full path checks and reports it)."""
        try:
            entry = self._items.get(key)
        except TypeError:
            return None
        if entry is None:
            return None
        for desc in entry[0]:
            if desc._ptr is None:
                return None
        return entry[1]

    def put(self, key: Hashable, generation: int, descs: tuple[HandleBase, ...], value: _V) -> None:
        """Remember `value` for `key`, unless the descriptor caches were cleared since `generation` (theirs when
        the checks started)."""
        if generation != _generation[0]:
            return
        if len(self._items) >= self.size:
            self._items.clear()
        try:
            self._items[key] = (descs, value)
        except TypeError:  # an unhashable key: never found either
            pass

    def __len__(self) -> int:
        return len(self._items)


def resolve_handle(handle: api.Handle | None, stream: object, device: int | None) -> api.Handle:
    """The given handle, or the calling thread's pooled handle bound to `stream`."""
    return handle if handle is not None else inline_miopen_handle(stream, device)


def resolve_workspace(workspace: MIOpenWorkspace | None, device: int | None, stream: object = None) -> MIOpenWorkspace:
    """The given workspace, or the thread's scratch for (device, stream)."""
    return workspace if workspace is not None else scratch(_backend.current().current_device() if device is None else device, stream)


_D = TypeVar("_D", bound=HandleBase)


class OpState(Generic[_D]):
    """What a forward op hands to its backward: a descriptor and, when needed, a persistent
    workspace; closed once (`close()`, or `with`)."""

    desc: _D
    workspace: PersistentBuffer | None
    _closed: bool
    #: False where `desc` is a cached, shared descriptor: close() leaves it to the cache
    _owns_desc = True

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Free the workspace and destroy the descriptor unless it is a shared one (idempotent)."""
        if self._closed:
            return
        self._closed = True
        if self.workspace is not None:
            self.workspace.close()
            self.workspace = None
        if self._owns_desc:
            self.desc.close()

    def __enter__(self: _S) -> _S:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
