"""The loaded MIOpen release, the version policy, and feature detection.

Loading the library reads `miopenGetVersion` and binds the generated layer of that release
(`miopen._generated._support`); this module exposes the outcome: the bound release
(`compiled_version`), the library's own version (`runtime_version`), the policy that decides what
is refused (`check_miopen_versions`), and `has_feature`. `MIOPEN_SKIP_VERSION_CHECK=1` turns
refusals off (the release is still selected by the library's version).
"""

from __future__ import annotations

import threading
from typing import Literal

from ._generated import _state
from ._generated import _support as _s
from ._generated._selection import POLICIES, Version
from ._generated._selection import exports as _exports
from .errors import MIOpenVersionError, MIOpenVersionWarning

#: compatible: a committed release of the same major.minor (another patch warns), else the newest older one (warns);
#: strict: the same major.minor or nothing; off: nothing is refused (the support layer's `POLICIES`)
Policy = Literal["compatible", "strict", "off"]
SKIP_ENV = _s.SKIP_VERSION_CHECK_ENV or "MIOPEN_SKIP_VERSION_CHECK"
__all__ = ["Policy", "Version", "compiled_version", "runtime_version", "check_miopen_versions", "has_feature",
           "reset_version_cache", "set_version_policy", "version_policy", "FEATURES", "MIOpenVersionError",
           "MIOpenVersionWarning"]


def _check_policy(policy: object, fn: str) -> Policy:
    if policy not in POLICIES:
        raise ValueError(f"{fn}: policy must be {', '.join(map(repr, POLICIES[:-1]))} or {POLICIES[-1]!r}; "
                         f"got {policy!r}")
    return policy  # type: ignore[return-value]


def set_version_policy(policy: Policy) -> None:
    """The policy the next library load, and the check when the first handle is created, apply."""
    _s.set_version_policy(_check_policy(policy, "set_version_policy"))


def version_policy() -> Policy:
    """The version policy in force (the one home: the support layer's state)."""
    return _check_policy(_state.policy, "version_policy")


def compiled_version() -> Version:
    """The release whose generated layer is bound (the library is loaded first if needed)."""
    return Version.parse(_s.bound_release())


def runtime_version() -> Version | None:
    """The loaded library's version, or None when it has no `miopenGetVersion`."""
    v = _s.runtime_version()
    return None if v is None else Version(*v)


_lock = threading.Lock()
_checked: dict[tuple[str, str], Version | None] = {}


def check_miopen_versions(policy: Policy = "compatible", *, force: bool = False) -> Version | None:
    """Apply `policy` to the loaded library (loading and binding it first); cached per library and policy.

    compatible: the same major.minor as a committed release (another patch warns), else the newest
    older release (warns that what the library added is unbound); an older library raises.
    strict: a committed release of the same major.minor is required. off: nothing is refused.
    Returns the library's version (None when unknown).
    """
    _s.set_version_policy(_check_policy(policy, "check_miopen_versions"))
    path = _s.library_path()
    key = (path, policy)
    with _lock:
        if key in _checked and not force:
            return _checked[key]
    version = _s.check_binding(policy)
    result = None if version is None else Version(*version)
    with _lock:
        _checked[key] = result
    return result


def reset_version_cache() -> None:
    with _lock:
        _checked.clear()


_s._on_reset.append(reset_version_cache)  # another library (or the same path holding another file): check again


# name -> (symbols that must be exported, minimum runtime version)
FEATURES: dict[str, tuple[tuple[str, ...], Version]] = {
    "get_version": (("miopenGetVersion",), Version(2, 3, 0)),
    "immediate": (("miopenConvolutionForwardGetSolution", "miopenConvolutionForwardImmediate"), Version(2, 0, 0)),
    "find2": (("miopenCreateConvProblem", "miopenFindSolutions", "miopenRunSolution"), Version(2, 19, 0)),
    "find2_preallocated": (("miopenSetFindOptionPreallocatedTensor",
                            "miopenSetFindOptionPreallocatedWorkspace"), Version(2, 20, 0)),
    "deterministic_attr": (("miopenSetConvolutionAttribute",), Version(2, 18, 0)),
    "find_mode_api": (("miopenSetConvolutionFindMode",), Version(3, 4, 0)),
    "tensor_desc_v2": (("miopenSetTensorDescriptorV2",), Version(3, 2, 0)),
    "fusion": (("miopenCreateFusionPlan", "miopenCompileFusionPlan", "miopenExecuteFusionPlan"), Version(2, 0, 0)),
    "batchnorm_v2": (("miopenBatchNormalizationForwardTraining_V2",), Version(3, 3, 0)),
    "seq_rnn": (("miopenRNNForward", "miopenSetRNNDataSeqTensorDescriptor"), Version(2, 20, 0)),
    "solver_names": (("miopenGetSolverName",), Version(3, 5, 0)),
}


def has_feature(name: str) -> bool:
    """Whether the loaded library offers a feature: its symbols are exported and its version is recent enough."""
    if name not in FEATURES:
        raise ValueError(f"has_feature: unknown feature {name!r}; known: {', '.join(sorted(FEATURES))}")
    symbols, minimum = FEATURES[name]
    lib = _s.library()
    bound = _s.bound_raw_prototypes()
    if not all(s in bound and _exports(lib, s) for s in symbols):
        return False  # the library lacks it, or the bound release's layer has no binding for it
    runtime = runtime_version() if name != "get_version" else None
    return runtime is None or runtime >= minimum


def require_feature(name: str, what: str) -> None:
    """Raise MissingSymbolError naming `what`, the feature and the bound release when it is unavailable."""
    if not has_feature(name):
        symbols = FEATURES[name][0]
        raise _s.MissingSymbolError(
            symbols[0], _s.library_path(),
            f": {what} needs the {name!r} feature ({', '.join(symbols)}), which the loaded MIOpen "
            f"{runtime_version() or 'of unknown version'} (bound release {_s.bound_release()}) lacks")
