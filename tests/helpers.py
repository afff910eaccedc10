"""Shared fixtures: the fixture header, the target, a cached parse."""

from __future__ import annotations

import functools
import os
from pathlib import Path

import pytest

from codegen import model
from codegen.parser import ParseOptions, parse_header
from codegen.target import Target, load_target

REPO = Path(__file__).resolve().parent.parent
FIXTURE_HEADER = REPO / "tests" / "fixtures" / "include" / "miopen" / "miopen.h"
FIXTURE_ANNOTATIONS = REPO / "tests" / "fixtures" / "annotations.yaml"
GOLDEN = REPO / "tests" / "golden"
SPECS = REPO / "specs" / "miopen"
UPDATE_GOLDEN = os.environ.get("MIOGEN_UPDATE_GOLDEN") == "1"


@functools.cache
def target() -> Target:
    return load_target()


@functools.cache
def fixture_spec(beta: bool = True) -> model.Spec:
    return parse_header(FIXTURE_HEADER, target(), ParseOptions(beta=beta))


def check_golden(name: str, text: str) -> None:
    """Compare `text` with tests/golden/<name> byte for byte; MIOGEN_UPDATE_GOLDEN=1 rewrites it."""
    path = GOLDEN / name
    if UPDATE_GOLDEN:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    assert path.exists(), f"missing golden {path}; run with MIOGEN_UPDATE_GOLDEN=1 and review the diff"
    expected = path.read_text(encoding="utf-8")
    if text != expected:
        import difflib

        diff = "".join(
            list(difflib.unified_diff(expected.splitlines(True), text.splitlines(True), str(path), "rendered"))[:80]
        )
        pytest.fail(f"{path} differs (MIOGEN_UPDATE_GOLDEN=1 rewrites it; review the diff):\n{diff}")
