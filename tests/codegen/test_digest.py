"""miogen's SHA-256 (codegen/base/digest.py: CPython's own implementation, not OpenSSL's) gives hashlib's digests."""

from __future__ import annotations

import hashlib
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from miogen.base import digest


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=3000), max_size=4))
def test_sha256_is_hashlibs(pieces: list[bytes]) -> None:
    """Any bytes, whole or fed in pieces: the same digest as hashlib's sha256."""
    whole = b"".join(pieces)
    h = digest.sha256()
    for p in pieces:
        h.update(p)
    assert h.hexdigest() == digest.sha256(whole).hexdigest() == hashlib.sha256(whole).hexdigest()


def test_file_sha256_reads_every_piece(tmp_path: Path) -> None:
    """A file's digest (read in 1 MiB pieces) at and around the piece size, and empty."""
    for size in (0, 1, (1 << 20) - 1, 1 << 20, (1 << 20) + 1, 3 * (1 << 20) + 7):
        f = tmp_path / f"f{size}"
        data = bytes(i % 251 for i in range(size))
        f.write_bytes(data)
        assert digest.file_sha256(f) == hashlib.sha256(data).hexdigest()
