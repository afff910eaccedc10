"""Tests of a real MIOpen whose kernels compute (its OpenCL build on PoCL): tier `real_kernels`."""

from __future__ import annotations

import pytest

from ...tiers import mark_folder


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_folder(items, __file__)
