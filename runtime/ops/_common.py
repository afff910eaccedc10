"""Shared plumbing of the ops: the handle and workspace an op call uses."""

from __future__ import annotations

from .. import hip
from .._generated import api
from ..handles import inline_miopen_handle
from ..workspace import MIOpenWorkspace, scratch


def resolve_handle(handle: api.Handle | None, stream: object, device: int | None) -> api.Handle:
    """The given handle, or the calling thread's pooled handle bound to `stream`."""
    return handle if handle is not None else inline_miopen_handle(stream, device)


def resolve_workspace(workspace: MIOpenWorkspace | None, device: int | None) -> MIOpenWorkspace:
    return workspace if workspace is not None else scratch(hip.current_device() if device is None else device)
