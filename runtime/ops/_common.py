"""Shared plumbing of the ops: the handle and workspace an op call uses."""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from .. import backend as _backend
from .._generated import api
from .._generated._support import HandleBase
from ..handles import inline_miopen_handle
from ..workspace import MIOpenWorkspace, PersistentBuffer, scratch


_S = TypeVar("_S", bound="OpState[Any]")


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
