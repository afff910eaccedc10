"""The 3.x ops MIOpen computes only with HIP kernels: on an OpenCL build they fail with a status that names no cause,
so their status becomes `errors.HipBuildRequiredError`, which says a HIP build is needed. Installed by
`import miopen` (cheap: the backend is looked up only when such a status comes back)."""

from __future__ import annotations

from collections.abc import Mapping

from ._generated import _support as _s
from ._generated.errors import raise_status

#: 3.x beta ops whose every solver is HIP-only: on an OpenCL build MIOpen tries to compile HIP for the OpenCL device
#: and answers UnknownError (7) (measured on MIOpen 3.3.0's OpenCL build, tests/test_real_miopen_ocl330.py)
HIP_ONLY_FUNCTIONS = frozenset({"miopenLayerNormForward", "miopenGroupNormForward", "miopenCatForward",
                                "miopenReduceExtremeForward"})
_UNKNOWN_ERROR = 7


def _raise_naming_the_backend(status: int, function: str, arguments: Mapping[str, object]) -> None:
    """Status 7 from a HIP-only function on an OpenCL build becomes HipBuildRequiredError; the rest as generated."""
    if status == _UNKNOWN_ERROR and function in HIP_ONLY_FUNCTIONS:
        from . import backend
        from .errors import HipBuildRequiredError  # imported here: `import miopen` stays light

        if backend.name() == "OpenCL":
            raise HipBuildRequiredError(status, function, dict(arguments))
    raise_status(status, function, arguments)


_s._raise_hook[:] = [_raise_naming_the_backend]
