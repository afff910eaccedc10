"""The test tiers: which folder holds which tier, and the marker each folder's conftest puts on its tests.

A tier says what a test needs (pyproject.toml registers the markers and says it in words): `stub` nothing real
(the generator, and the runtime against the stub libraries), `real_library` a real MIOpen of ../shared (host side,
or its real headers), `real_kernels` a real MIOpen whose kernels compute (OpenCL on PoCL), `gpu` a GPU.
`pytest -m <tier>` selects one; `make test` runs all but `gpu`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
#: the tiers, lowest first: a test needs what its tier names and what every lower one needs
TIERS = ("stub", "real_library", "real_kernels", "gpu")
#: each folder of test files (relative to tests/) and its tier; a test file anywhere else is in no tier
FOLDERS = {
    "codegen": "stub",
    "runtime": "stub",
    "real/library": "real_library",
    "real/kernels": "real_kernels",
    "gpu": "gpu",
}


def tiers_of(item: pytest.Item) -> list[str]:
    """The tier markers on `item` (its own, its class's and its module's)."""
    return [m.name for m in item.iter_markers() if m.name in TIERS]


def mark_folder(items: list[pytest.Item], conftest: str) -> None:
    """Give every test under the folder of `conftest` that folder's tier. A test that needs more than its folder
    (a runtime test that also loads the real library) carries the higher tier's marker itself, which then stands
    alone; a marker of a lower tier than the folder's is an error naming the test."""
    folder = Path(conftest).resolve().parent
    tier = FOLDERS[folder.relative_to(TESTS).as_posix()]
    for item in items:
        if not item.path.is_relative_to(folder):
            continue
        own = tiers_of(item)
        low = [t for t in own if TIERS.index(t) < TIERS.index(tier)]
        if low or len(own) > 1:
            raise pytest.UsageError(f"{item.nodeid}: marked {', '.join(own)}, in a folder of tier {tier}: "
                                    f"a test carries at most one tier marker, never one below its folder's")
        if not own:
            item.add_marker(tier)
