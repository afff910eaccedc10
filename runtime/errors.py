"""Every exception of the package in one place: MIOpen status errors (generated from the status
enum), HIP errors, and the runtime's own (versions, workspace, scaling rules, fusion, settings, HIP-only ops).
"""

from __future__ import annotations

from ._generated.errors import *  # noqa: F403
from ._generated.errors import STATUS_EXCEPTIONS, MIOpenError, MIOpenUnknownError, MIOpenWarning, raise_status
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


class SettingError(ValueError):
    """`miopen.configure()` got an unknown setting or a value it does not take; `setting` names it."""

    def __init__(self, message: str, setting: str) -> None:
        super().__init__(message)
        self.setting = setting


class SettingTooLateError(RuntimeError):
    """`miopen.configure()` would change a variable MIOpen has had its chance to read (it reads each once): a MIOpen
    library is already in the process. `settings` names them."""

    def __init__(self, message: str, settings: list[str]) -> None:
        super().__init__(message)
        self.settings = settings


class BackendError(RuntimeError):
    """What the loaded MIOpen's backend cannot do (or its Python dependency is missing)."""


class HipBuildRequiredError(MIOpenUnknownError):
    """A 3.x op whose every solver is HIP-only, called on an OpenCL build of MIOpen: MIOpen tries to compile HIP
    for the OpenCL device and answers UnknownError (7); a HIP build of MIOpen is needed."""

    def __init__(self, status: int, function: str, arguments: dict[str, object] | None = None) -> None:
        super().__init__(status, function, arguments)
        self.args = (f"{function}: this MIOpen is an OpenCL build and {function}'s kernels are HIP-only (MIOpen "
                     f"answered {self.status_name}); use a HIP build of MIOpen for it. {self.args[0]}",)


def check_status(code: int, function: str, args: dict[str, object] | None = None) -> None:
    """Raise the exception of a failing status (warn for GpuOperationsSkipped); no-op on success."""
    if code:
        raise_status(code, function, args or {})


__all__ = [
    "MIOpenError", "MIOpenWarning", "STATUS_EXCEPTIONS", "HipError", "HipOutOfMemoryError", "HipLibraryNotFoundError",
    "HipForkError", "MIOpenVersionError", "MIOpenVersionWarning", "WorkspaceOOM", "WorkspaceLimitError",
    "ScalingRuleError",
    "ShapeError", "FusionError", "SettingError", "SettingTooLateError", "BackendError", "HipBuildRequiredError",
    "check_status",
]
