"""miopen: MIOpen for Python — generated bindings of miopen.h plus a handwritten runtime.

`import miopen` works without MIOpen installed; the library is opened on the first call
(`MIOPEN_LIBRARY`, `ROCM_PATH`, /opt/rocm/lib, then the loader path).
"""

from __future__ import annotations

from ._generated import *  # noqa: F403
from ._generated import MIOPEN_VERSION, api, errors, raw
from ._generated import __all__ as _generated_all

__version__ = "0.1.0"
__all__ = ["__version__", *_generated_all]
del _generated_all
