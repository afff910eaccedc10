"""The 3.x ops MIOpen computes only with HIP kernels: on an OpenCL build they fail with a status that names no cause,
so their status becomes `errors.HipBuildRequiredError`, which says a HIP build is needed. Installed by
`import miopen` (cheap: the backend is looked up only when such a status comes back)."""

from __future__ import annotations

from collections.abc import Mapping

from ._generated import _support as _s
from ._generated.errors import raise_status

#: 3.x beta ops whose every solver is HIP-only: on an OpenCL build MIOpen tries to compile HIP for the OpenCL device
#: and answers UnknownError (7) (measured on MIOpen 3.3.0's OpenCL build, tests/real/kernels/test_real_miopen_ocl330.py)
HIP_ONLY_FUNCTIONS = frozenset({"miopenLayerNormForward", "miopenGroupNormForward", "miopenCatForward",
                                "miopenReduceExtremeForward"})
#: ops whose OpenCL kernels MIOpen replaced by HIP ones, from the release given on: dropout (MIOpenDropout.cl gone,
#: MIOpenDropoutHIP.cpp built on every backend, 3.3.0; 2.17.0's OpenCL dropout computes on PoCL)
HIP_ONLY_SINCE: dict[str, tuple[int, int, int]] = {
    fn: (3, 3, 0) for fn in ("miopenSetDropoutDescriptor", "miopenRestoreDropoutDescriptor", "miopenDropoutForward",
                             "miopenDropoutBackward")}
_UNKNOWN_ERROR = 7


def _hip_only(function: str) -> bool:
    if function in HIP_ONLY_FUNCTIONS:
        return True
    since = HIP_ONLY_SINCE.get(function)
    if since is None:
        return False
    version = _s.runtime_version()
    return version is not None and tuple(version) >= since


def _raise_naming_the_backend(status: int, function: str, arguments: Mapping[str, object]) -> None:
    """Status 7 from a HIP-only function on an OpenCL build becomes HipBuildRequiredError; the rest as generated."""
    if status == _UNKNOWN_ERROR and _hip_only(function):
        from . import backend
        from .errors import HipBuildRequiredError  # imported here: `import miopen` stays light

        if backend.name() == "OpenCL":
            raise HipBuildRequiredError(status, function, dict(arguments))
    raise_status(status, function, arguments)


_s._raise_hook[:] = [_raise_naming_the_backend]
