"""Every exception of the package in one place: MIOpen status errors (generated from the status
enum), HIP errors, and the runtime's own (versions, workspace, scaling rules, fusion).
"""

from __future__ import annotations

from ._generated.errors import *  # noqa: F403
from ._generated.errors import STATUS_EXCEPTIONS, MIOpenError, MIOpenUnknownError, MIOpenWarning, raise_status
from collections.abc import Mapping

from ._generated import _support as _s
from ._generated._support import MIOpenVersionError, MIOpenVersionWarning
from .hip import HipError, HipLibraryNotFoundError, HipOutOfMemoryError


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


class HipBuildRequiredError(MIOpenUnknownError):
    """A 3.x op whose every solver is HIP-only, called on an OpenCL build of MIOpen: MIOpen tries to compile HIP
    for the OpenCL device and answers UnknownError (7); a HIP build of MIOpen is needed."""

    def __init__(self, status: int, function: str, arguments: dict[str, object] | None = None) -> None:
        super().__init__(status, function, arguments)
        self.args = (f"{function}: this MIOpen is an OpenCL build and {function}'s kernels are HIP-only (MIOpen "
                     f"answered {self.status_name}); use a HIP build of MIOpen for it. {self.args[0]}",)


#: 3.x beta ops whose every solver is HIP-only: on an OpenCL build MIOpen tries to compile HIP for the OpenCL device
#: and answers UnknownError (7) (measured on MIOpen 3.3.0's OpenCL build, tests/test_real_miopen_ocl330.py)
HIP_ONLY_FUNCTIONS = frozenset({"miopenLayerNormForward", "miopenGroupNormForward", "miopenCatForward",
                                "miopenReduceExtremeForward"})
_UNKNOWN_ERROR = 7


def _raise_naming_the_backend(status: int, function: str, arguments: Mapping[str, object]) -> None:
    """Status 7 from a HIP-only function on an OpenCL build becomes HipBuildRequiredError; the rest as generated."""
    if status == _UNKNOWN_ERROR and function in HIP_ONLY_FUNCTIONS:
        from . import backend

        if backend.name() == "OpenCL":
            raise HipBuildRequiredError(status, function, dict(arguments))
    raise_status(status, function, arguments)


_s._raise_hook[:] = [_raise_naming_the_backend]


def check_status(code: int, function: str, args: dict[str, object] | None = None) -> None:
    """Raise the exception of a failing status (warn for GpuOperationsSkipped); no-op on success."""
    if code:
        raise_status(code, function, args or {})


__all__ = [
    "MIOpenError", "MIOpenWarning", "STATUS_EXCEPTIONS", "HipError", "HipOutOfMemoryError", "HipLibraryNotFoundError",
    "MIOpenVersionError", "MIOpenVersionWarning", "WorkspaceOOM", "WorkspaceLimitError", "ScalingRuleError",
    "ShapeError", "FusionError", "HipBuildRequiredError", "check_status",
]
