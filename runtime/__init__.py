"""miopen: MIOpen for Python — generated bindings of miopen.h plus a handwritten runtime.

`import miopen` works without MIOpen installed: the library is opened on the first call
(`MIOPEN_LIBRARY`, `ROCM_PATH`, /opt/rocm/lib, then the loader path). The runtime modules
(`miopen.hip`, `miopen.handles`, `miopen.state`, `miopen.workspace`, `miopen.descriptors`,
`miopen.algo`, `miopen.ops`, `miopen.scopes`, ...) load on first use, so importing stays fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._generated import MIOPEN_VERSION, api, raw
from ._generated._support import LibraryNotFoundError, MissingSymbolError, load_library, unload_library
from ._generated.api import *  # noqa: F403
from ._generated.api import __all__ as _api_all
from ._generated.errors import *  # noqa: F403
from ._generated.errors import __all__ as _errors_all

if TYPE_CHECKING:
    from . import algo, descriptors, errors, handles, hip, layout, ops, scopes, state, tensor, version, workspace
    from .descriptors import k_one, k_zero, tensor_descriptor
    from .handles import inline_miopen_handle
    from .scopes import create_scope, has_scope
    from .state import with_miopen_state
    from .tensor import Tensor, as_tensor
    from .version import check_miopen_versions, has_feature
    from .workspace import set_workspace_limit, workspace_limit

__version__ = "0.1.0"

_LAZY = {
    "check_miopen_versions": "version", "has_feature": "version", "inline_miopen_handle": "handles",
    "with_miopen_state": "state", "set_workspace_limit": "workspace", "workspace_limit": "workspace",
    "tensor_descriptor": "descriptors", "k_one": "descriptors", "k_zero": "descriptors", "Tensor": "tensor",
    "as_tensor": "tensor", "create_scope": "scopes", "has_scope": "scopes",
}
_SUBMODULES = {"hip", "version", "handles", "state", "workspace", "descriptors", "layout", "algo", "ops", "scopes",
               "tensor", "errors"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'miopen' has no attribute {name!r}")


__all__ = ["__version__", "MIOPEN_VERSION", "api", "raw", "LibraryNotFoundError", "MissingSymbolError", "load_library",
           "unload_library", *_api_all, *_errors_all, *_LAZY]
del _api_all, _errors_all
