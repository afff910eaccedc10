"""SHA-256, the generator's one hash (cache keys, the header's and the inputs' digests).

OpenSSL's, through hashlib, where the process has imported hashlib already (a render has: Jinja's bytecode cache
imports it), which hashes several times faster (a render hashes megabytes: the spec and its cache entries); else
CPython's own implementation where the interpreter has it, since hashlib loads libcrypto, which would cost every
parse a few milliseconds. Elsewhere, hashlib's. The digests are the same (tests compare them).
"""

from __future__ import annotations

import sys
from os import PathLike
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hashlib import sha256
else:
    try:
        from _sha2 import sha256 as _own  # CPython 3.12 and later
    except ImportError:
        try:
            from _sha256 import sha256 as _own  # CPython 3.11
        except ImportError:  # another interpreter
            from hashlib import sha256 as _own

    def sha256(data=b"", /):
        """A SHA-256 hash object over `data` (hashlib's where hashlib is loaded, else CPython's own)."""
        hashlib = sys.modules.get("hashlib")
        return hashlib.sha256(data) if hashlib is not None else _own(data)


__all__ = ["file_sha256", "sha256"]


def file_sha256(path: str | PathLike[str]) -> str:
    """The hex SHA-256 of a file's bytes, read in pieces."""
    h = sha256()
    with open(path, "rb") as fh:
        while piece := fh.read(1 << 20):
            h.update(piece)
    return h.hexdigest()
