"""The Makefile's variables: a misspelt one is an error, not silently ignored."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from .helpers import REPO


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_misspelt_variable_is_reported() -> None:
    r = subprocess.run(["make", "--no-print-directory", "help", "MIOPEN_VERISON=3.3.0"], capture_output=True,
                       text=True, cwd=REPO, check=False)
    assert r.returncode == 2
    assert "unknown variable MIOPEN_VERISON on the command line" in r.stderr and "MIOPEN_VERSION" in r.stderr
    r = subprocess.run(["make", "--no-print-directory", "help", "MIOPEN_VERSION=3.3.0", "PARSE_ARGS=-D A=1"],
                       capture_output=True, text=True, cwd=REPO, check=False)
    assert r.returncode == 0, r.stderr


def test_every_variable_is_documented() -> None:
    """Each variable the Makefile accepts is described in its header comment and in README's table."""
    makefile = (REPO / "Makefile").read_text()
    known = re.search(r"^KNOWN_VARS := (.*)$", makefile, re.M)
    assert known is not None
    header = makefile[: makefile.index("\nPYTHON ")]
    table = [line for line in (REPO / "README.md").read_text().splitlines() if line.startswith("| `")]
    for var in known.group(1).split():
        assert re.search(rf"^#\s.*\b{var}=", header, re.M), var
        assert any(f"`{var}=" in line for line in table), var
