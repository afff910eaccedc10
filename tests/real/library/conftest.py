"""Tests against a real MIOpen of ../shared, host side only, or its real headers: tier `real_library`."""

from __future__ import annotations

import pytest

from ...tiers import mark_folder


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_folder(items, __file__)
