"""SHA-256, the generator's one hash (cache keys, the header's and the inputs' digests).

CPython's own implementation where the interpreter has it: `hashlib` prefers OpenSSL's, and loading libcrypto
costs every parse a few milliseconds; the digests are the same (tests compare them). Elsewhere, hashlib's.
"""

from __future__ import annotations

from os import PathLike
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hashlib import sha256
else:
    try:
        from _sha2 import sha256  # CPython 3.12 and later
    except ImportError:
        try:
            from _sha256 import sha256  # CPython 3.11
        except ImportError:  # another interpreter
            from hashlib import sha256

__all__ = ["file_sha256", "sha256"]


def file_sha256(path: str | PathLike[str]) -> str:
    """The hex SHA-256 of a file's bytes, read in pieces."""
    h = sha256()
    with open(path, "rb") as fh:
        while piece := fh.read(1 << 20):
            h.update(piece)
    return h.hexdigest()
