"""The generator's tests, and the project's own (docs, Makefile, pins, packaging): tier `stub`."""

from __future__ import annotations

import pytest

from ..tiers import mark_folder


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_folder(items, __file__)
