"""Compiled vs runtime MIOpen versions, the version policy, and feature detection.

The compiled version is the release the bindings were generated from; the runtime version
comes from `miopenGetVersion` (absent before MIOpen 2.3). The check runs lazily (first handle),
once per loaded library and policy, and `MIOPEN_SKIP_VERSION_CHECK=1` skips it.
"""

from __future__ import annotations

import os
import threading
import warnings
from typing import Literal, NamedTuple

from ._generated import MIOPEN_VERSION, api
from ._generated import _support as _s
from .errors import MIOpenVersionError, MIOpenVersionWarning

Policy = Literal["compatible", "strict", "off"]
SKIP_ENV = "MIOPEN_SKIP_VERSION_CHECK"


class Version(NamedTuple):
    major: int
    minor: int
    patch: int

    def as_int(self) -> int:
        """major * 1_000_000 + minor * 1_000 + patch (PyTorch's packing; never ATen's lossy shifts)."""
        return self.major * 1_000_000 + self.minor * 1_000 + self.patch

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"

    @classmethod
    def parse(cls, text: str) -> Version:
        parts = text.strip().split(".")
        if len(parts) != 3 or not all(p.isdigit() for p in parts):
            raise ValueError(f"expected a version X.Y.Z; got {text!r}")
        return cls(int(parts[0]), int(parts[1]), int(parts[2]))


def compiled_version() -> Version:
    """The MIOpen release these bindings were generated from."""
    return Version.parse(MIOPEN_VERSION)


def runtime_version() -> Version | None:
    """The loaded library's version, or None when it has no `miopenGetVersion` (MIOpen < 2.3)."""
    try:
        v = api.get_version()
    except _s.MissingSymbolError:
        return None
    return Version(v.major, v.minor, v.patch)


_lock = threading.Lock()
_checked: dict[tuple[str, str], Version | None] = {}


def _regenerate_hint(runtime: Version | None) -> str:
    if runtime is None:
        return "install MIOpen 2.3 or newer"
    return (f"regenerate the bindings for the installed release: make upgrade "
            f"HEADER=/opt/rocm/include/miopen/miopen.h (or make generate MIOPEN_VERSION={runtime} if its spec is "
            f"committed), or set {SKIP_ENV}=1 to skip this check")


def check_miopen_versions(policy: Policy = "compatible", *, force: bool = False) -> Version | None:
    """Check the loaded library against the compiled version (cached per library and policy).

    compatible: the same major and not an older minor (a newer release or an older patch only warns);
    strict: major and minor equal (PyTorch's MIOpen rule); off: no check.
    Returns the runtime version (None when unknown or skipped).
    """
    if policy not in ("compatible", "strict", "off"):
        raise ValueError(f"check_miopen_versions: policy must be 'compatible', 'strict' or 'off'; got {policy!r}")
    if policy == "off" or os.environ.get(SKIP_ENV, "") not in ("", "0"):
        return None
    path = _s.library_path()
    key = (path, policy)
    with _lock:
        if key in _checked and not force:
            return _checked[key]
    compiled = compiled_version()
    runtime = runtime_version()
    problem = None
    if runtime is None:
        problem = (f"the library has no miopenGetVersion, so it is older than MIOpen 2.3; the bindings are for "
                   f"{compiled}")
    elif runtime.major != compiled.major:
        problem = f"major versions differ: runtime {runtime}, compiled {compiled}"
    elif policy == "strict" and runtime.minor != compiled.minor:
        problem = f"minor versions differ (strict policy): runtime {runtime}, compiled {compiled}"
    elif runtime.minor < compiled.minor:
        problem = f"the runtime {runtime} is older than the compiled {compiled}: functions or enum values may be missing"
    if problem:
        raise MIOpenVersionError(f"MIOpen version mismatch for {path}: {problem}; {_regenerate_hint(runtime)}")
    if runtime is not None and runtime > compiled:
        warnings.warn(f"{path} is MIOpen {runtime}, newer than the bindings ({compiled}); new functions are not "
                      f"bound until you regenerate", MIOpenVersionWarning, stacklevel=2)
    elif runtime is not None and runtime < compiled:
        warnings.warn(f"{path} is MIOpen {runtime}, an older patch release than the bindings ({compiled})",
                      MIOpenVersionWarning, stacklevel=2)
    with _lock:
        _checked[key] = runtime
    return runtime


def reset_version_cache() -> None:
    with _lock:
        _checked.clear()


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
    if not all(hasattr(lib, s) for s in symbols):
        return False
    runtime = runtime_version() if name != "get_version" else None
    return runtime is None or runtime >= minimum
