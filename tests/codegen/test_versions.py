"""One `Version` type and one home for the committed releases (miogen.releases)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from miogen.errors import CodegenError
from miogen.releases import PIN_FILE, Releases, Version, by_version, spec_version

from ..helpers import COMMITTED, SPECS

_part = st.integers(min_value=0, max_value=999_999)


@given(_part, _part, _part)
def test_version_round_trips_and_orders_as_numbers(a: int, b: int, c: int) -> None:
    v = Version(a, b, c)
    assert Version.parse(str(v)) == v and str(v) == f"{a}.{b}.{c}"
    assert Version.parse(f"{a:02d}.{b}.{c}") == v  # leading zeros normalise
    assert (v < Version(a, b, c + 1)) and (Version(a, b + 1, 0) > v) and v == (a, b, c)


@pytest.mark.parametrize("text", ["", "3", "3.2", "3.2.0.1", "3.x.0", "v3.2.0", "3.2.0a", "1234567.0.0", "３.2.0"])
def test_version_refuses_anything_but_three_numbers(text: str) -> None:
    with pytest.raises(CodegenError, match="expected a version like 3.2.0"):
        Version.parse(text)


def test_spec_files_are_ordered_by_release_not_by_name(tmp_path: Path) -> None:
    names = ["3.0.0.yaml", "2.20.0.yaml", "2.9.1.yaml", "10.0.0.yaml"]
    assert [p.name for p in by_version([tmp_path / n for n in names])] == \
        ["2.9.1.yaml", "2.20.0.yaml", "3.0.0.yaml", "10.0.0.yaml"]
    with pytest.raises(CodegenError, match=r"x\.1\.0\.yaml: spec files are named <version>\.yaml"):
        spec_version(tmp_path / "x.1.0.yaml")


def test_committed_releases_of_the_checkout() -> None:
    assert COMMITTED.versions == sorted(COMMITTED.versions) and len(COMMITTED.versions) >= 2
    assert set(COMMITTED.paths.values()) == set(SPECS.glob("*.*.*.yaml"))
    pinned = COMMITTED.pinned()
    assert str(pinned) == (SPECS / PIN_FILE).read_text().strip() and pinned == COMMITTED.versions[-1]


def test_pin_errors_name_the_pin_file(tmp_path: Path) -> None:
    (tmp_path / "3.1.0.yaml").write_text("functions:\n- name: a\n")
    releases = Releases.of(tmp_path)
    with pytest.raises(CodegenError, match="no pinned release"):
        releases.pinned()
    for text in ("3.2.0", "three", "3.01.0"):
        (tmp_path / PIN_FILE).write_text(text + "\n")
        with pytest.raises(CodegenError, match=f"pins {text}, but .*{text}.yaml does not exist"):
            releases.pinned()


def test_added_in_is_the_first_release_declaring_each_function(tmp_path: Path) -> None:
    (tmp_path / "2.9.0.yaml").write_text("x: 1\nfunctions:\n- name: a\n")
    (tmp_path / "2.10.0.yaml").write_text("x: 1\nfunctions:\n- name: a\n- name: b\n")
    (tmp_path / "3.0.0.yaml").write_text("x: 1\nfunctions:\n- name: b\n- name: c\n")
    assert Releases.of(tmp_path).added_in() == {"a": "2.9.0 or earlier", "b": "2.10.0", "c": "3.0.0"}
    with pytest.raises(CodegenError, match="no committed specs"):
        Releases.of(tmp_path / "empty").added_in()
