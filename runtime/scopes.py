"""`miopen.scopes`, the public import path of Caffe2's scope stack, whose home is `miopen.caffe2.scopes`
(``WorkspaceStack``, ``CreateScope`` / ``HasScope`` and the `BlobScope` namespaces of blobs)."""

from __future__ import annotations

from .caffe2.scopes import *  # noqa: F403
from .caffe2.scopes import __all__ as __all__
