"""Every exception of the package in one place: MIOpen status errors (generated from the status
enum), HIP errors, and the runtime's own (versions, workspace, scaling rules, fusion).
"""

from __future__ import annotations

from ._generated.errors import *  # noqa: F403
from ._generated.errors import STATUS_EXCEPTIONS, MIOpenError, MIOpenWarning, raise_status
from ._generated._support import MIOpenVersionError, MIOpenVersionWarning
from .hip import HipError, HipForkError, HipLibraryNotFoundError, HipOutOfMemoryError


class WorkspaceOOM(MemoryError):
    """Scratch memory could not be allocated even after freeing caches and retrying once."""


class WorkspaceLimitError(MemoryError):
    """A request exceeds the workspace cap (`set_workspace_limit`)."""


class ScalingRuleError(ValueError):
    """Scaling factors MIOpen does not support for this operation (2-D convolutions: alpha=1, beta=0)."""


class ShapeError(ValueError):
    """Tensor shapes or dtypes that an operation cannot accept; raised before any MIOpen call."""


class FusionError(RuntimeError):
    """MIOpen rejected a fusion plan (it cannot fuse this combination)."""


def check_status(code: int, function: str, args: dict[str, object] | None = None) -> None:
    """Raise the exception of a failing status (warn for GpuOperationsSkipped); no-op on success."""
    if code:
        raise_status(code, function, args or {})


__all__ = [
    "MIOpenError", "MIOpenWarning", "STATUS_EXCEPTIONS", "HipError", "HipOutOfMemoryError", "HipLibraryNotFoundError", "HipForkError",
    "MIOpenVersionError", "MIOpenVersionWarning", "WorkspaceOOM", "WorkspaceLimitError", "ScalingRuleError",
    "ShapeError", "FusionError", "check_status",
]
