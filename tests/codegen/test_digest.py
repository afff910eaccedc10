"""miogen's SHA-256 (codegen/base/digest.py: OpenSSL's where hashlib is loaded, else CPython's own) gives hashlib's
digests."""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from miogen.base import digest


@contextmanager
def _without_hashlib() -> Iterator[None]:
    """The process as a parse sees it: hashlib not imported."""
    saved = sys.modules.pop("hashlib")
    try:
        yield
    finally:
        sys.modules["hashlib"] = saved


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=3000), max_size=4))
def test_sha256_is_hashlibs(pieces: list[bytes]) -> None:
    """Any bytes, whole or fed in pieces, with hashlib loaded or not: the same digest as hashlib's sha256."""
    whole = b"".join(pieces)
    expected = hashlib.sha256(whole).hexdigest()
    for loaded in (True, False):
        with nullcontext() if loaded else _without_hashlib():
            h = digest.sha256()
            for p in pieces:
                h.update(p)
            assert h.hexdigest() == digest.sha256(whole).hexdigest() == expected, loaded


def test_sha256_is_openssls_only_where_hashlib_is_loaded() -> None:
    """hashlib's object where hashlib is imported; without it (a parse), not hashlib's, so no libcrypto is loaded."""
    assert type(digest.sha256(b"x")) is type(hashlib.sha256(b"x"))
    with _without_hashlib():
        own = digest.sha256(b"x")
    assert type(own).__module__ != "_hashlib", type(own)


def test_file_sha256_reads_every_piece(tmp_path: Path) -> None:
    """A file's digest (read in 1 MiB pieces) at and around the piece size, and empty."""
    for size in (0, 1, (1 << 20) - 1, 1 << 20, (1 << 20) + 1, 3 * (1 << 20) + 7):
        f = tmp_path / f"f{size}"
        data = bytes(i % 251 for i in range(size))
        f.write_bytes(data)
        assert digest.file_sha256(f) == hashlib.sha256(data).hexdigest()
