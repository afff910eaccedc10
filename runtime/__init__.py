"""miopen: MIOpen for Python — generated bindings of miopen.h plus a handwritten runtime.

`import miopen` works without MIOpen installed and loads nothing; neither do `dir()`, `hasattr`, `help()`,
`inspect` or `from miopen import *`: until a library is loaded the generated names are those of the newest
release that has them (`MIOPEN_VERSION` is None). The first call of a generated function (or
`miopen.load_library(path)`) opens the library (`MIOPEN_LIBRARY` when set, else `ROCM_PATH`, /opt/rocm/lib,
then the loader path), reads its version and binds the generated layer of that release (`miopen.RELEASES`
lists them). The runtime modules
(`miopen.hip`, `miopen.backend`, `miopen.handles`, `miopen.state`, `miopen.workspace`, `miopen.descriptors`,
`miopen.algo`, `miopen.ops`, `miopen.caffe2`, ...) load on first use, so importing stays fast.
"""

from __future__ import annotations

import importlib

from ._generated import _support as _gs
from ._generated import api, raw
from ._generated._support import (
    RELEASES,
    LibraryNotFoundError,
    MIOpenVersionError,
    MIOpenVersionWarning,
    MissingSymbolError,
    bound_release,
    load_library,
    unload_library,
)
from ._generated.errors import *  # noqa: F403
from . import _hiponly  # noqa: F401  (status 7 of a HIP-only op on an OpenCL build names the cause)
from . import settings as _settings
from .settings import configure

_gs.before_load.append(_settings.apply_defaults)  # miopen's defaults (a quiet MIOpen log) before the library loads

TYPE_CHECKING = False  # typing stays unimported at run time (import cost); type checkers read the block below
if TYPE_CHECKING:
    from typing import Any
    from . import (settings, algo, backend, caffe2, descriptors, errors, handles, hip, layout, opencl, ops, quirks, state,
                   tensor, version, workspace)
    from ._generated.api import *  # noqa: F403
    from .descriptors import k_one, k_zero, tensor_descriptor
    from .handles import inline_miopen_handle
    from .state import with_miopen_state
    from .tensor import Tensor, as_tensor
    from .version import check_miopen_versions, has_feature
    from .workspace import set_workspace_limit, workspace_limit

    MIOPEN_VERSION: str | None

__version__ = "0.1.0"

_LAZY = {
    "check_miopen_versions": "version", "has_feature": "version", "inline_miopen_handle": "handles",
    "with_miopen_state": "state", "set_workspace_limit": "workspace", "workspace_limit": "workspace",
    "tensor_descriptor": "descriptors", "k_one": "descriptors", "k_zero": "descriptors", "Tensor": "tensor",
    "as_tensor": "tensor",
}
_SUBMODULES = {"settings", "hip", "opencl", "backend", "quirks", "version", "handles", "state", "workspace", "descriptors", "layout", "algo", "ops", "caffe2",
               "tensor", "errors"}
_FIXED = ["__version__", "MIOPEN_VERSION", "RELEASES", "api", "raw", "LibraryNotFoundError", "MissingSymbolError",
          "MIOpenVersionError", "MIOpenVersionWarning", "bound_release", "load_library", "unload_library", "configure"]


if not TYPE_CHECKING:  # for type checkers the names below are the static ones, not "anything"

    def __getattr__(name: str) -> Any:
        if name in _LAZY:
            return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        if name in _SUBMODULES:
            return importlib.import_module(f".{name}", __name__)
        if name == "__all__":  # the bound release's names (the newest release's while none is): loads no library
            from ._generated import errors as _errors

            return [*_FIXED, *_gs.facade_all("package"), *_errors.__all__, *_LAZY]
        if name.startswith("__"):
            raise AttributeError(f"module 'miopen' has no attribute {name!r}")
        return _gs.facade_attr(globals(), "package", name)

    def __dir__() -> list[str]:
        return sorted({*_gs.facade_dir(globals(), "package"), *_LAZY, *_SUBMODULES})


_gs.register_facade(globals(), "package")

if TYPE_CHECKING:  # at run time `__all__` is the bound release's (see __getattr__)
    from ._generated import errors as _generated_errors

    __all__ = ["__version__", "MIOPEN_VERSION", "RELEASES", "api", "raw", "LibraryNotFoundError", "MissingSymbolError",
               "MIOpenVersionError", "MIOpenVersionWarning", "bound_release", "load_library", "unload_library",
               "configure", "check_miopen_versions", "has_feature", "inline_miopen_handle", "with_miopen_state",
               "set_workspace_limit", "workspace_limit", "tensor_descriptor", "k_one", "k_zero", "Tensor", "as_tensor"]
    __all__ += api.__all__
    __all__ += _generated_errors.__all__
