"""requirements.lock: every package the venv holds, pinned with hashes, and the venv is exactly it."""
from __future__ import annotations

import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "requirements.lock"
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^ \\]+) \\$")
HASH = re.compile(r"^\s+--hash=sha256:[0-9a-f]{64}( \\)?$")


def _pins() -> dict[str, tuple[str, int]]:
    """name -> (version, number of hashes), read from the lock; any other line is a comment."""
    pins: dict[str, tuple[str, int]] = {}
    current = ""
    for line in LOCK.read_text().splitlines():
        if m := PIN.match(line):
            current = canonicalize_name(m.group(1))
            assert current not in pins, f"{line}: pinned twice"
            pins[current] = (m.group(2), 0)
        elif HASH.match(line):
            version, n = pins[current]
            pins[current] = (version, n + 1)
        else:
            assert not line.strip() or line.lstrip().startswith("#"), f"unexpected line in the lock: {line!r}"
    return pins


def test_every_pin_is_exact_and_hashed() -> None:
    pins = _pins()
    assert pins
    for name, (version, hashes) in pins.items():
        assert re.fullmatch(r"[0-9][0-9A-Za-z.+!-]*", version), name
        assert hashes >= 1, f"{name}=={version} has no hash"


def test_lock_satisfies_what_pyproject_asks() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = [*project["dependencies"], *project["optional-dependencies"]["test"], "pip"]
    pins = _pins()
    for text in wanted:
        req = Requirement(text)
        name = canonicalize_name(req.name)
        assert name in pins, f"pyproject.toml asks for {text}; requirements.lock lacks it (make lock)"
        assert req.specifier.contains(pins[name][0], prereleases=True), \
            f"pyproject.toml asks for {text}; requirements.lock pins {pins[name][0]} (make lock)"


@pytest.mark.skipif(sys.prefix == sys.base_prefix, reason="not run from a venv")
def test_the_venv_is_exactly_the_lock() -> None:
    """What `make venv` installed: every pin at its version, nothing else but miogen itself."""
    pins = _pins()
    installed = {canonicalize_name(d.metadata["Name"]): d.version for d in metadata.distributions()}
    installed.pop("miogen", None)
    assert installed == {name: version for name, (version, _) in pins.items()}
